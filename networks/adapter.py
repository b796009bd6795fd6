"""One functional API for every network, and its eval_fn for the search.

  make(name, env, **kwargs) -> network                 'mlp' | 'resnet' | 'seresnet' | 'dual'
  init(network, rng, example_observation [B, ...]) -> variables
  apply(network, variables, observation [B, ...]) -> outputs
  apply(network, variables, observation, train=True) -> (outputs, new_variables)
  NetworkEval(network, env=None, head=None)(variables, rng, state)
      -> (prior_logits f32[B, A], value f32[B])

`variables` is the dict flax returns: {'params'} for the MLP, {'params',
'batch_stats'} for the BatchNorm networks. The optimizer updates
`variables['params']`; `apply(..., train=True)` normalises with the batch's
statistics and returns the variables with the running averages updated (the
MLP's come back unchanged), so a trainer handles every network the same way.
`outputs` is (logits [B, A], value [B]), except for `DualHeadResNet`, whose
outputs are ((small_logits, small_value), (large_logits, large_value)).

`NetworkEval` is a frozen dataclass (hashable, equal by value), so it can be
the static `eval_fn` argument of a jitted `mcgs_jax.search`: equal adapters
share one compiled search. It reads the network input with `env.observe`
(HSR computes its observation from the env's constants) or, without an env,
`state.observation`, so the same variables evaluate any env whose
observation has the same layout (our Connect-4 and pgx's `connect_four`).
"""

import dataclasses
from typing import Any, Optional, Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from mcgs_jax.networks import mlp
from mcgs_jax.networks import resmlp
from mcgs_jax.networks import resnet

NETWORKS = {
    "mlp": mlp.MLP,
    "resnet": resnet.ResNet,
    "seresnet": resnet.SEResNet,
    "dual": resnet.DualHeadResNet,
    "resmlp": resmlp.ResMLP,
    "dual_mlp": resmlp.DualHeadResMLP,
}
# Flat-input networks: any observation shape.
_FLAT = ("mlp", "resmlp", "dual_mlp")
HEADS = ("small", "large")


def init(network: nn.Module, rng: chex.PRNGKey, example_observation: chex.Array) -> dict:
  """Initial variables for observations shaped like `example_observation`.

  Args:
    network: any network of this package.
    rng: a PRNG key.
    example_observation: [B, ...] network inputs (any B >= 1: only the
      per-game shape matters).

  Returns:
    The variables dict: {'params'}, plus 'batch_stats' for BatchNorm networks.
  """
  return dict(network.init(rng, jnp.asarray(example_observation), train=False))


def apply(network: nn.Module, variables: dict, observation: chex.Array, train: bool = False,
          **call_kwargs):
  """Runs `network` on a batch of observations [B, ...].

  Args:
    network: any network of this package.
    variables: from `init` (or training).
    observation: [B, ...] network inputs (`env.observe(state)`).
    train: False: inference, BatchNorm uses its running averages. True: BatchNorm
      uses the batch's statistics and updates its running averages.
    **call_kwargs: extra arguments of the network's call (`small_only=True`
      for `DualHeadResNet`).

  Returns:
    outputs when `train` is False; (outputs, new_variables) when it is True,
    new_variables holding the updated 'batch_stats' (the MLP's are
    `variables` unchanged).
  """
  if not train:
    return network.apply(variables, observation, train=False, **call_kwargs)
  if "batch_stats" not in variables:
    return network.apply(variables, observation, train=True, **call_kwargs), variables
  outputs, updates = network.apply(variables, observation, train=True,
                                   mutable=["batch_stats"], **call_kwargs)
  return outputs, {**variables, **updates}


def has_two_heads(network: nn.Module) -> bool:
  """Whether `network` returns ((small), (large)) outputs.

  Args:
    network: a flax module.

  Returns:
    bool, True for a `DualHeadResNet`, `DualHeadResMLP` or `NetworkPair`.
  """
  return isinstance(network, (resnet.DualHeadResNet, resmlp.DualHeadResMLP, resmlp.NetworkPair))


