"""The Dual MCTS table's Connect-4 runs with the real learner
(`mcgs_jax.benchmarks.dual_mcts`, `mcgs-jax dual-mcts --recipe`): their
configs and their rows; the command line's own checks run it as a process."""

import csv
import json
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest

from mcgs_jax.benchmarks import dual_mcts
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import loop


def _command(*args):
  """`mcgs-jax dual-mcts ARGS` as a process: (exit code, stdout, stderr)."""
  done = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.dual_mcts", *args],
                        capture_output=True, text=True, timeout=300)
  return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("algo", dual_mcts.ALGOS)
@pytest.mark.parametrize("backup", dual_mcts.BACKUPS)
def test_recipe_configs_keep_the_papers_budgets(algo, backup):
  config = config_lib.replace(config_lib.default_config("connect4"),
                              **dual_mcts.recipe_config(algo, backup, 3))
  assert (config.seed, config.eval_every_s) == (3, 300.0)
  kwargs = dict(config.network_kwargs)
  assert kwargs["width"] == 64
  if algo == "alphazero":
    search = config.search
    assert (search.backup, search.num_simulations, kwargs["num_layers"]) == (backup, 85, 4)
    assert search.root_policy == "puct" and search.dirichlet_fraction == 0.25
    # Evaluations search with the same 85 simulations as the two-search runs'.
    evaluation = config.eval_search
    assert (evaluation.num_simulations, evaluation.backup) == (85, backup)
    assert (evaluation.root_policy, evaluation.dirichlet_fraction) == ("puct", 0.0)
    return
  small, large = config.search.small, config.search.large
  assert config.two_searches and (small.backup, large.backup) == (backup, backup)
  assert (small.num_simulations, large.num_simulations) == (50, 35)
  assert config.eval_search.small.dirichlet_fraction == 0.0
  assert (config.eval_search.small.num_simulations,
          config.eval_search.large.num_simulations) == (50, 35)
  if algo == "dual":
    assert (small.eps_greedy, small.eps_decay, kwargs["small_head_after"]) == (0.1, 0.97, 2)
    assert small.backup_window > 1


@pytest.mark.parametrize("backup", dual_mcts.BACKUPS)
def test_the_noreuse_ablation_is_alphazero_starting_every_move_afresh(backup):
  ablation = dual_mcts.recipe_config("alphazero_noreuse", backup, 3)
  alphazero = dual_mcts.recipe_config("alphazero", backup, 3)
  assert ablation == dict(alphazero, reuse_graph=False)
  assert config_lib.default_config("connect4").reuse_graph
  config = config_lib.replace(config_lib.default_config("connect4"), **ablation)
  assert not config.selfplay_config().reuse_graph
  assert config_lib.replace(config_lib.default_config("connect4"),
                            **alphazero).selfplay_config().reuse_graph
  assert (dual_mcts.recipe_dir("out", "alphazero_noreuse", backup, 3)
          != dual_mcts.recipe_dir("out", "alphazero", backup, 3))


@pytest.mark.parametrize("backup", dual_mcts.BACKUPS)
def test_the_35_simulation_ablation_differs_from_noreuse_in_self_play_simulations_only(backup):
  ablation = dual_mcts.recipe_config("alphazero_35", backup, 3)
  noreuse = dual_mcts.recipe_config("alphazero_noreuse", backup, 3)
  assert {k for k in ablation if ablation[k] != noreuse[k]} == {"search"}
  assert ablation["search"] == dict(noreuse["search"], num_simulations=35)
  config = config_lib.replace(config_lib.default_config("connect4"), **ablation)
  assert config.search_config(noise=True).num_simulations == 35
  assert config.search_config(noise=False).num_simulations == 85
  assert not config.selfplay_config().reuse_graph


def test_the_ablation_runs_only_with_recipe():
  for algo in ("alphazero_noreuse", "alphazero_35"):
    code, _, err = _command("--game", "nim:3,20", "--algo", algo)
    assert code == 2 and f"--algo {algo} runs only with --recipe" in err, err


