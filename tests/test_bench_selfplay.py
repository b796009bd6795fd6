"""Smoke test of the self-play benchmark: a tiny run writes its CSV rows and
prints the table (the mctx loop that compiles fastest and our loop)."""

import csv
import math

import pytest

from mcgs_jax.benchmarks import names
from mcgs_jax.experiments import bench_selfplay


@pytest.mark.slow
def test_tiny_run_writes_rows(tmp_path, capsys):
  path = tmp_path / "bench_selfplay.csv"
  bench_selfplay.main(["--batch", "4", "--simulations", "4", "--moves", "2", "--rounds", "1",
                       "--repeats", "1", "--contestants", "mctx-gumbel", "mcgs-noreuse",
                       "--csv", str(path)])
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
  assert "| loop |" in capsys.readouterr().out


def test_quick_defaults():
  args = bench_selfplay.parse_args(["--quick", "--moves", "2"])
  assert (args.batch, args.simulations, args.moves) == (
      names.SELFPLAY_QUICK["batch"], names.SELFPLAY_QUICK["simulations"], 2)
