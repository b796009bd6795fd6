"""Supervised warm start from exactly labelled positions (MantisShrimp seed).

Before self-play, the network can be trained on positions whose exact value
and best moves are known: every position of a small game (tic-tac-toe, Nim,
HSR: full enumeration, `mcgs_jax.envs.exhaustive`), or Connect-4 positions reached by
random play and labelled by the exact solver. The policy target is uniform
over the best moves, the value target the exact game value for the player to
move (the sign of the solver's score for Connect-4).
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import connect4
from mcgs_jax.envs import exhaustive
from mcgs_jax.learning import agents
from mcgs_jax.learning import example as example_lib
from mcgs_jax.learning import ground_truth

# Connect-4 positions are drawn after this many random plies or more: earlier
# ones cost the solver seconds to minutes each.
CONNECT4_MIN_PLIES = 10


def _examples(env, states, move_values: np.ndarray, values: np.ndarray) -> example_lib.Example:
  best = move_values >= move_values.max(axis=1, keepdims=True) - 1e-9
  policy = best / best.sum(axis=1, keepdims=True)
  states = jax.tree.map(jnp.asarray, states)
  return example_lib.Example(
      observation=env.observe(states), legal_action_mask=states.legal_action_mask,
      policy=jnp.asarray(policy, jnp.float32),
      player=jnp.asarray(states.current_player, jnp.int32),
      value=jnp.asarray(values, jnp.float32))


def _connect4_positions(env, rng: np.random.Generator, count: int):
  """`count` distinct non-terminal positions after random play, with the
  solver's move values (f64[count, 7], -inf on full columns)."""
  step = jax.jit(env.step)
  seen, states, move_values = set(), [], []
  while len(states) < count:
    plies = int(rng.integers(CONNECT4_MIN_PLIES, connect4.NUM_ROWS * connect4.NUM_COLS - 1))
    state = env.init(jax.random.PRNGKey(0))
    for _ in range(plies):
      legal = np.flatnonzero(np.asarray(state.legal_action_mask))
      state = step(state, int(rng.choice(legal)))
      if bool(state.terminated):
        break
    if bool(state.terminated):
      continue
    key = tuple(np.asarray(state.key).tolist())
    if key in seen:
      continue
    seen.add(key)
    states.append(jax.tree.map(np.asarray, state))
    move_values.append(agents.solver_move_values(
        state.position, state.mask, int(state.ply)))
  return jax.tree.map(lambda *xs: np.stack(xs), *states), np.stack(move_values)


def labelled_examples(env: Any, rng: jax.Array, count: int) -> example_lib.Example:
  """Exactly labelled examples of `env` for a warm start.

  Fewer than `count` for a small game with fewer positions: then all of them.

  Args:
    env: Connect-4 (positions after random play, labelled by the solver) or a
      small game (tic-tac-toe, Nim, HSR: its game table).
    rng: a PRNG key (seeds the host-side sampling).
    count: M, the number of examples wanted.

  Returns:
    Example with leading dimension M: policy f32[M, A] uniform over the
    value-keeping moves, value f32[M] the exact value for the player to move.

  Raises:
    ValueError: an env without exact labels here.
  """
  host_rng = agents.host_rng(rng)
  if isinstance(env, connect4.Connect4):
    states, move_values = _connect4_positions(env, host_rng, count)
    # Pons' scores: > 0 a win, 0 a draw; the game value is their sign.
    values = np.sign(move_values.max(axis=1))
    return _examples(env, states, move_values, values)
  if not isinstance(env, ground_truth.SMALL_GAMES):
    raise ValueError(f"no exact labels for {getattr(env, 'id', env)!r}: the warm start "
                     "supports connect4, tictactoe, nim variants and hsr")
  table = exhaustive.game_table(env)
  rows = np.arange(len(table))
  if count < len(rows):
    rows = np.sort(host_rng.choice(rows, count, replace=False))
  states = jax.tree.map(lambda x: x[rows], table.states)
  return _examples(env, states, table.move_values[rows], table.values[rows])
