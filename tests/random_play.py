"""Random lines of play for a batch of games, shared by the tests that check
a game's declarations along them."""

import jax
import jax.numpy as jnp
import numpy as np


def random_steps(state, step, rng, max_plies, next_state=lambda out: out):
  """Plays uniformly random legal moves in every game of `state` until all
  have ended (or `max_plies`), yielding each step's result.

  Args:
    state: a batch of env states [B] (pgx fields).
    step: `(state, action int32[B]) -> out`, jitted by the caller; ended
      games get action 0 (a no-op for the envs).
    rng: a PRNG key.
    max_plies: the most steps taken.
    next_state: `out -> state`, the states after the step.

  Yields:
    (moving bool[B], out): the games that were still going, and the step's
    result.
  """
  for ply in range(max_plies):
    moving = ~np.asarray(state.terminated)
    if not moving.any():
      return
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    action = jax.random.categorical(jax.random.fold_in(rng, ply), logits)
    out = step(state, jnp.where(state.terminated, 0, action).astype(jnp.int32))
    yield moving, out
    state = next_state(out)
