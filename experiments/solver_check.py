"""A run's snapshots on the exact figures, with and without the evaluation solver.

  python -m experiments.solver_check runs/tictactoe --last 40 \
      --csv docs/learning/tictactoe_solver_check.csv

Training evaluates its search with the terminal solver when `eval_solver`
is set (tic-tac-toe's default), so a network whose values are slightly off
can still score perfectly. This check scores each of the last `--last`
snapshots of a run (and its final `agent.msgpack`) with the run's
evaluation search (`eval_simulations`, no noise) twice, with the solver and
without, on every position of the small game's ground truth
(`learning.ground_truth`), and prints how many positions each misses.
"""

import argparse
import csv
import dataclasses
import glob
import os
import sys

import jax

from envs import exhaustive
from learning import agents
from learning import checkpoint
from learning import ground_truth


def snapshot_paths(run: str, last: int) -> list[str]:
  """The last `last` snapshots of `run` in iteration order, then its agent."""
  snapshots = sorted(glob.glob(os.path.join(run, "snapshots", "*.msgpack")))
  return snapshots[-last:] + [os.path.join(run, checkpoint.AGENT)]


def check(run: str, last: int, max_positions: int | None = None, seed: int = 1) -> list[dict]:
  """Rows {snapshot, solver, positions, keeps_value, missed} for each snapshot both ways.

  Args:
    run: a run directory of a small game (config.json, snapshots/, agent.msgpack).
    last: how many of the newest snapshots.
    max_positions: a random subset of the ground truth (None: all of it).
    seed: the evaluation's PRNG seed.

  Returns:
    One row per snapshot and solver setting.
  """
  config = checkpoint.load_config(run)
  env, network, eval_fn = checkpoint.build_network(config)
  template = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
  positions = len(exhaustive.game_table(env))
  if max_positions is not None:
    positions = min(positions, max_positions)
  rows = []
  for path in snapshot_paths(run, last):
    variables = checkpoint.read_variables(path, template)
    for solver in (True, False):
      search = dataclasses.replace(config, eval_solver=solver).search_config(
          config.eval_simulations, noise=False)
      agent = agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables, config=search,
                                 name="search")
      figures = ground_truth.evaluate(env, agent, jax.random.PRNGKey(seed),
                                      max_positions=max_positions)
      rows.append(dict(snapshot=os.path.basename(path), solver=solver, positions=positions,
                       keeps_value=figures["keeps_value"],
                       missed=round((1.0 - figures["keeps_value"]) * positions)))
  return rows


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("run", help="a run directory of tic-tac-toe, Nim or HSR")
  parser.add_argument("--last", type=int, default=10, help="the newest this many snapshots")
  parser.add_argument("--max-positions", type=int, default=None,
                      help="a random subset of the positions (default: all)")
  parser.add_argument("--csv", default=None, help="rows to this CSV")
  args = parser.parse_args(argv)
  rows = check(args.run, args.last, args.max_positions)
  for row in rows:
    print(f"{row['snapshot']:28s} solver={str(row['solver']):5s} keeps the value in "
          f"{row['positions'] - row['missed']}/{row['positions']}", flush=True)
  if args.csv:
    with open(args.csv, "w", newline="") as handle:
      writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
      writer.writeheader()
      writer.writerows(rows)
  return 0


if __name__ == "__main__":
  sys.exit(main())
