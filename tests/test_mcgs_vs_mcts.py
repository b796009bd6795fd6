"""mcgs_jax.benchmarks.mcgs_vs_mcts and its command line: the core functions end to end on tiny budgets."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import evaluators
from mcgs_jax.envs import exhaustive
from mcgs_jax.envs import pons
from mcgs_jax.benchmarks import mcgs_vs_mcts as mvm
from mcgs_jax.benchmarks import measure
from mcgs_jax.learning import agents
from mcgs_jax.learning import loop


@pytest.fixture(scope="module")
def nim_setting():
  return mvm.nim_setting("nim-piles:3,5,7,9", count=3)


@pytest.mark.slow
def test_noisy_nim_eval_is_a_fixed_imperfect_function_of_the_position():
  env = envs.make("nim")
  state = envs.stack([envs.nim.state_from_piles(env, (1, 3, 5, 7))] * 2)
  noisy = evaluators.NoisyNimEval(env, noise=0.8)
  logits, value = noisy(None, jax.random.PRNGKey(0), state)
  logits2, value2 = noisy(None, jax.random.PRNGKey(1), state)
  np.testing.assert_array_equal(value, value2)          # no rng: a network-like function
  np.testing.assert_array_equal(logits, logits2)
  assert value[0] == value[1]
  # Offsets of half-width 0.4 never flip a halved +-1; 0.8 flips some.
  assert mvm.wrong_sign_fraction(env, evaluators.NoisyNimEval(env, noise=0.4)) == 0.0
  assert 0.05 < mvm.wrong_sign_fraction(env, noisy) < 0.4


@pytest.mark.parametrize("env_id, plies, count, expected", [
    ("nim", 2, 260, 98),                    # (1,3,5,7) has only 98 after two moves
    ("nim", 3, 260, 260),
    ("nim-piles:3,5,7,9", 3, 260, 260),
])
def test_nim_openings_are_distinct_running_positions(env_id, plies, count, expected):
  env = envs.make(env_id)
  openings = mvm.nim_openings(env, count, plies)
  keys = exhaustive.key_ints(np.asarray(openings.key))
  assert len(keys) == expected and len(set(keys.tolist())) == expected
  assert np.all(np.asarray(openings.ply) == plies)
  assert not np.any(np.asarray(openings.terminated))
  assert mvm.nim_setting(env_id, count, plies=plies).openings.ply.shape == (expected,)


def test_largest_matches_keeps_the_match_of_most_games_per_pairing():
  def row(budget, a, games, elo):
    return dict(part="nim", env="nim", network="n", a=f"{a}@{budget}", b=f"mcgs@{budget}",
                budget_b=str(budget), games=str(games), elo=elo)
  rows = [row(16, "tree", 196, 1), row(8, "tree", 196, 2), row(8, "katago", 196, 3),
          row(8, "tree", 520, 4), row(8, "katago", 128, 5), row(16, "tree", 196, 6)]
  assert [r["elo"] for r in mvm.largest_matches(rows)] == [4, 3, 6]
  # At equal time the calibrated budget of a differs between runs: the mode pairs.
  timed = [dict(row(32, "tree", 128, 7), part="time", a="tree@36"),
           dict(row(32, "tree", 520, 8), part="time", a="tree@31"),
           dict(row(32, "tt_cache", 128, 9), part="time", a="tt_cache@33")]
  assert [r["elo"] for r in mvm.largest_matches(timed)] == [8, 9]


def test_measured_times_are_reused_only_for_the_same_openings(nim_setting, tmp_path):
  out = str(tmp_path)
  configs = {("mcgs", 4): None, ("tree", 4): None}
  count = len(np.asarray(nim_setting.openings.ply))
  rows = [dict(env=nim_setting.env.id, network=nim_setting.network, openings=n, mode=m,
               budget=4, ms_per_move=ms)
          for n, m, ms in ((count, "mcgs", 1.0), (count + 1, "tree", 2.0), (count, "tree", 3.0),
                           (count, "mcgs", 1.5))]
  assert mvm.measured_times(out, nim_setting, configs) is None
  measure.append_csv(os.path.join(out, "timing.csv"), rows[:2], mvm.TIMING_FIELDS)
  assert mvm.measured_times(out, nim_setting, configs) is None   # tree only on other openings
  measure.append_csv(os.path.join(out, "timing.csv"), rows[2:], mvm.TIMING_FIELDS)
  assert mvm.measured_times(out, nim_setting, configs) == {("mcgs", 4): 1.5, ("tree", 4): 3.0}


def test_game_nim_is_only_for_the_time_part(tmp_path):
  """The command line, run as a process, refuses the pairing in one line."""
  done = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.mcgs_vs_mcts", "--part",
                         "evals", "--game", "nim", "--out", str(tmp_path / "out")],
                        capture_output=True, text=True, timeout=120)
  assert done.returncode == 2, done.stderr
  assert done.stderr.startswith("error: --game nim is for --part time"), done.stderr
  assert "Traceback" not in done.stderr
  assert not (tmp_path / "out").exists()   # refused before anything is written


def test_budget_for_time_interpolates_and_extrapolates_log_log():
  budgets, ms = [16, 32, 64], [1.0, 2.0, 4.0]   # time proportional to the budget
  assert mvm.budget_for_time(budgets, ms, 2.0) == 32
  assert mvm.budget_for_time(budgets, ms, 3.0) == 48
  assert mvm.budget_for_time(budgets, ms, 8.0) == 128
  assert mvm.budget_for_time(budgets, ms, 0.5) == 8


@pytest.mark.slow
def test_graph_bytes_match_a_real_search(nim_setting):
  config = mvm.budget_config("mcgs", 8, nim_setting.simulations_per_eval)
  per_node, table, allocated = agents.graph_bytes(nim_setting.env, nim_setting.eval_fn, config)
  out = mcgs_jax.search(None, jax.random.PRNGKey(0), nim_setting.openings, nim_setting.env,
                        nim_setting.eval_fn, config)
  # bytes_per_game also counts the small per-game fields (stats, root noise).
  assert allocated <= mcgs_jax.bytes_per_game(out.graph) <= allocated + 1024
  assert per_node > 0 and table > 0
  tree = mvm.budget_config("tree", 8, nim_setting.simulations_per_eval)
  assert agents.graph_bytes(nim_setting.env, nim_setting.eval_fn, tree)[0] == per_node


@pytest.mark.slow
def test_equal_evals_rows_use_equal_evaluations_and_resume(nim_setting, tmp_path):
  out = str(tmp_path)
  rows = mvm.equal_evals(nim_setting, ["mcgs", "tree"], [8], part="nim", out=out)
  assert len(rows) == 1
  row = rows[0]
  assert (row["a"], row["b"]) == ("tree@8", "mcgs@8")
  assert row["games"] == 2 * len(np.asarray(nim_setting.openings.ply)) == 6
  assert row["wins"] + row["draws"] + row["losses"] == row["games"]
  assert row["elo_low"] <= row["elo"] <= row["elo_high"]
  # Neither side ever exceeds the shared budget, and both reach it.
  assert row["a_max_nn_evals"] == row["b_max_nn_evals"] == 8
  assert 0 < row["a_nn_evals"] <= 8 and 0 < row["b_nn_evals"] <= 8
  assert row["a_overflows"] == row["b_overflows"] == 0
  # Every stored node cost one evaluation in both modes.
  assert row["a_nodes"] == row["a_nn_evals"] and row["b_nodes"] == row["b_nn_evals"]
  # Rerunning skips the finished match; the CSVs hold it once.
  assert not mvm.equal_evals(nim_setting, ["mcgs", "tree"], [8], part="nim", out=out)
  assert len(loop.read_metrics(os.path.join(out, "matches.csv"))) == 1
  assert len(loop.read_metrics(os.path.join(out, "games.csv"))) == 6
  written = mvm.write_plots(out, str(tmp_path / "docs"))
  assert any(p.endswith(".png") for p in written) and all(os.path.exists(p) for p in written)
  # More openings make another match of the pairing; the summaries take it.
  more = mvm.nim_setting("nim-piles:3,5,7,9", count=4)
  rows = mvm.equal_evals(more, ["mcgs", "tree"], [8], part="nim", out=out)
  assert len(rows) == 1 and rows[0]["games"] == 8
  assert not mvm.equal_evals(more, ["mcgs", "tree"], [8], part="nim", out=out)
  matches = loop.read_metrics(os.path.join(out, "matches.csv"))
  assert [r["games"] for r in matches] == ["6", "8"]
  assert [r["games"] for r in mvm.largest_matches(matches)] == ["8"]


@pytest.mark.slow
def test_connect4_searches_spend_exactly_the_budget():
  setting = mvm.connect4_setting("shipped", count=2)
  budget = 6
  for mode in ("mcgs", "tree"):
    _, stats = agents.measured_search(setting.params, jax.random.PRNGKey(0), setting.openings,
                                    setting.env, setting.eval_fn,
                                    mvm.budget_config(mode, budget))
    # Openings with many moves left: every search spends the whole budget.
    np.testing.assert_array_equal(np.asarray(stats["nn_evals"]), budget)
  scores = [-min(v for v in s if v is not None)
            for m, s in pons.read_columns("L1_R3") if m in
            mvm.connect4_openings(2)]
  assert all(abs(s) <= 2 for s in scores)


@pytest.mark.slow
def test_equal_time_plays_the_budget_of_equal_measured_time(nim_setting, tmp_path):
  rows = mvm.equal_time(nim_setting, ["mcgs", "tree"], [4], out=str(tmp_path))
  assert len(rows) == 1
  row = rows[0]
  assert row["part"] == "time" and row["b"] == "mcgs@4" and row["budget_b"] == 4
  assert row["a"] == f"tree@{row['budget_a']}" and 1 <= row["budget_a"] <= 32
  assert row["a_max_nn_evals"] <= row["budget_a"] and row["b_max_nn_evals"] <= 4
  assert row["a_ms_per_move"] > 0 and row["b_ms_per_move"] > 0
  # A rerun reuses the measured times, so it finds the same match played.
  timing = loop.read_metrics(os.path.join(str(tmp_path), "timing.csv"))
  assert not mvm.equal_time(nim_setting, ["mcgs", "tree"], [4], out=str(tmp_path))
  assert loop.read_metrics(os.path.join(str(tmp_path), "timing.csv")) == timing


@pytest.mark.slow
def test_load_network_names_distinct_committed_agents():
  leaves = {}
  for name in mvm.NETWORKS:
    env, _, params = mvm.load_network(name)
    assert env.id == "connect4"
    leaves[name] = np.concatenate([np.ravel(x) for x in jax.tree.leaves(params)])
  names = list(leaves)
  for i, a in enumerate(names):
    for b in names[i + 1:]:
      assert not np.array_equal(leaves[a], leaves[b]), (a, b)
  with pytest.raises(ValueError, match="network must be one of"):
    mvm.load_network("v0")
