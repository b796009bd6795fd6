"""What transpositions save: nodes and network evaluations of "mcgs",
"katago" and "tt_cache" against "tree" at the same simulation budget.

  python -m experiments.transpositions [--sims 800] [--csv results/transpositions.csv]

Games: Nim (1,3,5,7) from the start, and Connect-4 from the empty board and
from 16 positions of Pons' middle-game set (Test_L2_R1). Evaluators: uniform
(prior uniform, value 0), random playouts (8 per leaf), and the benchmark's
randomly initialised MLP (Connect-4 only).
"""

import argparse
import sys

import jax
import jax.numpy as jnp

import envs
import mcgs_jax
from learning import benchmarks
from learning import cli
from envs import pons
from networks import MLP, MLPEval, init_params

# "tree" first (every row is compared with its tree row), then the other
# trees, then the graphs (modes that link transpositions).
MODES = tuple(sorted(mcgs_jax.modes.names(),
                     key=lambda m: (m != "tree", mcgs_jax.modes.get(m).links_transpositions)))


def connect4_positions(count):
  return [moves for moves, _ in pons.read_scores("L2_R1", count)]


def workloads():
  nim = envs.make("nim")
  c4 = envs.make("connect4")
  net = MLP(num_actions=7)
  params = init_params(net, jax.random.PRNGKey(0), jnp.zeros((1, 6, 7, 2)))
  empty = envs.stack([envs.connect4.from_moves("")])
  middle = connect4_positions(16)
  yield "nim 1,3,5,7", "uniform", nim, nim.init(jax.random.PRNGKey(0), 1), envs.uniform_eval(nim), None
  yield "nim 1,3,5,7", "rollouts x8", nim, nim.init(jax.random.PRNGKey(0), 1), envs.rollout_eval(nim, 8), None
  yield "connect4 empty", "uniform", c4, empty, envs.uniform_eval(c4), None
  yield "connect4 empty", "rollouts x8", c4, empty, envs.rollout_eval(c4, 8), None
  yield "connect4 empty", "MLP (random init)", c4, empty, MLPEval(net), params
  if middle:
    states = envs.stack([envs.connect4.from_moves(m) for m in middle])
    yield "connect4 L2 x16", "rollouts x8", c4, states, envs.rollout_eval(c4, 8), None


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--sims", type=int, default=800)
  parser.add_argument("--csv", default="results/transpositions.csv")
  args = parser.parse_args(argv)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  rows = []
  print(f"{args.sims} simulations; means per game\n")
  print("| game | evaluator | mode | nodes | network evals | links | corrections | nodes vs tree | evals vs tree |")
  print("|---|---|---|---|---|---|---|---|---|")
  for game, evaluator, env, state, eval_fn, params in workloads():
    base = None
    for mode in MODES:
      config = mcgs_jax.SearchConfig(num_simulations=args.sims, backup=mode)
      out = search(params, jax.random.PRNGKey(1), state, env, eval_fn, config)
      stats = {k: float(jnp.mean(v)) for k, v in out.stats.items()}
      if mode == "tree":
        base = stats
      row = dict(game=game, evaluator=evaluator, mode=mode, sims=args.sims,
                 nodes=stats["nodes_used"], nn_evals=stats["nn_evals"],
                 links=stats["transposition_hits"], corrections=stats["corrections"],
                 nodes_vs_tree=stats["nodes_used"] / base["nodes_used"],
                 evals_vs_tree=stats["nn_evals"] / base["nn_evals"])
      rows.append(row)
      print(f"| {game} | {evaluator} | {mode} | {row['nodes']:.0f} | {row['nn_evals']:.0f} | "
            f"{row['links']:.0f} | {row['corrections']:.0f} | {row['nodes_vs_tree']:.0%} | "
            f"{row['evals_vs_tree']:.0%} |", flush=True)
  benchmarks.write_csv(args.csv, rows, list(rows[0]))
  print(f"\nwrote {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
