"""Faults survived, in figures: training runs hit by faults at random points.

  mcgs-jax fault-sweep [--quick] [--trials N] [--faults ...] [--csv F] [--md F] [--log F]

What each fault does and how its outcome is judged is
`mcgs_jax.benchmarks.fault_sweep`'s (its docstring); this command parses,
runs the sweep and writes the table.
"""

from __future__ import annotations

import json
import os
import sys
import time

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

study = cli.lazy("mcgs_jax.benchmarks.fault_sweep")


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true", help="1 trial per fault")
  parser.add_argument("--trials", type=int, default=None, help="trials per fault (default 20)")
  parser.add_argument("--faults", nargs="+", choices=names.FAULTS, default=names.FAULTS)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default=None, help="write the table as CSV")
  parser.add_argument("--md", default=None, help="write the table as markdown")
  parser.add_argument("--log", default=None,
                      help="JSON-lines file of trial outcomes: resumes a stopped sweep")
  args = parser.parse_args(argv)
  if args.trials is None:
    args.trials = 1 if args.quick else 20
  if args.trials < 1:
    parser.error(f"--trials must be >= 1, got {args.trials}")
  return args


def main(argv=None):
  args = parse_args(argv)
  start = time.monotonic()
  rows = study.sweep(args.faults, args.trials, args.seed, log=args.log)
  table = study.markdown(rows)
  print(f"\n{table}\n\n{time.monotonic() - start:.0f} s")
  if args.csv:
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    with open(args.csv, "w") as f:
      f.write(",".join(study.FIELDS) + "\n")
      for r in rows:
        f.write(",".join(str(r[k]) if k != "messages" else json.dumps(" | ".join(r[k]))
                         for k in study.FIELDS) + "\n")
  if args.md:
    with open(args.md, "w") as f:
      f.write(table + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(cli.main(main))
