"""The network+env floor of a search and its phases jitted apart (`mcgs_jax.experiments.bench_phases`,
the accelerator report's phases and kernels sections, `mcgs_jax.experiments.bench_compare`).
"""

import functools
import time

import jax
import jax.numpy as jnp

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.benchmarks import measure
from mcgs_jax import expansion
from mcgs_jax import graph as graph_lib
from mcgs_jax import model as model_lib
from mcgs_jax import rules
from mcgs_jax import selection
from mcgs_jax.networks import MLP, MLPEval, init_params

FIELDS = ("row", "backup", "batch", "sims", "median_ms", "per_step_ms", "vs_network",
          "share_of_step")


def median_ms(fn, repeats, budget_s):
  """Median milliseconds of the timed calls of `fn` (`measure.time_calls`).

  Args:
    fn: the call, no arguments.
    repeats: timed calls at most.
    budget_s: the timed calls stop once they have used this long.

  Returns:
    The median in ms (NaN when no call was timed).
  """
  _, _, times = measure.time_calls(fn, repeats, budget_s)
  times = sorted(times)
  return 1000.0 * times[len(times) // 2] if times else float("nan")


def _median_donated_ms(fn, graph, args, repeats):
  """Median ms of `fn(graph_copy, *args)` with the graph donated, as inside
  the search loop, where XLA updates the graph in place; the copy is made
  before the clock starts."""
  times = []
  for _ in range(repeats + 1):  # the first call compiles
    fresh = jax.block_until_ready(jax.tree.map(jnp.copy, graph))
    start = time.perf_counter()
    jax.block_until_ready(fn(fresh, *args))
    times.append(time.perf_counter() - start)
  times = sorted(times[1:])
  return 1000.0 * times[len(times) // 2]


def network_only(params, state, env, eval_fn, num_steps):
  """`num_steps` batched network calls and env steps (the first legal move),
  the work a search cannot avoid.

  Args:
    params: the network's parameters.
    state: the batch of env states [B].
    env: the env.
    eval_fn: `(params, rng, state) -> (logits, value)`.
    num_steps: network calls and env steps.

  Returns:
    The last values [B].
  """

  def body(state, _):
    logits, value = eval_fn(params, None, state)
    action = jnp.argmax(jnp.where(state.legal_action_mask, logits, -jnp.inf), axis=-1)
    next_state = env.step(state, action.astype(jnp.int32))
    # Finished games restart from the root so every step does full work.
    state = jax.tree.map(
        lambda a, b: jnp.where(next_state.terminated.reshape((-1,) + (1,) * (a.ndim - 1)), b, a),
        next_state, state)
    return state, value

  state, values = jax.lax.scan(body, state, None, length=num_steps)
  return values[-1]


def phase_functions(env, eval_fn, config):
  """Each phase of `simulate`, jitted on its own.

  Args:
    env: the env.
    eval_fn: the network as `(params, rng, state) -> (logits, value)`.
    config: the SearchConfig.

  Returns:
    A dict name -> fn(params, rng, graph).
  """
  model = model_lib.as_model(env)

  def select(params, rng, graph):
    del params
    return selection.select_batch(graph, rng, model, config, rules.of(config))

  # The graph is the first argument of the two phases that write it, donated.

  def transition(params, rng, graph, sel):
    return model.transition(params, rng, graph_lib.gather_nodes(graph.embedding, sel.parent),
                            sel.action)

  def lookup(graph, trans):
    return expansion.lookup(graph.table, trans.key, config)

  def evaluate(params, rng, trans):
    return expansion.evaluate(params, rng, eval_fn, trans.embedding, trans.legal, config)

  expand_and_backup = expansion.batched_expand_and_backup(model, config, rules.of(config))

  def step(graph, params, rng):
    return mcgs_jax.simulate(params, rng, graph, env, eval_fn, config)[0]

  return dict(selection=jax.jit(select), transition=jax.jit(transition), lookup=jax.jit(lookup),
              evaluation=jax.jit(evaluate), expansion=jax.jit(expand_and_backup, donate_argnums=0),
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
                               max_nodes=config.node_capacity, table_size=config.table_capacity)
  half_search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=half))
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
      "expansion+backup": (fns["expansion"], lambda:
                           (fresh_graph(), sel, trans, found, free_slot, prior, value, nan)),
      "step": (fns["step"], lambda: (fresh_graph(), params, rng)),
  }


def profile(backup, batch, sims, hidden, repeats, budget_s, calls=None):
  """The full search and each of its phases, timed, for one backup mode.

  Args:
    backup: the backup mode.
    batch: games B.
    sims: simulations S.
    hidden: the MLP's hidden sizes.
    repeats: timed calls per row.
    budget_s: each row's timed calls stop once they have used this long.
    calls: `phase_calls`' output for these settings (None: made here).

  Returns:
    Rows of `FIELDS` (without batch, sims and the ratios).
  """
  calls = dict(phase_calls(backup, batch, sims, hidden) if calls is None else calls)
  search, search_args = calls.pop("search")
  search_ms = median_ms(lambda: search(*search_args()), repeats, budget_s)
  rows = [
      dict(row=f"search {backup}", backup=backup, median_ms=search_ms, per_step_ms=search_ms / sims)
  ]
  phase_ms = {}
  for name, (fn, args) in calls.items():
    if name in ("expansion+backup", "step"):
      graph, *rest = args()
      phase_ms[name] = _median_donated_ms(fn, graph, tuple(rest), repeats)
    else:
      phase_ms[name] = median_ms(lambda fn=fn, args=args: fn(*args()), repeats, budget_s)
  for name, ms in phase_ms.items():
    rows.append(
        dict(row=f"phase {name}", backup=backup, median_ms=ms, per_step_ms=ms,
             share_of_step=round(ms / phase_ms["step"], 3)))
  return rows
