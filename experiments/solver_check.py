"""A run's snapshots on the exact figures, with and without the evaluation solver.

  python -m experiments.solver_check runs/tictactoe --last 40 \
      --csv docs/learning/tictactoe_solver_check.csv

Training evaluates its search with the terminal solver when `eval_solver`
is set (tic-tac-toe's default), so a network whose values are slightly off
can still score perfectly. This check scores each of the last `--last`
snapshots of a run (and its final `agent.msgpack`) with the run's own
evaluation (`evaluation.ground_truth_figures`: `eval_simulations`, no
noise) twice, with the solver and without, on every position of the small
game's ground truth (`learning.ground_truth`), and prints how many
positions each misses.
"""

import argparse
import csv
import dataclasses
import os
import sys

import jax

from envs import exhaustive
from learning import checkpoint
from learning import evaluation
from learning import cli


def snapshot_paths(run: str, last: int) -> list[str]:
  """The last `last` snapshots of `run` in iteration order, then its agent."""
  iterations = evaluation.snapshot_iterations(run)[-last:]
  return ([evaluation.snapshot_path(run, iteration) for iteration in iterations]
          + [os.path.join(run, checkpoint.AGENT)])


def check(run: str, last: int, seed: int = 1) -> list[dict]:
  """Rows {snapshot, solver, positions, keeps_value, missed} for each snapshot both ways.

  Args:
    run: a run directory of a small game (config.json, snapshots/, agent.msgpack).
    last: how many of the newest snapshots.
    seed: the evaluation's PRNG seed.

  Returns:
    One row per snapshot and solver setting.
  """
  config = checkpoint.load_config(run)
  env, network, eval_fn = checkpoint.build_network(config)
  template = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
  positions = len(exhaustive.game_table(env))
  rows = []
  for path in snapshot_paths(run, last):
    variables = checkpoint.read_variables(path, template)
    for solver in (True, False):
      # The training's own evaluation (`evaluation.ground_truth_figures`), solver set either way.
      figures = evaluation.ground_truth_figures(
          env, eval_fn, variables, jax.random.PRNGKey(seed),
          dataclasses.replace(config, eval_solver=solver))
      keeps_value = figures["search_keeps_value"]
      rows.append(dict(snapshot=os.path.basename(path), solver=solver, positions=positions,
                       keeps_value=keeps_value, missed=round((1.0 - keeps_value) * positions)))
  return rows


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("run", help="a run directory of tic-tac-toe, Nim or HSR")
  parser.add_argument("--last", type=int, default=10, help="the newest this many snapshots")
  parser.add_argument("--csv", default=None, help="rows to this CSV")
  args = parser.parse_args(argv)
  rows = check(args.run, args.last)
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
  sys.exit(cli.main(main))
