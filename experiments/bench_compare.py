"""The hot paths of the working tree against a base commit, in one
interleaved run on the same machine.

  mcgs-jax bench-compare --base HEAD~1          # make bench-compare BASE=HEAD~1
  mcgs-jax bench-compare --base 3c114c9 --rounds 7
  mcgs-jax bench-compare --base HEAD --quick    # tiny shapes (the test)

The base commit is checked out in a temporary git worktree (at or after
0.2.0's one namespace: each tree is laid out as installed,
`mcgs_jax.benchmarks.layout`, so its worker imports that tree alone). One
worker process per tree (`bench_worker.py`, copied out of this tree so that the
base runs the same measuring code; it calls only the public API both trees
share: `mcgs_jax.envs.make`, `networks.MLP`, `mcgs_jax.search`, `mcgs_jax.SearchConfig`,
`mcgs_jax.learning.selfplay.play`) compiles every key cell first, then the two
workers take turns: round by round, cell by cell, one timed batch of calls
each, the first of the two alternating, so that load from elsewhere falls on
both alike. Only one worker runs at a time.

Key cells (Connect-4 from the empty board, MLP(128, 128)):
  puct-b1         PUCT search (mcgs), B=1, S=64          (launch-bound)
  puct-b1024      PUCT search (mcgs), B=1024, S=64
  gumbel-b1024    Gumbel search (mcgs), B=1024, S=64
  floor-b1024     S network calls and env steps on B=1024 states, nothing
                  else (`mcgs_jax.benchmarks.phases.network_only`): the floor of a search
  puct-selfplay   `selfplay.play` (mcgs, PUCT, reuse), B=256, S=64, 8 moves
  gumbel-selfplay the same with the Gumbel root
and the derived `overhead` = puct-b1024 / floor-b1024 per tree.

For every cell: each tree's median ms, and the ratio work / base as the
median of the per-round ratios with their min and max (the spread). Below 1:
the working tree is faster. Writes `--csv` (default
results/bench_compare.csv).

Run it on an idle machine: under load even identical trees differ (a
`--quick` run of HEAD against itself beside a training run gave 0.46-1.25,
the tiny cells taking 1-9 ms); the full cells take 30-400 ms each.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from mcgs_jax.benchmarks import layout
from mcgs_jax.learning import cli

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_worker.py")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("cell", "base_ms", "work_ms", "ratio", "ratio_min", "ratio_max", "rounds")


class Worker:
  """A measuring process over one tree, driven line by line."""

  def __init__(self, tree: str, quick: bool, label: str):
    self.label = label
    folder = tempfile.mkdtemp(prefix=f"bench-{label}-")
    # The tree laid out as installed, first on the path: the worker imports
    # this tree's subpackages too, not the installed checkout's.
    packages = layout.link(tree, os.path.join(folder, "packages"))
    env = dict(os.environ, PYTHONPATH=str(packages), PYTHONUNBUFFERED="1")
    script = os.path.join(folder, "bench_worker.py")
    shutil.copy(WORKER, script)   # the same measuring code for both trees
    self.process = subprocess.Popen([sys.executable, script] + (["--quick"] if quick else []),
                                    cwd=tree, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)

  def ask(self, command: str) -> dict:
    self.process.stdin.write(command + "\n")
    self.process.stdin.flush()
    while True:
      line = self.process.stdout.readline()
      if not line:
        raise RuntimeError(f"the {self.label} worker ended (exit {self.process.wait()})")
      if line.startswith("{"):
        return json.loads(line)

  def close(self) -> None:
    try:
      self.process.stdin.write("quit\n")
      self.process.stdin.flush()
    except OSError:
      pass
    self.process.wait(timeout=60)


def compare(base_tree: str, work_tree: str, rounds: int, repeats: int, quick: bool) -> list[dict]:
  """The key cells of both trees, interleaved; one row per cell (`FIELDS`)."""
  workers = {"base": Worker(base_tree, quick, "base"), "work": Worker(work_tree, quick, "work")}
  try:
    cells = None
    for name, worker in workers.items():
      compiled = worker.ask("compile")
      print(f"  {name}: compiled {', '.join(compiled['cells'])} "
            f"({compiled['seconds']:.0f} s)", flush=True)
      cells = compiled["cells"]
    times = {(tree, cell): [] for tree in workers for cell in cells}
    for round_index in range(rounds):
      order = ("base", "work") if round_index % 2 == 0 else ("work", "base")
      for cell in cells:
        for tree in order:
          times[tree, cell].append(workers[tree].ask(f"time {cell} {repeats}")["median_ms"])
      print(f"  round {round_index + 1}/{rounds}: " + ", ".join(
          f"{cell} {times['work', cell][-1] / times['base', cell][-1]:.2f}" for cell in cells),
            flush=True)
  finally:
    for worker in workers.values():
      worker.close()
  rows = []
  for cell in cells:
    ratios = [w / b for w, b in zip(times["work", cell], times["base", cell])]
    rows.append(dict(cell=cell, base_ms=statistics.median(times["base", cell]),
                     work_ms=statistics.median(times["work", cell]),
                     ratio=statistics.median(ratios), ratio_min=min(ratios),
                     ratio_max=max(ratios), rounds=rounds))
  floors = [c for c in cells if c.startswith("floor-b")]
  searches = [c.replace("floor", "puct") for c in floors if c.replace("floor", "puct") in cells]
  if floors and searches:
    floor, search = floors[0], searches[0]
    for tree in ("base", "work"):
      overhead = [s / f for s, f in zip(times[tree, search], times[tree, floor])]
      rows.append(dict(cell=f"overhead ({tree}: {search} / {floor})", base_ms=float("nan"),
                       work_ms=float("nan"), ratio=statistics.median(overhead),
                       ratio_min=min(overhead), ratio_max=max(overhead), rounds=rounds))
  return rows


def format_table(rows: list[dict]) -> str:
  lines = ["| cell | base ms | work ms | work / base (median of rounds) | min | max |",
           "|---|---|---|---|---|---|"]
  for r in rows:
    ms = lambda v: "-" if v != v else f"{v:.2f}"
    lines.append(f"| {r['cell']} | {ms(r['base_ms'])} | {ms(r['work_ms'])} | {r['ratio']:.3f} | "
                 f"{r['ratio_min']:.3f} | {r['ratio_max']:.3f} |")
  return "\n".join(lines)


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--base", required=True, help="the base commit (any git revision)")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--repeats", type=int, default=3, help="timed calls per cell and turn")
  parser.add_argument("--quick", action="store_true", help="tiny shapes (a smoke run)")
  parser.add_argument("--csv", default=os.path.join("results", "bench_compare.csv"))
  args = parser.parse_args(argv)
  if args.rounds < 1 or args.repeats < 1:
    parser.error("--rounds and --repeats must be >= 1")
  return args


def main(argv=None):
  args = parse_args(argv)
  commit = subprocess.run(["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
  if commit.returncode:
    raise ValueError(f"--base {args.base!r} is not a commit of this repository")
  sha = commit.stdout.strip()
  base_tree = tempfile.mkdtemp(prefix="bench-base-")
  subprocess.run(["git", "worktree", "add", "--detach", "-q", base_tree, sha], cwd=ROOT,
                 check=True)
  try:
    print(f"base {sha[:10]} in {base_tree}; work: {ROOT} (with its uncommitted changes)",
          flush=True)
    rows = compare(base_tree, ROOT, args.rounds, args.repeats, args.quick)
  finally:
    subprocess.run(["git", "worktree", "remove", "--force", base_tree], cwd=ROOT,
                   capture_output=True)
  print()
  print(format_table(rows))
  os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
  with open(args.csv, "w") as f:
    f.write(",".join(FIELDS) + "\n")
    for r in rows:
      f.write(",".join(str(r[k]) if k != "cell" else json.dumps(r[k]) for k in FIELDS) + "\n")
  print(f"\nCSV: {args.csv}")
  return 0


if __name__ == "__main__":
  sys.exit(cli.main(main))
