"""Where a search's time goes: phases of one simulation step, and the distance
from "only the network".

  python -m experiments.bench_phases                          # B=1024, S=800, MLP(128, 128)
  python -m experiments.bench_phases --batch 1024 --sims 64   # the network-only comparison
  python -m experiments.bench_phases --hidden 512 512 512     # a larger network

Connect-4 from the empty board, the flax MLP as eval_fn. Rows:
  network+env only  S network calls and env steps on B states in a lax.scan,
                    nothing else: the floor any search with S simulations pays.
  search <mode>     the full `mcgs_jax.search` (init, S simulations, summary).
  phase <name>      one phase of a simulation step, jitted on its own and run on
                    the graph half-way through a search (S/2 simulations done),
                    so the graph has realistic depth and occupancy:
                      selection   `selection.select_batch` (PUCT descent, B games)
                      transition  `Model.transition` at the selected edges
                      lookup      the children's keys in the hash tables
                      evaluation  `eval_fn` on the B children (`expansion.evaluate`)
                      expansion+backup  `expansion.expand_and_backup` (vmap)
                      step        `mcgs_jax.simulate`: all of the above, one jit
                    The two that write the graph get it donated (updated in
                    place, as inside the search loop).
Times are medians of repeats after a compile warm-up; a phase's time is per
step (x S gives its share of a search). `vs network` divides by the
network+env row; phases report their share of the `step` row. Writes
results/bench_phases.csv.
"""

import argparse
import functools
import sys
import time

import jax
import jax.numpy as jnp

import envs
import mcgs_jax
from learning import benchmarks
from learning import cli
from mcgs_jax import expansion
from mcgs_jax import graph as graph_lib
from mcgs_jax import model as model_lib
from mcgs_jax import selection
from networks import MLP, MLPEval, init_params

FIELDS = ("row", "backup", "batch", "sims", "median_ms", "per_step_ms", "vs_network",
          "share_of_step")


def _median_ms(fn, repeats, budget_s):
  _, _, times = benchmarks.time_calls(fn, repeats, budget_s)
  times = sorted(times)
  return 1000.0 * times[len(times) // 2] if times else float("nan")


def _median_donated_ms(fn, graph, args, repeats):
  """Median ms of `fn(graph_copy, *args)` with the graph donated, as inside
  the search loop, where XLA updates the graph in place; the copy is made
  before the clock starts."""
  times = []
  for _ in range(repeats + 1):   # the first call compiles
    fresh = jax.block_until_ready(jax.tree.map(jnp.copy, graph))
    start = time.perf_counter()
    jax.block_until_ready(fn(fresh, *args))
    times.append(time.perf_counter() - start)
  times = sorted(times[1:])
  return 1000.0 * times[len(times) // 2]


def network_only(params, state, env, eval_fn, num_steps):
  """`num_steps` batched network calls and env steps (the first legal move),
  the work a search cannot avoid. Returns the last values [B]."""

  def body(state, _):
    logits, value = eval_fn(params, None, state)
    action = jnp.argmax(jnp.where(state.legal_action_mask, logits, -jnp.inf), axis=-1)
    next_state = env.step(state, action.astype(jnp.int32))
    # Finished games restart from the root so every step does full work.
    state = jax.tree.map(lambda a, b: jnp.where(
        next_state.terminated.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), next_state, state)
    return state, value

  state, values = jax.lax.scan(body, state, None, length=num_steps)
  return values[-1]


def phase_functions(env, eval_fn, config):
  """Each phase of `simulate`, jitted on its own: name -> fn(params, rng, graph)."""
  model = model_lib.as_model(env)

  def select(params, rng, graph):
    del params
    return selection.select_batch(graph, rng, model, config)

  # The graph is the first argument of the two phases that write it, donated.

  def transition(params, rng, graph, sel):
    return model.transition(params, rng, graph_lib.gather_nodes(graph.embedding, sel.parent),
                            sel.action)

  def lookup(graph, trans):
    return expansion.lookup(graph.table, trans.key, config)

  def evaluate(params, rng, trans):
    return expansion.evaluate(params, rng, eval_fn, trans.embedding, trans.legal, config)

  expand_and_backup = expansion.batched_expand_and_backup(model, config)

  def step(graph, params, rng):
    return mcgs_jax.simulate(params, rng, graph, env, eval_fn, config)[0]

  return dict(selection=jax.jit(select), transition=jax.jit(transition),
              lookup=jax.jit(lookup), evaluation=jax.jit(evaluate),
              expansion=jax.jit(expand_and_backup, donate_argnums=0),
              step=jax.jit(step, donate_argnums=0))


def phase_calls(backup, batch, sims, hidden):
  """The full search and each phase of one of its steps, ready to call.

  Args:
    backup: `SearchConfig.backup`.
    batch: B.
    sims: S.
    hidden: the MLP's hidden sizes.

  Returns:
    dict name -> (fn, args): "search" (the whole `mcgs_jax.search`), then
    "selection", "transition", "lookup", "evaluation", "expansion+backup"
    and "step" on the graph half-way through a search. `args()` gives the
    call's arguments; for the two phases that write the graph (donated to
    them, updated in place as inside the search loop) a fresh copy of it on
    each call, so `fn(*args())` can be repeated.
  """
  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=tuple(hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = init_params(network, jax.random.PRNGKey(0), state.observation)
  eval_fn = MLPEval(network)
  config = mcgs_jax.SearchConfig(num_simulations=sims, backup=backup)
  rng = jax.random.PRNGKey(1)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))

  # Half-way graph: realistic depth and occupancy for the phases.
  half = mcgs_jax.SearchConfig(num_simulations=sims // 2, backup=backup,
                               max_nodes=config.node_capacity,
                               table_size=config.table_capacity)
  half_search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn,
                                          config=half))
  graph = jax.block_until_ready(half_search(params, rng, state).graph)
  fns = phase_functions(env, eval_fn, config)
  sel = fns["selection"](params, rng, graph)
  trans = fns["transition"](params, rng, graph, sel)
  found, free_slot = fns["lookup"](graph, trans)
  prior, value, nan = fns["evaluation"](params, rng, trans)

  def fresh_graph():
    return jax.block_until_ready(jax.tree.map(jnp.copy, graph))

  return {
      "search": (search, lambda: (params, rng, state)),
      "selection": (fns["selection"], lambda: (params, rng, graph)),
      "transition": (fns["transition"], lambda: (params, rng, graph, sel)),
      "lookup": (fns["lookup"], lambda: (graph, trans)),
      "evaluation": (fns["evaluation"], lambda: (params, rng, trans)),
      "expansion+backup": (fns["expansion"], lambda: (
          fresh_graph(), sel, trans, found, free_slot, prior, value, nan)),
      "step": (fns["step"], lambda: (fresh_graph(), params, rng)),
  }


