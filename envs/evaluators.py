"""Network-free evaluators with the search's `eval_fn` signature.

  eval_fn(params, rng, state) -> (prior_logits f32[..., A], value f32[...])

`value` is from the point of view of `state.current_player`. The evaluators
are frozen dataclasses, so they are hashable and compare by value: they can
be static arguments of `jax.jit`, and equal configurations share one
compiled function. They use only the env contract (`env.step`,
`legal_action_mask`, `terminated`, `rewards`, `current_player`), so they work
for every env.
"""

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from mcgs_jax.envs import base
from mcgs_jax.envs import bits
from mcgs_jax.envs import nim


@dataclasses.dataclass(frozen=True)
class UniformEval:
  """Uniform prior (zero logits) and zero value for every state."""
  env: base.Env

  def __call__(self, params: Any, rng: jax.Array, state: Any) -> tuple[jax.Array, jax.Array]:
    """Zero logits and zero values.

    Args:
      params: unused.
      rng: unused.
      state: states with batch dims `...` (usually [B]).

    Returns:
      (prior_logits f32[..., A] zeros, value f32[...] zeros).
    """
    del params, rng
    shape = jnp.shape(state.legal_action_mask)
    return jnp.zeros(shape, jnp.float32), jnp.zeros(shape[:-1], jnp.float32)


@dataclasses.dataclass(frozen=True)
class RolloutEval:
  """Zero logits; value = mean outcome of `num_rollouts` uniformly random
  legal playouts per state, for the player to move in that state."""
  env: base.Env
  num_rollouts: int = 1

  def __post_init__(self):
    if self.num_rollouts < 1:
      raise ValueError(f"num_rollouts must be >= 1, got {self.num_rollouts}")

  def __call__(self, params: Any, rng: jax.Array, state: Any) -> tuple[jax.Array, jax.Array]:
    """Plays random games to the end from each state.

    Args:
      params: unused.
      rng: PRNG key.
      state: states with batch dims `...` (usually [B]).

    Returns:
      prior_logits f32[..., A] (zeros) and value f32[...] in [-1, 1]; 0 for
      terminated states.
    """
    del params
    num_rollouts = self.num_rollouts
    batch_shape = jnp.shape(state.terminated)
    # One copy of each state per rollout, on a new trailing batch dim.
    games = jax.tree.map(
        lambda x: jnp.broadcast_to(
            jnp.expand_dims(x, len(batch_shape)),
            batch_shape + (num_rollouts,) + jnp.shape(x)[len(batch_shape):]),
        state)
    player = jnp.broadcast_to(
        jnp.expand_dims(state.current_player, -1), batch_shape + (num_rollouts,))
    returns = jnp.zeros(batch_shape + (num_rollouts,), jnp.float32)

    def cond(carry):
      i, games, _, _ = carry
      return (i < self.env.max_game_length) & ~jnp.all(games.terminated)

    def body(carry):
      i, games, returns, rng = carry
      rng, sub = jax.random.split(rng)
      # A state with no legal move is terminated, so its (no-op) action is moot.
      actions = base.random_legal_action(sub, games.legal_action_mask)
      games = self.env.step(games, actions)
      reward = jnp.take_along_axis(games.rewards, player[..., None], axis=-1)[..., 0]
      return i + 1, games, returns + reward, rng

    _, _, returns, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), games, returns, rng))
    logits = jnp.zeros(jnp.shape(state.legal_action_mask), jnp.float32)
    return logits, jnp.mean(returns, axis=-1)


