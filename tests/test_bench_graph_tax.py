"""Smoke tests of the graph-tax benchmark (`mcgs_jax.benchmarks.graph_tax`):
a tiny run measures a row per cell; and of the pinning benchmark
(`mcgs_jax.benchmarks.pinning`): a tiny run measures a row per process."""

import os
import subprocess
import sys

import pytest

from mcgs_jax import modes
from mcgs_jax.learning import cli
from mcgs_jax.benchmarks import graph_tax
from mcgs_jax.benchmarks import kernel_phases
from mcgs_jax.benchmarks import pinning
from tests import commands


def test_a_quick_run_measures_every_cell():
  logged = []
  rows = graph_tax.measure(graph_tax.cells(quick=True), rounds=1, repeats=1, log=logged.append)
  assert [r["cell"] for r in rows] == ["search-b16-s8", "selfplay-connect4", "selfplay-nim",
                                      "control-selfplay-connect4", "floor-b16-s8"]
  assert all(set(graph_tax.FIELDS) <= set(r) for r in rows)
  assert all(float(r["mcgs_cpu_ms"]) > 0 and float(r["ratio"]) > 0 for r in rows)
  assert len(logged) == 1 and "selfplay-nim" in logged[0]   # one line per round


def test_the_control_times_one_program_against_itself():
  cells = {cell.name: cell for cell in graph_tax.cells(quick=True)}
  control, selfplay = cells["control-selfplay-connect4"], cells["selfplay-connect4"]
  assert control.programs["mcgs"]() == control.programs["tree"]()
  assert selfplay.programs["mcgs"]() == control.programs["mcgs"]()
  assert selfplay.programs["tree"]() != control.programs["tree"]()


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
  done = commands.run("bench-graph-tax", ["--networks", "--profile"], check=False, timeout=300)
  lines = [line for line in done.stderr.splitlines() if line.strip()]
  assert done.returncode == cli.USAGE and len(lines) == 1, done.stderr
  assert lines[0].startswith("error: ") and "pick one" in lines[0], done.stderr


_HLO = """HloModule jit_play, entry_computation_layout={()->f32[]}

%fused_computation.1 (param_0.1: f32[4]) -> f32[4] {
  %param_0.1 = f32[4]{0} parameter(0)
  ROOT %negate.1 = f32[4]{0} negate(%param_0.1), metadata={op_name="jit(play)/descend/lookup/neg"}
}

%body.2 (p.2: f32[4]) -> f32[4] {
  %p.2 = f32[4]{0} parameter(0)
  %gather_fusion.3 = f32[4]{0} fusion(%p.2), kind=kLoop, calls=%fused_computation.1, metadata={op_name="jit(play)/while/body/descend/select/while/body/gather"}
  %copy.4 = f32[4]{0} copy(%gather_fusion.3)
  ROOT %add_fusion.5 = f32[4]{0} fusion(%copy.4), kind=kLoop, calls=%fused_computation.1, metadata={op_name="jit(play)/while/body/descend/select/while/body/add"}
}

ENTRY %main.6 (x.6: f32[4]) -> f32[4] {
  %x.6 = f32[4]{0} parameter(0)
  %while.7 = f32[4]{0} while(%x.6), condition=%body.2, body=%body.2, metadata={op_name="jit(play)/while"}
  %scatter_fusion.8 = f32[4]{0} fusion(%while.7), kind=kLoop, calls=%fused_computation.1, metadata={op_name="jit(play)/reroot/vmap()/scatter"}
  ROOT %copy.9 = f32[4]{0} copy(%scatter_fusion.8)
}
"""


def test_instructions_take_their_phase_or_their_computations():
  assert kernel_phases.module_name(_HLO) == "jit_play"
  # Fused computations and loops are not thunks of their own; a copy takes
  # the phase of its computation's other instructions.
  assert kernel_phases.instruction_phases(_HLO) == {
      "gather_fusion.3": "descent", "copy.4": "descent", "add_fusion.5": "descent",
      "scatter_fusion.8": "reroot", "copy.9": "reroot"}
  assert kernel_phases.phase_of(
      "jit(play)/while/body/expand_and_backup/vmap(backup)/while/body/scatter") == "backup"
  assert kernel_phases.phase_of("jit(play)/while/body/expand_and_backup/vmap()/add") == "expansion"
  assert kernel_phases.phase_of("jit(play)/while/body/evaluate/MLP/tanh") == "network"
  assert kernel_phases.phase_of("jit(play)/jit(_gamma)/add") == "other"
  # By source path, without the program's name; an inserted copy has none.
  assert kernel_phases.instruction_sources(_HLO) == {
      "gather_fusion.3": "while/body/descend/select/while/body/gather",
      "copy.4": kernel_phases.NO_SOURCE,
      "add_fusion.5": "while/body/descend/select/while/body/add",
      "scatter_fusion.8": "reroot/vmap()/scatter", "copy.9": kernel_phases.NO_SOURCE}


