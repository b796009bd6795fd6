"""Selection-time move restrictions: progressive pruning and minimum root visits.

Progressive pruning (Bouzy and Helmstetter 2003; Hsu's lecture "Monte-Carlo
Game Tree Search: Advanced Techniques", "Progressive pruning"): each move a of
a node has a mean mu = Q(s, a) and a standard error sigma / sqrt(N(s, a)), so
an interval [mu_l, mu_r] = [mu - r_d sigma / sqrt(N), mu + r_d sigma / sqrt(N)].
A move whose right bound mu_r lies below another move's left bound mu_l is
statistically inferior and left out of selection. Both moves need
`pruning_min_visits` visits; a node with more than
`pruning_max_visits_per_move` * #legal visits prunes nothing new. "soft"
recomputes the pruned set from the current statistics at every descent (a
move comes back once it is no longer inferior to an active move); "hard"
keeps a mask (`PruningState.pruned`, its record in the graph) updated along
each backed-up path, and a pruned move never comes back. The move with the highest left bound is never
inferior, and where the solver has pruned every remaining move the pruning is
ignored, so a node always keeps a move.

sigma: the engine keeps no per-edge second moment (the "mcgs" corrections and
the "katago" recomputation make backed-up values no sample of the move), so
sigma is the Bhatia-Davis bound sqrt((value_max - mu)(mu - value_min)): the
largest standard deviation any value distribution on [value_min, value_max]
with mean mu can have, and the exact one when every outcome is a win or a loss
(the lecture's remark that a 0/1 result's mean fixes its deviation). It
prunes less than a sample estimate would.

Minimum root visits (MantisShrimp, Aggarwal and Shashank): "all moves that
have been visited less than 0.5%, i.e. less than 4 times [of 800] will be
visited first": a root move with N(root, a) < min_root_visit_fraction *
num_simulations gets an infinite score; among several, the highest prior first.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import plugins as plugins_lib


# The record's name in `Graph.enhancements` (hard pruning only).
NAME = "pruning"


@dataclasses.dataclass(frozen=True)
class Settings(config_lib.Fields):
  """The SearchConfig fields pruning reads, what its plug-ins are bound to
  (`rules.of`); every function here also takes the SearchConfig."""
  progressive_pruning: str
  hard_pruning: bool
  pruning_r_d: float
  pruning_min_visits: int
  pruning_max_visits_per_move: float
  min_root_visit_fraction: float
  num_simulations: int
  recomputes_values: bool
  value_min: float
  value_max: float


@chex.dataclass(frozen=True)
class PruningState(graph_lib.EnhancementState):
  """Hard pruning's mask.

  Attributes:
    pruned: bool[B, N, A] (one game: [N, A]), the edge is pruned for good.
  """
  pruned: chex.Array

  @classmethod
  def empty(cls, batch_size: int, capacity: int, num_actions: int) -> "PruningState":
    """Nothing pruned: bool[B, N, A] False.

    Args:
      batch_size: B.
      capacity: N.
      num_actions: A.

    Returns:
      The record.
    """
    return cls(pruned=jnp.zeros((batch_size, capacity, num_actions), bool))


def value_std_bound(mean: chex.Array, config: config_lib.SearchConfig) -> chex.Array:
  """The Bhatia-Davis bound on the standard deviation of a bounded value.

  sigma = sqrt((value_max - mean)(mean - value_min)) (see the module
  docstring).

  Args:
    mean: f32, any shape.
    config: reads `value_min`, `value_max`.

  Returns:
    f32 of the shape of `mean`.
  """
  return jnp.sqrt(jnp.maximum((config.value_max - mean) * (mean - config.value_min), 0.0))


def _edge_q(graph, node, config, proofs):
  if config.recomputes_values:
    return graph_lib.edge_values(graph, node, None if proofs is None else proofs(graph))
  return graph.edge_q[node]


def inferior_moves(graph: graph_lib.Graph, node: chex.Array, allowed: chex.Array,
                   config: config_lib.SearchConfig, proofs: Any = None) -> chex.Array:
  """The moves of `node` of ONE game that are statistically inferior.

  Inferior to another move among `allowed`, both with at least
  `pruning_min_visits` visits; none above the node's maximum visits.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    allowed: bool[A], the moves compared.
    config: reads the `pruning_*` fields and the value bounds.
    proofs: the solver's `plugins.Plugins.proofs` (None without): in
      "katago" mode a proven child's value is exact.

  Returns:
    bool[A].
  """
  visits = graph.edge_visits[node]
  mean = _edge_q(graph, node, config, proofs)
  half = (config.pruning_r_d * value_std_bound(mean, config)
          / jnp.sqrt(jnp.maximum(visits, 1).astype(jnp.float32)))
  eligible = allowed & (visits >= config.pruning_min_visits)
  best_left = jnp.max(jnp.where(eligible, mean - half, -jnp.inf))
  num_legal = jnp.sum(graph.child[node] != graph_lib.ILLEGAL)
  pruning = graph.visits[node] <= config.pruning_max_visits_per_move * num_legal
  return eligible & (mean + half < best_left) & pruning


def keep_unpruned(graph: graph_lib.Graph, node: chex.Array, allowed: chex.Array,
                  config: config_lib.SearchConfig, proofs: Any = None) -> chex.Array:
  """`allowed` without the progressively pruned moves of `node` (ONE game).

  `allowed` itself where that would leave no move.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    allowed: bool[A], the moves selection may take otherwise.
    config: reads `progressive_pruning`.
    proofs: as `inferior_moves`'.

  Returns:
    bool[A].
  """
  pruned = jnp.zeros_like(allowed)
  if config.hard_pruning:
    pruned = graph.enhancements[NAME].pruned[node]
  if config.progressive_pruning == "soft":
    pruned = inferior_moves(graph, node, allowed, config, proofs)
  kept = allowed & ~pruned
  return jnp.where(jnp.any(kept), kept, allowed)


def update_hard_pruning(graph: graph_lib.Graph, path_nodes: chex.Array, length: chex.Array,
                        allowed_fn, config: config_lib.SearchConfig,
                        proofs: Any = None) -> graph_lib.Graph:
  """Hard pruning of ONE game after a backup.

  The path's nodes (the only ones whose statistics changed) add their newly
  inferior moves to `Graph.pruned`.

  Args:
    graph: ONE game's graph [N, A], backed up.
    path_nodes: int32[D], the path's nodes (D = the longest path).
    length: int32 scalar, the path's edges.
    allowed_fn: `(graph, node) -> bool[A]`, the moves selection may take
      (legal, not proven lost, not pruned yet).
    config: SearchConfig.
    proofs: as `inferior_moves`'.

  Returns:
    The Graph with `PruningState.pruned` [N, A] updated.
  """
  def newly_pruned(node):
    allowed = allowed_fn(graph, node)
    return allowed & inferior_moves(graph, node, allowed, config, proofs)

  own = graph.enhancements[NAME]
  rows = jnp.where(jnp.arange(path_nodes.shape[0]) < length, path_nodes, graph.capacity)
  pruned = own.pruned[path_nodes] | jax.vmap(newly_pruned)(path_nodes)
  # The nodes of a path are distinct: one scatter writes them all.
  return graph_lib.with_state(graph, NAME, own.replace(
      pruned=own.pruned.at[rows].set(pruned, mode="drop")))


def after_backup(graph: graph_lib.Graph, sel: graph_lib.Selection, length: chex.Array,
                 leaf_value: chex.Array, plugins: Any, config: config_lib.SearchConfig,
                 proofs: Any = None) -> graph_lib.Graph:
  """Hard pruning's `plugins.Plugins.after_backup` hook (ONE game).

  Args:
    graph: ONE game's graph, backed up.
    sel: the simulation's Selection.
    length: int32, the path's edges backed up (0: none).
    leaf_value: f32, unused.
    plugins: the search's Plugins (the move filter).
    config: SearchConfig.
    proofs: as `inferior_moves`'.

  Returns:
    The Graph with `PruningState.pruned` updated.
  """
  del leaf_value
  allowed = lambda g, node: plugins_lib.allowed_moves(g, node, plugins)
  return update_hard_pruning(graph, sel.path_nodes, length, allowed, config, proofs)


def force_min_root_visits(node: chex.Array, scores: chex.Array, edge_visits: chex.Array,
                          prior: chex.Array, config: config_lib.SearchConfig) -> chex.Array:
  """MantisShrimp's minimum root visits on ONE node's selection scores.

  Args:
    node: int32, the node (only the root, 0, is affected).
    scores: f32[A], PUCT scores, -inf on moves selection may not take.
    edge_visits: f32[A], N(node, a) (pending leaves of the step included).
    prior: f32[A].
    config: reads `min_root_visit_fraction`, `num_simulations`.

  Returns:
    f32[A]: while some allowed root move has fewer than
    min_root_visit_fraction * num_simulations visits, only those moves keep
    a score, their prior (the highest prior first); `scores` otherwise.
  """
  minimum = config.min_root_visit_fraction * config.num_simulations
  starved = (node == 0) & (scores > -jnp.inf) & (edge_visits < minimum)
  return jnp.where(jnp.any(starved), jnp.where(starved, prior, -jnp.inf), scores)
