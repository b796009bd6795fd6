"""The phase-profile benchmark runs and writes one row per phase and mode."""

import csv

import pytest

from tests import commands


@pytest.mark.slow
def test_bench_phases_writes_its_rows(tmp_path):
  path = tmp_path / "phases.csv"
  commands.run("bench-phases", ["--batch", "2", "--sims", "4", "--hidden", "8", "--backups",
                                 "mcgs", "--repeats", "1", "--csv", path])
  rows = list(csv.DictReader(open(path)))
  names = [r["row"] for r in rows]
  assert names == ["network+env only", "search mcgs", "phase selection", "phase transition",
                   "phase lookup", "phase evaluation", "phase expansion+backup", "phase step"]
  assert all(float(r["median_ms"]) > 0 for r in rows)
  assert float(rows[-1]["share_of_step"]) == 1.0


