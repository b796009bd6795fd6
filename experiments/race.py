"""Our training recipe against the peer's (`mcgs_jax.experiments.peer_recipe`), side by side.

  mcgs-jax race --ours docs/learning/runs/connect4 --peer docs/learning/runs/peer --games 200
  mcgs-jax race --ours docs/learning/runs/connect4_v6 --peer docs/learning/runs/connect4_v3 \
      --names v6 v3 --out docs/learning/race_v6_vs_v3      # any two runs, named

What each part measures and writes is `mcgs_jax.benchmarks.race`'s (its
docstring); this command parses and runs the parts.
"""

from __future__ import annotations

import argparse
import sys

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.race")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--ours", required=True, help="our training run directory")
  parser.add_argument("--peer", required=True, help="the peer recipe's run directory")
  parser.add_argument("--out", default="results/race",
                      help="where the CSVs and plot go (docs/learning: the shipped ones)")
  parser.add_argument("--games", type=int, default=200, help="games per pairing (even)")
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--baseline-simulations", type=int, default=800)
  parser.add_argument("--opening-plies", type=int, default=3)
  parser.add_argument("--positions", type=int, default=400,
                      help="positions per Pons set of the final evaluation (0: none)")
  parser.add_argument("--no-arena", action="store_true", help="no arena games")
  parser.add_argument("--names", nargs=2, default=list(names.RACE_NAMES),
                      metavar=("OURS", "PEER"),
                      help="the two runs' names in the CSVs and the ladder")
  parser.add_argument("--agents", nargs="+", default=None,
                      help="evaluate and play only these of the two names (e.g. `ours` while "
                      "the peer still trains; a later run adds the rest)")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  runs = tuple(args.names)
  if len(set(runs)) != 2 or names.RACE_BASELINE in runs:
    parser.error(f"--names must be two different names other than {names.RACE_BASELINE!r}")
  agents_to_run = tuple(args.agents or runs)
  if not set(agents_to_run) <= set(runs):
    parser.error(f"--agents must be among --names {runs}, got {agents_to_run}")
  rows = study.write_curves(args.ours, args.peer, args.out, runs)
  for agent in runs:
    last = [r for r in rows if r["agent"] == agent][-1]
    print(f"{agent}: iteration {last['iteration']}, wall_s {last['wall_s']:.0f}, mean error "
          f"search {100 * last['search_mean']:.1f}%, policy {100 * last['policy_mean']:.1f}%")
  if args.positions > 0:
    study.final_rows(args.ours, args.peer, args.out, args.positions, agents_to_run, runs)
  if not args.no_arena:
    study.run_arena(args.ours, args.peer, args.out, args.games, args.simulations,
              args.baseline_simulations, args.opening_plies, args.seed, agents_to_run, runs)


if __name__ == "__main__":
  sys.exit(cli.main(main))
