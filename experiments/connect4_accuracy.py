"""Move accuracy of search on Connect-4 positions with exact scores.

  mcgs-jax connect4-accuracy                    # L3, L2, L1 x {200, 1000} sims
  mcgs-jax connect4-accuracy --sets L2_R1 --sims 200 --limit 100
  mcgs-jax connect4-accuracy --searches mcgs tree mctx openspiel
  mcgs-jax connect4-accuracy --positions my.txt   # MOVES per line, labelled by
                                                                # mcgs_jax.envs.connect4_solver.solve_columns
  mcgs-jax connect4-accuracy --generate 200 --stones 10-20 --positions-out gen.txt

For every position the search picks a move; with the exact score of every
child (Pons' `_columns` files, or our solver) a move is
  outcome-preserving  when it keeps the position's game-theoretic result
                      (a won position stays won, a drawn one drawn; in a
                      lost position every move is),
  optimal             when its score is the best one (fastest win, longest
                      loss).
Rates come with a Wilson 95% interval; `nodes` is the mean number of nodes a
mcgs_jax search stored. Searches ("contestants"):
  mcgs       mcgs_jax.search(backup="mcgs") with random rollouts as eval_fn
  tree       mcgs_jax.search(backup="tree"), same
  katago     mcgs_jax.search(backup="katago") (KataGo's graph search), same;
             katago+X takes the enhancements too
  mcgs+X+Y   mcgs with enhancements switched on (see ENHANCEMENTS), e.g.
             mcgs+solver, mcgs+solver+qvalue, mcgs+all (the paper's four);
             also ppsoft / pphard (progressive pruning), lcb (LCB move
             choice), minroot (MantisShrimp's minimum root visits), bounds
             (score-bounded solver), gumbel (Gumbel root search), the
             classic mcgs+rave, mcgs+expvisits, mcgs+expprob, mcgs+depth1,
             mcgs+depth2, and mcgs+mix (an eval_fn change, EVAL_ENHANCEMENTS)
  mctx       mctx.muzero_policy on the same env and rollouts (no root noise)
  openspiel  OpenSpiel's C++ MCTSBot (UCT c=2, one random rollout per leaf,
             solve=True), the external reference; one position at a time
mcgs_jax contestants search `--batch` positions at once; their time per
move is the batch's wall time divided by its size. Every search uses the
same number of simulations.
"""

from __future__ import annotations

import pathlib
import sys

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
accuracy = cli.lazy("mcgs_jax.benchmarks.accuracy")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
pons = cli.lazy("mcgs_jax.envs.pons")


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sets", nargs="+", default=list(names.ACCURACY_DEFAULT_SETS),
                      help="Pons sets, e.g. L3_R1 L2_R1 L1_R1")
  parser.add_argument("--positions", help="a positions file instead of --sets")
  parser.add_argument("--generate", type=int, help="label this many random positions")
  parser.add_argument("--stones", default="10-20", help="stone range for --generate")
  parser.add_argument("--positions-out", help="write generated positions (columns format)")
  parser.add_argument(
      "--searches", nargs="+", default=list(names.ACCURACY_DEFAULT_SEARCHES),
      help=f"{', '.join(names.ACCURACY_SEARCHES)} or mcgs+ENHANCEMENT[+...] with "
      f"ENHANCEMENT in {', '.join(list(names.ENHANCEMENTS) + list(names.EVAL_ENHANCEMENTS))}")
  parser.add_argument("--sims", type=int, nargs="+", default=[200, 1000])
  parser.add_argument("--limit", type=int, help="first N positions of each set")
  parser.add_argument("--batch", type=int, default=100, help="positions per mcgs_jax/mctx call")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default="results/connect4_accuracy.csv")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  for search in args.searches:
    if search not in ("mctx", "openspiel"):
      accuracy.search_config(search, 1)  # fails early on a misspelt name
  if args.generate:
    low, high = (int(v) for v in args.stones.split("-"))
    suites = {f"random{low}-{high}": accuracy.generate(args.generate, low, high, args.seed)}
    if args.positions_out:
      pathlib.Path(args.positions_out).write_text("".join(
          pons.format_columns_line(p.moves, p.column_scores) + "\n"
          for p in next(iter(suites.values()))))
  elif args.positions:
    suites = {
        pathlib.Path(args.positions).name: accuracy.load_positions(args.positions, args.limit)
    }
  else:
    suites = {name: accuracy.load_set(name, args.limit) for name in args.sets}
  rows = []
  for suite, positions in suites.items():
    for sims in args.sims:
      for search in args.searches:
        batch = 1 if search == "openspiel" else min(args.batch, len(positions))
        moves, seconds, nodes = accuracy.choose_moves(search, positions, sims, batch, args.seed)
        row = dict(set=suite, search=search, sims=sims, ms_per_move=round(seconds * 1e3, 3),
                   batch=batch, nodes="" if nodes is None else round(nodes, 1),
                   **accuracy.score_moves(positions, moves))
        rows.append(row)
        print(accuracy.format_table([row]).splitlines()[-1], flush=True)
  print()
  print(accuracy.format_table(rows))
  measure.write_csv(args.csv, rows, accuracy.FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
