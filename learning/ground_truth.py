"""Exact move quality of an agent: figures for training curves.

Small games (tic-tac-toe, Nim, HSR): every reachable non-terminal position
with its exact value and the exact value of every move (`mcgs_jax.envs.exhaustive`,
enumerated once per env). A move *keeps the value* when its value equals
the position's (a won position stays won, a drawn one drawn; in a lost
position every legal move does).

Connect-4: Pascal Pons' test sets with the exact score of every column
(`mcgs_jax.envs.pons`, read from its `DATA_DIR`). A move is an *error*
when it does not preserve the position's outcome (win, draw or loss), as in
AlphaZero.jl's Pons benchmark; in a lost position no legal move is an
error. The error rate is 1 - the 'outcome-preserving' rate of
`mcgs_jax.experiments.connect4_accuracy`.

`evaluate(env, agent, rng)` gives the figures of whichever env as a flat
dict whose names can be metrics columns:
  keeps_value      share of positions where the move keeps the value
  wins_kept        among won positions, share where the move wins
  draws_kept       among drawn positions, share where the move keeps the
                   draw (games with draws only)
  critical_kept    among positions where some legal move loses value, share
                   where the agent's move does not
  c4_error_L3_R1   Connect-4 error rate on Test_L3_R1 (one per set)

`connect4_value_errors(eval_fn, params, rng)` measures the value head alone
on the same positions, under the same names `c4_error_<set>` (callers
prefix them): the share of positions whose value falls in the wrong
outcome band (win > 1/3, loss < -1/3, draw between) for the exact outcome.
"""

import functools
from typing import Any

import jax
import numpy as np

from mcgs_jax.envs import connect4
from mcgs_jax.envs import exhaustive
from mcgs_jax.envs import hsr
from mcgs_jax.envs import nim
from mcgs_jax.envs import pons
from mcgs_jax.envs import tictactoe
from mcgs_jax.learning import agents as agents_lib

# Pons' sets by difficulty (stones: L3 end game 29-41, L2 middle 15-28, L1
# beginning 1-14; R1..R3 easy to hard).
C4_SETS = {
    "L3_R1": "End-Easy",
    "L2_R1": "Middle-Easy",
    "L2_R2": "Middle-Medium",
    "L1_R1": "Beginning-Easy",
    "L1_R2": "Beginning-Medium",
    "L1_R3": "Beginning-Hard",
}
SMALL_GAMES = (tictactoe.TicTacToe, nim.Nim, hsr.HSR)
# Values are -1, 0 or +1; anything closer counts as equal.
_TOLERANCE = 1e-6


def keeps_value_rate(env: Any, agent: agents_lib.Agent, rng: jax.Array,
                     max_positions: int | None = None,
                     chunk_size: int = 128) -> dict[str, float]:
  """How often the agent's move keeps the exact value, over every reachable
  non-terminal position of a small game.

  Args:
    env: tic-tac-toe, a Nim variant or HSR (any env `mcgs_jax.envs.exhaustive` can
      enumerate).
    agent: the agent.
    rng: a PRNG key (agent randomness and the choice of positions).
    max_positions: evaluate a uniformly random subset of this many
      positions (None: all of them; tic-tac-toe has 4520).
    chunk_size: positions per agent call (padded: one compile).

  Returns:
    {'keeps_value', 'wins_kept', 'critical_kept', and 'draws_kept' where the
    game has drawn positions}: shares in [0, 1]. A share over no position
    (e.g. `wins_kept` in a sample without won positions) is NaN.

  Raises:
    ValueError: `max_positions` < 1.
  """
  if max_positions is not None and max_positions < 1:
    raise ValueError(f"max_positions must be >= 1 or None, got {max_positions}")
  table = exhaustive.game_table(env)
  choose_rng, act_rng = jax.random.split(rng)
  rows = np.arange(len(table))
  if max_positions is not None and max_positions < len(table):
    rows = np.sort(agents_lib.host_rng(choose_rng).choice(len(table), max_positions,
                                                          replace=False))
  states = jax.tree.map(lambda x: x[rows], table.states)
  actions = agents_lib.act_in_chunks(agent, act_rng, states, chunk_size)
  values = table.values[rows]
  move_values = table.move_values[rows]
  # An illegal move is worth -inf: it never keeps the value.
  chosen = np.take_along_axis(move_values, np.clip(actions, 0, move_values.shape[1] - 1)[:, None],
                              axis=1)[:, 0]
  chosen = np.where((actions >= 0) & (actions < move_values.shape[1]), chosen, -np.inf)
  kept = chosen >= values - _TOLERANCE
  legal = np.isfinite(move_values)
  critical = np.any(legal & (move_values < values[:, None] - _TOLERANCE), axis=1)
  figures = {
      "keeps_value": _share(kept, np.ones_like(kept)),
      "wins_kept": _share(kept, values > _TOLERANCE),
      "critical_kept": _share(kept, critical),
  }
  if np.any(np.abs(table.values) < _TOLERANCE):
    figures["draws_kept"] = _share(kept, np.abs(values) < _TOLERANCE)
  return figures


def _pons_sets(sets, positions_per_set):
  """(index, name, positions, states [M]) for each of Pons' sets; a missing
  file raises `FileNotFoundError` naming it (the sets ship with `envs`)."""
  for index, name in enumerate(sets):
    name = name.removeprefix("Test_")
    positions = pons.load_set(name, positions_per_set)
    states = jax.tree.map(lambda *xs: np.stack(xs),
                          *[jax.tree.map(np.asarray, connect4.from_moves(p.moves))
                            for p in positions])
    yield index, name, positions, states


