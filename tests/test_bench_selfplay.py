"""Smoke test of the self-play benchmark: a tiny run writes its CSV rows and
prints the table (the mctx loop that compiles fastest and our loop)."""

import csv
import math

import pytest

from mcgs_jax.benchmarks import names
from tests import commands


@pytest.mark.slow
def test_tiny_run_writes_rows(tmp_path):
  path = tmp_path / "bench_selfplay.csv"
  done = commands.run("bench-selfplay", ["--batch", "4", "--simulations", "4", "--moves", "2",
                                         "--rounds", "1", "--repeats", "1", "--contestants",
                                         "mctx-gumbel", "mcgs-noreuse", "--csv", path])
  with open(path) as f:
    rows = list(csv.DictReader(f))
  assert [r["contestant"] for r in rows] == ["mctx-gumbel", "mcgs-noreuse"]
  for row in rows:
    assert row["status"] == "ok"
    assert float(row["positions_per_s"]) > 0
    assert float(row["net_batches_per_move"]) >= 5.0   # S + 1 batched network calls
    assert math.isnan(float(row["ratio_vs_mctx"]))      # mctx.muzero_policy not run
  # S = 4 simulations plus at most one root: at most 5 leaves evaluated per move.
  assert 0 < float(rows[1]["nn_evals_per_move"]) <= 5.0
  assert "| loop |" in done.stdout


def test_quick_defaults():
  assert names.selfplay_sizes(True, batch=None, simulations=None, moves=2) == dict(
      batch=names.SELFPLAY_QUICK["batch"], simulations=names.SELFPLAY_QUICK["simulations"],
      moves=2)
  assert names.selfplay_sizes(False) == names.SELFPLAY_FULL
