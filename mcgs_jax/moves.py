"""The moves selection may take at a node of ONE game, shared by the phases.

`allowed_moves` is the move filter (legal, not proven lost by the solver,
not pruned); the descent, the exploration plans, the Gumbel root and the
hard-pruning backup all read it.
"""

import jax.numpy as jnp

from mcgs_jax import graph as graph_lib
from mcgs_jax import pruning
from mcgs_jax import solver


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
  if child_row is None:
    child_row = graph_lib.take(graph.child, node)
  allowed = child_row != graph_lib.ILLEGAL
  if config.solver:
    allowed &= ~solver.pruned_moves(graph, node, bounds=config.solver_bounds)
  if config.progressive_pruning != "off":
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
    config: SearchConfig (reads `solver`: False without it).

  Returns:
    bool scalar.
  """
  return (child >= 0) & (graph.solved[jnp.maximum(child, 0)] != graph_lib.UNKNOWN) & config.solver
