"""Smoke test of the graph-tax benchmark: a tiny run writes a row per cell."""

import csv

from mcgs_jax.experiments import bench_graph_tax


def test_a_quick_run_writes_every_cell(tmp_path, capsys):
  out = tmp_path / "tax.csv"
  assert bench_graph_tax.main(["--quick", "--rounds", "1", "--repeats", "1",
                               "--csv", str(out)]) is None
  rows = list(csv.DictReader(out.open()))
  assert [r["cell"] for r in rows] == ["search-b16-s8", "selfplay-connect4", "selfplay-nim",
                                      "floor-b16-s8"]
  assert all(float(r["mcgs_cpu_ms"]) > 0 and float(r["ratio"]) > 0 for r in rows)
  assert "| selfplay-nim |" in capsys.readouterr().out
