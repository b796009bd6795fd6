"""What the graph buys in self-play: the same recipe trained with graph
search (`mcgs`) and with tree search (`tree`), several seeds each.

  mcgs-jax graph-vs-tree train                 # every run, resumable
  mcgs-jax graph-vs-tree train --games nim --seeds 0
  mcgs-jax graph-vs-tree report --runs docs/learning/graph_vs_tree/runs
  mcgs-jax graph-vs-tree final                 # needs the runs' agents

What each part trains, measures and writes is
`mcgs_jax.benchmarks.graph_vs_tree`'s (its docstring); this command parses
and runs the part.
"""

from __future__ import annotations

import os
import sys

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.graph_vs_tree")


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("command", choices=("train", "report", "final"))
  parser.add_argument("--games", nargs="+", choices=tuple(names.GRAPH_VS_TREE_GAMES), default=("nim", "connect4"))
  parser.add_argument("--searches", nargs="+", choices=names.GRAPH_VS_TREE_SEARCHES + ("tt_cache",),
                      default=names.GRAPH_VS_TREE_SEARCHES)
  parser.add_argument("--seeds", nargs="+", type=int, default=names.GRAPH_VS_TREE_SEEDS)
  parser.add_argument("--cpu-budget", type=float, default=None,
                      help="CPU seconds per run (default: the game's, RECIPES)")
  parser.add_argument("--runs", default=os.path.join("runs", "graph_vs_tree"),
                      help="folder of the runs (not in git)")
  parser.add_argument("--out", default=os.path.join("results", "graph_vs_tree"),
                      help="report, final: folder of the CSVs and the plot")
  parser.add_argument("--positions", type=int, default=400,
                      help="final: positions per Pons set (0: no scoring)")
  parser.add_argument("--arena-games", type=int, default=200,
                      help="final: arena games per pair (0: no arena)")
  parser.add_argument("--simulations", type=int, default=64,
                      help="final: simulations per arena move")
  parser.add_argument("--opening-plies", type=int, default=4)
  parser.add_argument("--seed", type=int, default=0)
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  if args.command == "train":
    return study.train(args.runs, args.games, args.searches, args.seeds, args.cpu_budget)
  if args.command == "report":
    return study.report(args.runs, args.out, args.games, args.searches, args.seeds)
  return study.final(args.runs, args.out, args.searches, args.seeds, args.positions,
                     args.arena_games, args.simulations, args.opening_plies, args.seed)


if __name__ == "__main__":
  sys.exit(cli.main(main))
