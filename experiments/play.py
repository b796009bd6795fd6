"""Play against a trained agent in the terminal.

  mcgs-jax play                                   # the shipped Connect-4 agent
  mcgs-jax play --agent runs/ttt --simulations 64 --first agent

Moves are typed as numbers: Connect-4 columns 1-7, tic-tac-toe cells 1-9
(row by row from the top left), other games the action index + 1. The agent
searches `--simulations` simulations per move with its network (MCGS) and
shows its value estimate. Type q to quit.
"""

from __future__ import annotations

import argparse
import sys

from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
terminal = cli.lazy("mcgs_jax.learning.terminal")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--agent", help="a training run's folder (default: the shipped Connect-4 agent)")
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--first", choices=("human", "agent"), default="human")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  terminal.play(args.agent, args.simulations, args.first, args.seed)


if __name__ == "__main__":
  sys.exit(cli.main(main))
