"""How much of the search graph survives a move: Connect-4 from the empty
board, searching, playing the chosen move and re-rooting (`mcgs_jax.reroot`)
before the next search.

  python -m experiments.reuse_memory [--simulations 800] [--moves 6]
                                     [--max-nodes N] [--csv results/reuse_memory.csv]

Evaluator: one random playout per leaf. One game, "mcgs" and "tree" modes.
Per move: nodes after the search, nodes kept by `mcgs_jax.advance` (and their
share), the visits the new root starts with, and memory per game: the
allocation (`mcgs_jax.bytes_per_game`, fixed by the capacity) and the part in
use (node and edge rows of the stored nodes, plus the hash table). With the
default capacity (num_simulations + 1 nodes) the kept nodes take room from the
next search, so node overflows are reported too; `--max-nodes` raises it.
"""

import argparse
import dataclasses
import sys
import time

import jax

import envs
import mcgs_jax
from learning import benchmarks
from learning import cli

STATIC = ("env", "eval_fn", "config")
MODES = ("mcgs", "tree")


def bytes_per_node(graph: mcgs_jax.Graph) -> int:
  """Bytes one node (with its edges) takes in every game's arrays."""
  total = 0
  for field in dataclasses.fields(graph):
    if field.name in mcgs_jax.graph.GAME_FIELDS:
      continue
    for leaf in jax.tree.leaves(getattr(graph, field.name)):
      total += leaf[0, 0].size * leaf.dtype.itemsize
  return total


def bytes_in_use(graph: mcgs_jax.Graph, nodes: int) -> int:
  table = sum(x[0].size * x.dtype.itemsize for x in jax.tree.leaves(graph.table))
  return nodes * bytes_per_node(graph) + table


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--simulations", type=int, default=800)
  parser.add_argument("--moves", type=int, default=6)
  parser.add_argument("--max-nodes", type=int, default=None,
                      help="node capacity per game (default: simulations + 1)")
  parser.add_argument("--csv", default="results/reuse_memory.csv")
  args = parser.parse_args(argv)

  env = envs.make("connect4")
  eval_fn = envs.rollout_eval(env, num_rollouts=1)
  init = jax.jit(mcgs_jax.init, static_argnames=STATIC)
  run = jax.jit(mcgs_jax.run_simulations, static_argnames=STATIC)
  reroot = jax.jit(mcgs_jax.reroot, static_argnames=STATIC)
  advance = jax.jit(mcgs_jax.advance, static_argnames=("config",))
  summarize = jax.jit(mcgs_jax.summarize, static_argnames=("config",))

  rows, times = [], []
  capacity = args.max_nodes or args.simulations + 1
  print(f"Connect-4 from the empty board, {args.simulations} simulations per move, "
        f"{capacity} nodes per game, 1 random playout per leaf\n")
  print("| mode | move | played | nodes after search | node overflows | kept | kept share "
        "| new root visits | allocated bytes/game | in use before | in use after |")
  print("|---|---|---|---|---|---|---|---|---|---|---|")
  for mode in MODES:
    start = time.perf_counter()
    config = mcgs_jax.SearchConfig(num_simulations=args.simulations, backup=mode,
                                   max_nodes=args.max_nodes)
    rng = jax.random.PRNGKey(0)
    state = env.init(rng, batch_size=1)
    graph = init(None, rng, state, env, eval_fn, config)
    for move in range(args.moves):
      if bool(state.terminated[0]):
        break
      rng, search_rng, reroot_rng = jax.random.split(rng, 3)
      graph = run(None, search_rng, graph, env, eval_fn, config)
      out = summarize(graph, config)
      before = int(out.stats.nodes_used[0])
      advanced, kept = advance(out.graph, out.action, config)
      kept_nodes = int(advanced.nodes_used[0]) if bool(kept[0]) else 0
      row = dict(
          mode=mode, move=move, action=int(out.action[0]), nodes_before=before,
          node_overflows=int(out.stats.node_overflows[0]), nodes_kept=kept_nodes,
          kept_share=kept_nodes / before,
          root_visits_kept=int(advanced.visits[0, 0]) if kept_nodes else 0,
          bytes_allocated=mcgs_jax.bytes_per_game(out.graph),
          bytes_in_use_before=bytes_in_use(out.graph, before),
          bytes_in_use_after=bytes_in_use(out.graph, kept_nodes))
      rows.append(row)
      print(f"| {mode} | {move} | {row['action']} | {before} | {row['node_overflows']} | "
            f"{kept_nodes} | {row['kept_share']:.0%} | {row['root_visits_kept']} | "
            f"{row['bytes_allocated']:,} | {row['bytes_in_use_before']:,} | "
            f"{row['bytes_in_use_after']:,} |", flush=True)
      state = env.step(state, out.action)
      graph = reroot(None, reroot_rng, out.graph, out.action, state, env, eval_fn, config)
    times.append(f"{mode} {time.perf_counter() - start:.0f} s")
  benchmarks.write_csv(args.csv, rows, list(rows[0]))
  print(f"\n{', '.join(times)} (compilation included); wrote {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