@dataclasses.dataclass(frozen=True)
class NetworkEval:
  """The search's `eval_fn(variables, rng, state) -> (prior_logits f32[B, A],
  value f32[B])` for any network of this package.

  No action is masked: the search masks illegal actions itself.

  Attributes:
    network: the flax module.
    env: reads the observation with `env.observe(state)`; None reads
      `state.observation`.
    head: 'small' or 'large' (default) for a `DualHeadResNet`: 'small' runs
      only the first blocks and the small head. Must be None for the other
      networks.
  """
  network: nn.Module
  env: Any = None
  head: Optional[str] = None

  def __post_init__(self):
    if self.head is None:
      return
    if not has_two_heads(self.network):
      raise ValueError(f"head={self.head!r} selects a head of a DualHeadResNet; "
                       f"{type(self.network).__name__} has one head (leave head=None)")
    if self.head not in HEADS:
      raise ValueError(f"head must be one of {HEADS} (or None for the large head), "
                       f"got {self.head!r}")

  @property
  def num_actions(self) -> int:
    """A, the size of the network's policy head."""
    return self.network.num_actions

  def observation(self, state: Any) -> chex.Array:
    """The network input of a batch of states.

    Args:
      state: env states with leading dimension B.

    Returns:
      [B, ...], `env.observe(state)` (or `state.observation` without an env).
    """
    if self.env is None:
      return state.observation
    return self.env.observe(state)

  def __call__(self, variables: Any, rng: chex.PRNGKey,
               state: Any) -> tuple[chex.Array, chex.Array]:
    """Evaluates a batch of states (deterministic networks: `rng` is unused).

    Args:
      variables: the network's variables (`init`).
      rng: unused.
      state: env states with leading dimension B.

    Returns:
      (prior_logits f32[B, A] unmasked, value f32[B] for the player to move).
    """
    del rng
    observation = self.observation(state)
    if self.head == "small":
      logits, value = apply(self.network, variables, observation, small_only=True)
    elif isinstance(self.network, resmlp.NetworkPair):
      # Two separate networks: the large one alone.
      logits, value = apply(self.network, variables, observation, large_only=True)
    elif has_two_heads(self.network):
      _, (logits, value) = apply(self.network, variables, observation)
    else:
      logits, value = apply(self.network, variables, observation)
    return logits.astype(jnp.float32), value.astype(jnp.float32)


# The eval_fn of the MLP, under the name it had before NetworkEval covered
# every network.
MLPEval = NetworkEval


def mlp_eval(num_actions: int, hidden_sizes: Sequence[int] = (128, 128)) -> NetworkEval:
  """eval_fn backed by `MLP(num_actions, hidden_sizes)`, reading `state.observation`.

  Args:
    num_actions: A.
    hidden_sizes: widths of the hidden layers; stored as a tuple so the
      eval_fn stays hashable.

  Returns:
    A NetworkEval.
  """
  return NetworkEval(mlp.MLP(num_actions=num_actions, hidden_sizes=tuple(hidden_sizes)))


def observation_shape(env: Any) -> tuple[int, ...]:
  """The shape of one game's network input, `env.observe(state)`.

  Computed without running the env (shapes only).

  Args:
    env: the env.

  Returns:
    The shape tuple, without a batch dimension.
  """
  return tuple(jax.eval_shape(lambda: env.observe(env.init(jax.random.PRNGKey(0)))).shape)


def make(name: str, env: Any, **kwargs) -> nn.Module:
  """The network `name` for `env`, with A = `env.num_actions`.

  Args:
    name: 'mlp' (`MLP`), 'resnet' (`ResNet`), 'seresnet' (`SEResNet`),
      'dual' (`DualHeadResNet`), 'resmlp' (`ResMLP`), 'dual_mlp'
      (`DualHeadResMLP`) or 'pair' (`NetworkPair`, see `make_pair`).
    env: the game; its observation shape decides which networks fit.
    **kwargs: the network's other attributes (num_blocks, channels,
      hidden_sizes, ...); lists become tuples so the module stays hashable.

  Returns:
    The flax module (unbound; `init` gives its variables).

  Raises:
    ValueError: unknown name, or a convolutional network for an env whose
      observation is not [H, W, C] planes.
  """
  if name == "pair":
    return make_pair(env, **kwargs)
  if name not in NETWORKS:
    raise ValueError(f"unknown network {name!r}; known: {', '.join(NETWORKS)}, pair")
  if name not in _FLAT:
    shape = observation_shape(env)
    if len(shape) != 3:
      raise ValueError(
          f"{name!r} is a convolutional network for board planes [H, W, C], but "
          f"{type(env).__name__} observations have shape {shape}; use 'mlp'")
  kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
  return NETWORKS[name](num_actions=env.num_actions, **kwargs)


def make_pair(env: Any, kind: str = "resnet", small_blocks: int = 2, large_blocks: int = 4,
              **kwargs) -> nn.Module:
  """MPV-MCTS's two networks for `env` as one `NetworkPair`.

  Args:
    env: the game; its observation shape decides which networks fit.
    kind: the network of both, a name of `make` with one head and a depth
      ('resnet' or 'seresnet' for board planes, 'resmlp' for flat vectors).
    small_blocks: blocks (ResNet) or layers (ResMLP) of the small network.
    large_blocks: blocks or layers of the large network.
    **kwargs: the other attributes (`channels` / `width`, ...), shared.

  Returns:
    The `NetworkPair` (unbound; `init` gives its variables).

  Raises:
    ValueError: what `make` raises for `kind` and `env`.
  """
  depth = "num_blocks" if kind in ("resnet", "seresnet") else "num_layers"
  small = make(kind, env, **{depth: small_blocks}, **kwargs)
  large = make(kind, env, **{depth: large_blocks}, **kwargs)
  return resmlp.NetworkPair(small=small, large=large)
