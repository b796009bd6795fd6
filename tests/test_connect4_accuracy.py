"""The Connect-4 accuracy benchmark: scoring rules, intervals, a tiny run."""

import importlib.util
import subprocess
import sys

import pytest

from mcgs_jax.benchmarks import accuracy
from mcgs_jax.learning import evaluation
from mcgs_jax.envs import pons


def _accuracy_command(argv):
  """`mcgs-jax connect4-accuracy ARGV`, run as a process."""
  subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.connect4_accuracy", *argv],
                 check=True, timeout=1800)


def test_wilson_interval_golden_values():
  lo, hi = evaluation.wilson_interval(8, 10)
  assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
  lo, hi = evaluation.wilson_interval(0, 20)
  assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)
  assert evaluation.wilson_interval(0, 0) == (0.0, 1.0)


def test_seed_interval_golden_values():
  # 4, 5, 6: mean 5, sd 1, t(2) = 4.303: 5 -+ 4.303 / sqrt(3).
  mean, lo, hi = evaluation.seed_interval([4.0, 5.0, 6.0])
  assert mean == 5.0
  assert (lo, hi) == (pytest.approx(2.5156, abs=1e-4), pytest.approx(7.4844, abs=1e-4))
  mean, lo, hi = evaluation.seed_interval([2.0, float("nan")])
  assert mean == 2.0 and lo != lo and hi != hi     # one value: no interval
  assert all(x != x for x in evaluation.seed_interval([]))


def test_position_scoring_follows_the_columns_convention():
  # A Test_L2_R1 line: score 4 for the side to move, columns 6 is best.
  p = accuracy.parse_columns_line("5554224333234511764415115 8,8,8,8,43,-4,8")
  assert p.score == 4
  assert p.is_optimal(5) and p.preserves(5)
  assert not p.preserves(0) and not p.is_optimal(0)
  assert not p.preserves(4)          # full column
  drawn = accuracy.Position("x", (0, 1, 0, None, 2, 0, 0))
  assert drawn.score == 0
  assert drawn.preserves(0) and not drawn.preserves(1)
  lost = accuracy.Position("x", (3, 5, None, 3, 3, 3, 3))
  assert lost.score == -3
  assert all(lost.preserves(c) for c in (0, 1, 3))
  assert lost.is_optimal(0) and not lost.is_optimal(1)


def test_every_pons_set_agrees_with_its_scores_file():
  for name in pons.SETS:
    positions = accuracy.load_set(name)
    scores = [score for _, score in pons.read_scores(name)]
    assert [p.score for p in positions] == scores


@pytest.mark.slow
def test_tiny_run_scores_mcgs_and_tree(tmp_path):
  searches = ["mcgs", "tree"]
  if importlib.util.find_spec("pyspiel") is not None:
    searches.append("openspiel")
  csv_path = tmp_path / "accuracy.csv"
  _accuracy_command(["--sets", "L3_R1", "--sims", "64", "--limit", "8", "--batch", "8",
            "--searches", *searches, "--csv", str(csv_path)])
  lines = csv_path.read_text().splitlines()
  assert len(lines) == 1 + len(searches)
  for line in lines[1:]:
    row = dict(zip(accuracy.FIELDS, line.split(",")))
    assert row["positions"] == "8"
    # End-game positions: 64 simulations with rollouts find a move that keeps
    # the result in most of them.
    assert float(row["preserving"]) >= 0.5
    # An optimal move always keeps the result.
    assert float(row["optimal"]) <= float(row["preserving"])


@pytest.mark.slow
def test_new_switch_rows_run(tmp_path):
  searches = ["katago", "mcgs+ppsoft", "mcgs+pphard", "mcgs+lcb", "mcgs+minroot"]
  for search in searches:
    accuracy.search_config(search, 8)
  assert accuracy.search_config("katago+lcb", 8).move_choice == "lcb"
  assert "progressive_pruning" not in accuracy.ENHANCEMENTS["all"]
  csv_path = tmp_path / "accuracy.csv"
  _accuracy_command(["--sets", "L3_R1", "--sims", "32", "--limit", "2", "--batch", "2",
            "--searches", "katago", "mcgs+pphard+lcb+minroot", "--csv", str(csv_path)])
  assert len(csv_path.read_text().splitlines()) == 3


CLASSIC_ROWS = ["mcgs+rave", "mcgs+expvisits", "mcgs+expprob", "mcgs+depth1", "mcgs+depth2",
                "mcgs+mix"]


def test_classic_rows_map_to_their_switches():
  assert accuracy.search_config("mcgs+rave", 8).rave
  assert accuracy.search_config("mcgs+expvisits", 8).expansion_policy == "visits"
  assert accuracy.search_config("mcgs+expprob", 8).expansion_policy == "probability"
  assert accuracy.search_config("mcgs+depth2", 8).depth_i == 2
  # "mix" changes the evaluator, not the config.
  assert accuracy.search_config("mcgs+mix", 8) == accuracy.search_config("mcgs", 8)


@pytest.mark.slow
def test_classic_rows_run_and_report_nodes(tmp_path):
  csv_path = tmp_path / "accuracy.csv"
  _accuracy_command(["--sets", "L3_R1", "--sims", "32", "--limit", "2", "--batch", "2",
            "--searches", "mcgs", *CLASSIC_ROWS, "--csv", str(csv_path)])
  rows = [
      dict(zip(accuracy.FIELDS, line.split(","))) for line in csv_path.read_text().splitlines()[1:]
  ]
  assert [r["search"] for r in rows] == ["mcgs"] + CLASSIC_ROWS
  nodes = {r["search"]: float(r["nodes"]) for r in rows}
  assert all(0 < n <= 33 for n in nodes.values())
  # Delayed expansion stores fewer nodes than the plain search.
  assert nodes["mcgs+expvisits"] < nodes["mcgs"]
