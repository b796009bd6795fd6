"""The hot paths of the working tree against a base commit, in one
interleaved run on the same machine.

  mcgs-jax bench-compare --base HEAD~1          # make bench-compare BASE=HEAD~1
  mcgs-jax bench-compare --base 3c114c9 --rounds 7
  mcgs-jax bench-compare --base HEAD --quick    # tiny shapes (the test)
  mcgs-jax bench-compare --base 5887a85,ccaf406,10b1b96 --cells gumbel-b1024 --rounds 12

The base commit is checked out in a temporary git worktree (at or after
0.2.0's one namespace: each tree is laid out as installed,
`mcgs_jax.benchmarks.layout`, so its worker imports that tree alone). One
worker process per tree (`mcgs_jax/benchmarks/compare_worker.py`, copied out
of this tree so that the base runs the same measuring code; it calls only the
public API both trees share: `mcgs_jax.envs.make`, `networks.MLP`,
`mcgs_jax.search`, `mcgs_jax.SearchConfig`, `mcgs_jax.learning.selfplay.play`)
compiles the key cells first, then the workers take turns
(`mcgs_jax.benchmarks.compare`): round by round, cell by cell, one timed
batch of calls each, the order turned by one each round (two trees: the
first alternates), so that load from elsewhere falls on all alike. Only one
worker runs at a time, and all are pinned to the first core this process
may use (`--all-cores`: not): one process on both cores of the 2-core
machine ran at the pinned speed or 1.8x slower, by the run
(docs/benchmarks.md). The rounds run in sessions (`--sessions`, two by
default) with fresh workers, started base first, then work first: a process
started second ran a B = 1024 search 2-4% faster whichever tree it held,
and the sessions cancel that.

Key cells (Connect-4 from the empty board, MLP(128, 128), but the last):
  puct-b1         PUCT search (mcgs), B=1, S=64          (launch-bound)
  puct-b1024      PUCT search (mcgs), B=1024, S=64
  gumbel-b1024    Gumbel search (mcgs), B=1024, S=64
  solver-b256     PUCT search with the terminal solver (mcgs), B=256, S=64
  rave-b256       PUCT search with RAVE (mcgs), B=256, S=64
  floor-b1024     S network calls and env steps on B=1024 states, nothing
                  else (`mcgs_jax.benchmarks.phases.network_only`): the floor of a search
  puct-selfplay   `selfplay.play` (mcgs, PUCT, reuse), B=256, S=64, 8 moves
  gumbel-selfplay the same with the Gumbel root
  nim-selfplay    puct-selfplay on Nim (1,3,5,7), MLP(64, 64)
and the derived `overhead` = puct-b1024 / floor-b1024 per tree.

Several bases (comma-separated) run in the same sessions, the order of the
workers turned by one each round (a bisection in one run; each ratio is the
work against that base). `--cells` times only the named cells; `--sessions`
sets how many times fresh workers start (alternating start orders): a
process keeps its speed for its life, within a few percent, so more sessions
average over more of that luck.

For every cell: each tree's median ms, and the ratio work / base with the
min and max of the per-round ratios (the spread): the geometric mean of the
sessions' medians, so that both start orders weigh the same however many
rounds each session has (`compare.balanced_ratio`). Below 1: the working tree
is faster. Writes `--csv` (default
results/bench_compare.csv).

Run it on an idle machine: under load even identical trees differ (a
`--quick` run of HEAD against itself beside a training run gave 0.46-1.25,
the tiny cells taking 1-9 ms); the full cells take 30-400 ms each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from mcgs_jax.benchmarks import compare
from mcgs_jax.learning import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--base", required=True,
                      help="the base commit (any git revision), or several, comma-separated")
  parser.add_argument("--cells", default=None,
                      help="comma-separated key cells to time (default: all)")
  parser.add_argument("--sessions", type=int, default=2,
                      help="sets of fresh workers, start orders alternating (default 2)")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--repeats", type=int, default=3, help="timed calls per cell and turn")
  parser.add_argument("--quick", action="store_true", help="tiny shapes (a smoke run)")
  parser.add_argument("--csv", default=os.path.join("results", "bench_compare.csv"))
  parser.add_argument("--all-cores", action="store_true",
                      help="let the workers run on every core this process may use (default: "
                           "both pinned to the first)")
  args = parser.parse_args(argv)
  if args.rounds < 1 or args.repeats < 1 or args.sessions < 1:
    parser.error("--rounds, --repeats and --sessions must be >= 1")
  args.base = [rev.strip() for rev in args.base.split(",") if rev.strip()]
  if not args.base:
    parser.error("--base names no commit")
  args.cells = None if args.cells is None else [c.strip() for c in args.cells.split(",")
                                                if c.strip()]
  return args


def main(argv=None):
  args = parse_args(argv)
  shas = []
  for rev in args.base:
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT,
                            capture_output=True, text=True)
    if commit.returncode:
      raise ValueError(f"--base {rev!r} is not a commit of this repository")
    shas.append(commit.stdout.strip())
  base_trees = {}
  try:
    for rev, sha in zip(args.base, shas):
      # One base keeps the label "base"; several are named as given.
      label = "base" if len(shas) == 1 else rev
      base_trees[label] = tempfile.mkdtemp(prefix="bench-base-")
      subprocess.run(["git", "worktree", "add", "--detach", "-q", base_trees[label], sha],
                     cwd=ROOT, check=True)
      print(f"{label} {sha[:10]} in {base_trees[label]}", flush=True)
    print(f"work: {ROOT} (with its uncommitted changes)", flush=True)
    cores = None
    if not args.all_cores and hasattr(os, "sched_getaffinity"):
      cores = {min(os.sched_getaffinity(0))}
      print(f"all workers pinned to core {min(cores)} (--all-cores: not)", flush=True)
    rows = compare.compare(base_trees, ROOT, args.rounds, args.repeats, args.quick, cores,
                           cells=args.cells, sessions=args.sessions)
  finally:
    for tree in base_trees.values():
      subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT,
                     capture_output=True)
  print()
  print(compare.format_table(rows))
  compare.write_csv(rows, args.csv)
  print(f"\nCSV: {args.csv}")
  return 0


if __name__ == "__main__":
  sys.exit(cli.main(main))
