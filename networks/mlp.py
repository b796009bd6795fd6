"""A small policy-value MLP and its `eval_fn` adapter for the search.

  MLP(num_actions)(observation [B, ...]) -> (logits f32[B, A], value f32[B])

`MLPEval` is a frozen dataclass (hashable, compared by value), so it can be
the static `eval_fn` argument of a jitted `mcgs_jax.search`; equal networks
share one compiled search. The network only sees `state.observation`, so the
same parameters evaluate any env whose observation has the same layout (our
Connect-4 and pgx's `connect_four`).
"""

import dataclasses
from typing import Any, Sequence

import chex
import flax.linen as nn
import jax.numpy as jnp


class MLP(nn.Module):
  """Policy-value network: flatten, `hidden_sizes` ReLU layers, two heads.

  Attributes:
    num_actions: size A of the policy head.
    hidden_sizes: widths of the hidden Dense layers.
  """
  num_actions: int
  hidden_sizes: Sequence[int] = (128, 128)

  @nn.compact
  def __call__(self, observation: chex.Array) -> tuple[chex.Array, chex.Array]:
    """Evaluates a batch of observations.

    Args:
      observation: [B, ...], any dtype (bool planes are cast to float32).

    Returns:
      logits f32[B, A] (unmasked) and value f32[B] in [-1, 1], for the player
      to move.
    """
    x = jnp.reshape(observation, (observation.shape[0], -1)).astype(jnp.float32)
    for width in self.hidden_sizes:
      x = nn.relu(nn.Dense(width)(x))
    logits = nn.Dense(self.num_actions, name="policy")(x)
    value = jnp.tanh(nn.Dense(1, name="value")(x))[:, 0]
    return logits, value


def init_params(network: MLP, rng: chex.PRNGKey, example_observation: chex.Array) -> Any:
  """Initial parameters for observations shaped like `example_observation`
  [B, ...] (any B: only the per-game shape matters)."""
  return network.init(rng, jnp.asarray(example_observation, jnp.float32))


@dataclasses.dataclass(frozen=True)
class MLPEval:
  """`eval_fn(params, rng, state) -> (prior_logits f32[B, A], value f32[B])`
  that applies `network` to `state.observation`.

  No action is masked: the search masks illegal actions itself.
  """
  network: MLP

  @property
  def num_actions(self) -> int:
    return self.network.num_actions

  def __call__(self, params: Any, rng: chex.PRNGKey,
               state: Any) -> tuple[chex.Array, chex.Array]:
    """Evaluates a batch of states [B]; `rng` is unused (deterministic net)."""
    del rng
    return self.network.apply(params, jnp.asarray(state.observation, jnp.float32))


def mlp_eval(num_actions: int, hidden_sizes: Sequence[int] = (128, 128)) -> MLPEval:
  """eval_fn backed by `MLP(num_actions, hidden_sizes)`; `hidden_sizes` is
  stored as a tuple so the eval_fn stays hashable."""
  return MLPEval(MLP(num_actions=num_actions, hidden_sizes=tuple(hidden_sizes)))
