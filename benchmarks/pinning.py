"""What pinning a process to one core does on a small CPU: the Connect-4
self-play loop of `bench-graph-tax` (mcgs, B=256, S=64, 8 moves per call,
graph reuse) in fresh processes, each run on all of the machine's cores, then
pinned to one, then as one pinned process per core side by side.

  python -m mcgs_jax.benchmarks.pinning [--runs 5] [--calls 6] [--csv FILE]

XLA's CPU runtime sizes its thread pool by the cores a process may run on
(its affinity, what `taskset` sets), so a pinned process runs its kernels on
one thread. Each process compiles the loop, plays two calls to warm up, then
times `--calls` calls; a row is one process: the median call's wall and
process CPU milliseconds, and its calls per wall second. Prints a table and
writes a CSV. Linux only (`os.sched_setaffinity`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from mcgs_jax.benchmarks import measure as measure_lib

FIELDS = ("setup", "run", "process", "cores", "wall_ms", "cpu_ms", "calls_per_s")
SHAPES = dict(batch=256, simulations=64, moves=8)
QUICK_SHAPES = dict(batch=8, simulations=8, moves=2)


def _child(calls: int, quick: bool) -> dict:
  """One process's measurement (run in the child)."""
  import jax   # pylint: disable=import-outside-toplevel
  from mcgs_jax.benchmarks import graph_tax   # pylint: disable=import-outside-toplevel
  shapes = QUICK_SHAPES if quick else SHAPES
  call = graph_tax.selfplay_cell("connect4", shapes["batch"], shapes["simulations"],
                                 shapes["moves"]).calls["mcgs"]
  for _ in range(2):
    jax.block_until_ready(call())
  walls, cpus = [], []
  begin = time.perf_counter()
  for _ in range(calls):
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(call())
    walls.append((time.perf_counter() - wall) * 1e3)
    cpus.append((time.process_time() - cpu) * 1e3)
  return dict(cores=len(os.sched_getaffinity(0)), wall_ms=round(statistics.median(walls), 1),
              cpu_ms=round(statistics.median(cpus), 1),
              calls_per_s=round(calls / (time.perf_counter() - begin), 3))


# The child pins itself before it imports jax (importing the package starts
# jax's runtime, which sizes its thread pool by the cores it may run on).
_CHILD = """import os, runpy
cores = {cores!r}
if cores:
  os.sched_setaffinity(0, cores)
runpy.run_module("mcgs_jax.benchmarks.pinning", run_name="__main__", alter_sys=True)
"""


def _start(cores, calls: int, quick: bool) -> subprocess.Popen:
  command = [sys.executable, "-c", _CHILD.format(cores=sorted(cores) if cores else None),
             "--child", "--calls", str(calls)] + (["--quick"] if quick else [])
  return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))


def _result(process: subprocess.Popen) -> dict:
  out, err = process.communicate()
  if process.returncode:
    raise SystemExit(f"error: a measuring process failed ({process.returncode}): "
                     f"{(err.strip().splitlines() or [''])[-1]}")
  return json.loads(out.strip().splitlines()[-1])


def measure(runs: int, calls: int, quick: bool = False, log=print) -> list[dict]:
  """Every setup `runs` times, one process (or pair) after another.

  Args:
    runs: runs per setup.
    calls: timed calls per process.
    quick: tiny shapes (a smoke run).
    log: where each row is printed.

  Returns:
    One row (`FIELDS`) per process.
  """
  available = sorted(os.sched_getaffinity(0))
  first = {available[0]}
  pairs = [{core} for core in available[:2]]
  rows = []
  for run in range(runs):
    setups = [("one process, all cores", [None]), ("one process, pinned", [first])]
    if len(pairs) == 2:
      setups.append(("one pinned process per core", pairs))
    for setup, placements in setups:
      processes = [_start(cores, calls, quick) for cores in placements]
      for index, process in enumerate(processes):
        # `cores`: those the process could run on, as it reports them.
        row = dict(setup=setup, run=run + 1, process=index + 1, **_result(process))
        rows.append(row)
        log(f"  run {run + 1}/{runs}: {setup}, process {index + 1}: {row['wall_ms']} ms a call "
            f"({row['cpu_ms']} ms of CPU)")
  return rows


def main(argv=None) -> int:
  """The command line: measures, prints the table, writes the CSV.

  Args:
    argv: the arguments (None: sys.argv[1:]).

  Returns:
    0.
  """
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--runs", type=int, default=5)
  parser.add_argument("--calls", type=int, default=6)
  parser.add_argument("--quick", action="store_true", help="tiny shapes (a smoke run)")
  parser.add_argument("--csv", default="results/benchmarks/pinning.csv")
  parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.runs < 1 or args.calls < 1:
    parser.error("--runs and --calls must be >= 1")
  if args.child:
    print(json.dumps(_child(args.calls, args.quick)))
    return 0
  if not hasattr(os, "sched_setaffinity"):
    parser.error("pinning needs os.sched_setaffinity (Linux)")
  rows = measure(args.runs, args.calls, args.quick)
  print(measure_lib.markdown_table(rows, FIELDS))
  measure_lib.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
