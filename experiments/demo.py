"""Demo: one Connect-4 search from the empty board, MCGS next to a plain tree.

  mcgs-jax demo [--moves 4455] [--simulations 800] [--rollouts 8]

No trained network is needed: leaves are valued by random playouts on device.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
checkpoint = cli.lazy("mcgs_jax.learning.checkpoint")
networks = cli.lazy("mcgs_jax.networks")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--moves", default="", help="position as columns 1-7 (Pons)")
  parser.add_argument("--simulations", type=int, default=800)
  parser.add_argument("--rollouts", type=int, default=8, help="random playouts per leaf")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)

  env = envs.make("connect4")
  position = envs.connect4.from_moves(args.moves)
  state = envs.stack([position])
  eval_fn = envs.rollout_eval(env, num_rollouts=args.rollouts)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  rng = jax.random.PRNGKey(args.seed)

  print(envs.connect4.render(position))
  print(f"position '{args.moves}', {args.simulations} simulations, "
        f"{args.rollouts} random playouts per leaf\n")
  results = {}
  for backup in ("mcgs", "tree"):
    config = mcgs_jax.SearchConfig(num_simulations=args.simulations, backup=backup)
    start = time.perf_counter()
    out = jax.block_until_ready(search(None, rng, state, env, eval_fn, config))
    seconds = time.perf_counter() - start
    results[backup] = out
    stats = jax.tree.map(lambda x: int(x[0]), out.stats)
    weights = " ".join(f"{w:5.3f}" for w in out.action_weights[0].tolist())
    print(f"[{backup}] best column {int(out.action[0]) + 1}   value {float(out.root_value[0]):+.3f}"
          f"   ({seconds:.1f} s incl. compilation)")
    print(f"  visits per column 1-7: {weights}")
    print(f"  nodes {stats.nodes_used}, network evaluations {stats.nn_evals}, "
          f"transposition links {stats.transposition_hits}, corrections {stats.corrections}, "
          f"terminal visits {stats.terminal_visits}, bytes/game "
          f"{mcgs_jax.bytes_per_game(out.graph)}")
  graph, tree = results["mcgs"].stats, results["tree"].stats
  node_saving = 1 - int(graph.nodes_used[0]) / int(tree.nodes_used[0])
  eval_saving = 1 - int(graph.nn_evals[0]) / int(tree.nn_evals[0])
  print(f"\nMCGS stored {node_saving:.0%} fewer nodes and needed {eval_saving:.0%} fewer "
        "network evaluations than the tree, at the same simulation budget.")
  if os.path.exists(os.path.join(networks.PRETRAINED_CONNECT4, checkpoint.AGENT)):
    show_trained_agent(args.moves, args.seed)


def show_trained_agent(moves: str, seed: int, plies: int = 8, simulations: int = 200):
  """The shipped Connect-4 network (networks/pretrained/connect4) plays both
  sides for a few moves with a 200-simulation MCGS."""
  env, eval_fn, params = checkpoint.load_agent(networks.PRETRAINED_CONNECT4)
  config = mcgs_jax.SearchConfig(num_simulations=simulations, max_nodes=2 * (simulations + 1),
                                 check_evaluator=True)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  state = envs.stack([envs.connect4.from_moves(moves)])
  print(f"\nThe trained agent ({networks.PRETRAINED_CONNECT4}), {simulations} simulations per move, "
        f"plays both sides for {plies} moves:")
  played = ""
  for ply in range(plies):
    if bool(state.terminated[0]):
      break
    out = search(params, jax.random.PRNGKey(seed + ply), state, env, eval_fn, config)
    action = int(out.action[0])
    played += str(action + 1)
    print(f"  move {ply + 1}: column {action + 1}  (value for the mover {float(out.root_value[0]):+.2f})")
    state = env.step(state, out.action)
  print(envs.connect4.render(jax.tree.map(lambda x: x[0], state)))
  print(f"moves {moves + played}; play it yourself: make play "
        "(or mcgs-jax play)")


if __name__ == "__main__":
  sys.exit(cli.main(main))
