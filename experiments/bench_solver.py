"""Speed and correctness of the exact Connect-4 solver on Pons' benchmark sets.

  python -m experiments.bench_solver                      # all six sets, all positions
  python -m experiments.bench_solver --limit 50           # the first 50 of each set
  python -m experiments.bench_solver --sets Test_L1_R3 --limit 10 --max-seconds 300

Each position is timed on its own: the transposition table is emptied before
it (untimed, and O(1) thanks to generation tags), so times do not depend on
the order of the file. `--keep-table` keeps it instead, as `envs.connect4_solver.solve`
does. One untimed call compiles (or loads from numba's cache) first.

Prints one row per set and writes them to `--csv` (results/bench_solver.csv).
"""

import argparse
import statistics
import sys
import time

from envs import connect4_solver
from learning import benchmarks
from learning import cli
from envs import pons

SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L2_R2", "Test_L1_R1", "Test_L1_R2", "Test_L1_R3")
FIELDS = ("set", "positions", "of", "wrong", "mean_ms", "median_ms", "max_ms", "total_s",
          "mean_nodes", "max_nodes", "nodes_per_s")


def _rows(name, limit):
  rows = pons.read_scores(name)
  return (rows[:limit] if limit else rows), len(rows)


def bench_set(solver, name, limit, keep_table, max_seconds):
  """Solves the set's positions in file order; returns one result row."""
  rows, total = _rows(name, limit)
  times, nodes, wrong = [], [], 0
  started = time.perf_counter()
  for moves, score in rows:
    if max_seconds and time.perf_counter() - started > max_seconds:
      break
    if not keep_table:
      solver.reset()
    before = solver.nodes
    t0 = time.perf_counter()
    got = solver.solve(moves)
    times.append(time.perf_counter() - t0)
    nodes.append(solver.nodes - before)
    if got != score:
      wrong += 1
      print(f"  WRONG {name} {moves}: expected {score}, got {got}", flush=True)
  total_s = sum(times)
  return {
      "set": name,
      "positions": len(times),
      "of": total,
      "wrong": wrong,
      "mean_ms": 1e3 * total_s / len(times),
      "median_ms": 1e3 * statistics.median(times),
      "max_ms": 1e3 * max(times),
      "total_s": total_s,
      "mean_nodes": sum(nodes) / len(nodes),
      "max_nodes": max(nodes),
      "nodes_per_s": sum(nodes) / total_s if total_s > 0 else float("nan"),
  }


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--limit", type=int, default=0, help="first N positions per set (0: all)")
  parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
  parser.add_argument("--keep-table", action="store_true",
                      help="keep the transposition table between positions")
  parser.add_argument("--max-seconds", type=float, default=0.0,
                      help="stop a set after this much solving time (0: no limit)")
  parser.add_argument("--csv", default="results/bench_solver.csv")
  args = parser.parse_args(argv)

  solver = connect4_solver.Solver()
  t0 = time.perf_counter()
  solver.solve("4455")
  print(f"compile or cache load: {time.perf_counter() - t0:.2f} s")

  header = (f"{'set':<11} {'positions':>11} {'wrong':>5} {'mean ms':>10} {'median ms':>10} "
            f"{'max ms':>10} {'total s':>9} {'mean nodes':>12} {'max nodes':>12} {'Mnodes/s':>8}")
  print(header)
  results = []
  for name in args.sets:
    r = bench_set(solver, name, args.limit, args.keep_table, args.max_seconds)
    results.append(r)
    print(f"{r['set']:<11} {r['positions']:>5}/{r['of']:<5} {r['wrong']:>5} {r['mean_ms']:>10.3f} "
          f"{r['median_ms']:>10.3f} {r['max_ms']:>10.3f} {r['total_s']:>9.2f} "
          f"{r['mean_nodes']:>12.0f} {r['max_nodes']:>12d} {r['nodes_per_s'] / 1e6:>8.2f}",
          flush=True)

  if args.csv:
    benchmarks.write_csv(args.csv, results, FIELDS)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