def _write_run(directory, search=(0.08, 0.04, 0.03), last_cpu_s=700.0):
  directory.mkdir(parents=True)
  sets = ("L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3")
  fields = ["iteration", "cpu_s", "positions_total"] + [
      f"{kind}_c4_error_{name}" for kind in ("search", "policy") for name in sets]
  with open(directory / "metrics.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(fields)
    writer.writerow([1, 100.0, 1000] + [""] * 12)
    writer.writerow([2, 300.0, 3000] + [search[0]] * 6 + [0.2] * 6)
    writer.writerow([3, 600.0, 6000] + [search[1]] * 6 + [0.1] * 6)
    writer.writerow([4, last_cpu_s, 7000] + [search[2]] * 6 + [0.1] * 6)
  (directory / "config.json").write_text("{}")
  (directory / "ranks.csv").write_text("a,b,score\n")


def test_recipe_rows_time_to_target(tmp_path):
  directory = tmp_path / "connect4_recipe" / "dual_mcgs_s1"
  _write_run(directory)
  rows = dual_mcts.recipe_rows(str(tmp_path), target=0.05)
  assert len(rows) == 1
  row = rows[0]
  assert (row["algo"], row["backup"], row["seed"]) == ("dual", "mcgs", 1)
  assert (row["cpu_s_to_target"], row["positions_to_target"]) == (600.0, 6000)
  assert (row["final_search_error_mean"], row["final_policy_error_mean"]) == (0.03, 0.1)
  assert dual_mcts.recipe_rows(str(tmp_path), target=0.01)[0]["cpu_s_to_target"] == ""
  # Convergence: blank before `--recipe-rank`, then its step, or "not converged".
  assert row["steps_to_convergence"] == ""
  (directory / "summary.json").write_text('{"steps_to_converge": 3}')
  assert dual_mcts.recipe_rows(str(tmp_path), target=0.05)[0]["steps_to_convergence"] == 3
  (directory / "summary.json").write_text('{"steps_to_converge": null}')
  assert dual_mcts.recipe_rows(str(tmp_path), target=0.05)[0]["steps_to_convergence"] == (
      "not converged")


def test_recipe_rank_visits_the_runs_of_the_seeds_asked(tmp_path):
  recipe = tmp_path / "connect4_recipe"
  _write_run(recipe / "dual_mcgs_s1")
  _write_run(recipe / "mpv_tree_s0")
  (recipe / "alphazero_tree_s1").mkdir()    # no metrics yet: nothing to rank
  code, out, err = _command("--recipe-rank", "--seed", "1", "--out", str(tmp_path))
  # Neither has snapshots, so each ranks to None.
  assert code == 0, err
  assert out.splitlines() == [f"{recipe / 'dual_mcgs_s1'}: null"]


def test_recipe_runs_finds_every_seed_and_no_neighbouring_cell(tmp_path):
  recipe = tmp_path / "connect4_recipe"
  for name in ("alphazero_tree_s12", "alphazero_tree_s2", "alphazero_noreuse_tree_s0"):
    _write_run(recipe / name)
  (recipe / "alphazero_tree_s2.json").write_text("{}")   # a config beside a run
  found = [(algo, backup, seed) for algo, backup, seed, _ in dual_mcts.recipe_runs(
      str(tmp_path))]
  assert found == [("alphazero", "tree", 2), ("alphazero", "tree", 12),
                   ("alphazero_noreuse", "tree", 0)]


def test_ranked_snapshots_are_the_evaluated_ones(tmp_path, capsys):
  directory = tmp_path / "connect4_recipe" / "dual_mcgs_s1"
  _write_run(directory)     # evaluations at iterations 2, 3 and 4
  (directory / "snapshots").mkdir()
  for iteration in (2, 3, 4, 5):   # 5: written before a resume repeated it
    (directory / "snapshots" / f"iteration_{iteration:06d}.msgpack").write_bytes(b"")
  metrics = loop.read_metrics(str(directory / "metrics.csv"))
  assert dual_mcts.ranked_snapshots(str(directory), metrics) == [2, 3, 4]
  assert "snapshots of iterations [5] have no evaluation" in capsys.readouterr().out
  (directory / "snapshots" / "iteration_000005.msgpack").unlink()
  assert dual_mcts.ranked_snapshots(str(directory), metrics) == [2, 3, 4]
  assert capsys.readouterr().out == ""


def test_kept_metrics_keep_every_evaluation_the_last_row_and_every_20th():
  rows = [dict(iteration=str(i), cpu_s=str(i), search_c4_error_L3_R1="")
          for i in range(1, 46)]
  for name in ground_truth.C4_SETS:
    rows[6][f"search_c4_error_{name}"] = "0.1"    # iteration 7 evaluated
    rows[7][f"search_c4_error_{name}"] = ""
  kept = dual_mcts.thin_metrics(rows)
  assert [r["iteration"] for r in kept] == ["7", "20", "40", "45"]
  assert kept[0] is rows[6]


def test_recipe_curves_average_the_finished_seeds(tmp_path):
  recipe = tmp_path / "connect4_recipe"
  _write_run(recipe / "mpv_tree_s0")
  _write_run(recipe / "mpv_tree_s1", search=(0.10, 0.06, 0.05), last_cpu_s=710.0)
  _write_run(recipe / "mpv_tree_s2", search=(0.5, 0.5, 0.5), last_cpu_s=500.0)  # unfinished
  _write_run(recipe / "dual_mcgs_s0")
  curves = dual_mcts.recipe_curves(str(tmp_path), cpu_budget=700.0)
  assert sorted(curves) == [("dual", "mcgs"), ("mpv", "tree")]
  mpv = curves[("mpv", "tree")]
  assert mpv.shape == (2, 3, 3)
  np.testing.assert_allclose(mpv.mean(axis=0), [[300.0, 9.0, 20.0], [600.0, 5.0, 10.0],
                                                [705.0, 4.0, 10.0]])
  assert curves[("dual", "mcgs")].shape == (1, 3, 3)
  assert dual_mcts.recipe_curves(str(tmp_path), cpu_budget=3600.0) == {}
  path = tmp_path / "curves.png"
  dual_mcts.plot_recipe_curves(str(tmp_path), str(path), cpu_budget=700.0)
  assert path.stat().st_size > 0


def test_recipe_table_keeps_runs_and_rows_of_lost_runs(tmp_path):
  out, keep, table = tmp_path / "runs", tmp_path / "docs", tmp_path / "docs" / "runs.csv"
  _write_run(out / "connect4_recipe" / "dual_mcgs_s1")
  keep.mkdir()
  # A row whose run folder is gone, and a stale row of the run that is here.
  lost = dict.fromkeys(dual_mcts.RECIPE_FIELDS, "")
  lost.update(algo="alphazero", backup="tree", seed="0", cpu_s="3601.2",
              final_search_error_mean="0.0617")
  stale = dict(lost, algo="dual", backup="mcgs", seed="1", cpu_s="10.0")
  with open(table, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=dual_mcts.RECIPE_FIELDS)
    writer.writeheader()
    writer.writerows([stale, lost])

  dual_mcts.recipe_table(str(out), str(keep), str(table), target=0.05, cpu_budget=700.0)
  kept = keep / "connect4_recipe" / "dual_mcgs_s1"
  assert sorted(p.name for p in kept.iterdir()) == ["config.json", "metrics.csv"]
  with open(table, newline="") as f:
    rows = list(csv.DictReader(f))
  assert [(r["algo"], r["backup"], r["seed"], r["cpu_s"]) for r in rows] == [
      ("alphazero", "tree", "0", "3601.2"), ("dual", "mcgs", "1", "700.0")]
  assert rows[1]["cpu_s_to_target"] == "600.0"
  assert (keep / "connect4_curves.png").stat().st_size > 0
  # The run folder gone too: its row now comes from the kept copy.
  shutil.rmtree(out)
  dual_mcts.recipe_table(str(out), str(keep), str(table), target=0.05, cpu_budget=3600.0)
  with open(table, newline="") as f:
    assert list(csv.DictReader(f)) == rows


def test_recipe_summary_intervals_over_finished_runs(tmp_path):
  table = tmp_path / "runs.csv"
  rows = []
  for seed, (to_target, error, steps) in enumerate(
      [("1000.0", "0.04", "3"), ("2000.0", "0.05", "not converged"), ("", "0.06", "")]):
    row = dict.fromkeys(dual_mcts.RECIPE_FIELDS, "")
    row.update(algo="dual", backup="mcgs", seed=seed, cpu_s="3600.0", positions="3600000",
               cpu_s_to_target=to_target, final_search_error_mean=error,
               steps_to_convergence=steps)
    rows.append(row)
  # A run short of its budget (still training) is left out.
  rows.append(dict(rows[0], algo="mpv", cpu_s="100.0"))
  # The ablation has a row of its own, after the paper's three, with no paper figures.
  rows.append(dict(rows[0], algo="alphazero_noreuse"))
  with open(table, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=dual_mcts.RECIPE_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
  lines = dual_mcts.recipe_summary(str(table), cpu_budget=3600.0).splitlines()
  assert len(lines) == 4
  ablation = [c.strip() for c in lines[3].strip("|").split("|")]
  assert ablation[:3] + ablation[8:] == ["mcgs", "alphazero_noreuse", "1", "-, -, -"]
  cells = [c.strip() for c in lines[2].strip("|").split("|")]
  # Errors 4, 5, 6 %: mean 5, t(2) 4.303 * 1 / sqrt(3) = 2.484 either side.
  assert cells[:6] == ["mcgs", "dual", "3", "2/3", "1500 [-4853, 7853]", "5.0 [2.5, 7.5]"]
  assert cells[6] == "1000 [1000, 1000]"
  assert cells[7] == "3.0 (1/2)"
  assert cells[8] == "15.32, 12, 183.84"


def test_recipe_run_summary_one_row_per_finished_run(tmp_path):
  table = tmp_path / "runs.csv"
  rows = []
  for algo, backup, seed, error, steps in [("dual", "tree", 1, "0.135", "0"),
                                           ("alphazero", "tree", 0, "0.08", "5"),
                                           ("alphazero", "mcgs", 0, "0.1", ""),
                                           ("dual", "tree", 0, "0.14", "9")]:
    row = dict.fromkeys(dual_mcts.RECIPE_FIELDS, "")
    row.update(algo=algo, backup=backup, seed=seed, cpu_s="3600.0", positions="7200000",
               final_search_error_mean=error, final_policy_error_mean="0.2",
               steps_to_convergence=steps)
    rows.append(row)
  rows.append(dict(rows[0], seed=2, cpu_s="100.0"))  # still training: left out
  with open(table, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=dual_mcts.RECIPE_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
  diagnosis = tmp_path / "diagnosis.csv"
  with open(diagnosis, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=dual_mcts.DIAGNOSIS_FIELDS)
    writer.writeheader()
    for evaluator, error in [("own", "0.135"), ("large_85", "0.1133"), ("small_50", "0.15")]:
      writer.writerow(dict.fromkeys(dual_mcts.DIAGNOSIS_FIELDS, "") | dict(
          algo="dual", backup="tree", seed=1, evaluator=evaluator, search_error_mean=error))
  code, out, err = _command("--recipe-summary", "--per-run", "--table-csv", str(table),
                            "--diagnosis-csv", str(diagnosis))
  lines = dual_mcts.recipe_run_summary(str(table), str(diagnosis), 3600.0).splitlines()
  assert code == 0 and out.splitlines() == lines, err
  cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
  # Tree before graph, AlphaZero before Dual MCTS, seeds ascending.
  assert [c[:3] for c in cells] == [["tree", "alphazero", "0"], ["tree", "dual", "0"],
                                    ["tree", "dual", "1"], ["mcgs", "alphazero", "0"]]
  assert cells[2][3:] == ["13.5", "20.0", "2000", "0", "11.3"]
  assert cells[3][6:] == ["-", "-"]  # not ranked, not diagnosed


def test_recipe_diagnosis_reproduces_the_runs_own_evaluation(tmp_path):
  """An AlphaZero run's own evaluation search is the large network searched
  alone with 85 simulations: the two rows agree, and the diagnosis of a run
  already in the CSV or short of its budget is not redone."""
  config = config_lib.replace(config_lib.default_config("connect4"),
                              **dict(dual_mcts.recipe_config("alphazero", "tree", 0),
                                     eval_positions=2))
  directory = tmp_path / "connect4_recipe" / "alphazero_tree_s0"
  directory.mkdir(parents=True)
  (directory / "config.json").write_text(json.dumps(config.to_json()))
  env, network, _ = checkpoint.build_network(config)
  evaluation.save_snapshot(str(directory), 7, checkpoint.init_variables(
      network, env, jax.random.PRNGKey(1)))
  (directory / "metrics.csv").write_text("iteration,cpu_s\n7,3600.0\n")
  short = tmp_path / "connect4_recipe" / "mpv_tree_s0"
  short.mkdir()
  (short / "metrics.csv").write_text("iteration,cpu_s\n7,100.0\n")

  diagnosis = tmp_path / "diagnosis.csv"
  rows = dual_mcts.recipe_diagnosis(str(tmp_path), [0], str(diagnosis), cpu_budget=3600.0)
  by_name = {r["evaluator"]: r for r in rows}
  assert sorted(by_name) == ["large_35", "large_85", "own", "policy_large"]
  assert {(r["algo"], r["seed"], r["iteration"], r["cpu_s"]) for r in rows} == {
      ("alphazero", 0, 7, 3600.0)}
  assert by_name["own"]["search_error_mean"] == by_name["large_85"]["search_error_mean"]
  assert 0.0 <= by_name["policy_large"]["value_sign_error_mean"] <= 1.0
  assert by_name["own"]["value_sign_error_mean"] == ""
  # Kept in the CSV and not redone.
  again = dual_mcts.recipe_diagnosis(str(tmp_path), [0], str(diagnosis), cpu_budget=3600.0)
  assert [r["evaluator"] for r in again] == [r["evaluator"] for r in rows]
  assert again[0]["search_error_mean"] == str(by_name["own"]["search_error_mean"])
  # The summary: one cell, one seed, no small head.
  lines = dual_mcts.diagnosis_summary(str(diagnosis)).splitlines()
  assert len(lines) == 3
  cells = [c.strip() for c in lines[2].strip("|").split("|")]
  own = f"{100 * by_name['own']['search_error_mean']:.1f}"
  assert cells[:5] == ["tree", "alphazero", "1", own, own]
  assert cells[6:8] == ["-", f"{100 * by_name['policy_large']['search_error_mean']:.1f}"]
  assert cells[8:] == ["-", f"{100 * by_name['policy_large']['value_sign_error_mean']:.1f}", "-"]
