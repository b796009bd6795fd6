"""What the graph buys in self-play: the same recipe trained with graph
search (`mcgs`) and with tree search (`tree`), several seeds each.

  python -m experiments.graph_vs_tree train                 # every run, resumable
  python -m experiments.graph_vs_tree train --games nim --seeds 0
  python -m experiments.graph_vs_tree report                # docs/learning/graph_vs_tree/

`train` runs `experiments.train` once per (game, search, seed), one after
another, each to its CPU budget (`cpu_s`: CPU seconds of self-play and
updates), in `--runs` (not in git). Rerunning it resumes the unfinished runs
and skips the finished ones, so a session that ends mid-run loses nothing.
Everything but `search` and `seed` is the game's recipe (`RECIPES`):
  connect4  `make train-connect4`'s settings (learning/config.py) with an
            evaluation every 300 CPU seconds (100 positions per Pons set,
            200 simulations), 1800 CPU seconds per run;
  nim       Nim (1, 3, 5, 7), where transpositions are dense, with a small
            MLP (32, 32); exact accuracy over every position every 5
            iterations, 300 CPU seconds per run.
"""

import argparse
import json
import os
import subprocess
import sys

from learning import cli

SEARCHES = ("mcgs", "tree")
SEEDS = (0, 1, 2)
# The recipe of each game: (env id, --config fields over the env's defaults,
# CPU seconds per run).
RECIPES = {
    "connect4": ("connect4", dict(eval_every_s=300.0), 1800.0),
    "nim": ("nim", dict(network_kwargs={"hidden_sizes": [32, 32]}, eval_every=5), 300.0),
}


def run_name(game: str, search: str, seed: int) -> str:
  """The run's folder name, e.g. "connect4_mcgs_s0"."""
  return f"{game}_{search}_s{seed}"


def queue(games, searches, seeds) -> list[tuple[str, str, int]]:
  """(game, search, seed) in the order they are trained: game by game, seed
  by seed, every search of a seed together, so a partial queue holds
  matched pairs."""
  return [(game, search, seed) for game in games for seed in seeds for search in searches]


def train(args) -> int:
  """Trains every run of the queue to its budget, one at a time."""
  os.makedirs(args.runs, exist_ok=True)
  for game, search, seed in queue(args.games, args.searches, args.seeds):
    env_id, fields, budget = RECIPES[game]
    budget = args.cpu_budget or budget
    name = run_name(game, search, seed)
    config_path = os.path.join(args.runs, f"{name}.json")
    with open(config_path, "w") as f:
      json.dump(dict(fields, search=search, seed=seed), f, indent=1)
    command = [sys.executable, "-m", "experiments.train", "--env", env_id,
               "--out", os.path.join(args.runs, name), "--config", config_path,
               "--iterations", "1000000", "--cpu-budget", str(budget)]
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    code = subprocess.call(command)
    if code:
      print(f"== {name}: exit {code}", flush=True)
      return code
  return 0


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("command", choices=("train",))
  parser.add_argument("--games", nargs="+", choices=tuple(RECIPES), default=("nim", "connect4"))
  parser.add_argument("--searches", nargs="+", choices=SEARCHES + ("tt_cache",),
                      default=SEARCHES)
  parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
  parser.add_argument("--cpu-budget", type=float, default=None,
                      help="CPU seconds per run (default: the game's, RECIPES)")
  parser.add_argument("--runs", default=os.path.join("runs", "graph_vs_tree"),
                      help="folder of the runs (not in git)")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  return train(args)


if __name__ == "__main__":
  sys.exit(cli.main(main))
