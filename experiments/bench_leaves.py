"""Throughput of several leaves per step for ONE game (analysis of one position).

  python -m experiments.bench_leaves [--sims 800] [--leaves 1 4 16]

Connect-4 from the empty board, the flax MLP as eval_fn (networks.MLPEval),
mcgs_jax.search with leaves_per_step L: simulations per second and network
batch per call. With L = 1 one game sends one leaf per network call.

Two evaluation counts: `nn_evals` (leaves that needed the network) and
`eval_rows` (rows sent to `eval_fn`: L per step whatever the leaves were,
collisions, transpositions and terminal edges included). Efficiency per
network call should be read from `eval_rows`.
"""

import argparse
import functools
import sys

import jax

import envs
import mcgs_jax
from learning import benchmarks
from learning import cli
from networks import MLP, MLPEval, init_params

FIELDS = ("leaves_per_step", "sims", "seconds", "sims_per_s", "speedup", "simulations",
          "collisions", "nodes", "nn_evals", "eval_rows")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sims", type=int, default=800)
  parser.add_argument("--leaves", type=int, nargs="+", default=[1, 4, 16])
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--csv", default="results/bench_leaves.csv")
  args = parser.parse_args(argv)
  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=(128, 128))
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  params = init_params(network, jax.random.PRNGKey(0), state.observation)
  eval_fn = MLPEval(network)
  rows = []
  for leaves in args.leaves:
    config = mcgs_jax.SearchConfig(num_simulations=args.sims, leaves_per_step=leaves)
    search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
    _, out, times = benchmarks.time_calls(lambda: search(params, jax.random.PRNGKey(1), state),
                                        args.repeats, budget_s=60.0)
    seconds = sorted(times)[len(times) // 2]
    rows.append(dict(leaves_per_step=leaves, sims=args.sims, seconds=round(seconds, 4),
                     sims_per_s=round(int(out.stats.simulations[0]) / seconds, 1),
                     simulations=int(out.stats.simulations[0]),
                     collisions=int(out.stats.collisions[0]), nodes=int(out.stats.nodes_used[0]),
                     nn_evals=int(out.stats.nn_evals[0]), eval_rows=int(out.stats.eval_rows[0])))
  for r in rows:
    r["speedup"] = round(r["sims_per_s"] / rows[0]["sims_per_s"], 2)
  print(benchmarks.markdown_table(rows, FIELDS))
  benchmarks.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