def profile(backup, batch, sims, hidden, repeats, budget_s, calls=None):
  """Rows for one backup mode (`calls`: `phase_calls`' output for these
  settings, made here where None)."""
  calls = dict(phase_calls(backup, batch, sims, hidden) if calls is None else calls)
  search, search_args = calls.pop("search")
  search_ms = _median_ms(lambda: search(*search_args()), repeats, budget_s)
  rows = [dict(row=f"search {backup}", backup=backup, median_ms=search_ms,
               per_step_ms=search_ms / sims)]
  phase_ms = {}
  for name, (fn, args) in calls.items():
    if name in ("expansion+backup", "step"):
      graph, *rest = args()
      phase_ms[name] = _median_donated_ms(fn, graph, tuple(rest), repeats)
    else:
      phase_ms[name] = _median_ms(lambda fn=fn, args=args: fn(*args()), repeats, budget_s)
  for name, ms in phase_ms.items():
    rows.append(dict(row=f"phase {name}", backup=backup, median_ms=ms, per_step_ms=ms,
                     share_of_step=round(ms / phase_ms["step"], 3)))
  return rows


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--sims", type=int, default=800)
  parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
  parser.add_argument("--backups", nargs="+", default=["mcgs", "tree"])
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--budget-s", type=float, default=120.0)
  parser.add_argument("--csv", default="results/bench_phases.csv")
  args = parser.parse_args(argv)

  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=tuple(args.hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=args.batch)
  params = init_params(network, jax.random.PRNGKey(0), state.observation)
  only = jax.jit(functools.partial(network_only, env=env, eval_fn=MLPEval(network),
                                   num_steps=args.sims))
  network_ms = _median_ms(lambda: only(params, state), args.repeats, args.budget_s)
  rows = [dict(row="network+env only", backup="-", median_ms=network_ms,
               per_step_ms=network_ms / args.sims)]
  for backup in args.backups:
    rows += profile(backup, args.batch, args.sims, args.hidden, args.repeats, args.budget_s)
  for r in rows:
    r.update(batch=args.batch, sims=args.sims)
    r["vs_network"] = round(r["median_ms"] / network_ms, 2) if not r["row"].startswith(
        "phase") else round(r["median_ms"] * args.sims / network_ms, 2)
    r.setdefault("share_of_step", "")
    r["median_ms"] = round(r["median_ms"], 2)
    r["per_step_ms"] = round(r["per_step_ms"], 3)
  print(f"MLP hidden {tuple(args.hidden)}, {jax.devices()[0].platform}; phase rows: ms per "
        "step; vs_network: x S over the network+env-only row")
  print(benchmarks.markdown_table(rows, FIELDS))
  benchmarks.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
