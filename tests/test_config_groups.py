"""SearchConfig's fields grouped by concern: every field in one group, each
group validating itself, the flat constructor unchanged."""

import dataclasses

import pytest

from mcgs_jax import config as config_lib

SearchConfig = config_lib.SearchConfig


def _fields(cls):
  return {field.name: field.default for field in dataclasses.fields(cls)}


def test_every_field_is_in_exactly_one_group_with_the_same_default():
  flat = _fields(SearchConfig)
  seen = {}
  for group in config_lib.GROUPS:
    for name, default in _fields(group).items():
      assert name not in seen, f"{name} is in {seen.get(name)} and {group.__name__}"
      seen[name] = group.__name__
      assert flat[name] == default, name
  assert set(seen) == set(flat)


@pytest.mark.parametrize("group, changes, message", [
    (config_lib.BudgetConfig, dict(num_simulations=-1), r"num_simulations must be an int in \[0, 536870912\], got -1"),
    (config_lib.BudgetConfig, dict(leaves_per_step=4, max_nn_evals=8), "not supported"),
    (config_lib.BudgetConfig, dict(max_nodes=8.0), r"max_nodes must be None or an int in \[1, 536870912\], got 8.0"),
    (config_lib.BackupConfig, dict(backup="nope"), "nope"),
    (config_lib.BackupConfig, dict(value_min=1.0), "value_min must be < value_max"),
    (config_lib.ExplorationConfig, dict(eps_greedy=2.0), "eps_greedy"),
    (config_lib.ExplorationConfig, dict(expansion_policy="probability", expansion_threshold=2.0),
     "expansion_threshold"),
    (config_lib.RootConfig, dict(root_policy="gumbel", visit_temperature=1.0),
     "root_policy='gumbel'"),
    (config_lib.RootConfig, dict(depth_i=3), "depth_i"),
    (config_lib.SolverConfig, dict(solver_bounds=True), "solver_bounds needs solver=True"),
])
def test_each_group_validates_itself_and_the_flat_config_the_same(group, changes, message):
  error = TypeError if "got 8.0" in message else ValueError
  with pytest.raises(error, match=message):
    group(**changes)
  with pytest.raises(error, match=message):
    SearchConfig(**changes)


def test_groups_round_trip_and_configs_stay_hashable():
  config = SearchConfig(num_simulations=64, backup="tree", max_nodes=130, c_init=1.25,
                        dirichlet_fraction=0.25, root_policy="gumbel",
                        max_considered_actions=4, solver=True, eps_greedy=0.05)
  assert config.budget == config_lib.BudgetConfig(num_simulations=64, max_nodes=130)
  assert config.root.root_policy == "gumbel" and config.root.max_considered_actions == 4
  assert config.exploration.c_init == 1.25 and config.solver_config.solver
  assert config.backup_config.backup == "tree"
  rebuilt = SearchConfig.from_groups(config.budget, config.backup_config, config.exploration,
                                     config.root, config.solver_config)
  assert rebuilt == config and hash(rebuilt) == hash(config)
  # Groups and single fields mix; a field given alone wins over its group's.
  mixed = SearchConfig.from_groups(config_lib.RootConfig(root_policy="gumbel"),
                                   num_simulations=16)
  assert (mixed.root_policy, mixed.num_simulations, mixed.backup) == ("gumbel", 16, "mcgs")
