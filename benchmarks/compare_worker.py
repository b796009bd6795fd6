"""The measuring process of `mcgs-jax bench-compare` (one per tree,
`mcgs_jax.benchmarks.compare`).

Run as a script with the tree on PYTHONPATH; it imports only the public API
every tree compared shares, so a base commit runs the same measurement.
Reads commands on stdin, answers each with one JSON line on stdout:
  compile [CELLS]    compiles and warms up every cell, or the comma-separated
                     CELLS -> {"cells": [...], "seconds": s, "cores": the cores it
                     may run on}; an unknown cell -> {"error": ...}
  cores              -> {"cores": the cores it may run on}
  time CELL REPEATS  REPEATS timed calls -> {"median_ms": ..., "times_ms": [...]}
  quit
"""

import argparse
import functools
import json
import os
import statistics
import sys
import time

# Pinned before jax starts (`mcgs_jax.benchmarks.compare` names the cores):
# XLA's CPU runtime sizes its thread pool by the cores a process may run on,
# and one process on both cores of a 2-core machine ran at one of two speeds,
# by the run (docs/benchmarks.md, "Two cores").
if os.environ.get("MCGS_BENCH_CORES"):
  os.sched_setaffinity(0, {int(core) for core in os.environ["MCGS_BENCH_CORES"].split(",")})

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.learning import selfplay
from mcgs_jax.networks import MLP, MLPEval, init_params

FULL = dict(batch=1024, sims=64, enhanced_batch=256, selfplay_batch=256, selfplay_moves=8)
QUICK = dict(batch=16, sims=8, enhanced_batch=8, selfplay_batch=8, selfplay_moves=2)


def network_only(params, state, env, eval_fn, num_steps):
  """`num_steps` batched network calls and env steps, nothing else.

  Args:
    params: the network's parameters.
    state: a batch of env states [B].
    env: the env.
    eval_fn: the evaluator.
    num_steps: S.

  Returns:
    f32[B], the last call's values.
  """

  def body(state, _):
    logits, value = eval_fn(params, None, state)
    action = jnp.argmax(jnp.where(state.legal_action_mask, logits, -jnp.inf), axis=-1)
    next_state = env.step(state, action.astype(jnp.int32))
    state = jax.tree.map(lambda a, b: jnp.where(
        next_state.terminated.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), next_state, state)
    return state, value

  state, values = jax.lax.scan(body, state, None, length=num_steps)
  return values[-1]


def make_cells(shape: dict) -> dict:
  """The key cells.

  Args:
    shape: FULL or QUICK.

  Returns:
    name -> a zero-argument callable whose result is blocked on.
  """
  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=(128, 128))
  eval_fn = MLPEval(network)
  batch, sims = shape["batch"], shape["sims"]
  root = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = init_params(network, jax.random.PRNGKey(0), root.observation)
  rng = jax.random.PRNGKey(1)

  def search_cell(batch_size, **fields):
    config = mcgs_jax.SearchConfig(num_simulations=sims, **fields)
    state = env.init(jax.random.PRNGKey(0), batch_size=batch_size)
    search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
    return lambda: search(params, rng, state).action

  floor = jax.jit(functools.partial(network_only, env=env, eval_fn=eval_fn, num_steps=sims))

  def selfplay_cell(gumbel, game_env=env, game_eval_fn=eval_fn, game_params=params):
    if gumbel:
      search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1),
                                     root_policy="gumbel", max_considered_actions=16,
                                     gumbel_scale=1.0)
    else:
      search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1),
                                     dirichlet_fraction=0.25, dirichlet_alpha=0.3)
    config = selfplay.SelfPlayConfig(search=search, reuse_graph=True)
    play = jax.jit(functools.partial(selfplay.play, env=game_env, eval_fn=game_eval_fn,
                                     config=config, num_moves=shape["selfplay_moves"]))
    games = {"state": selfplay.init(jax.random.PRNGKey(0), game_env, shape["selfplay_batch"]),
             "calls": 0}

    def call():
      games["calls"] += 1
      state, *_ = play(game_params, jax.random.fold_in(rng, games["calls"]), games["state"])
      games["state"] = state
      return state

    return call

  # Nim (1,3,5,7), dense in transpositions, with a network that costs little
  # beside the search.
  nim = envs.make("nim")
  nim_network = MLP(num_actions=nim.num_actions, hidden_sizes=(64, 64))
  nim_params = init_params(nim_network, jax.random.PRNGKey(0),
                           nim.init(jax.random.PRNGKey(0), batch_size=1).observation)

  return {
      "puct-b1": search_cell(1),
      f"puct-b{batch}": search_cell(batch),
      f"gumbel-b{batch}": search_cell(batch, root_policy="gumbel"),
      f"solver-b{shape['enhanced_batch']}": search_cell(shape["enhanced_batch"], solver=True),
      f"rave-b{shape['enhanced_batch']}": search_cell(shape["enhanced_batch"], rave=True),
      f"floor-b{batch}": lambda: floor(params, root),
      "puct-selfplay": selfplay_cell(gumbel=False),
      "gumbel-selfplay": selfplay_cell(gumbel=True),
      "nim-selfplay": selfplay_cell(False, nim, MLPEval(nim_network), nim_params),
  }


def main():
  """Answers the commands of stdin (the module docstring) until `quit`."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true")
  args = parser.parse_args()
  cells = make_cells(QUICK if args.quick else FULL)
  for line in sys.stdin:
    words = line.split()
    if not words:
      continue
    if words[0] == "quit":
      break
    if words[0] == "compile":
      chosen = words[1].split(",") if len(words) > 1 else list(cells)
      unknown = [name for name in chosen if name not in cells]
      if unknown:
        print(json.dumps({"error": f"unknown cell(s) {', '.join(unknown)}; the cells: "
                                   f"{', '.join(cells)}"}), flush=True)
        continue
      chosen = [name for name in cells if name in chosen]   # the cells' own order
      start = time.perf_counter()
      for name in chosen:
        for _ in range(3):   # compile, then spread self-play over the opening
          jax.block_until_ready(cells[name]())
      answer = {"cells": chosen, "seconds": time.perf_counter() - start,
                "cores": len(os.sched_getaffinity(0))}
    elif words[0] == "cores":
      answer = {"cores": len(os.sched_getaffinity(0))}
    elif words[0] == "time":
      call, repeats = cells[words[1]], int(words[2])
      jax.block_until_ready(call())   # untimed, as the benchmarks' warm-up
      times = []
      for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append(1e3 * (time.perf_counter() - start))
      answer = {"median_ms": statistics.median(times), "times_ms": times}
    else:
      answer = {"error": f"unknown command {line.strip()!r}"}
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
  main()