def connect4_error_rates(agent: agents_lib.Agent, rng: jax.Array,
                         sets: tuple[str, ...] = tuple(C4_SETS),
                         positions_per_set: int | None = 100,
                         chunk_size: int = 100) -> dict[str, float]:
  """Connect-4 error rate of the agent on Pons' sets.

  Args:
    agent: a Connect-4 agent (search, raw policy, solver, ...).
    rng: a PRNG key.
    sets: set names without the `Test_` prefix, e.g. ("L3_R1", "L2_R2").
    positions_per_set: the first this many positions of each set (None:
      all 1000).
    chunk_size: positions per agent call (padded: one compile).

  Returns:
    {'c4_error_<set>': share of moves that lose the position's outcome}.

  Raises:
    ValueError: an unknown set name, or `positions_per_set` < 1.
    FileNotFoundError: a set's file is missing from `mcgs_jax.envs.pons.DATA_DIR`.
  """
  for name in sets:
    if name.removeprefix("Test_") not in C4_SETS:
      raise ValueError(f"unknown Pons set {name!r}; known: {', '.join(C4_SETS)}")
  if positions_per_set is not None and positions_per_set < 1:
    raise ValueError(f"positions_per_set must be >= 1 or None, got {positions_per_set}")
  figures = {}
  for index, name, positions, states in _pons_sets(sets, positions_per_set):
    actions = agents_lib.act_in_chunks(agent, jax.random.fold_in(rng, index), states, chunk_size)
    errors = sum(not p.preserves(int(a)) if 0 <= a < connect4.NUM_COLS else True
                 for p, a in zip(positions, actions))
    figures[f"c4_error_{name}"] = errors / len(positions)
  return figures


# A value above this (below its negative) reads as a win (a loss); a draw between.
VALUE_BAND = 1.0 / 3.0


@functools.partial(jax.jit, static_argnames="eval_fn")
def _values(params, rng, states, eval_fn):
  return eval_fn(params, rng, states)[1]


def connect4_value_errors(eval_fn: Any, params: Any, rng: jax.Array,
                          sets: tuple[str, ...] = tuple(C4_SETS),
                          positions_per_set: int | None = 100,
                          chunk_size: int = 100) -> dict[str, float]:
  """How often the network's value misreads the outcome of Pons' positions.

  The value (mover's view, in [-1, 1]) reads as a win above `VALUE_BAND`, a
  loss below `-VALUE_BAND` and a draw between; an error is a reading that
  differs from the exact outcome. It measures the value head alone, which a
  search leans on as the policy head improves.

  Args:
    eval_fn: `(params, rng, states) -> (logits, value)`, hashable.
    params: the network parameters.
    rng: a PRNG key (for `eval_fn`).
    sets: set names, e.g. ("L3_R1", "L2_R2").
    positions_per_set: the first this many positions of each set (None:
      all 1000).
    chunk_size: positions per network call (padded: one compile).

  Returns:
    {'c4_error_<set>': share of positions misread, 'c4_sign_error_<set>':
    share of the won and lost positions whose value has the wrong sign (no
    band; NaN for a set without them)}.

  Raises:
    FileNotFoundError: a set's file is missing from `mcgs_jax.envs.pons.DATA_DIR`.
  """
  figures = {}
  for index, name, positions, states in _pons_sets(sets, positions_per_set):
    values = agents_lib.map_in_chunks(
        lambda chunk, part, index=index: _values(
            params, jax.random.fold_in(rng, index * 1000 + chunk), part, eval_fn),
        states, chunk_size, np.float32)
    read = np.where(values > VALUE_BAND, 1, np.where(values < -VALUE_BAND, -1, 0))
    truth = np.sign([p.score for p in positions])
    figures[f"c4_error_{name}"] = float(np.mean(read != truth))
    # Without the band: a network trained on targets mixed with search values
    # keeps its values nearer 0, which the band reads as draws.
    decisive = truth != 0
    figures[f"c4_sign_error_{name}"] = (float(np.mean(np.sign(values[decisive]) != truth[decisive]))
                                        if decisive.any() else float("nan"))
  return figures


def evaluate(env: Any, agent: agents_lib.Agent, rng: jax.Array, *,
             max_positions: int | None = None,
             c4_sets: tuple[str, ...] = tuple(C4_SETS),
             positions_per_set: int | None = 100,
             chunk_size: int = 128) -> dict[str, float]:
  """The exact figures of `agent` for `env` (see the module docstring).

  Args:
    env: Connect-4, tic-tac-toe, a Nim variant or HSR.
    agent: the agent.
    rng: a PRNG key.
    max_positions: small games: a random subset of this many positions.
    c4_sets: Connect-4: the Pons sets to use.
    positions_per_set: Connect-4: the first this many positions of each set.
    chunk_size: positions per agent call.

  Returns:
    {figure name: value}: Connect-4 error rates per set (`c4_error_<set>`),
    or the value-keeping move rates of a small game.

  Raises:
    ValueError: for an env without ground truth here (e.g. pgx games).
  """
  if isinstance(env, connect4.Connect4):
    return connect4_error_rates(agent, rng, c4_sets, positions_per_set, chunk_size)
  if isinstance(env, SMALL_GAMES):
    return keeps_value_rate(env, agent, rng, max_positions, chunk_size)
  raise ValueError(f"no ground truth for env {getattr(env, 'id', env)!r}: supported are "
                   "connect4 (Pons' sets), tictactoe, nim variants and hsr")


def _share(kept: np.ndarray, among: np.ndarray) -> float:
  count = int(np.sum(among))
  return float(np.sum(kept & among) / count) if count else float("nan")
