"""make bench-compare: the tree against a base commit, interleaved
(`mcgs_jax.experiments.bench_compare`); the quick run against HEAD is slow (two
workers compile six cells each), so it runs under `make test-slow`."""

import pytest

from mcgs_jax.experiments import bench_compare


def test_an_unknown_base_is_one_clear_error():
  with pytest.raises(ValueError, match="is not a commit"):
    bench_compare.main(["--base", "no-such-revision-here"])


def test_the_table_shows_every_ratio():
  rows = [dict(cell="puct-b1024", base_ms=90.0, work_ms=81.0, ratio=0.9, ratio_min=0.85,
               ratio_max=0.95, rounds=5)]
  assert bench_compare.format_table(rows).splitlines()[2] == (
      "| puct-b1024 | 90.00 | 81.00 | 0.900 | 0.850 | 0.950 |")


@pytest.mark.slow
def test_quick_against_head_measures_every_cell(tmp_path):
  csv_path = tmp_path / "compare.csv"
  assert bench_compare.main(["--base", "HEAD", "--quick", "--rounds", "1", "--repeats", "1",
                             "--csv", str(csv_path)]) == 0
  lines = csv_path.read_text().splitlines()
  cells = [line.split(",")[0].strip('"') for line in lines[1:]]
  assert cells[:6] == ["puct-b1", "puct-b16", "gumbel-b16", "floor-b16", "puct-selfplay",
                       "gumbel-selfplay"]
  assert any(cell.startswith("overhead (work") for cell in cells)
