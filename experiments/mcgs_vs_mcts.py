"""MCGS against MCTS with trained evaluators: Elo at equal network
evaluations and at equal time, memory, move accuracy and an ablation.

  mcgs-jax mcgs-vs-mcts --part evals     # Elo vs evaluations per move
  mcgs-jax mcgs-vs-mcts --part time      # Elo at equal time per move
  mcgs-jax mcgs-vs-mcts --part time --game nim   # the same on Nim
  mcgs-jax mcgs-vs-mcts --part memory    # nodes and bytes per search
  mcgs-jax mcgs-vs-mcts --part accuracy  # Pons sets, move accuracy
  mcgs-jax mcgs-vs-mcts --part ablation  # each enhancement vs plain mcgs
  mcgs-jax mcgs-vs-mcts --part nim       # Nim, a deliberately noisy evaluator
  mcgs-jax mcgs-vs-mcts --part plots     # plots and summaries from the CSVs
  common flags: --network shipped|v3|v2|v1|weak --budgets 32 64 128 256 --openings 128
                --nim-envs nim nim-piles:3,5,7,9 --nim-plies 2
                --out results/mcgs_vs_mcts --docs docs/mcgs_vs_mcts

The matches, timings and figures are `mcgs_jax.benchmarks.mcgs_vs_mcts`'s
(its docstring says how each part is measured); this command parses, runs
the part and prints. Resumable: a match already in OUT/matches.csv with the
same number of games is skipped when the command runs again.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcgs_jax import modes
from mcgs_jax.learning import cli
from mcgs_jax.benchmarks import names
from mcgs_jax.learning import run_lock

# The library and jax, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.mcgs_vs_mcts")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
loop = cli.lazy("mcgs_jax.learning.loop")

MODES = modes.names()


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--part", required=True, choices=("evals", "time", "memory", "accuracy",
                                                        "ablation", "nim", "plots"))
  parser.add_argument("--network", default="shipped", choices=tuple(names.NETWORKS))
  parser.add_argument("--game", default="connect4", choices=("connect4", "nim"),
                      help="--part time: Connect-4 (--network) or the Nim settings "
                           "(--nim-envs, --noise, --nim-plies)")
  parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
  parser.add_argument("--budgets", type=int, nargs="+", default=[32, 64, 128, 256],
                      help="network evaluations per move (mcgs's, for --part time)")
  parser.add_argument("--openings", type=int, default=128,
                      help="openings (each played twice, colours swapped)")
  parser.add_argument("--max-score", type=int, default=2,
                      help="Connect-4 openings: |exact Pons score| at most this")
  parser.add_argument("--ablations", nargs="+", default=list(names.ABLATIONS),
                      choices=list(names.ABLATIONS))
  parser.add_argument("--nim-envs", nargs="+", default=["nim", "nim-piles:3,5,7,9"])
  parser.add_argument("--noise", type=float, default=0.8, help="NoisyNimEval's noise")
  parser.add_argument("--nim-plies", type=int, default=2,
                      help="Nim openings: distinct positions after this many random moves")
  parser.add_argument("--sets", nargs="+", default=["L2_R1", "L1_R2"])
  parser.add_argument("--limit", type=int, default=200, help="accuracy: positions per set")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--out", default="results/mcgs_vs_mcts")
  parser.add_argument("--docs", help="also write plots and CSV summaries here")
  return parser.parse_args(argv)


def nim_settings(args) -> list:
  """The Nim settings of the command line (--nim-envs), printing each one's
  openings and the evaluator's wrong-sign share."""
  settings = []
  for env_id in args.nim_envs:
    setting = study.nim_setting(env_id, args.openings, args.noise, args.nim_plies)
    print(f"{env_id}: {setting.num_openings} openings; evaluator wrong on "
          f"{100 * study.wrong_sign_fraction(setting.env, setting.eval_fn):.1f}% of positions",
          flush=True)
    settings.append(setting)
  return settings


def main(argv=None):
  args = parse_args(argv)
  if args.game == "nim" and args.part != "time":
    raise ValueError("--game nim is for --part time (--part nim is Nim at equal evaluations)")
  # OUT's lock for the command's life: a second process appending the same
  # matches to OUT is refused (the rows are skipped by key on a rerun, not
  # between two writers).
  lock = run_lock.acquire(args.out)
  try:
    run_part(args)
  finally:
    lock.release()


def run_part(args) -> None:
  """Runs the `--part` `main` parsed."""
  out = args.out
  if args.part == "time" and args.game == "nim":
    for setting in nim_settings(args):
      study.equal_time(setting, args.modes, args.budgets, out=out, seed=args.seed)
  elif args.part in ("evals", "time", "ablation"):
    setting = study.connect4_setting(args.network, args.openings, args.max_score)
    print(f"{setting.num_openings} openings, {2 * setting.num_openings} games per match",
          flush=True)
    if args.part == "evals":
      study.equal_evals(setting, args.modes, args.budgets, out=out, seed=args.seed)
    elif args.part == "time":
      study.equal_time(setting, args.modes, args.budgets, out=out, seed=args.seed)
    else:
      for budget in args.budgets:
        study.ablation(setting, budget, args.ablations, out=out, seed=args.seed)
  elif args.part == "nim":
    for setting in nim_settings(args):
      study.equal_evals(setting, args.modes, args.budgets, part="nim", out=out, seed=args.seed)
  elif args.part == "memory":
    rows = study.memory(study.connect4_setting(args.network, args.openings, args.max_score),
                        args.modes, args.budgets, args.seed)
    for env_id in args.nim_envs:
      rows += study.memory(study.nim_setting(env_id, args.openings, args.noise, args.nim_plies),
                           args.modes, args.budgets, args.seed)
    for path in [os.path.join(out, "memory.csv")] + (
        [os.path.join(args.docs, "memory.csv")] if args.docs else []):
      measure.write_csv(path, rows, study.MEMORY_FIELDS)
    print(measure.markdown_table(rows, study.MEMORY_FIELDS))
  elif args.part == "accuracy":
    rows = study.accuracy(args.network, args.modes, args.budgets, args.sets, args.limit,
                    seed=args.seed)
    name = f"accuracy_{args.network}.csv"
    for path in [os.path.join(out, name)] + (
        [os.path.join(args.docs, name)] if args.docs else []):
      measure.write_csv(path, rows, study.ACCURACY_FIELDS)
    print(measure.markdown_table(rows, study.ACCURACY_FIELDS))
  if args.part in ("evals", "time", "ablation", "nim", "plots"):
    for path in study.write_plots(out, args.docs):
      print(path)
  if args.part == "plots":
    rows = study.largest_matches(loop.read_metrics(os.path.join(out, "matches.csv")))
    for part in ("evals", "time", "ablation", "nim"):
      mine = [r for r in rows if r["part"] == part]
      if mine:
        print(f"\n{part}:\n{study.match_table(mine)}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
