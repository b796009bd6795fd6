"""make bench-compare: the tree against a base commit, interleaved
(`mcgs_jax.benchmarks.compare`, the command `mcgs-jax bench-compare`); the quick
run against HEAD is slow (two workers compile nine cells each), so it runs
under `make test-slow`."""

import os
import subprocess
import sys

import pytest

from mcgs_jax.benchmarks import compare

COMMAND = [sys.executable, "-m", "mcgs_jax.experiments.bench_compare"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_an_unknown_base_is_one_clear_error():
  done = subprocess.run(COMMAND + ["--base", "no-such-revision-here"], capture_output=True,
                        text=True, timeout=120)
  assert done.returncode != 0
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith(
      "error: --base 'no-such-revision-here' is not a commit of this repository"), done.stderr


def test_the_table_shows_every_ratio():
  rows = [dict(cell="puct-b1024", base_ms=90.0, work_ms=81.0, ratio=0.9, ratio_min=0.85,
               ratio_max=0.95, rounds=5, base="base")]
  assert compare.format_table(rows).splitlines()[2] == (
      "| puct-b1024 | base | 90.00 | 81.00 | 0.900 | 0.850 | 0.950 |")


class _FakeWorker:
  """A worker whose tree runs every cell in a fixed time, 1% slower when it
  was started second in its session; records the start order and turns."""
  speeds = {"a": 100.0, "b": 120.0, "work": 110.0}
  started, timed = [], []

  def __init__(self, tree, quick, label, cores=None):
    del tree, quick, cores
    self.label = label
    self.rank = len(_FakeWorker.started) % 3
    _FakeWorker.started.append(label)

  def ask(self, command):
    words = command.split()
    if words[0] == "compile":
      return {"cells": words[1].split(","), "seconds": 0.0, "cores": 1}
    _FakeWorker.timed.append(self.label)
    return {"median_ms": self.speeds[self.label] * (1.01 if self.rank == 0 else 1.0)}

  def close(self):
    pass


def test_several_bases_share_the_sessions(monkeypatch):
  """Two bases and the work: the sessions start them in turn forward and
  back, each round turns the order by one, and each row is the work against
  one base, as the geometric mean of the sessions' medians."""
  monkeypatch.setattr(compare, "Worker", _FakeWorker)
  _FakeWorker.started, _FakeWorker.timed = [], []
  rows = compare.compare({"a": "A", "b": "B"}, "W", rounds=4, repeats=1, quick=False,
                         cells=["puct-b1024"], sessions=2)
  assert _FakeWorker.started == ["a", "b", "work", "work", "b", "a"]
  assert _FakeWorker.timed == ["a", "b", "work", "b", "work", "a",   # session 0, rounds 0-1
                               "work", "b", "a", "b", "a", "work"]   # session 1
  assert [(r["cell"], r["base"]) for r in rows] == [("puct-b1024", "a"), ("puct-b1024", "b")]
  # a and the work each started first once: their luck cancels.
  assert rows[0]["ratio"] == pytest.approx(1.1)
  assert rows[1]["ratio"] == pytest.approx(110 / 120 * 1.01 ** 0.5)
  assert rows[0]["rounds"] == 4


def test_the_ratio_weighs_both_halves_alike():
  """Five rounds, three started base first: the median of all rounds would
  be the base-first half's 1.02; each half weighing the same gives
  sqrt(1.02 * 1.07). One half alone gives its median."""
  halves = ["base"] * 3 + ["work"] * 2
  ratio = compare.balanced_ratio([1.02, 1.01, 1.03, 1.08, 1.06], halves)
  assert ratio == pytest.approx((1.02 * 1.07) ** 0.5)
  assert compare.balanced_ratio([0.9, 0.95, 1.0], ["base"] * 3) == pytest.approx(0.95)


@pytest.mark.slow
def test_quick_against_head_measures_every_cell(tmp_path):
  csv_path = tmp_path / "compare.csv"
  subprocess.run(COMMAND + ["--base", "HEAD", "--quick", "--rounds", "1", "--repeats", "1",
                            "--csv", str(csv_path)], check=True, timeout=1800)
  lines = csv_path.read_text().splitlines()
  cells = [line.split(",")[0].strip('"') for line in lines[1:]]
  assert cells[:9] == ["puct-b1", "puct-b16", "gumbel-b16", "solver-b8", "rave-b8", "floor-b16",
                       "puct-selfplay", "gumbel-selfplay", "nim-selfplay"]
  assert any(cell.startswith("overhead (work") for cell in cells)


def test_a_worker_pins_itself_to_the_cores_it_is_given():
  core = min(os.sched_getaffinity(0))
  worker = compare.Worker(ROOT, quick=True, label="work", cores={core})
  try:
    assert worker.ask("cores") == {"cores": 1}
    # A misspelt cell: one clear answer naming the cells, the worker still up.
    answer = worker.ask("compile puct-b16,no-such-cell")
    assert answer["error"].startswith("unknown cell(s) no-such-cell; the cells: puct-b1, ")
    assert worker.ask("cores") == {"cores": 1}
  finally:
    worker.close()
