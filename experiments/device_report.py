"""The accelerator report: search, self-play, memory, phase and training
speed on whatever device JAX sees, in one process.

  mcgs-jax device-report                   # the full report (~8 min on an H100)
  mcgs-jax device-report --quick           # CPU smoke run: tiny shapes, < 3 min
  mcgs-jax device-report --out results/device --budget-scale 2

Writes `<out>/<device>.md` (default out: results/device, `--out docs/device` for the
shipped pages; device:
`jax.devices()[0].device_kind` slugified, e.g. `cpu`, `nvidia-h100-80gb-hbm3`,
with `-quick` appended under `--quick`) and one CSV per section beside it:
`<device>-search.csv`, `-selfplay.csv`, `-memory.csv`, `-device.csv`,
`-phases.csv`, `-training.csv` and `-skipped.csv` (8 flat files). The files
are rewritten after every section, so a run cut short keeps what it
measured.

Sections (Connect-4 from the empty board throughout):
  1. search    ms per call of `mcgs_jax.search` (backups mcgs and tree; root
               policies puct and gumbel) against `mctx.muzero_policy` and
               `mctx.gumbel_muzero_policy` on pgx's `connect_four`, with the
               MLP of search_speed and a ResNet 6x64, over a B x S grid
               (search_speed's contestants). Each cell is compiled ahead of
               time (`measure.compile_and_time`), then timed (median).
  2. selfplay  positions per second of `mcgs_jax.learning.selfplay.play` (mcgs / tree,
               PUCT / Gumbel, graph reuse on / off) against the pgx-style mctx
               loops: selfplay_speed's contestants, timed by its `bench_rows`.
  3. memory    the search state one game holds (our graph arrays,
               `mcgs_jax.bytes_per_game`; mctx's search tree), the compiled
               search's XLA buffers, and the device's memory in use and peak
               (`Device.memory_stats()`, n/a on CPU) and compile seconds after
               each section.
  4. phases    `phases.profile` of one large search: selection,
               transition, lookup, evaluation, expansion+backup per step.
  5. training  examples per second of `mcgs_jax.learning.trainer.update` on the
               ResNet (TrainConfig's default Adam settings).

The full plan (`FULL_PLAN`) is sized for an H100-class GPU. Where the device
is a CPU, the full report runs `CPU_PLAN` instead (smaller B, the ResNet at
one small B, self-play at selfplay_speed's default B=256; about 10 minutes
on a loaded 2-core machine); the report's "Mode" line says which plan ran.

Every section has a time budget (`Plan.budgets_s`, times `--budget-scale`).
What is compared is measured together or not at all:
  - search: a (network, B, S) cell is measured whole (all its contestants,
    each mctx policy before ours) or skipped whole, when its predicted
    seconds (compile, first call and timed calls of every contestant, from
    the network's smaller cells) exceed what is left of the network's share
    of the budget, or one contestant's predicted compile and first call
    exceed `--max-seconds`. Once started, a cell runs to its end; one of ours
    whose matching mctx policy got no timed call in the cell is skipped.
  - selfplay: a group is timed whole (every contestant, mctx included, gets
    at least one timed call: the first interleaved round always runs whole)
    or skipped whole, when the groups before it predict that it would overrun
    the budget; one of ours whose matching mctx loop is neither in its group
    nor measured earlier is skipped.
Skipped cells, and the cells a `--quick` plan leaves out, are printed and
listed in the report's "Skipped" section.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
report = cli.lazy("mcgs_jax.benchmarks.report")
report_format = cli.lazy("mcgs_jax.benchmarks.report_format")
report_plan = cli.lazy("mcgs_jax.benchmarks.report_plan")


def parse_args(argv=None):
  """The command line.

  Args:
    argv: arguments (None: sys.argv[1:]).

  Returns:
    argparse.Namespace.
  """
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="tiny shapes and networks, few repeats (the CPU smoke run)")
  parser.add_argument("--out", default=os.path.join("results", "device"),
                      help="folder of the report and its CSVs")
  parser.add_argument("--budget-scale", type=float, default=1.0,
                      help="multiplies every section's time budget")
  parser.add_argument("--max-seconds", type=float,
                      help="skip a cell predicted to take longer (default: the plan's)")
  parser.add_argument("--seed", type=int, default=0)
  return parser.parse_args(argv)


def main(argv=None):
  argv = sys.argv[1:] if argv is None else list(argv)
  args = parse_args(argv)
  plan = report_plan.select_plan(args.quick, jax.devices()[0].platform)
  if args.max_seconds is not None:
    plan = dataclasses.replace(plan, max_seconds=args.max_seconds)
  device_kind = jax.devices()[0].device_kind
  stem = report_plan.device_slug(device_kind) + ("-quick" if args.quick else "")
  paths = report_plan.report_paths(args.out, stem)
  header = report.header_lines(device_kind, argv, plan, args.budget_scale, args.quick)
  print("\n".join(line for line in header if line), flush=True)
  start = time.perf_counter()
  nets = report_plan.make_networks(plan, args.seed)

  def write(results):
    wall = f"Wall time: {time.perf_counter() - start:.0f} s."
    report_format.write_report(
        paths, report_format.format_report(header + ["", wall], plan, nets, results), results)

  results = report.run_sections(plan, nets, args.seed, args.budget_scale, write)
  print(f"\nSkipped ({len(results['skipped'])}):")
  for row in results["skipped"]:
    print(f"  {row['section']}: {row['cell']}: {row['reason']}")
  print(f"\nTotal {time.perf_counter() - start:.0f} s. Report: {paths['md']}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
