"""The graph-vs-tree report (`mcgs_jax.benchmarks.graph_vs_tree.report`) on
hand-written metrics: one row per run, intervals over seeds, the curves."""

import csv
import dataclasses
import gzip
import json
import math
import shutil
import subprocess
import sys

import pytest

from mcgs_jax import networks

from mcgs_jax.benchmarks import graph_vs_tree
from mcgs_jax.learning import cli
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import training

SETS = tuple(ground_truth.C4_SETS)


def _write_run(folder, rows):
  fields = sorted({key for row in rows for key in row})
  folder.mkdir(parents=True)
  with open(folder / "metrics.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fields)
    writer.writeheader()
    writer.writerows(rows)


def _connect4_rows(error, hits):
  """Three iterations; the 2nd and 3rd evaluated (search error `error` on
  every set at the end, twice that at the middle)."""
  rows = []
  for iteration, cpu_s in ((1, 500.0), (2, 1000.0), (3, 1800.0)):
    row = dict(iteration=iteration, cpu_s=cpu_s, positions_total=100 * iteration,
               nn_evals_total=2500 * iteration, transposition_hits=hits)
    if iteration > 1:
      scale = 1 if iteration == 3 else 2
      for name in SETS:
        row.update({f"search_c4_error_{name}": error * scale, f"policy_c4_error_{name}": 0.2,
                    f"value_c4_sign_error_{name}": 0.3})
    rows.append(row)
  return rows


def test_report_rows_and_intervals(tmp_path):
  runs = tmp_path / "runs"
  for seed, error in enumerate((0.04, 0.05, 0.06)):
    _write_run(runs / f"connect4_mcgs_s{seed}", _connect4_rows(error, hits=10))
  _write_run(runs / "connect4_tree_s0", _connect4_rows(0.08, hits=0))
  # A run kept compressed, as the docs keep them: read the same.
  tree_metrics = runs / "connect4_tree_s0" / "metrics.csv"
  tree_metrics.with_suffix(".csv.gz").write_bytes(gzip.compress(tree_metrics.read_bytes()))
  tree_metrics.unlink()
  # Run s1 resumed on other code; the tree run predates the record.
  for version in ("abc123", "abc123", "def456+dirty"):
    graph_vs_tree.record_commit(str(runs), "connect4_mcgs_s1", version)
  graph_vs_tree.record_commit(str(runs), "connect4_mcgs_s0", "abc123")
  out = tmp_path / "out"
  out.mkdir()
  # `final`'s files, as it leaves them: two mcgs agents, one tree agent.
  (out / "final.csv").write_text(
      "run,search,seed,positions,search_mean,policy_mean,value_mean,value_sign_mean\n"
      "connect4_mcgs_s0,mcgs,0,400,0.05,0.1,0.4,0.2\nconnect4_mcgs_s1,mcgs,1,400,0.07,0.1,0.4,0.2\n"
      "connect4_tree_s0,tree,0,400,0.06,0.1,0.4,0.2\n")
  (out / "elo.csv").write_text("player,elo,elo_low,elo_high,games\nconnect4_mcgs_s0,0,0,0,8\n"
                               "connect4_mcgs_s1,20,-5,45,8\nconnect4_tree_s0,-30,-60,0,8\n")
  # Two cross pairs: mcgs_s0 scores 3/4 against tree_s0 (as a), mcgs_s1 1/4 (as b).
  (out / "arena_games.csv").write_text(
      "a,b,game,score\n" + "".join(f"connect4_mcgs_s0,connect4_tree_s0,{g},{x}\n"
                                    for g, x in enumerate((1, 1, 0.5, 0.5)))
      + "".join(f"connect4_tree_s0,connect4_mcgs_s1,{g},{x}\n"
                for g, x in enumerate((1, 1, 0.5, 0.5)))
      + "connect4_mcgs_s0,connect4_mcgs_s1,0,1\n")
  assert graph_vs_tree.report(str(runs), str(out), ["connect4"], ["mcgs", "tree"],
                              [0, 1, 2]) == 0
  rows = list(csv.DictReader(open(out / "runs.csv")))
  assert [(r["search"], r["seed"]) for r in rows] == [("mcgs", "0"), ("mcgs", "1"), ("mcgs", "2"),
                                                       ("tree", "0")]
  assert [r["commit"] for r in rows] == ["abc123", "abc123 def456+dirty", "", ""]
  assert float(rows[3]["search_error_mean"]) == 0.08   # from metrics.csv.gz
  first = rows[0]
  assert (first["iterations"], first["positions"], first["eval_iteration"]) == ("3", "300", "3")
  assert float(first["search_error_mean"]) == 0.04
  assert (float(first["policy_error_mean"]), float(first["value_sign_error_mean"])) == (0.2, 0.3)
  assert float(first["nn_evals_per_position"]) == 25.0
  assert float(first["transposition_hits_per_position"]) == 0.1   # 3 x 10 hits / 300
  summary = {(r["search"], r["at_cpu_s"], r["measure"]): r
             for r in csv.DictReader(open(out / "by_search.csv"))}
  end = summary[("mcgs", "end", "search_error_mean")]
  # mean 0.05, sd 0.01 over 3 seeds: half-width 4.303 * 0.01 / sqrt(3).
  half = 4.303 * 0.01 / math.sqrt(3)
  assert float(end["mean"]) == 0.05
  assert float(end["lo"]) == pytest.approx(0.05 - half, abs=1e-4)
  assert float(end["hi"]) == pytest.approx(0.05 + half, abs=1e-4)
  # At 1200 CPU s the middle evaluation (iteration 2, at 1000 s) counts: twice the error.
  assert float(summary[("mcgs", "1200", "search_error_mean")]["mean"]) == 0.1
  # One tree run: its mean, no interval.
  assert summary[("tree", "end", "search_error_mean")]["lo"] == "nan"
  final = summary[("mcgs", "final, 400 positions per set", "search_mean")]
  assert (final["runs"], float(final["mean"])) == ("2", 0.06)
  assert float(summary[("mcgs", "arena", "elo")]["mean"]) == 10.0
  assert float(summary[("tree", "arena", "elo")]["mean"]) == -30.0
  head_to_head = summary[("mcgs", "arena", "score_vs_tree")]
  assert (head_to_head["runs"], float(head_to_head["mean"])) == ("2", 0.5)
  assert (out / "curves.png").stat().st_size > 10000


def test_report_without_runs_is_one_line(tmp_path):
  """The command line, run as a process."""
  done = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.graph_vs_tree", "report",
                         "--runs", str(tmp_path), "--out", str(tmp_path / "out")],
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == cli.USAGE, done.stderr
  assert done.stderr.splitlines() == [
      f"error: no run under {tmp_path} (--debug shows the traceback)"]


