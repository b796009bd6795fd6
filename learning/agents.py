"""Agents: what plays a move for a batch of positions, for evaluation.

An agent maps `(rng, states [B])` to moves int32[B]. Device agents (search,
raw policy, uniform random) run jitted functions cached by jax per static
argument: one compile per (env, eval_fn, config) and batch shape, shared by
every agent with the same ones. Host agents (the exact players) look moves up
in Python; they are for ground truth and tests, not for speed.

  SearchAgent(env, eval_fn, params, config)   `mcgs_jax.search`, its `out.action`
  PolicyAgent(eval_fn, params)                argmax of the prior over legal moves
  RandomAgent()                               a uniformly random legal move
  ExactAgent(env)                             a value-keeping move of a small game
                                              (full enumeration, `mcgs_jax.envs.exhaustive`)
  Connect4SolverAgent()                       a best move by the exact Connect-4 solver
  rollout_baseline(env)                       MCGS with one random rollout per leaf,
                                              800 simulations, no network

Agents are frozen dataclasses compared by identity (`eq=False`): a search or
policy agent holds network parameters, arrays that have no hashable value.
"""

import abc
import dataclasses
import functools
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import mcgs_jax
from mcgs_jax.envs import base
from mcgs_jax.envs import bits
from mcgs_jax.envs import connect4
from mcgs_jax.envs import evaluators
from mcgs_jax.envs import exhaustive
from mcgs_jax import dual


class Agent(abc.ABC):
  """Plays one move in each position of a batch.

  Attributes:
    name: a label for tables and ratings.
  """
  name: str

  @abc.abstractmethod
  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    """Moves for a batch of non-terminated positions.

    Args:
      rng: a PRNG key.
      states: a batch of env states [B] (jax or numpy arrays).

    Returns:
      int32[B] actions, on the host.
    """


@functools.partial(jax.jit, static_argnames=("env", "eval_fn", "config"))
def _search_actions(params, rng, states, env, eval_fn, config):
  if isinstance(config, dual.DualConfig):
    return dual.search(params, rng, states, env, eval_fn, config).action
  return mcgs_jax.search(params, rng, states, env, eval_fn, config).action


@dataclasses.dataclass(frozen=True, eq=False)
class SearchAgent(Agent):
  """`mcgs_jax.search` with a fixed budget; plays `SearchOutput.action`.

  Attributes:
    env: the env (static jit argument).
    eval_fn: `(params, rng, state) -> (prior_logits, value)`, hashable.
    params: the network parameters passed to `eval_fn` (None for none).
    config: the search's `SearchConfig`, or a `mcgs_jax.dual.DualConfig`
      (then `eval_fn` is a `DualEval`).
    name: a label.
  """
  env: Any
  eval_fn: Any
  params: Any = None
  config: mcgs_jax.SearchConfig = mcgs_jax.SearchConfig()
  name: str = "mcgs"

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    _check_batch(states)
    return np.asarray(_search_actions(self.params, rng, states, self.env, self.eval_fn,
                                      self.config), np.int32)


