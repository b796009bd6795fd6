"""Epsilon-greedy and constraint-first exploration of the descent.

Exploration (paper, "Random Exploration" and "Constraints"): with probability
`eps_greedy` a simulation picks a branch depth d = max(floor(-log2(1 - r) - 1),
0) (the root 3/4 of the time, then halving per ply), follows the most visited
line d plies (fewer where the line ends), then takes a uniformly random move
among the visited ones and the untried move of highest prior (PUCT instead
when that move leads to a proven node), and continues with PUCT. With
probability `eps_constraint` it plays, at the branch node, the untried
priority move of highest prior (the game's `priority`, e.g. Connect-4 wins and
blocks), PUCT when there is none. Such a trajectory is disconnected: the
backup stops at the branch node, so the line above it keeps its statistics.

The descent (`selection.select_batch`) gets the plans (`plan_batch`) and
each game's move at its branch node (`explore_action`) as hooks
(`plugins.Plugins.plan`, `explore_action`), only where `eps_greedy` or
`eps_constraint` is on.
"""

import dataclasses
import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import plugins as plugins_lib

@dataclasses.dataclass(frozen=True)
class Settings(config_lib.Fields):
  """The SearchConfig fields exploration reads, what its plug-ins are bound
  to (`rules.of`); every function here also takes the SearchConfig."""
  eps_greedy: float
  eps_constraint: float
  eps_decay: float
  max_depth: int


# Exploration modes of a simulation.
NO_EXPLORATION = 0
GREEDY = 1
CONSTRAINT = 2


@chex.dataclass(frozen=True)
class Exploration:
  """ONE game's exploration plan for one simulation (see the module doc)."""
  mode: chex.Array       # int32, NO_EXPLORATION / GREEDY / CONSTRAINT
  depth: chex.Array      # int32, branch depth (the line is followed above it)
  priority: chex.Array   # bool[A], priority moves of the branch node
  rng: chex.PRNGKey

  @property
  def active(self) -> chex.Array:
    """bool: the simulation explores (`plugins.Plugins.plan`)."""
    return self.mode != NO_EXPLORATION

  @property
  def start(self) -> chex.Array:
    """int32: the first path edge the backup updates (the branch depth of
    an exploring simulation: disconnected above it; else the root)."""
    return jnp.where(self.active, self.depth, 0)


def plan_exploration(graph: graph_lib.Graph, rng: chex.PRNGKey, plugins: plugins_lib.Plugins,
                     config: config_lib.SearchConfig):
  """Draws ONE game's exploration mode and branch depth.

  Then follows the most visited line down to the branch node.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    rng: a PRNG key.
    plugins: the search's Plugins (the move filter, the solver's proofs).
    config: reads `eps_constraint`, `eps_greedy`, `max_depth`.

  Returns:
    (mode, depth, node): int32 scalars, the exploration mode (NO_EXPLORATION,
    GREEDY or CONSTRAINT), the depth reached and the branch node.
  """
  mode_draw, greedy_draw, depth_draw = jax.random.uniform(rng, (3,))
  eps = config.eps_greedy
  if config.eps_decay != 1.0:
    eps = eps * config.eps_decay ** graph.stats.simulations.astype(jnp.float32)
  mode = jnp.where(mode_draw < config.eps_constraint, CONSTRAINT,
                   jnp.where(greedy_draw < eps, GREEDY, NO_EXPLORATION))
  wanted = jnp.floor(-jnp.log2(1.0 - depth_draw) - 1.0).astype(jnp.int32)
  wanted = jnp.where(mode == NO_EXPLORATION, 0,
                     jnp.clip(wanted, 0, config.max_depth - 2))

  def cond(carry):
    node, depth, going = carry
    return going & (depth < wanted)

  def body(carry):
    node, depth, _ = carry
    child = graph.child[node, plugins_lib.most_visited_action(graph, node, plugins)]
    # The line ends where the next move leads to no stored, unproven node.
    step = (child >= 0) & ~plugins_lib.is_proven(graph, child, plugins)
    return (jnp.where(step, child, node), depth + step, step)

  node, depth, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), jnp.int32(0), True))
  return mode.astype(jnp.int32), depth, node


def explore_action(graph: graph_lib.Graph, node: chex.Array, puct_action: chex.Array,
                   explore: Exploration, plugins: plugins_lib.Plugins) -> chex.Array:
  """The move at the branch node of an exploration trajectory
  (`plugins.Plugins.explore_action`).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar, the branch node.
    puct_action: int32 scalar, PUCT's move there (the fallback).
    explore: the game's Exploration.
    plugins: the search's Plugins (the move filter, the solver's proofs).

  Returns:
    int32 scalar: GREEDY's random move among the tried ones and the best
    untried one (PUCT's where that leads to a proven node), CONSTRAINT's
    untried priority move of highest prior (PUCT's where there is none).
  """
  allowed = plugins_lib.allowed_moves(graph, node, plugins)
  untried = allowed & (graph.edge_visits[node] == 0)
  prior = graph.prior[node]
  # GREEDY: uniform over the tried moves and the best untried one.
  next_untried = (jax.nn.one_hot(plugins_lib.best(prior, untried), allowed.shape[0], dtype=bool)
                  & untried)
  candidates = (allowed & ~untried) | next_untried
  drawn = jax.random.categorical(explore.rng, jnp.where(candidates, 0.0, -jnp.inf))
  drawn = jnp.where(plugins_lib.is_proven(graph, graph.child[node, drawn], plugins), puct_action,
                    drawn)
  # CONSTRAINT: the untried priority move of highest prior.
  urgent = untried & explore.priority
  constrained = jnp.where(jnp.any(urgent), plugins_lib.best(prior, urgent), puct_action)
  return jnp.where(explore.mode == GREEDY, drawn, constrained).astype(jnp.int32)


def plan_batch(graph: graph_lib.Graph, rng: chex.PRNGKey, model: Any,
               plugins: plugins_lib.Plugins, config: config_lib.SearchConfig) -> Exploration:
  """Every game's exploration plan for one simulation (`plugins.Plugins.plan`).

  Args:
    graph: Graph [B, N, A].
    rng: the descent's PRNG key (the plans use `fold_in(rng, 1)`).
    model: the `mcgs_jax.Model` (constraint-first exploration reads its
      `priority` moves).
    plugins: the search's Plugins (see `plan_exploration`).
    config: reads `eps_constraint` (and, per game, `plan_exploration`'s).

  Returns:
    Exploration [B].
  """
  plan_rng, branch_rng = jax.random.split(jax.random.fold_in(rng, 1))
  mode, depth, node = jax.vmap(functools.partial(plan_exploration, plugins=plugins,
                                                 config=config))(
      graph, jax.random.split(plan_rng, graph.batch_size))
  legal = jax.vmap(lambda child, i: child[i] != graph_lib.ILLEGAL)(graph.child, node)
  if config.eps_constraint > 0:
    priority = model.priority(graph_lib.gather_nodes(graph.embedding, node), legal) & legal
  else:
    priority = jnp.zeros_like(legal)
  return Exploration(mode=mode, depth=depth, priority=priority,
                     rng=jax.random.split(branch_rng, graph.batch_size))
