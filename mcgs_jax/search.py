"""Batched Monte-Carlo Graph Search: the root, the simulation loop, the search.

One simulation step for all B games (one jitted loop iteration):
  1. select (vmap): PUCT descent to the edge where the simulation ends
     (`selection`);
  2. ONE batched `Model.transition` for the games that reached an unexpanded
     edge, 3. lookup of the children's keys in each game's hash table,
  4. ONE batched `eval_fn` call, 5. expand and back up (vmap): link
     transpositions, store new nodes, index them, back the leaf value up the
     path, corrected in "mcgs" mode (`expansion`, `backup`);
then `policies.summarize` reads the move and the policy off the root.
`leaves.simulate_leaves` runs steps with several leaves per game.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import expansion
from mcgs_jax import graph as graph_lib
from mcgs_jax import gumbel
from mcgs_jax import hash_table
from mcgs_jax import leaves
from mcgs_jax import model as model_lib
from mcgs_jax import policies
from mcgs_jax import selection

# Re-exported: the search's outputs and the summary are part of its API.
SearchOutput = policies.SearchOutput
SearchStats = graph_lib.SearchStats
summarize = policies.summarize


def check_rng(rng: chex.PRNGKey) -> None:
  """Raises a ValueError unless `rng` is one PRNG key.

  The search splits one key into whatever it needs for all B games; a batch
  of keys (one per game, `[B, 2]`) would otherwise fail deep inside
  `jax.random` with advice to vmap, which the batched search does not need.

  Args:
    rng: a raw key (uint32 `jax.random.PRNGKey(0)`-shaped) or a scalar typed
      key (`jax.random.key(0)`).

  Raises:
    ValueError: another shape.
  """
  shape = tuple(jnp.shape(rng))
  if jax.dtypes.issubdtype(jnp.asarray(rng).dtype, jax.dtypes.prng_key):
    expected = ()
  else:
    expected = tuple(jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape)
  if shape != expected:
    raise ValueError(
        f"rng must be one PRNG key (shape {expected}), got an array of shape {shape}: the "
        "search is batched and draws every game's randomness from one key; pass e.g. "
        "jax.random.PRNGKey(0), not one key per game")


def init(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
         config: config_lib.SearchConfig) -> graph_lib.Graph:
  """A graph holding only the evaluated root of each game.

  Args:
    params: network parameters, for `eval_fn`.
    rng: a PRNG key (the network, the root noise).
    state: a batch of states [B] (see `search`).
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.

  Returns:
    Graph [B, N, A] with node 0 the evaluated root (Dirichlet noise on its
    prior with `config.dirichlet_fraction > 0`, its Gumbel noise drawn with
    `config.root_policy == "gumbel"`) and the counters at 0 but for the
    root's evaluation.

  Raises:
    ValueError: (at trace time) when the root keys are not uint32[B, 2] (an
      unbatched state), `config.solver` is on and the model's keys are not
      exact (`model.check_solver`), or `rng` is not one PRNG key.
  """
  check_rng(rng)
  model = model_lib.as_model(env)
  model_lib.check_solver(model, config)
  root = model.root(state)
  if root.key.ndim != 2 or root.key.shape[-1] != 2 or root.key.dtype != jnp.uint32:
    raise ValueError(f"state.key must be uint32[B, 2], got {root.key.dtype}{list(root.key.shape)}; "
                     "search takes a batch of states (env.init(rng, batch_size=B))")
  batch_size = root.key.shape[0]
  num_actions = model.num_actions
  chex.assert_shape(root.legal, (batch_size, num_actions))
  chex.assert_shape(root.terminal, (batch_size,))
  legal = root.legal & ~root.terminal[:, None]
  prior, value, nan = expansion.evaluate(params, rng, eval_fn, root.embedding, legal, config)
  if config.dirichlet_fraction > 0:
    prior = policies.add_dirichlet_noise(jax.random.fold_in(rng, 1), prior, legal, config)
  value = jnp.where(root.terminal, 0.0, value)

  graph = graph_lib.empty(batch_size, config.node_capacity, num_actions,
                          config.table_capacity, root.embedding, config.hard_pruning,
                          amaf_actions=num_actions if config.rave else 0)

  def put_root(graph, key, embedding, prior, legal, value, terminal, nan):
    graph = graph_lib.write_node(graph, jnp.int32(0), key=key, embedding=embedding,
                                 prior=prior, legal=legal, value=value, num_parents=0)
    if config.uses_table:
      table, stored = hash_table.insert(graph.table, key, jnp.int32(0), config.max_probes)
      graph = graph.replace(table=table)
      graph = graph_lib.add_stats(graph, table_overflows=~stored)
    graph = graph.replace(stats=graph.stats.replace(nodes_used=jnp.int32(1)))
    return graph_lib.add_stats(graph, nn_evals=~terminal, eval_rows=1,
                               nan_evals=nan & ~terminal)

  graph = jax.vmap(put_root)(graph, root.key, root.embedding, prior, legal, value,
                             root.terminal, nan)
  return graph.replace(root_gumbel=gumbel.draw_noise(jax.random.fold_in(rng, 2), legal, config))


def simulate(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
             eval_fn: Any, config: config_lib.SearchConfig, active: chex.Array | None = None):
  """Runs one simulation step in every game (in every game where `active`).

  With `config.max_nn_evals` set, a game whose simulation ends without a
  network call (terminal, correction, transposition link, cached result,
  proven node) backs it up at once and selects again, up to
  `config.free_retries` times, so the step's one `eval_fn` call is spent on
  new leaves. With `config.leaves_per_step > 1`, see `leaves`.

  Args:
    params: network parameters, for `eval_fn` and the model.
    rng: a PRNG key for this step.
    graph: Graph [B, N, A].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.
    active: optional bool[B]; inactive games run no simulation. None: all.

  Returns:
    (graph, sel): the updated Graph [B, N, A] and the `selection.Selection`
    (fields with leading dimension B) of each game's last simulation (its
    last leaf with `config.leaves_per_step > 1`).

  Raises:
    ValueError: (at trace time) `config.solver` on with inexact model keys.
  """
  model = model_lib.as_model(env)
  model_lib.check_solver(model, config)
  step_rng, eval_rng = jax.random.split(rng)
  if active is None:
    active = jnp.ones((graph.batch_size,), bool)
  if config.leaves_per_step > 1:
    return leaves.simulate_leaves(params, step_rng, eval_rng, graph, model, eval_fn, config,
                                   active)
  with jax.named_scope("descend"):
    sel, trans, found, free_slot = expansion.descend(params, step_rng, graph, model, config)
  sel = expansion.deactivate(sel, active)
  expand_and_backup = expansion.batched_expand_and_backup(model, config)
  if config.max_nn_evals is not None and config.free_retries > 0:
    def is_free(graph, sel, trans, found):
      return ((sel.kind != selection.NO_SIMULATION) & ~expansion.needs_eval(sel, trans, found, config)
              & (graph.stats.simulations < config.num_simulations))

    def cond(carry):
      retry, graph, sel, trans, found, _ = carry
      return (retry < config.free_retries) & jnp.any(is_free(graph, sel, trans, found))

    def body(carry):
      retry, graph, sel, trans, found, free_slot = carry
      free = is_free(graph, sel, trans, found)
      # Free simulations need no network output: zeros stand in for it.
      no_eval = jnp.zeros((graph.batch_size, graph.num_actions), jnp.float32)
      graph = expand_and_backup(graph, expansion.deactivate(sel, free), trans, found, free_slot,
                                no_eval, no_eval[:, 0], jnp.zeros_like(free))
      fresh = expansion.descend(params, jax.random.fold_in(step_rng, retry + 1), graph, model, config)
      # A game that has just used up its simulations selects nothing more.
      fresh = (expansion.deactivate(fresh[0], graph.stats.simulations < config.num_simulations),
               ) + fresh[1:]
      # The games that backed up take their new descent; the others keep theirs.
      pick = lambda new, old: jax.tree.map(
          lambda x, y: jnp.where(free.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), new, old)
      sel, trans, found, free_slot = pick(fresh, (sel, trans, found, free_slot))
      return retry + 1, graph, sel, trans, found, free_slot

    _, graph, sel, trans, found, free_slot = jax.lax.while_loop(
        cond, body, (jnp.int32(0), graph, sel, trans, found, free_slot))
  with jax.named_scope("evaluate"):
    prior, nn_value, nan = expansion.evaluate(params, eval_rng, eval_fn, trans.embedding,
                                              trans.legal, config)
  graph = graph_lib.add_stats(graph, eval_rows=jnp.ones((graph.batch_size,), jnp.int32))
  with jax.named_scope("expand_and_backup"):
    graph = expand_and_backup(graph, sel, trans, found, free_slot, prior, nn_value, nan)
  return graph, sel


def _active(graph, config):
  """bool[B]: games still searching (budget left, root not proven)."""
  active = graph.stats.simulations < config.num_simulations
  if config.max_nn_evals is not None:
    active &= graph.stats.nn_evals < config.max_nn_evals
  if config.solver:
    active &= graph.solved[:, 0] == graph_lib.UNKNOWN
  return active


def run_simulations(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
                    eval_fn: Any, config: config_lib.SearchConfig) -> graph_lib.Graph:
  """Runs up to `config.num_simulations` simulations per game on a graph.

  The graph comes from `init`, or is one re-rooted by `mcgs_jax.advance`,
  whose counters start again at 0. A game stops early once its root is
  proven (solver) or its network evaluations reach `config.max_nn_evals`;
  the loop ends when every game has stopped.

  Args:
    params: network parameters, for `eval_fn` and the model.
    rng: a PRNG key; simulation i uses `fold_in(rng, i)`.
    graph: Graph [B, N, A].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.

  Returns:
    The Graph [B, N, A] after the simulations.

  Raises:
    ValueError: (at trace time) `config.solver` on with inexact model keys.
  """
  budgeted = config.stops_early

  # The games still searching are carried, computed at the end of each step:
  # read at the start of the next, the root's `solved` would be read by fused
  # consumers after that step's in-place writes, which makes XLA copy the
  # array every simulation.
  def cond(carry):
    i, _, active = carry
    running = i < config.num_simulations
    if budgeted:
      running &= jnp.any(active)
    return running

  def body(carry):
    i, graph, active = carry
    graph, _ = simulate(params, jax.random.fold_in(rng, i), graph, env, eval_fn, config,
                        active if budgeted else None)
    return i + 1, graph, _active(graph, config)

  _, graph, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), graph, _active(graph, config)))
  return graph


def search(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
           config: config_lib.SearchConfig) -> policies.SearchOutput:
  """Searches from every state of the batch `state` [B].

  Jit with `static_argnames=("env", "eval_fn", "config")`.

  Args:
    params: network parameters, passed to `eval_fn` (and to the model).
    rng: a PRNG key.
    state: a batch of env states (pgx fields plus `key` uint32[B, 2]), or the
      root state of a custom `Model` (e.g. `MctxModel.make_root(...)`).
    env: an env of this project, any env with the same state fields, or a
      `mcgs_jax.Model`. Static (hashable).
    eval_fn: `(params, rng, state [B]) -> (prior_logits [B, A], value [B])`,
      the value for the player to move. Static (hashable).
    config: `SearchConfig`. Static.

  Returns:
    SearchOutput, fields with leading dimension B (see `policies.SearchOutput`).

  Raises:
    ValueError: (at trace time) an unbatched state, `config.solver` on
      with inexact model keys (see `init`), or `rng` not one PRNG key (the
      search draws the games' keys from it; see `check_rng`).
  """
  check_rng(rng)
  init_rng, sim_rng = jax.random.split(rng)
  graph = init(params, init_rng, state, env, eval_fn, config)
  graph = run_simulations(params, sim_rng, graph, env, eval_fn, config)
  return policies.summarize(graph, config, jax.random.fold_in(rng, 2))
