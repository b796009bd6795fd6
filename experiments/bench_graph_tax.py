"""What the graph costs over the tree: searches and self-play loops with
`backup="mcgs"` and `backup="tree"` in one process, by process CPU time.

  mcgs-jax bench-graph-tax                 # about 2 minutes on 2 cores
  mcgs-jax bench-graph-tax --rounds 9      # tighter medians
  mcgs-jax bench-graph-tax --quick         # tiny shapes (the test)
  mcgs-jax bench-graph-tax --networks      # Nim self-play over network sizes
  mcgs-jax bench-graph-tax --parts         # self-play, the graph's switches one by one
  mcgs-jax bench-graph-tax --profile --rounds 3   # self-play's kernel time by phase
  taskset -c 0 mcgs-jax bench-graph-tax --profile --rounds 3   # the same on one core
  taskset -c 0 mcgs-jax bench-graph-tax --sources descent --rounds 3   # one phase, by source

Cells: one Connect-4 search (MLP(128, 128); B=1024 S=64, B=256 S=200, B=64
S=800), `selfplay.play` on Connect-4 and on Nim (1,3,5,7) (B=256, S=64, 8
moves per call, graph reuse), the Connect-4 self-play's mcgs program against
a second copy of itself (a control: its spread is the run's noise), and the
full mcgs search against the network floor (B=1024, S=64). With --networks
instead: Nim self-play as graph-vs-tree trains it (B=128, S=64) with MLPs
from (32, 32) to (1024, 1024), and with an evaluation budget. With --parts: the self-play
cells with the table alone (tt_cache), links without corrections, and mcgs,
each against the tree. A cell's ratio is the median
of its rounds' mcgs / tree (floor: search / floor) ratios; run it on an
idle machine. With --profile instead: the two self-play cells traced with
jax's profiler, their kernel time summed by phase of the search (descent,
lookup, transition, network, expansion, backup, reroot, other), the mean
over --rounds traced calls of each. On two cores XLA runs the kernels on two
threads and their traced times overlap; pinned to one core (`taskset -c 0`)
the phases add up as the calls' CPU time does. With --sources PHASE: that
phase's kernel time by jax source path (the operation that made each
kernel), mcgs against tree, the largest difference first.
"""

from __future__ import annotations

import sys
import tempfile

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
graph_tax = cli.lazy("mcgs_jax.benchmarks.graph_tax")
measure = cli.lazy("mcgs_jax.benchmarks.measure")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--repeats", type=int, default=3, help="timed calls per cell per round")
  parser.add_argument("--quick", action="store_true", help="tiny shapes")
  parser.add_argument("--networks", action="store_true",
                      help="Nim self-play cells over network sizes instead")
  parser.add_argument("--parts", action="store_true",
                      help="self-play cells with the graph's switches one at a time instead")
  parser.add_argument("--profile", action="store_true",
                      help="self-play cells' kernel time by phase (jax's profiler) instead")
  parser.add_argument("--sources", metavar="PHASE", default=None,
                      help="one phase's kernel time by jax source path (jax's profiler) instead; "
                           "a phase of --profile's table")
  parser.add_argument("--csv", default="results/bench_graph_tax.csv")
  args = parser.parse_args(argv)
  if args.networks + args.parts + args.profile + (args.sources is not None) > 1:
    parser.error("--networks, --parts, --profile and --sources are different runs; pick one")
  if args.sources is not None and args.sources not in names.KERNEL_PHASES:
    parser.error(f"--sources: unknown phase {args.sources!r}; the phases: "
                 f"{', '.join(names.KERNEL_PHASES)}")
  for name in ("rounds", "repeats"):
    if getattr(args, name) < 1:
      parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
  if args.sources is not None:
    with tempfile.TemporaryDirectory(prefix="graph-tax-traces-") as traces:
      rows = graph_tax.profile_sources(graph_tax.profile_cells(args.quick), args.rounds, traces,
                                       args.sources, log=lambda line: print(line, flush=True))
    print(measure.markdown_table(rows, graph_tax.SOURCE_FIELDS))
    measure.write_csv(args.csv, rows, graph_tax.SOURCE_FIELDS)
    print(f"CSV: {args.csv}")
    return
  if args.profile:
    with tempfile.TemporaryDirectory(prefix="graph-tax-traces-") as traces:
      rows = graph_tax.profile(graph_tax.profile_cells(args.quick), args.rounds, traces,
                               log=lambda line: print(line, flush=True))
    print(measure.markdown_table(rows, graph_tax.PROFILE_FIELDS))
    measure.write_csv(args.csv, rows, graph_tax.PROFILE_FIELDS)
    print(f"CSV: {args.csv}")
    return
  cells = (graph_tax.network_cells if args.networks else
           graph_tax.part_cells if args.parts else graph_tax.cells)(args.quick)
  rows = graph_tax.measure(cells, args.rounds, args.repeats,
                           log=lambda line: print(line, flush=True))
  print(measure.markdown_table(rows, graph_tax.FIELDS))
  measure.write_csv(args.csv, rows, graph_tax.FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
