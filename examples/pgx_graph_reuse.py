"""Any pgx game, whole games, the graph kept between moves.

`mcgs_jax.envs.make("pgx:<id>")` wraps a deterministic pgx game with the
transposition key the search needs. A play loop that keeps the graph is
search -> env.step -> reroot -> run_simulations -> summarize: the played
child's subgraph (every node reachable from it, a DAG walk) becomes the next
root's graph, so a move starts from the visits the last search already made.
Random playouts evaluate the leaves (no network). Prints every fifth move how many
nodes the new roots kept. Othello by default, about a minute on 2 CPU cores.

  python examples/pgx_graph_reuse.py              # othello
  python examples/pgx_graph_reuse.py tic_tac_toe  # any pgx id: hex, go_9x9, chess, ...
"""

import functools
import sys

import jax
import numpy as np

import mcgs_jax
from mcgs_jax import envs

GAMES, SIMULATIONS = 4, 64


def main(game_id: str = "othello"):
  env = envs.make(f"pgx:{game_id}")
  eval_fn = envs.rollout_eval(env, num_rollouts=1)
  # A kept subgraph takes capacity the next search needs: 4x the simulations.
  config = mcgs_jax.SearchConfig(num_simulations=SIMULATIONS, max_nodes=4 * SIMULATIONS)
  static = functools.partial(jax.jit, static_argnames=("env", "eval_fn", "config"))
  search, reroot = static(mcgs_jax.search), static(mcgs_jax.reroot)
  run_simulations, summarize = static(mcgs_jax.run_simulations), jax.jit(
      mcgs_jax.summarize, static_argnames=("config",))

  rng = jax.random.PRNGKey(0)
  state = env.init(rng, batch_size=GAMES)
  out = search(None, rng, state, env, eval_fn, config)
  for move in range(env.max_game_length):
    next_state = env.step(state, out.action)   # a finished game stays as it is
    if bool(next_state.terminated.all()):
      print(f"all {GAMES} games over after {move + 1} moves")
      break
    # The graph re-rooted at the child each game played (a fresh root where
    # that child was never stored), then this move's simulations on top.
    graph = reroot(None, jax.random.fold_in(rng, 2 * move), out.graph, out.action, next_state,
                   env, eval_fn, config)
    kept = np.asarray(graph.nodes_used)
    graph = run_simulations(None, jax.random.fold_in(rng, 2 * move + 1), graph, env, eval_fn,
                            config)
    out = summarize(graph, config)
    state = next_state
    if move % 5 == 0:
      values = " ".join(f"{v:+.2f}" for v in np.asarray(out.root_value))
      print(f"move {move + 1}: the new roots kept {kept.mean():5.1f} nodes of the last search, "
            f"now hold {np.asarray(out.stats.nodes_used).mean():5.1f}; root values {values}")


if __name__ == "__main__":
  main(*sys.argv[1:])