@pytest.mark.slow
def test_final_scores_and_plays_the_agents_once(tmp_path):
  """Two copies of the shipped agent as two runs: two rows, one pair of
  games, and a rerun adds nothing."""
  runs = tmp_path / "runs"
  for name in ("connect4_mcgs_s0", "connect4_tree_s0"):
    shutil.copytree(networks.PRETRAINED_CONNECT4, runs / name)
  final_agents = lambda: graph_vs_tree.final(str(runs), str(tmp_path / "out"), ["mcgs", "tree"],
                                             [0], positions=2, arena_games=4, simulations=8)
  assert final_agents() == 0
  final = list(csv.DictReader(open(tmp_path / "out" / "final.csv")))
  assert [(r["search"], r["positions"]) for r in final] == [("mcgs", "2"), ("tree", "2")]
  assert final[0]["search_mean"] == final[1]["search_mean"]   # the same network
  games = list(csv.DictReader(open(tmp_path / "out" / "arena_games.csv")))
  assert len(games) == 4 and {(g["a"], g["b"]) for g in games} == {
      ("connect4_mcgs_s0", "connect4_tree_s0")}
  assert final_agents() == 0
  assert len(list(csv.DictReader(open(tmp_path / "out" / "arena_games.csv")))) == 4
  assert len(list(csv.DictReader(open(tmp_path / "out" / "final.csv")))) == 2


@pytest.mark.parametrize("search", ["mcgs", "tree"])
def test_run_fields_give_the_recipes_searches(tmp_path, search):
  """Each recipe's run config, as the training command resolves it: the
  backup in both searches; the budget recipe's self-play search fields, the
  evaluation search left as the other Nim recipes have it."""
  configs = {}
  for game in ("nim", "nim-budget"):
    path = tmp_path / f"{game}.json"
    path.write_text(json.dumps(graph_vs_tree.run_fields(game, search, seed=1)))
    configs[game] = training.resolve_config(str(tmp_path / game), str(path), env="nim")
  plain, budget = configs["nim"], configs["nim-budget"]
  for config in (plain, budget):
    assert config.search.backup == config.eval_search.backup == search
    assert config.seed == 1
    assert dict(config.network_kwargs)["hidden_sizes"] == (32, 32)
  assert (plain.search.num_simulations, plain.search.max_nn_evals) == (64, None)
  assert (budget.search.num_simulations, budget.search.max_nn_evals) == (256, 64)
  assert budget.eval_search == plain.eval_search
  assert budget.search == dataclasses.replace(plain.search, num_simulations=256, max_nn_evals=64)