@dataclasses.dataclass(frozen=True)
class MixedEval:
  """AlphaGo's leaf evaluation (Silver et al. 2016): the network's prior and
  the value (1 - lam) v_network + lam z_rollout.

  Both evaluators have the `eval_fn` signature (e.g. a network's and a
  `RolloutEval`); `rollout_eval`'s prior is ignored. With lam = 0 it is
  `network_eval`; the two get independent rngs.
  """
  network_eval: Any
  rollout_eval: Any
  lam: float = 0.5

  def __post_init__(self):
    if not 0 <= self.lam <= 1:
      raise ValueError(f"lam must be in [0, 1], got {self.lam}")

  def __call__(self, params: Any, rng: jax.Array, state: Any) -> tuple[jax.Array, jax.Array]:
    """The network's prior and the mixed value.

    Args:
      params: passed to both evaluators.
      rng: a PRNG key, split between the two evaluators.
      state: states with batch dims `...` (usually [B]).

    Returns:
      (prior_logits f32[..., A] of `network_eval`, value f32[...]
      (1 - lam) v + lam z).
    """
    network_rng, rollout_rng = jax.random.split(rng)
    logits, value = self.network_eval(params, network_rng, state)
    if self.lam == 0:
      return logits, value
    _, rollout_value = self.rollout_eval(params, rollout_rng, state)
    return logits, (1.0 - self.lam) * value + self.lam * rollout_value


def uniform_eval(env: base.Env) -> UniformEval:
  """eval_fn with zero prior logits and zero value.

  Args:
    env: the env (its actions give the logits' shape).

  Returns:
    A UniformEval (hashable).
  """
  return UniformEval(env)


def rollout_eval(env: base.Env, num_rollouts: int = 1) -> RolloutEval:
  """eval_fn whose value is the mean of `num_rollouts` random playouts.

  Args:
    env: the env the playouts step.
    num_rollouts: playouts per state, >= 1.

  Returns:
    A RolloutEval (hashable).

  Raises:
    ValueError: `num_rollouts` < 1.
  """
  return RolloutEval(env, num_rollouts)


def mixed_eval(network_eval: Any, rollout_eval: Any, lam: float = 0.5) -> MixedEval:
  """eval_fn with `network_eval`'s prior and value (1 - lam) v + lam z.

  z comes from `rollout_eval` (AlphaGo's lambda; 0.5 there).

  Args:
    network_eval: an eval_fn (e.g. a network's) giving prior and v.
    rollout_eval: an eval_fn giving z (its prior is ignored).
    lam: the mixing weight in [0, 1].

  Returns:
    A MixedEval (hashable).

  Raises:
    ValueError: `lam` outside [0, 1].
  """
  return MixedEval(network_eval, rollout_eval, lam)


@dataclasses.dataclass(frozen=True)
class NoisyNimEval:
  """An imperfect Nim network: the exact value, halved, plus a fixed offset
  per position, and pseudo-random prior logits (deterministic per position,
  like a network, so transpositions see equal outputs).

  value = clip(exact / 2 + noise * u(key), -1, 1), u uniform in [-1, 1);
  logits = logit_noise * u_a(key), one draw per action.

  Attributes:
    env: the Nim env (for the exact value).
    noise: the offset's half-width; above 0.5 some values get the wrong sign.
    logit_noise: the logits' half-width (0: a uniform prior).
    seed: varies the offsets.
  """
  env: nim.Nim
  noise: float = 0.8
  logit_noise: float = 1.0
  seed: int = 0

  def __call__(self, params, rng, state):
    """Logits and values of a batch of Nim states.

    Args:
      params: unused (no network).
      rng: unused (the outputs are a function of the position).
      state: Nim states [B].

    Returns:
      (logits f32[B, A], value f32[B]) from the mover's view.
    """
    del params, rng
    _, exact = nim.ExactEval(self.env)(None, None, state)
    key = state.key
    h = bits.mix32(key[..., 0] ^ bits.mix32(key[..., 1] + jnp.uint32(0x9E3779B9 + self.seed)))
    offset = (h & 0xFFFF).astype(jnp.float32) / 32768.0 - 1.0
    value = jnp.clip(0.5 * exact + self.noise * offset, -1.0, 1.0)
    value = jnp.where(state.terminated, 0.0, value)
    salts = jnp.arange(1, self.env.num_actions + 1, dtype=jnp.uint32) * jnp.uint32(0x632BE5AB)
    draws = (bits.mix32(h[..., None] + salts) & 0xFFFF).astype(jnp.float32) / 32768.0 - 1.0
    return self.logit_noise * draws, value
