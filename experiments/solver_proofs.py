"""Terminal-solver proofs on Pons' Connect-4 sets, checked against exact scores.

  python -m experiments.solver_proofs [--set L3_R1] [--sims 1000] [--limit N]

mcgs_jax.search(solver=True) with one random rollout per leaf. For every root
the search proves, the proven value must have the sign of the exact score
(wrong proofs must be 0); for proven wins the played move must be winning,
and its exact distance to the win (from the move's Pons score) at most the
proof's end_in_ply; the table also counts how often it is the fastest win.
"""

import argparse
import functools
import sys

import jax
import numpy as np

import envs
import mcgs_jax
from envs import connect4
from learning import benchmarks
from learning import cli
from envs import pons
from mcgs_jax import graph as graph_lib

SIGN = {graph_lib.WIN: 1, graph_lib.LOSS: -1, graph_lib.DRAW: 0}
FIELDS = ("set", "sims", "positions", "proven", "proven_share", "wrong_proofs", "wins_proven",
          "win_move_wrong", "distance_over_bound", "fastest_win", "simulations_mean")


def check(set_name: str, sims: int, limit: int | None, batch: int) -> dict:
  rows = pons.read_columns(set_name, limit)
  env = envs.make("connect4")
  config = mcgs_jax.SearchConfig(num_simulations=sims, solver=True)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.rollout_eval(env),
                                     config=config))
  padded = rows + [rows[-1]] * (-len(rows) % batch)
  counts = dict(proven=0, wrong_proofs=0, wins_proven=0, win_move_wrong=0,
                distance_over_bound=0, fastest_win=0)
  simulations = []
  for start in range(0, len(padded), batch):
    chunk = padded[start:start + batch]
    states = envs.stack([connect4.from_moves(moves) for moves, _ in chunk])
    out = jax.device_get(search(None, jax.random.PRNGKey(start), states))
    for b, (moves, scores) in enumerate(chunk[:max(0, len(rows) - start)]):
      simulations.append(int(out.stats.simulations[b]))
      code = int(out.root_solved[b])
      if code == graph_lib.UNKNOWN:
        continue
      counts["proven"] += 1
      best = -min(v for v in scores if v is not None)
      counts["wrong_proofs"] += SIGN[code] != np.sign(best)
      if code == graph_lib.WIN:
        counts["wins_proven"] += 1
        played = -scores[int(out.action[b])]
        counts["win_move_wrong"] += played <= 0
        plies = 2 * (22 - played - len(moves) // 2) - 1
        counts["distance_over_bound"] += plies > int(out.root_end_in_ply[b])
        counts["fastest_win"] += played == best
  return dict(set=set_name, sims=sims, positions=len(rows),
              proven_share=round(counts["proven"] / len(rows), 4),
              simulations_mean=round(float(np.mean(simulations)), 1), **counts)


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sets", nargs="+", default=["L3_R1"])
  parser.add_argument("--sims", type=int, nargs="+", default=[200, 1000])
  parser.add_argument("--limit", type=int)
  parser.add_argument("--batch", type=int, default=100)
  parser.add_argument("--csv", default="results/solver_proofs.csv")
  args = parser.parse_args(argv)
  rows = [check(s, n, args.limit, args.batch) for s in args.sets for n in args.sims]
  print(benchmarks.markdown_table(rows, FIELDS))
  benchmarks.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