def test_the_profile_splits_both_self_play_cells_by_phase(tmp_path):
  cells = graph_tax.profile_cells(quick=True)
  rows = graph_tax.profile(cells, rounds=1, trace_dir=str(tmp_path), log=lambda line: None)
  phases = list(kernel_phases.PHASES) + ["total"]
  assert [(r["cell"], r["phase"]) for r in rows] == [
      (f"selfplay-{game}", phase) for game in ("connect4", "nim") for phase in phases]
  by = {(r["cell"], r["phase"]): r for r in rows}
  for game in ("connect4", "nim"):
    cell = f"selfplay-{game}"
    # Only the graph looks keys up; both descend, evaluate, back up and re-root.
    assert by[cell, "lookup"]["mcgs_ms"] > 0 and by[cell, "lookup"]["tree_ms"] == 0
    for phase in ("descent", "network", "backup", "reroot"):
      assert by[cell, phase]["mcgs_ms"] > 0 and by[cell, phase]["tree_ms"] > 0, phase
      assert by[cell, phase]["mcgs_launches"] > 0 and by[cell, phase]["tree_launches"] > 0
    assert by[cell, "lookup"]["mcgs_launches"] > 0 and by[cell, "lookup"]["tree_launches"] == 0
    for backup in ("mcgs_ms", "tree_ms"):
      assert abs(sum(by[cell, p][backup] for p in kernel_phases.PHASES)
                 - by[cell, "total"][backup]) < 0.1
    assert abs(sum(by[cell, p]["share_of_difference"] for p in kernel_phases.PHASES) - 1) < 0.02

  # One phase by source path (the same compiled cells): the key lookup is
  # the graph's alone, so every source path of the phase has mcgs kernels
  # and no tree ones; the largest difference comes first.
  rows = graph_tax.profile_sources(cells, rounds=1, trace_dir=str(tmp_path), phase="lookup",
                                   log=lambda line: None)
  for game in ("connect4", "nim"):
    cell = [r for r in rows if r["cell"] == f"selfplay-{game}"]
    assert cell and all(r["phase"] == "lookup" for r in cell)
    assert all(r["mcgs_ms"] > 0 and r["mcgs_launches"] > 0 and r["tree_ms"] == 0
               and r["tree_launches"] == 0 for r in cell)
    assert any("descend/lookup" in r["source"] for r in cell)
    differences = [r["difference_ms"] for r in cell]
    assert differences == sorted(differences, reverse=True)


def test_an_unknown_phase_is_one_line_before_jax_loads():
  script = ("import sys\n"
            "from mcgs_jax.experiments import bench_graph_tax\n"
            "try:\n"
            "  bench_graph_tax.main(['--sources', 'desent'])\n"
            "except SystemExit as exit:\n"
            "  print(exit.code, 'jax' in sys.modules)\n")
  done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        timeout=120, env={**os.environ, "JAX_PLATFORMS": "cpu"})
  lines = [line for line in done.stderr.splitlines() if line.strip()]
  assert done.stdout.split() == [str(cli.USAGE), "False"], (done.stdout, done.stderr)
  assert len(lines) == 1, done.stderr
  assert lines[0].startswith("error: --sources: unknown phase 'desent'; the phases: descent, ")


def test_a_pinned_child_measures_on_one_core():
  # It loads the quick self-play program the first test compiled (the
  # persistent cache, through the environment).
  core = min(os.sched_getaffinity(0))
  row = pinning._result(pinning._start({core}, calls=1, quick=True))
  assert row["cores"] == 1   # as the child reports its own affinity
  assert row["wall_ms"] > 0 and row["cpu_ms"] > 0 and row["calls_per_s"] > 0


def test_the_pinning_run_has_a_row_per_process_of_each_placement(monkeypatch):
  started = []
  monkeypatch.setattr(pinning, "_start", lambda cores, calls, quick: started.append(cores) or
                      len(started))
  monkeypatch.setattr(pinning, "_result", lambda process: dict(
      cores=1, wall_ms=float(process), cpu_ms=1.0, calls_per_s=1.0))
  monkeypatch.setattr(pinning.os, "sched_getaffinity", lambda pid: {0, 1, 2})
  logged = []
  rows = pinning.measure(runs=2, calls=1, log=logged.append)
  placements = [None, {0}, {0}, {1}]
  assert started == placements * 2
  assert [(row["setup"], row["run"], row["process"]) for row in rows] == [
      (setup, run, process) for run in (1, 2) for setup, process in (
          ("one process, all cores", 1), ("one process, pinned", 1),
          ("one pinned process per core", 1), ("one pinned process per core", 2))]
  assert [row["wall_ms"] for row in rows] == [float(i) for i in range(1, 9)]
  assert len(logged) == len(rows)


def test_the_pinning_run_refuses_no_runs(capsys):
  with pytest.raises(SystemExit) as exit_info:
    pinning.main(["--runs", "0"])
  assert exit_info.value.code == 2
  assert "--runs and --calls must be >= 1" in capsys.readouterr().err
