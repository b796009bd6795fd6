"""What the enhancements contribute to the search phases: the `Plugins` record.

The phases (`selection`, `expansion`, `backup`) import no enhancement: each
takes a `Plugins`, assembled once per config by `rules.of`, and calls what it
holds, as `engine.simulation_step` takes its selection rule and mctx its
`root_action_selection_fn`. Every hook is an enhancement's function bound to
its own settings; an enhancement that is off contributes nothing (an empty
tuple, None, False), so its code is never entered and its arrays never
allocated.

The move filter the phases share (`allowed_moves`: legal, then each filter
in turn) and the reads built on it live here too.
"""

import dataclasses
from typing import Any, Callable

import chex
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib


@dataclasses.dataclass(frozen=True)
class Plugins:
  """The hooks of the enhancements a search runs (ONE game's view unless said).

  Attributes:
    states: (name, `graph.EnhancementState` subclass) of each record the
      graph holds (`Graph.enhancements`).
    move_filters: `(graph, node, allowed bool[A]) -> bool[A]`, applied in
      turn to the legal moves (the solver's proven losses, progressive
      pruning).
    adjust_q: `(graph, node, q f32[A], edge_visits f32[A]) -> f32[A]`, the
      Q the PUCT scores read (RAVE's blend); None: Q itself.
    adjust_scores: `(node, scores f32[A], edge_visits f32[A], prior f32[A])
      -> f32[A]`, applied to the PUCT scores (minimum root visits).
    root_scores: `(graph, allowed bool[A], rows) -> f32[A]`, the root's
      scores instead of PUCT's (the Gumbel root), read once per descent.
    interior_scores: `(graph, node, allowed, rows) -> f32[A]`, the scores
      below such a root.
    plan: `(graph [B], rng, model, plugins) -> plan [B]`, each game's
      exploration plan for a descent (`plan.active` bool, `plan.depth`
      int32: the line is followed above it; `plan.start` the first edge the
      backup updates); None: no exploration.
    explore_action: `(graph, node, puct_action, plan, plugins) -> int32`,
      the move at a plan's branch node.
    proofs: `(graph) -> int32[..., N]`, the solver's codes of the nodes
      (`graph.UNKNOWN`, `WIN`, `LOSS`, `DRAW`), of one game or a batch;
      None without the solver.
    stale: `(graph, node) -> bool`, the node's proof lags behind its moves.
    solve_path: `(graph, path_nodes, length, last_child, stale) -> graph`,
      the path's proofs brought up to date after an expansion.
    defer: `(graph, parent, action) -> bool`, a new position reached through
      the edge is evaluated but not stored yet (the expansion policy).
    after_backup: `(graph, sel, length, leaf_value, plugins) -> graph`, run
      in turn after each backup (hard pruning's masks, AMAF statistics).
    root_noise: `(rng, graph [B], legal bool[B, A]) -> graph`, fresh root
      state for a search (the Gumbel noise), at `init` and `reroot`.
    root_decision: `(graph [B], allowed bool[B, A]) -> (action int32[B],
      policy f32[B, A])`, the move and the policy after the search instead
      of the visit policy's (the Gumbel root).
    several_leaves: L > 1 leaves per game per step.
  """
  states: tuple[tuple[str, type], ...] = ()
  move_filters: tuple[Callable[..., chex.Array], ...] = ()
  adjust_q: Callable[..., chex.Array] | None = None
  adjust_scores: Callable[..., chex.Array] | None = None
  root_scores: Callable[..., chex.Array] | None = None
  interior_scores: Callable[..., chex.Array] | None = None
  plan: Callable[..., Any] | None = None
  explore_action: Callable[..., chex.Array] | None = None
  proofs: Callable[[graph_lib.Graph], chex.Array] | None = None
  stale: Callable[..., chex.Array] | None = None
  solve_path: Callable[..., graph_lib.Graph] | None = None
  defer: Callable[..., chex.Array] | None = None
  after_backup: tuple[Callable[..., graph_lib.Graph], ...] = ()
  root_noise: Callable[..., graph_lib.Graph] | None = None
  root_decision: Callable[..., tuple[chex.Array, chex.Array]] | None = None
  several_leaves: bool = False

  @property
  def proves(self) -> bool:
    """Whether the solver runs."""
    return self.proofs is not None

  def proof_codes(self, graph: graph_lib.Graph) -> chex.Array | None:
    """The solver's codes of `graph`'s nodes (`proofs`), None without the solver.

    Args:
      graph: a Graph, one game or a batch.

    Returns:
      int32[..., N], or None.
    """
    return None if self.proofs is None else self.proofs(graph)


def allowed_moves(graph: graph_lib.Graph, node: chex.Array, plugins: Plugins,
                  child_row: chex.Array | None = None) -> chex.Array:
  """The legal moves of `node` (ONE game) that every move filter keeps.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    plugins: the search's Plugins (`move_filters`).
    child_row: optional int32[A], `graph.child[node]` where already read.

  Returns:
    bool[A].
  """
  if child_row is None:
    child_row = graph_lib.take(graph.child, node)
  allowed = child_row != graph_lib.ILLEGAL
  for keep in plugins.move_filters:
    allowed = keep(graph, node, allowed)
  return allowed


def best(score: chex.Array, allowed: chex.Array) -> chex.Array:
  """The allowed index of the highest score.

  Args:
    score: f32[A].
    allowed: bool[A].

  Returns:
    int32 scalar.
  """
  return jnp.argmax(jnp.where(allowed, score, -jnp.inf)).astype(jnp.int32)


def most_visited_action(graph: graph_lib.Graph, node: chex.Array,
                        plugins: Plugins) -> chex.Array:
  """The most visited allowed move of `node` (higher prior breaks ties).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    plugins: the search's Plugins (the move filter).

  Returns:
    int32 scalar.
  """
  return best(graph.edge_visits[node] + 0.5 * graph.prior[node],
              allowed_moves(graph, node, plugins))


def is_proven(graph: graph_lib.Graph, child: chex.Array, plugins: Plugins) -> chex.Array:
  """Whether `child` is a stored node the solver has proven.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    child: int32 scalar, a child index (< 0: none stored).
    plugins: the search's Plugins (False without the solver).

  Returns:
    bool scalar.
  """
  if not plugins.proves:
    return jnp.zeros_like(child >= 0)
  return (child >= 0) & (plugins.proofs(graph)[jnp.maximum(child, 0)] != graph_lib.UNKNOWN)