@functools.partial(jax.jit, static_argnames=("eval_fn",))
def _policy_actions(params, rng, states, eval_fn):
  logits, _ = eval_fn(params, rng, states)
  masked = jnp.where(states.legal_action_mask, logits, -jnp.inf)
  return jnp.argmax(masked, axis=-1).astype(jnp.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class PolicyAgent(Agent):
  """The raw network policy: argmax of `eval_fn`'s prior over legal moves
  (deterministic; ties go to the lowest action).

  Attributes:
    eval_fn: `(params, rng, state) -> (prior_logits, value)`, hashable.
    params: the network parameters.
    name: a label.
  """
  eval_fn: Any
  params: Any = None
  name: str = "policy"

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    _check_batch(states)
    return np.asarray(_policy_actions(self.params, rng, states, self.eval_fn), np.int32)


@jax.jit
def _random_actions(rng, legal):
  return base.random_legal_action(rng, legal)


@dataclasses.dataclass(frozen=True, eq=False)
class RandomAgent(Agent):
  """A uniformly random legal move."""
  name: str = "random"

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    _check_batch(states)
    return np.asarray(_random_actions(rng, jnp.asarray(states.legal_action_mask)), np.int32)


@dataclasses.dataclass(frozen=True, eq=False)
class ExactAgent(Agent):
  """A perfect player of a small game: a move whose exact value equals the
  position's (`mcgs_jax.envs.exhaustive.game_table`, enumerated once per env on first
  use; tic-tac-toe takes a few seconds).

  Attributes:
    env: a game small enough to enumerate (tic-tac-toe, Nim, HSR).
    randomize: pick uniformly among the value-keeping moves (True), or the
      lowest such action (False: deterministic).
    name: a label.
  """
  env: Any
  randomize: bool = True
  name: str = "exact"

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    """Value-keeping moves read off the env's game table.

    Args:
      rng: a PRNG key (ties are broken with it when `randomize`).
      states: a batch of env states [B] (jax or numpy arrays).

    Returns:
      int32[B] actions, on the host.

    Raises:
      ValueError: states not batched [B], or a position outside the env's game
        table (terminal, or not reachable from the initial state).
    """
    _check_batch(states)
    table = exhaustive.game_table(self.env)
    move_values = table.move_values[table.rows(states.key)]
    return _best_moves(move_values, host_rng(rng) if self.randomize else None)


@dataclasses.dataclass(frozen=True, eq=False)
class Connect4SolverAgent(Agent):
  """A best Connect-4 move by the exact solver (`mcgs_jax.envs.connect4_solver`, Pons'
  scores: the fastest win, the slowest loss).

  Works from the state's bitboards, so no move string is needed. The cost
  grows steeply with the empty cells: end games take well under a
  millisecond, positions with 15-28 stones milliseconds, but openings with
  under 10 stones can take seconds to minutes per position (see the
  solver table in docs/benchmarks.md), so use it on positions with enough stones. The
  solver's 128 MiB table is allocated on first use.

  Attributes:
    randomize: pick uniformly among the best columns (True), or the lowest
      (False: deterministic).
    name: a label.
  """
  randomize: bool = False
  name: str = "solver"

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    _check_batch(states)
    states = jax.tree.map(np.asarray, states)
    move_values = np.stack([
        solver_move_values(states.position[i], states.mask[i], int(states.ply[i]))
        for i in range(len(states.ply))])
    return _best_moves(move_values, host_rng(rng) if self.randomize else None)


def rollout_baseline(env: Any, num_simulations: int = 800) -> SearchAgent:
  """MCGS with one uniformly random rollout per leaf and no network.

  The fixed opponent that training progress is measured against.

  Args:
    env: the env.
    num_simulations: simulations per move.

  Returns:
    A SearchAgent named "mcgs-rollout-<num_simulations>".
  """
  return SearchAgent(env=env, eval_fn=evaluators.rollout_eval(env, num_rollouts=1),
                     params=None, config=mcgs_jax.SearchConfig(num_simulations=num_simulations),
                     name=f"mcgs-rollout-{num_simulations}")


def solver_column_scores(position: Any, mask: Any, ply: int) -> list:
  """Pons score after each column of one Connect-4 position.

  From the side that moves next there (None for a full column), as
  `mcgs_jax.envs.connect4_solver.solve_columns` but from bitboards.

  Args:
    position: uint32[2], the stones of the player to move (stored form).
    mask: uint32[2], all stones.
    ply: the number of stones.

  Returns:
    A list of 7 ints or None.
  """
  # Imported here: numba compiles the solver on first use.
  from mcgs_jax.envs import connect4_solver  # pylint: disable=g-import-not-at-top
  solver = connect4_solver.default_solver()
  position, mask = bits.to_int(position), bits.to_int(mask)
  height = connect4.NUM_ROWS
  scores = []
  for col in range(connect4.NUM_COLS):
    if mask & (1 << (col * (height + 1) + height - 1)):
      scores.append(None)
      continue
    child_mask = mask | (mask + (1 << (col * (height + 1))))
    if connect4.has_four_int(position | (child_mask ^ mask)):
      # The mover wins with its (ply // 2 + 1)-th stone.
      scores.append(-(22 - (ply // 2 + 1)))
    else:
      scores.append(solver.solve_bits(position ^ mask, child_mask, ply + 1))
  return scores


def solver_move_values(position, mask, ply) -> np.ndarray:
  """Each column's exact score for the player to move.

  Args:
    position: uint32[2], the stones of the player to move (stored form).
    mask: uint32[2], all stones.
    ply: the number of stones.

  Returns:
    np.ndarray f64[7], Pons' scores, -inf for a full column.
  """
  return np.array([-np.inf if s is None else -float(s)
                   for s in solver_column_scores(position, mask, ply)])


def _best_moves(move_values: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
  """int32[B]: a move of maximal value per row of f64[B, A] (-inf: illegal);
  uniformly among ties with `rng`, else the lowest."""
  best = move_values >= move_values.max(axis=1, keepdims=True) - 1e-9
  if rng is None:
    return np.argmax(best, axis=1).astype(np.int32)
  # A random key per move; the largest among the best moves wins.
  draws = np.where(best, rng.random(best.shape), -1.0)
  return np.argmax(draws, axis=1).astype(np.int32)


def host_rng(rng: jax.Array) -> np.random.Generator:
  """A numpy generator seeded from a jax PRNG key (for host-side choices).

  Args:
    rng: a jax PRNG key.

  Returns:
    np.random.Generator.
  """
  return np.random.default_rng(np.asarray(jax.random.bits(rng, (4,), jnp.uint32)).tolist())


def _check_batch(states: Any) -> None:
  if base.batch_ndim(states) != 1:
    raise ValueError(f"agents act on a batch of states [B], got `ply` of shape "
                     f"{np.shape(states.ply)}")


def act_in_chunks(agent: Agent, rng: jax.Array, states: Any, chunk_size: int) -> np.ndarray:
  """The agent's moves for M positions, `chunk_size` at a time.

  Every chunk is padded to `chunk_size` (the last position repeated), so one
  compile serves all chunks: of a jitted agent, and of the jnp ops behind
  state properties (keys, legal masks) that host agents read.

  Args:
    agent: the agent.
    rng: a PRNG key (folded with the chunk index).
    states: a batch of states [M] (numpy or jax arrays), M >= 1.
    chunk_size: positions per call.

  Returns:
    int32[M] actions.

  Raises:
    ValueError: `chunk_size` < 1, or as `agent.act`.
  """
  return map_in_chunks(lambda chunk, part: agent.act(jax.random.fold_in(rng, chunk), part),
                       states, chunk_size, np.int32)


def map_in_chunks(fn: Any, states: Any, chunk_size: int, dtype: Any) -> np.ndarray:
  """`fn` over M positions, `chunk_size` at a time, each chunk padded to
  `chunk_size` (the last position repeated) so that one compile serves all.

  Args:
    fn: `(chunk index, states [chunk_size]) -> array [chunk_size, ...]`.
    states: a batch of states [M] (numpy or jax arrays; `ply` gives M).
    chunk_size: positions per call.
    dtype: the result's dtype.

  Returns:
    np.ndarray [M, ...], the rows of the padding dropped.

  Raises:
    ValueError: `chunk_size` < 1.
  """
  if chunk_size < 1:
    raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
  count = int(np.shape(states.ply)[0])
  if count == 0:
    return np.zeros((0,), dtype)
  results = []
  for chunk, start in enumerate(range(0, count, chunk_size)):
    size = min(chunk_size, count - start)
    index = start + np.minimum(np.arange(chunk_size), size - 1)
    # Gathered on the host: a device gather would compile once per count M.
    part = jax.tree.map(lambda x, index=index: np.asarray(x)[index], states)
    results.append(np.asarray(fn(chunk, part))[:size])
  return np.concatenate(results).astype(dtype)


# Search agents that measure themselves (mcgs-jax mcgs-vs-mcts's match rows).
_GRAPH_BYTES = {}


@functools.partial(jax.jit, static_argnames=("env", "eval_fn", "config"))
def measured_search(params, rng, states, env, eval_fn, config):
  """One jitted search and its counters per game.

  Args:
    params: the evaluator's parameters.
    rng: a PRNG key.
    states: the batch of root states [B].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: the evaluator. Static.
    config: `mcgs_jax.SearchConfig`. Static.

  Returns:
    (int32[B] actions, dict of int32[B] counters: nn_evals, simulations,
    nodes, overflows, transposition_hits, tt_cache_hits).
  """
  out = mcgs_jax.search(params, rng, states, env, eval_fn, config)
  stats = out.stats
  return out.action, dict(nn_evals=stats.nn_evals, simulations=stats.simulations,
                          nodes=stats.nodes_used, overflows=stats.capacity_overflows,
                          transposition_hits=stats.transposition_hits,
                          tt_cache_hits=stats.tt_cache_hits)


def graph_bytes(env: Any, eval_fn: Any, config: mcgs_jax.SearchConfig,
                params: Any = None) -> tuple[int, int, int]:
  """A search's memory per game, from the shapes of its graph (traced, not run).

  Args:
    env: the env or `mcgs_jax.Model`.
    eval_fn: the evaluator.
    config: the search's `mcgs_jax.SearchConfig`.
    params: the evaluator's parameters.

  Returns:
    (bytes per node with its edges, hash-table bytes, bytes allocated) per
    game.
  """
  cache_key = (env, eval_fn, config)
  if cache_key in _GRAPH_BYTES:
    return _GRAPH_BYTES[cache_key]
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  graph = jax.eval_shape(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn,
                                           config=config),
                         params, jax.random.PRNGKey(0), state).graph
  per_node = table = 0
  for field in dataclasses.fields(graph):
    for leaf in jax.tree.leaves(getattr(graph, field.name)):
      size = int(np.prod(leaf.shape[1:])) * leaf.dtype.itemsize
      if field.name == "table":
        table += size
      elif field.name not in mcgs_jax.graph.GAME_FIELDS:
        per_node += size // max(leaf.shape[1], 1)
  allocated = per_node * config.node_capacity + table
  _GRAPH_BYTES[cache_key] = (per_node, table, allocated)
  return per_node, table, allocated


@dataclasses.dataclass(frozen=True, eq=False)
class MeasuredAgent(SearchAgent):
  """A `SearchAgent` that keeps running sums of its searches' counters and
  wall time (`tally`), for the rows of a match."""
  tally: dict = dataclasses.field(default_factory=dict)

  def act(self, rng: jax.Array, states: Any) -> np.ndarray:
    start = time.perf_counter()
    actions, stats = measured_search(self.params, rng, states, self.env, self.eval_fn,
                                      self.config)
    actions = np.asarray(actions, np.int32)
    elapsed = time.perf_counter() - start
    stats = {k: np.asarray(v) for k, v in stats.items()}
    tally = self.tally
    # The first call may compile: it is left out of the time per move.
    if "searches" in tally:
      tally["timed_searches"] = tally.get("timed_searches", 0) + len(actions)
      tally["seconds"] = tally.get("seconds", 0.0) + elapsed
    tally["searches"] = tally.get("searches", 0) + len(actions)
    for k, v in stats.items():
      tally[k] = tally.get(k, 0) + int(v.sum())
    tally["max_nn_evals"] = max(tally.get("max_nn_evals", 0), int(stats["nn_evals"].max()))
    return actions

  def summary(self) -> dict:
    """Means per search of the counters.

    Returns:
      dict: nn_evals, simulations, nodes, bytes, ms_per_move (compiling
      calls left out), max_nn_evals, overflows.
    """
    t = self.tally
    n = max(t.get("searches", 0), 1)
    per_node, table, _ = graph_bytes(self.env, self.eval_fn, self.config, self.params)
    nodes = t.get("nodes", 0) / n
    return dict(nn_evals=round(t.get("nn_evals", 0) / n, 2),
                simulations=round(t.get("simulations", 0) / n, 2), nodes=round(nodes, 2),
                bytes=round(nodes * per_node + table),
                ms_per_move=round(1e3 * t.get("seconds", 0.0)
                                  / max(t.get("timed_searches", 0), 1), 3), max_nn_evals=t.get("max_nn_evals", 0),
                overflows=t.get("overflows", 0))
