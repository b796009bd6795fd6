"""Gumbel root search vs PUCT, in a tree and in a graph, on Connect-4 move accuracy.

  python -m experiments.gumbel                       # L2_R1, 100 positions, 16/32/64 sims
  python -m experiments.gumbel --sets L3_R1 L2_R1 --limit 200 --sims 16 64
  python -m experiments.gumbel --evaluator rollout   # random rollouts, uniform prior

Rows: root_policy "puct" (the most visited move) and "gumbel" (Danihelka et
al. 2022: sequential halving over the Gumbel-considered root moves,
deterministic selection below, the move by g + logits + sigma(completed Q))
crossed with backup "tree" (plain MCTS; its Gumbel rows compute what
`mctx.gumbel_muzero_policy` computes) and "mcgs" (the graph with corrected
backpropagation: a Gumbel MCGS). Every search uses the same evaluator: the
shipped network (networks/pretrained/connect4) by default. A move is scored
as in `experiments.connect4_accuracy` (outcome-preserving / optimal, with
exact scores of every column, Wilson 95% intervals). Gumbel noise is off by
default (`--gumbel-scale 0`, mctx's advice for evaluating perfect-information
games), so every row is deterministic given the evaluator.
"""

import functools
import os
import sys

import jax

import envs
import mcgs_jax
from learning import benchmarks
from experiments import connect4_accuracy as accuracy
from learning import checkpoint
from learning import cli

AGENT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "networks", "pretrained", "connect4")
SEARCHES = ("tree-puct", "tree-gumbel", "mcgs-puct", "mcgs-gumbel")
FIELDS = ("set", "search", "sims", "positions", "preserving", "preserving_lo",
          "preserving_hi", "optimal", "optimal_lo", "optimal_hi", "ms_per_move", "batch",
          "evaluator")


def search_config(search: str, sims: int, max_considered: int,
                  gumbel_scale: float) -> mcgs_jax.SearchConfig:
  """`backup-policy` (e.g. "mcgs-gumbel") -> SearchConfig."""
  backup, _, policy = search.partition("-")
  return mcgs_jax.SearchConfig(num_simulations=sims, backup=backup, root_policy=policy,
                               max_considered_actions=max_considered,
                               gumbel_scale=gumbel_scale)


def evaluator(name: str):
  """(env, eval_fn, params) of the shipped network or of random rollouts."""
  if name == "network":
    return checkpoint.load_agent(AGENT)
  env = envs.make("connect4")
  return env, envs.rollout_eval(env), None


def mover(env, eval_fn, params, config):
  """`(rng, states) -> actions` for `connect4_accuracy.run_batched`."""
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
  return lambda rng, states: search(params, rng, states).action


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sets", nargs="+", default=["L2_R1"], help="Pons sets")
  parser.add_argument("--limit", type=int, default=100, help="first N positions of each set")
  parser.add_argument("--sims", type=int, nargs="+", default=[16, 32, 64])
  parser.add_argument("--searches", nargs="+", default=list(SEARCHES), choices=SEARCHES)
  parser.add_argument("--evaluator", choices=("network", "rollout"), default="network")
  parser.add_argument("--max-considered", type=int, default=16)
  parser.add_argument("--gumbel-scale", type=float, default=0.0)
  parser.add_argument("--batch", type=int, default=100, help="positions per search call")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default="results/gumbel.csv")
  args = parser.parse_args(argv)

  env, eval_fn, params = evaluator(args.evaluator)
  rows = []
  for suite in args.sets:
    positions = accuracy.load_set(suite, args.limit)
    batch = min(args.batch, len(positions))
    for sims in args.sims:
      for search in args.searches:
        config = search_config(search, sims, args.max_considered, args.gumbel_scale)
        moves, seconds = accuracy.run_batched(mover(env, eval_fn, params, config), positions,
                                              batch, args.seed)
        row = dict(set=suite, search=search, sims=sims, ms_per_move=round(seconds * 1e3, 3),
                   batch=batch, evaluator=args.evaluator,
                   **accuracy.score_moves(positions, moves))
        rows.append(row)
        print(accuracy.format_table([row]).splitlines()[-1], flush=True)
  print()
  print(f"evaluator: {args.evaluator}; gumbel_scale {args.gumbel_scale}, "
        f"max_considered_actions {args.max_considered}")
  print(accuracy.format_table(rows))
  benchmarks.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
