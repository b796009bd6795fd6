"""Smoke test of the graph-tax benchmark (`mcgs_jax.benchmarks.graph_tax`):
a tiny run measures a row per cell."""

from mcgs_jax import modes
from mcgs_jax.learning import cli
from mcgs_jax.benchmarks import graph_tax
from tests import commands


def test_a_quick_run_measures_every_cell():
  logged = []
  rows = graph_tax.measure(graph_tax.cells(quick=True), rounds=1, repeats=1, log=logged.append)
  assert [r["cell"] for r in rows] == ["search-b16-s8", "selfplay-connect4", "selfplay-nim",
                                      "floor-b16-s8"]
  assert all(set(graph_tax.FIELDS) <= set(r) for r in rows)
  assert all(float(r["mcgs_cpu_ms"]) > 0 and float(r["ratio"]) > 0 for r in rows)
  assert len(logged) == 1 and "selfplay-nim" in logged[0]   # one line per round


def test_the_network_sweep_measures_every_network_and_the_budget():
  rows = graph_tax.measure(graph_tax.network_cells(quick=True), rounds=1, repeats=1,
                           log=lambda line: None)
  assert [r["cell"] for r in rows] == ["nim-8-s8", "nim-8-s16-e8"]
  assert all(float(r["mcgs_cpu_ms"]) > 0 and float(r["tree_cpu_ms"]) > 0 for r in rows)


def test_the_parts_run_times_each_switch_of_the_graph_against_the_tree(monkeypatch):
  # The mode it registers is gone after the test.
  monkeypatch.setattr(modes, "MODES", dict(modes.MODES))
  rows = graph_tax.measure(graph_tax.part_cells(quick=True), rounds=1, repeats=1,
                           log=lambda line: None)
  assert [r["cell"] for r in rows] == [
      f"selfplay-{game}{suffix}" for game in ("connect4", "nim")
      for suffix in ("-table", "-links", "")]
  assert all(float(r["mcgs_cpu_ms"]) > 0 and float(r["tree_cpu_ms"]) > 0 for r in rows)
  assert graph_tax.LINKS_ONLY in modes.names()
  assert graph_tax.part_cells(quick=True)   # registering the mode twice is harmless


def test_two_runs_asked_at_once_are_one_line():
  done = commands.run("bench-graph-tax", ["--networks", "--parts"], check=False, timeout=300)
  lines = [line for line in done.stderr.splitlines() if line.strip()]
  assert done.returncode == cli.USAGE and len(lines) == 1, done.stderr
  assert lines[0].startswith("error: ") and "pick one" in lines[0], done.stderr
