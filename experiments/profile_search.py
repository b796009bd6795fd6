"""Where a whole search's time goes, kernel by kernel, inside the compiled loop.

  python -m experiments.profile_search --backup mcgs tree --batch 1024 --sims 64
  taskset -c 1 python -m experiments.profile_search ...   # one core: steadier
  python -m experiments.profile_search --game nim-piles:3,5,7,9 --backup mcgs katago \
      --batch 256 --sims 1024 --evals 64

`bench_phases` jits each phase on its own; this runs the real search under
`jax.profiler` and attributes every XLA kernel it executed to the phase whose
`jax.named_scope` it was compiled from (`descend/select`, `descend/transition`,
`descend/lookup`, `evaluate`, `write_node`, `backup`, the rest of
`expand_and_backup`, other), through the kernels' `op_name` metadata in the
compiled HLO. Per phase: kernel time per search (ms, the kernels' own time:
while loops are containers, not counted), kernel launches per simulation and
share. Connect-4 from the empty board, the MLP(128, 128) as `eval_fn`, as in
`bench_phases`; or (`--game nim...`) Nim from the start with the noisy
evaluator of `mcgs_vs_mcts` (`--evals`: its evaluation budget per search).
The profiler's own overhead inflates every row alike: read shares and
launches, not absolute times. CSV: --csv.
"""

import argparse
import collections
import csv
import functools
import glob
import gzip
import json
import os
import re
import sys
import tempfile

import jax

import mcgs_jax
from learning import benchmarks
from learning import cli

PHASES = ("descend/select", "descend/transition", "descend/lookup", "evaluate")


def phase_of(op_name: str) -> str:
  """The phase of a kernel compiled from `op_name` (see the module doc)."""
  if "expand_and_backup" in op_name:
    rest = op_name.split("expand_and_backup", 1)[1]
    if "write_node" in rest:
      return "expand: write_node"
    if "backup" in rest:
      return "expand: backup"
    return "expand: other"
  for phase in PHASES:
    if phase in op_name:
      return phase
  return "other"


def kernel_phases(hlo_text: str) -> dict:
  """Kernel (HLO instruction) name -> phase, from the compiled HLO text."""
  phases = {}
  for match in re.finditer(r'^\s*(?:ROOT )?%(\S+) = .*?op_name="([^"]*)"', hlo_text, re.M):
    phases[match.group(1)] = phase_of(match.group(2))
  return phases


def trace_events(trace_dir: str) -> list:
  """The complete ('X') events of the Perfetto trace `jax.profiler` wrote."""
  path = glob.glob(os.path.join(trace_dir, "**", "*perfetto_trace.json.gz"), recursive=True)[0]
  with gzip.open(path) as f:
    trace = json.load(f)
  events = trace["traceEvents"] if isinstance(trace, dict) else trace
  return [e for e in events if e.get("ph") == "X" and "name" in e]


def profile(backup: str, batch: int, sims: int, repeats: int, game: str = "connect4",
            evals: int | None = None) -> list[dict]:
  """Rows (one per phase) for one backup mode.

  Args:
    backup: the `SearchConfig.backup` mode.
    batch: games searched together.
    sims: simulations per search.
    repeats: searches traced.
    game: "connect4" (the MLP(128, 128)) or a Nim env id (the noisy
      evaluator of `mcgs_vs_mcts`).
    evals: optional `max_nn_evals` per search.

  Returns:
    One dict per phase: backup, batch, sims, phase, kernel_ms,
    launches_per_sim, share.
  """
  env, state, params, eval_fn = benchmarks.profiled_game(game, batch)
  rng = jax.random.PRNGKey(1)
  config = mcgs_jax.SearchConfig(num_simulations=sims, backup=backup,
                                 **benchmarks.evaluation_budget(evals))
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
  phases = kernel_phases(search.lower(params, rng, state).compile().as_text())
  jax.block_until_ready(search(params, rng, state))
  with tempfile.TemporaryDirectory() as trace_dir:
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
      for _ in range(repeats):
        jax.block_until_ready(search(params, rng, state))
    events = trace_events(trace_dir)
  time_us, launches = collections.Counter(), collections.Counter()
  for event in events:
    name = event["name"]
    if name not in phases or name.startswith(("while", "conditional")):
      continue
    time_us[phases[name]] += event.get("dur", 0)
    launches[phases[name]] += 1
  total = sum(time_us.values())
  return [dict(backup=backup, batch=batch, sims=sims, phase=phase,
               kernel_ms=round(time_us[phase] / repeats / 1e3, 2),
               launches_per_sim=round(launches[phase] / repeats / sims, 1),
               share=round(time_us[phase] / total, 3))
          for phase, _ in time_us.most_common()]


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--backup", nargs="+", default=["mcgs", "tree"])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--sims", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--game", default="connect4", help="connect4, or a Nim env id")
  parser.add_argument("--evals", type=int, default=None, help="max_nn_evals per search")
  parser.add_argument("--csv", default="results/profile_search.csv")
  args = parser.parse_args(argv)
  rows = []
  for backup in args.backup:
    rows += profile(backup, args.batch, args.sims, args.repeats, args.game, args.evals)
  print(f"{args.game}, B={args.batch}, S={args.sims}, max_nn_evals={args.evals}, "
        f"{benchmarks.evaluator_name(args.game)}, "
        f"{args.repeats} searches traced, {jax.devices()[0].platform}")
  print("| backup | phase | kernel ms per search | launches per simulation | share |")
  print("|---|---|---|---|---|")
  for row in rows:
    print(f"| {row['backup']} | {row['phase']} | {row['kernel_ms']} | {row['launches_per_sim']} "
          f"| {row['share']:.1%} |")
  if args.csv:
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    with open(args.csv, "w", newline="") as f:
      writer = csv.DictWriter(f, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)
    print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
