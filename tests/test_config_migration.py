"""TrainConfig's searches: nested configs, JSON, and older flat configs."""

import dataclasses
import json
import os

import pytest

import mcgs_jax
from mcgs_jax.learning import config as config_lib
from mcgs_jax import dual

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(ROOT, "networks", "pretrained", "connect4", "config.json")


def test_the_shipped_flat_config_loads_with_the_searches_its_rules_made():
  flat = config_lib.load_json(SHIPPED)
  assert flat["search"] == "mcgs" and flat["root_policy"] == "gumbel"   # written flat
  config = config_lib.TrainConfig.from_json(flat)
  selfplay = config.search_config()
  # Gumbel self-play: Gumbel noise, no Dirichlet noise; node_factor 3.
  assert (selfplay.root_policy, selfplay.num_simulations, selfplay.max_nodes) == ("gumbel", 32, 99)
  assert (selfplay.dirichlet_fraction, selfplay.gumbel_scale) == (0.0, 1.0)
  assert selfplay.check_evaluator and selfplay.backup == "mcgs"
  evaluation = config.search_config(noise=False)
  assert (evaluation.root_policy, evaluation.num_simulations) == (flat["eval_root_policy"],
                                                                  flat["eval_simulations"])
  assert evaluation.gumbel_scale == 0.0 and evaluation.dirichlet_fraction == 0.0
  # The other fields are read as they were written.
  assert (config.games, config.node_factor, config.checkpoint_every) == (
      flat["games"], flat["node_factor"], flat["checkpoint_every"])
  # Written again, the config is nested and reads back equal.
  data = json.loads(json.dumps(config.to_json()))
  assert "simulations" not in data and data["search"]["num_simulations"] == 32
  assert config_lib.TrainConfig.from_json(data) == config


def test_flat_fields_follow_the_old_rules_field_by_field():
  config = config_lib.replace(config_lib.TrainConfig(), simulations=12, eval_simulations=20,
                              solver=False, eval_solver=True, eps_greedy=0.1, c_init=1.5)
  assert (config.search.num_simulations, config.eval_search.num_simulations) == (12, 20)
  assert not config.search.solver and config.eval_search.solver
  assert (config.search.eps_greedy, config.eval_search.eps_greedy) == (0.1, 0.0)
  assert config.search.c_init == config.eval_search.c_init == 1.5
  # A flat field changes what it names and keeps the rest of a nested search.
  rave = config_lib.replace(config_lib.TrainConfig(), search=dict(rave=True, num_simulations=8))
  changed = config_lib.replace(rave, simulations=16)
  assert changed.search.rave and changed.search.num_simulations == 16
  # 'dual' and 'mpv' become DualConfigs of b_S and b_L simulations.
  two = config_lib.replace(config_lib.TrainConfig(), network="pair", search="mpv",
                           dual_backup="tree", small_simulations=6, large_simulations=4)
  assert isinstance(two.search, dual.DualConfig) and two.two_searches
  assert (two.search.small.num_simulations, two.search.large.max_nodes) == (6, 5)
  assert two.search.small.backup == "tree" and two.eval_search.small.dirichlet_fraction == 0.0
  assert config_lib.TrainConfig.from_json(two.to_json()) == two


def test_nested_searches_change_only_what_they_name():
  base = config_lib.default_config("connect4")
  config = config_lib.replace(base, search={"num_simulations": 48})
  assert config.search == dataclasses.replace(base.search, num_simulations=48)
  assert config.eval_search == base.eval_search
  assert config_lib.differences(base, config) == ["search.num_simulations"]
  two = config_lib.replace(
      base, network="dual_mlp",
      search={"kind": "dual", "small": {"num_simulations": 5}, "large": {"num_simulations": 3}},
      eval_search={"kind": "dual"})
  assert two.search.small.num_simulations == 5 and two.eval_search == dual.DualConfig()


@pytest.mark.parametrize("changes, error, message", [
    (dict(simulations=8, search={"num_simulations": 8}), ValueError, "not both"),
    (dict(search={"num_simulatons": 8}), ValueError,
     r"unknown search \(SearchConfig\) field 'num_simulatons' \(did you mean 'num_simulations'"),
    (dict(search={"kind": "triple"}), ValueError, "kind must be 'search' or 'dual'"),
    (dict(search=5), TypeError, "TrainConfig.search must be a SearchConfig or a DualConfig"),
    (dict(search={"kind": "dual"}), ValueError, "same kind"),
    (dict(network="pair", search={"kind": "dual"}, eval_search={"kind": "dual"},
          fast_simulations=2), ValueError, "fast_simulations=0 only"),
    (dict(search={"kind": "dual"}, eval_search={"kind": "dual"}), ValueError, "two-head network"),
    (dict(simulations="many"), TypeError, r"TrainConfig.simulations must be an int in \[1, 2147483647\]"),
])
def test_bad_searches_are_refused_in_one_line(changes, error, message):
  with pytest.raises(error, match=message) as caught:
    config_lib.replace(config_lib.TrainConfig(), **changes)
  assert "\n" not in str(caught.value)


def test_a_search_config_object_is_taken_as_it_is():
  search = mcgs_jax.SearchConfig(num_simulations=10, solver=True)
  config = config_lib.replace(config_lib.TrainConfig(), search=search)
  assert config.search is search
  assert config.search_config().max_nodes == 22   # node_factor 2 * (10 + 1)
  assert config.search_config(4, noise=False).num_simulations == 4
