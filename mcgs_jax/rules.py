"""What a search runs, resolved once from its SearchConfig, and the move filter.

The phases do not read the enhancements' switches off the config: they ask
`of(config)` (computed once per config) which rules are on, and an
enhancement that is off is never entered. The switches are read here, and
each enhancement's own settings in its module:

  solver        `solver.Solver` (its `bounds`: score-bounded) or None
  gumbel_root   the root follows Gumbel sequential halving (`gumbel`)
                instead of PUCT
  rave          AMAF statistics blended into Q (`rave`)
  explores      epsilon-greedy or constraint-first trajectories
                (`exploration`)
  prunes_moves  progressive pruning filters the moves (`pruning`)
  several_leaves  L > 1 leaves per game per step (`leaves`)

`allowed_moves` is the move filter the phases share (legal, not proven lost
by the solver, not pruned): the descent, the exploration plans, the Gumbel
root and the hard-pruning backup read it.
"""

import dataclasses
import functools

import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import pruning
from mcgs_jax import solver as solver_lib


@dataclasses.dataclass(frozen=True)
class Rules:
  """The enhancements a search runs (see the module docstring)."""
  solver: solver_lib.Solver | None = None
  gumbel_root: bool = False
  rave: bool = False
  explores: bool = False
  prunes_moves: bool = False
  several_leaves: bool = False


@functools.lru_cache(maxsize=256)
def of(config: config_lib.SearchConfig) -> Rules:
  """The rules `config` turns on.

  Args:
    config: SearchConfig.

  Returns:
    Rules.
  """
  return Rules(
      solver=solver_lib.Solver(bounds=config.solver_bounds) if config.solver else None,
      gumbel_root=config.root_policy == "gumbel", rave=config.rave,
      explores=config.eps_greedy > 0 or config.eps_constraint > 0,
      prunes_moves=config.progressive_pruning != "off",
      several_leaves=config.leaves_per_step > 1)


def allowed_moves(graph, node, config, child_row=None):
  """The legal moves not pruned by the solver nor by progressive pruning.

  Progressive pruning always leaves one move.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    config: SearchConfig.
    child_row: optional int32[A], `graph.child[node]` where already read.

  Returns:
    bool[A].
  """
  rules = of(config)
  if child_row is None:
    child_row = graph_lib.take(graph.child, node)
  allowed = child_row != graph_lib.ILLEGAL
  if rules.solver is not None:
    allowed &= ~solver_lib.pruned_moves(graph, node, bounds=rules.solver.bounds)
  if rules.prunes_moves:
    allowed = pruning.keep_unpruned(graph, node, allowed, config)
  return allowed


def best(score, allowed):
  """The allowed index of the highest score.

  Args:
    score: f32[A].
    allowed: bool[A].

  Returns:
    int32 scalar.
  """
  return jnp.argmax(jnp.where(allowed, score, -jnp.inf)).astype(jnp.int32)


def most_visited_action(graph, node, config):
  """The most visited allowed move of `node` (higher prior breaks ties).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    config: SearchConfig.

  Returns:
    int32 scalar.
  """
  return best(graph.edge_visits[node] + 0.5 * graph.prior[node],
              allowed_moves(graph, node, config))


def is_proven(graph, child, config):
  """Whether `child` is a stored node the solver has proven.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    child: int32 scalar, a child index (< 0: none stored).
    config: SearchConfig (False without the solver).

  Returns:
    bool scalar.
  """
  return ((child >= 0) & (graph.solved[jnp.maximum(child, 0)] != graph_lib.UNKNOWN)
          & (of(config).solver is not None))
