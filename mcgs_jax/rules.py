"""Where a search is assembled: the enhancements its config turns on, as plug-ins.

`of(config)` (computed once per config) binds each enhancement that is on to
its own settings (the SearchConfig fields it reads: a `Settings` record of
its module, or the fields themselves) and hands its functions to the phases in one
`plugins.Plugins` record; the phases import no enhancement and call what
they are handed. An enhancement that is off contributes nothing and is never
entered. The switches are read here, each enhancement's own settings in its
module:

  solver           `solver`: the proofs, the stale test, the path's update, the
                   move filter of proven losses (score bounds with
                   `solver_bounds`)
  gumbel root      `gumbel`: sequential halving at the root, the deterministic
                   selection below it, the noise record
  rave             `rave`: AMAF statistics blended into Q, updated after each
                   backup
  exploration      `exploration`: epsilon-greedy or constraint-first plans
  progressive      `pruning`: the move filter, hard pruning's mask and its
    pruning        update after each backup; minimum root visits
  expansion        `expansion_policy`: new positions evaluated but not stored
    policy         yet
  several leaves   L > 1 leaves per game per step (`leaves`)

The move choice after the search (`policies`) reads the same switches.
"""

import functools

from mcgs_jax import config as config_lib
from mcgs_jax import expansion_policy
from mcgs_jax import exploration
from mcgs_jax import gumbel
from mcgs_jax import plugins as plugins_lib
from mcgs_jax import pruning
from mcgs_jax import rave
from mcgs_jax import solver as solver_lib


@functools.lru_cache(maxsize=256)
def of(config: config_lib.SearchConfig) -> plugins_lib.Plugins:
  """The plug-ins of the enhancements `config` turns on.

  Args:
    config: SearchConfig.

  Returns:
    plugins.Plugins (all empty for a default search).
  """
  states, move_filters, after_backup = [], [], []
  hooks = {}
  proofs = None
  if config.solver:
    proofs = solver_lib.codes
    states.append((solver_lib.NAME, solver_lib.SolverState))
    move_filters.append(functools.partial(solver_lib.keep_unpruned, bounds=config.solver_bounds))
    hooks.update(proofs=proofs,
                 stale=functools.partial(solver_lib.is_stale, bounds=config.solver_bounds),
                 solve_path=functools.partial(solver_lib.solve_path, bounds=config.solver_bounds))
  # Built only where a pruning rule is on: an enhancement that is off is never entered.
  pruning_settings = (pruning.Settings.of(config) if config.progressive_pruning != "off"
                      or config.min_root_visit_fraction > 0 else None)
  if config.progressive_pruning != "off":
    move_filters.append(functools.partial(pruning.keep_unpruned, config=pruning_settings,
                                          proofs=proofs))
  if config.hard_pruning:
    states.append((pruning.NAME, pruning.PruningState))
    after_backup.append(functools.partial(pruning.after_backup, config=pruning_settings,
                                          proofs=proofs))
  if config.min_root_visit_fraction > 0:
    hooks["adjust_scores"] = functools.partial(pruning.force_min_root_visits,
                                               config=pruning_settings)
  if config.root_policy == "gumbel":
    gumbel_settings = gumbel.Settings.of(config)
    states.append((gumbel.NAME, gumbel.GumbelState))
    hooks.update(root_scores=functools.partial(_gumbel_root_scores, config=gumbel_settings),
                 interior_scores=functools.partial(_gumbel_interior_scores,
                                                   config=gumbel_settings),
                 root_noise=functools.partial(_gumbel_root_noise, config=gumbel_settings),
                 root_decision=functools.partial(gumbel.root_decision, config=gumbel_settings))
  if config.rave:
    states.append((rave.NAME, rave.AmafState))
    hooks["adjust_q"] = functools.partial(rave.blend, rave_b=config.rave_b)
    after_backup.append(rave.after_backup)
  if config.eps_greedy > 0 or config.eps_constraint > 0:
    hooks.update(plan=functools.partial(exploration.plan_batch,
                                        config=exploration.Settings.of(config)),
                 explore_action=exploration.explore_action)
  if config.defers_expansion:
    hooks["defer"] = functools.partial(expansion_policy.defers,
                                       policy=config.expansion_policy,
                                       threshold=config.expansion_threshold)
  return plugins_lib.Plugins(states=tuple(states), move_filters=tuple(move_filters),
                             after_backup=tuple(after_backup),
                             several_leaves=config.leaves_per_step > 1, **hooks)


def _gumbel_root_scores(graph, allowed, rows, config):
  return gumbel.root_scores(graph, allowed, config, rows=rows)


def _gumbel_interior_scores(graph, node, allowed, rows, config):
  return gumbel.interior_scores(graph, node, allowed, config, rows=rows)


def _gumbel_root_noise(rng, graph, legal, config):
  return gumbel.with_noise(graph, gumbel.draw_noise(rng, legal, config))


def allowed_moves(graph, node, config, child_row=None):
  """The legal moves that `config`'s move filters keep (`plugins.allowed_moves`).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    config: SearchConfig.
    child_row: optional int32[A], `graph.child[node]` where already read.

  Returns:
    bool[A].
  """
  return plugins_lib.allowed_moves(graph, node, of(config), child_row)
