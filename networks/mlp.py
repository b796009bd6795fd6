"""A small policy-value MLP, the network for flat observations.

  MLP(num_actions)(observation [B, ...], train=False)
      -> (logits f32[B, A], value f32[B])

Any observation is flattened, so the MLP also takes board planes; it is the
only network for the flat vectors of Nim and HSR. It has no batch
statistics: its variables are {'params'} and `train` changes nothing. The
search's eval_fn for it (and for every other network) is
`networks.NetworkEval`, which `networks.MLPEval` names for compatibility.
"""

from typing import Any, Sequence

import chex
import flax.linen as nn
import jax.numpy as jnp


class MLP(nn.Module):
  """Policy-value network: flatten, `hidden_sizes` ReLU layers, two heads.

  Attributes:
    num_actions: size A of the policy head.
    hidden_sizes: widths of the hidden Dense layers (a tuple, so the module
      stays hashable).
  """
  num_actions: int
  hidden_sizes: Sequence[int] = (128, 128)

  @nn.compact
  def __call__(self, observation: chex.Array,
               train: bool = False) -> tuple[chex.Array, chex.Array]:
    """Evaluates a batch of observations.

    Args:
      observation: [B, ...], any dtype (bool planes are cast to float32).
      train: accepted for the common network signature; the MLP has no
        layer that behaves differently in training.

    Returns:
      logits f32[B, A] (unmasked) and value f32[B] in [-1, 1], for the player
      to move.
    """
    del train
    x = jnp.reshape(observation, (observation.shape[0], -1)).astype(jnp.float32)
    for width in self.hidden_sizes:
      x = nn.relu(nn.Dense(width)(x))
    logits = nn.Dense(self.num_actions, name="policy")(x)
    value = jnp.tanh(nn.Dense(1, name="value")(x))[:, 0]
    return logits, value


def init_params(network: nn.Module, rng: chex.PRNGKey, example_observation: chex.Array) -> Any:
  """Initial variables; `mcgs_jax.networks.init` under its older name.

  Args:
    network: the flax module.
    rng: a PRNG key.
    example_observation: [B, ...] network inputs (any B: only the per-game
      shape matters).

  Returns:
    The variables dict ({'params'} for the MLP).
  """
  return network.init(rng, jnp.asarray(example_observation, jnp.float32), train=False)
