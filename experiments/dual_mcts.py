"""The Dual MCTS paper's table: AlphaZero vs MPV-MCTS vs Dual MCTS training.

  mcgs-jax dual-mcts --game hsr:4,4,16 --algo dual --backup tree --seed 0
  mcgs-jax dual-mcts --game nim:3,20 --algo mpv --backup mcgs --seed 0 1 2
  mcgs-jax dual-mcts --table            # the table over every cell run
  mcgs-jax dual-mcts --bench --game connect4 --backup tree   # one search's time
  mcgs-jax dual-mcts --recipe --algo dual --backup mcgs --seed 0 1 2
  mcgs-jax dual-mcts --recipe --seed 0 1 2   # the 18 runs, resumable
  mcgs-jax dual-mcts --recipe --algo alphazero_noreuse --backup tree   # ablations
  mcgs-jax dual-mcts --recipe --algo alphazero_35 --backup tree
  mcgs-jax dual-mcts --recipe-rank --seed 0 1 2   # alpha-rank over each run's snapshots
  mcgs-jax dual-mcts --recipe-table     # docs/dual_mcts/connect4_runs.csv
  mcgs-jax dual-mcts --recipe-summary   # its Markdown table, intervals over seeds
  mcgs-jax dual-mcts --recipe-summary --per-run   # one row per run
  mcgs-jax dual-mcts --recipe-diagnose --seed 0 1 2   # each final network, other searches

What each part measures and writes is `mcgs_jax.benchmarks.dual_mcts`'s
(its docstring); this command parses, runs the part and prints. Rerunning
the same command continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.dual_mcts")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--game", choices=names.GAMES)
  parser.add_argument("--algo", choices=names.RECIPE_ALGOS,
                      help="the algorithm (alphazero_noreuse, alphazero_35: --recipe's "
                      "ablations only)")
  parser.add_argument("--backup", choices=names.BACKUPS, default="tree")
  parser.add_argument("--seed", type=int, nargs="+", default=[0])
  parser.add_argument("--steps", type=int, default=15, help="training steps per cell")
  parser.add_argument("--games-per-pair", type=int, default=16,
                      help="games between each pair of steps' agents (even)")
  parser.add_argument("--channels", type=int, default=64, help="Connect-4 ResNet channels")
  parser.add_argument("--players", choices=("policy", "search"), default="policy",
                      help="what plays the ranking games: each step's raw network "
                      "(default) or its search")
  parser.add_argument("--out", default="results/dual_mcts")
  parser.add_argument("--table", action="store_true", help="print the table of the cells run")
  parser.add_argument("--bench", action="store_true",
                      help="time one search of each algorithm (--game, --backup, --batch)")
  parser.add_argument("--batch", type=int, default=16, help="--bench: games per search call")
  parser.add_argument("--recipe", action="store_true",
                      help="Connect-4 with the real learner: train --algo x --backup x --seed")
  parser.add_argument("--cpu-budget", type=float, default=3600.0,
                      help="--recipe: CPU seconds per run (the cap)")
  parser.add_argument("--eval-every-s", type=float, default=300.0,
                      help="--recipe: CPU seconds between evaluations")
  parser.add_argument("--recipe-rank", action="store_true",
                      help="the paper's convergence criterion over each --recipe run's snapshots")
  parser.add_argument("--recipe-table", action="store_true",
                      help="write the --recipe runs' rows to --table-csv")
  parser.add_argument("--recipe-summary", action="store_true",
                      help="print the Markdown table of the finished --recipe runs in --table-csv")
  parser.add_argument("--per-run", action="store_true",
                      help="--recipe-summary: one row per run (with its large network "
                      "alone from --diagnosis-csv) instead of one per cell")
  parser.add_argument("--table-csv",
                      default=os.path.join("results", "dual_mcts", "connect4_runs.csv"),
                      help="--recipe-table: the CSV written")
  parser.add_argument("--keep", default=os.path.join("results", "dual_mcts"),
                      help="--recipe-table: where each run's metrics, config and rank summary "
                      "are copied (as <keep>/connect4_recipe/<run>/) and read from")
  parser.add_argument("--target", type=float, default=0.05,
                      help="--recipe-table: the mean search error a run's time is measured to")
  parser.add_argument("--recipe-diagnose", action="store_true",
                      help="each finished --recipe run's last snapshot under other evaluators "
                      "(the large or small network searched alone, raw policies) into "
                      "--diagnosis-csv")
  parser.add_argument("--diagnosis-csv",
                      default=os.path.join("results", "dual_mcts", "connect4_diagnosis.csv"),
                      help="--recipe-diagnose: the CSV added to")
  args = parser.parse_args(argv)
  if args.recipe_diagnose:
    rows = study.recipe_diagnosis(args.out, args.seed, args.diagnosis_csv, args.cpu_budget)
    print(f"{len(rows)} rows: {args.diagnosis_csv}")
    if rows:
      print(study.diagnosis_summary(args.diagnosis_csv))
    return
  if args.recipe_rank:
    for algo, backup, seed, metrics in study.recipe_runs(args.out):
      if seed in args.seed:
        directory = study.recipe_dir(args.out, algo, backup, seed)
        summary = study.rank_recipe_run(directory, args.games_per_pair, seed, metrics)
        print(f"{directory}: {json.dumps(summary)}", flush=True)
    return
  if args.recipe_summary:
    print(study.recipe_run_summary(args.table_csv, args.diagnosis_csv, args.cpu_budget)
          if args.per_run else study.recipe_summary(args.table_csv, args.cpu_budget))
    return
  if args.recipe_table:
    rows = study.recipe_table(args.out, args.keep, args.table_csv, args.target, args.cpu_budget)
    print(f"{len(rows)} runs: {args.table_csv} (runs kept in {args.keep})")
    return
  if args.recipe:
    # Without --algo: every cell, seed by seed, so a partial queue holds
    # matched cells.
    cells = ([(args.algo, args.backup)] if args.algo else
             [(algo, backup) for algo in names.ALGOS for backup in names.BACKUPS])
    for seed in args.seed:
      for algo, backup in cells:
        code = study.run_recipe(args.out, algo, backup, seed, args.cpu_budget, args.eval_every_s)
        if code:
          return code
    return
  if args.table:
    print(study.table(args.out))
    return
  if args.bench:
    print(study.bench_search(args.game, args.backup, args.batch, args.channels))
    return
  if args.game is None or args.algo is None:
    parser.error("--game and --algo are needed (or --table)")
  if args.algo not in names.ALGOS:
    parser.error(f"--algo {args.algo} runs only with --recipe")
  for seed in args.seed:
    summary = study.run_cell(args.out, args.game, args.algo, args.backup, seed, args.steps,
                       args.games_per_pair, args.channels, args.players)
    print(json.dumps(dict(summary, game=args.game, algo=args.algo, backup=args.backup,
                          seed=seed)), flush=True)


if __name__ == "__main__":
  sys.exit(cli.main(main))
