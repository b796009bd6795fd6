"""Exact game values by full enumeration (ground truth for small games).

Walks the game graph level by level with the env's own (batched) `step`,
merging states by transposition key, then does backward induction with the
search's sign rule: Q(s, a) = reward to the mover + discount * V(child), the
discount -1 when the turn passes and +1 when the same player moves again.
Only for games whose graph fits in memory (tic-tac-toe, HSR, small Nim).
"""

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base


def key_ints(keys) -> np.ndarray:
  """Transposition keys as 64-bit ints (lane 1 in the high word).

  Args:
    keys: uint32[M, 2].

  Returns:
    np.ndarray uint64[M].
  """
  keys = np.asarray(keys, np.uint64)
  return keys[:, 0] | (keys[:, 1] << np.uint64(32))


@dataclasses.dataclass(frozen=True, eq=False)
class GameTable:
  """Every non-terminal position reachable from a root, with exact values.

  Rows are in breadth-first order (the root first); a position reached at
  several depths (Nim's key leaves the ply out) is kept once, as first seen.
  Compared by identity: the fields are arrays.

  Attributes:
    states: the positions as one batched state of numpy arrays [M].
    keys: uint64[M], their transposition keys (`key_ints`).
    values: f64[M], the minimax value for the player to move.
    move_values: f64[M, A], the exact value of each move for the player to
      move (reward + discount * value after it), -inf on illegal moves.
  """
  states: Any
  keys: np.ndarray
  values: np.ndarray
  move_values: np.ndarray

  def __len__(self) -> int:
    return len(self.keys)

  @functools.cached_property
  def _row_of_key(self) -> dict[int, int]:
    return {k: i for i, k in enumerate(self.keys.tolist())}

  def rows(self, keys) -> np.ndarray:
    """The rows of positions given by their keys.

    Args:
      keys: uint32[B, 2] transposition keys.

    Returns:
      np.ndarray int64[B].

    Raises:
      ValueError: for a key that is not in the table (a terminal position, or
        one not reachable from the table's root).
    """
    row_of_key = self._row_of_key
    rows = []
    for k in key_ints(keys).tolist():
      if k not in row_of_key:
        raise ValueError(f"position with key {k:#x} is not in the table: it is terminal "
                         "or not reachable from the enumerated root")
      rows.append(row_of_key[k])
    return np.asarray(rows, np.int64)


def _facts(state) -> dict[str, Any]:
  """What the enumeration reads of a batch of states (properties such as the
  key are computed, so they are computed here, inside the jitted chunk)."""
  return dict(key=state.key, legal=state.legal_action_mask, mover=state.current_player,
              terminated=state.terminated, rewards=state.rewards)


@functools.lru_cache(maxsize=None)
def _jitted(env):
  """(facts of states, (children, facts of children) after an action), jitted."""
  def step(states, action):
    children = env.step(states, action)
    return children, _facts(children)
  return jax.jit(_facts), jax.jit(step)


# States per call: one compile of each function serves every level.
_CHUNK = 256


def _chunked(fn, states, *args):
  """`fn(states [M], *args)` as numpy, run on chunks padded to `_CHUNK`."""
  m = len(states.ply)
  parts = []
  for start in range(0, m, _CHUNK):
    # Pads with the last state: the jitted functions see one shape only.
    index = np.minimum(np.arange(start, start + _CHUNK), m - 1)
    parts.append(fn(jax.tree.map(lambda x, index=index: x[index], states), *args))
  return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs])[:m], *parts)


def enumerate_game(env, state) -> GameTable:
  """Every non-terminal position reachable from one state, with exact values.

  Args:
    env: the env (small enough to enumerate).
    state: a single (unbatched) state, the root.

  Returns:
    GameTable with M rows, the root first.

  Raises:
    ValueError: if `state` is batched or already terminated.
  """
  if base.batch_ndim(state) != 0:
    raise ValueError(f"enumerate_game takes one state, got a batch of shape "
                     f"{jnp.shape(state.ply)}")
  if bool(state.terminated):
    raise ValueError("enumerate_game needs a position that is not terminated")
  frontier = jax.tree.map(np.asarray, base.stack([state]))
  levels = []   # (states, keys [M], child keys [M, A], terminal, reward, discount, legal)
  facts_of, step = _jitted(env)
  facts = _chunked(facts_of, frontier)
  while frontier is not None:
    keys = key_ints(facts["key"])
    legal = facts["legal"]
    mover = facts["mover"]
    m, num_actions = legal.shape
    child_keys = np.zeros((m, num_actions), np.uint64)
    terminal = np.zeros((m, num_actions), bool)
    reward = np.zeros((m, num_actions), np.float64)
    discount = np.zeros((m, num_actions), np.float64)
    next_states, next_facts = {}, {}
    for a in range(num_actions):
      children, child = _chunked(step, frontier, np.full((_CHUNK,), a, np.int32))
      child_keys[:, a] = key_ints(child["key"])
      terminal[:, a] = child["terminated"]
      reward[:, a] = child["rewards"][np.arange(m), mover]
      discount[:, a] = np.where(child["mover"] == mover, 1.0, -1.0)
      for i in np.flatnonzero(legal[:, a] & ~terminal[:, a]):
        k = int(child_keys[i, a])
        if k not in next_states:
          next_states[k] = jax.tree.map(lambda x, i=i: x[i], children)
          next_facts[k] = jax.tree.map(lambda x, i=i: x[i], child)
    levels.append((frontier, keys, child_keys, terminal, reward, discount, legal))
    frontier = (jax.tree.map(lambda *xs: np.stack(xs), *next_states.values())
                if next_states else None)
    facts = (jax.tree.map(lambda *xs: np.stack(xs), *next_facts.values())
             if next_facts else None)

  values: dict[int, float] = {}
  level_move_values = []
  for _, keys, child_keys, terminal, reward, discount, legal in reversed(levels):
    move_values = np.full(legal.shape, -np.inf)
    for i, k in enumerate(keys.tolist()):
      for a in np.flatnonzero(legal[i]):
        move_values[i, a] = reward[i, a] + (
            0.0 if terminal[i, a] else discount[i, a] * values[int(child_keys[i, a])])
      values[k] = float(move_values[i].max())
    level_move_values.append(move_values)
  level_move_values.reverse()

  all_keys = np.concatenate([level[1] for level in levels])
  _, first = np.unique(all_keys, return_index=True)
  first = np.sort(first)
  all_states = jax.tree.map(lambda *xs: np.concatenate(xs), *[level[0] for level in levels])
  return GameTable(
      states=jax.tree.map(lambda x: x[first], all_states),
      keys=all_keys[first],
      values=np.array([values[k] for k in all_keys[first].tolist()]),
      move_values=np.concatenate(level_move_values)[first])


@functools.lru_cache(maxsize=None)
def game_table(env) -> GameTable:
  """`enumerate_game` from the env's initial state, cached per env.

  Args:
    env: the env (hashable).

  Returns:
    GameTable.
  """
  return enumerate_game(env, env.init(jax.random.PRNGKey(0)))


def solve_game(env, state) -> tuple[float, dict[int, float]]:
  """Minimax value of the single state `state` for its player to move.

  Args:
    env: the env.
    state: a single (unbatched), non-terminal state.

  Returns:
    (root value, {64-bit key: value for the player to move} for every
    non-terminal state reachable from `state`).

  Raises:
    ValueError: as `enumerate_game`.
  """
  table = enumerate_game(env, state)
  return float(table.values[0]), dict(zip(table.keys.tolist(), table.values.tolist()))
