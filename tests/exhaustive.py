"""Exact game values by full enumeration (ground truth for small games).

Walks the game graph level by level with the env's own (batched) `step`,
merging states by transposition key, then does backward induction with the
search's sign rule: Q(s, a) = reward to the mover + discount * V(child), the
discount -1 when the turn passes and +1 when the same player moves again.
Only for games whose graph fits in memory (tic-tac-toe, HSR, small Nim).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from envs import base


def _key_ints(keys) -> list[int]:
  keys = np.asarray(keys, np.uint64)
  return list((keys[:, 0] | (keys[:, 1] << np.uint64(32))).tolist())


@functools.lru_cache(maxsize=None)
def _batched_step(env):
  return jax.jit(env.step)


def _pad(states, size):
  """Numpy states [M] -> jax states [size] (repeats the last), to reuse compiles."""
  m = len(states.ply)
  index = np.minimum(np.arange(size), m - 1)
  return jax.tree.map(lambda x: jnp.asarray(x[index]), states)


def solve_game(env, state) -> tuple[float, dict[int, float]]:
  """Minimax value of the single state `state` for its player to move.

  Returns:
    (root value, {64-bit key: value for the player to move} for every
    non-terminal state reachable from `state`).
  """
  step = _batched_step(env)
  keys_of_root = _key_ints(np.asarray(base.stack([state]).key))[0]
  frontier = jax.tree.map(np.asarray, base.stack([state]))
  levels = []   # (keys [M], child keys [M, A], terminal, reward, discount, legal)
  while frontier is not None:
    keys = _key_ints(frontier.key)
    legal = np.asarray(frontier.legal_action_mask)
    mover = np.asarray(frontier.current_player)
    m, num_actions = legal.shape
    padded = _pad(frontier, max(8, 1 << (m - 1).bit_length()))
    child_keys = np.zeros((m, num_actions), np.uint64)
    terminal = np.zeros((m, num_actions), bool)
    reward = np.zeros((m, num_actions), np.float64)
    discount = np.zeros((m, num_actions), np.float64)
    next_states = {}
    for a in range(num_actions):
      children = step(padded, jnp.full(padded.ply.shape, a, jnp.int32))
      children = jax.tree.map(lambda x: np.asarray(x)[:m], children)
      child_keys[:, a] = _key_ints(children.key)
      terminal[:, a] = np.asarray(children.terminated)
      reward[:, a] = np.asarray(children.rewards)[np.arange(m), mover]
      discount[:, a] = np.where(np.asarray(children.current_player) == mover, 1.0, -1.0)
      for i in np.flatnonzero(legal[:, a] & ~terminal[:, a]):
        k = int(child_keys[i, a])
        if k not in next_states:
          next_states[k] = jax.tree.map(lambda x, i=i: x[i], children)
    levels.append((keys, child_keys, terminal, reward, discount, legal))
    frontier = (jax.tree.map(lambda *xs: np.stack(xs), *next_states.values())
                if next_states else None)

  values: dict[int, float] = {}
  for keys, child_keys, terminal, reward, discount, legal in reversed(levels):
    for i, k in enumerate(keys):
      best = -np.inf
      for a in np.flatnonzero(legal[i]):
        q = reward[i, a] + (0.0 if terminal[i, a] else
                            discount[i, a] * values[int(child_keys[i, a])])
        best = max(best, q)
      values[k] = best
  return values[keys_of_root], values
