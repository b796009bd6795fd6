"""Batched Monte-Carlo Graph Search: init, one simulation, the full search.

One simulation for all B games:
  1. select (vmap): PUCT descent to the edge where the simulation ends;
  2. ONE batched `Model.transition` for the games that reached an unexpanded edge;
  3. lookup (vmap) of the children's keys in each game's hash table;
  4. ONE batched `eval_fn` call;
  5. expand + back up (vmap): link transpositions, store new nodes, index them,
     and back the leaf value up the path (corrected in "mcgs" mode).
"""

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import backup as backup_lib
from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table
from mcgs_jax import model as model_lib
from mcgs_jax import move_selection
from mcgs_jax import selection
from mcgs_jax import solver


@chex.dataclass(frozen=True)
class SearchStats:
  """Per-game counters, each int32[B]; see `graph.STAT_FIELDS`."""
  nodes_used: chex.Array
  capacity_overflows: chex.Array   # node_overflows + table_overflows
  simulations: chex.Array
  nn_evals: chex.Array
  transposition_hits: chex.Array
  corrections: chex.Array
  tt_cache_hits: chex.Array
  terminal_visits: chex.Array
  solved_visits: chex.Array
  explorations: chex.Array
  collisions: chex.Array
  disconnected: chex.Array
  node_overflows: chex.Array
  table_overflows: chex.Array
  depth_overflows: chex.Array
  nan_evals: chex.Array


@chex.dataclass(frozen=True)
class SearchOutput:
  action: chex.Array          # int32[B], the played move (see move_selection)
  action_weights: chex.Array  # f32[B, A], root policy: visit distribution after
                              # the Q-value corrections (0 on illegal)
  root_value: chex.Array      # f32[B], V(root) from the root mover's view
  q_values: chex.Array        # f32[B, A], root edge Q (q_init if unvisited, -inf illegal)
  visit_counts: chex.Array    # int32[B, A]
  root_solved: chex.Array     # int32[B], graph.UNKNOWN/WIN/LOSS/DRAW (solver)
  root_end_in_ply: chex.Array  # int32[B], plies to the end of a proven root
  stats: SearchStats
  graph: graph_lib.Graph


def _sanitize(logits, value, legal):
  """Replaces NaN network outputs: uniform prior, value 0. Returns the prior
  (softmax over legal actions, 0 elsewhere), the value and a NaN flag."""
  bad_logits = jnp.any(jnp.isnan(logits) & legal, axis=-1)
  bad_value = jnp.isnan(value)
  logits = jnp.where(bad_logits[..., None], 0.0, logits)
  masked = jnp.where(legal, logits, -jnp.inf)
  top = jnp.max(masked, axis=-1, keepdims=True)
  weights = jnp.where(legal, jnp.exp(masked - jnp.where(jnp.isfinite(top), top, 0.0)), 0.0)
  total = weights.sum(axis=-1, keepdims=True)
  prior = jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0), 0.0)
  return prior, jnp.where(bad_value, 0.0, value), bad_logits | bad_value


def _evaluate(params, rng, eval_fn, embedding, legal, batch_size, num_actions, config):
  logits, value = eval_fn(params, rng, embedding)
  if logits.shape != (batch_size, num_actions) or value.shape != (batch_size,):
    raise ValueError(
        f"eval_fn must return prior_logits [B, A] = {(batch_size, num_actions)} and "
        f"value [B] = {(batch_size,)}; got {logits.shape} and {value.shape}")
  logits = logits.astype(jnp.float32)
  if config.node_temperature != 1.0:
    # p^(1/T) renormalised is the softmax of logits / T.
    logits = logits / config.node_temperature
  return _sanitize(logits, value.astype(jnp.float32), legal)


def _add_dirichlet_noise(rng, prior, legal, config):
  """(1 - f) prior + f Dir(alpha) over each game's legal actions, [B, A]."""
  # Gamma(alpha) draws normalised over the legal actions are Dir(alpha).
  gammas = jnp.where(legal, jax.random.gamma(rng, config.dirichlet_alpha, prior.shape), 0.0)
  total = gammas.sum(axis=-1, keepdims=True)
  noise = jnp.where(total > 0, gammas / jnp.where(total > 0, total, 1.0), 0.0)
  f = config.dirichlet_fraction
  return (1.0 - f) * prior + f * noise


def init(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
         config: config_lib.SearchConfig) -> graph_lib.Graph:
  """A graph holding only the evaluated root of each game in `state` [B]."""
  model = model_lib.as_model(env)
  root = model.root(state)
  if root.key.ndim != 2 or root.key.shape[-1] != 2 or root.key.dtype != jnp.uint32:
    raise ValueError(f"state.key must be uint32[B, 2], got {root.key.dtype}{list(root.key.shape)}; "
                     "search takes a batch of states (env.init(rng, batch_size=B))")
  batch_size = root.key.shape[0]
  num_actions = model.num_actions
  chex.assert_shape(root.legal, (batch_size, num_actions))
  chex.assert_shape(root.terminal, (batch_size,))
  legal = root.legal & ~root.terminal[:, None]
  prior, value, nan = _evaluate(params, rng, eval_fn, root.embedding, legal,
                                batch_size, num_actions, config)
  if config.dirichlet_fraction > 0:
    prior = _add_dirichlet_noise(jax.random.fold_in(rng, 1), prior, legal, config)
  value = jnp.where(root.terminal, 0.0, value)

  graph = graph_lib.empty(batch_size, config.node_capacity, num_actions,
                          config.table_capacity, root.embedding)

  def put_root(graph, key, embedding, prior, legal, value, terminal, nan):
    graph = graph_lib.write_node(graph, jnp.int32(0), key=key, embedding=embedding,
                                 prior=prior, legal=legal, value=value, num_parents=0)
    if config.uses_table:
      table, stored = hash_table.insert(graph.table, key, jnp.int32(0), config.max_probes)
      graph = graph.replace(table=table)
      graph = graph_lib.add_stats(graph, table_overflows=~stored)
    graph = graph.replace(nodes_used=jnp.int32(1))
    return graph_lib.add_stats(graph, nn_evals=~terminal, nan_evals=nan & ~terminal)

  return jax.vmap(put_root)(graph, root.key, root.embedding, prior, legal, value,
                            root.terminal, nan)


def _expand_and_backup(graph, sel, trans, found, free_slot, prior, nn_value, nan,
                       config: config_lib.SearchConfig):
  """Step 5 for ONE game."""
  collided = (sel.kind == selection.EXPAND) & (
      graph.child[sel.parent, sel.action] != graph_lib.UNEXPANDED)
  sel = sel.replace(kind=jnp.where(collided, selection.NO_SIMULATION, sel.kind))
  # Read before this simulation's writes (which never touch a free stop's edge).
  stop_value = selection.stop_value(graph, sel, config)
  expand = sel.kind == selection.EXPAND
  ends_game = expand & trans.terminal
  hit = expand & ~trans.terminal & (found >= 0)
  link = hit & (config.backup == "mcgs")
  cache_hit = hit & (config.backup == "tt_cache")
  new_node = expand & ~trans.terminal & ~link
  needs_eval = new_node & ~cache_hit

  safe_found = jnp.maximum(found, 0)
  leaf_prior = jnp.where(cache_hit, graph.prior[safe_found], prior)
  leaf_nn_value = jnp.where(cache_hit, graph.nn_value[safe_found], nn_value)

  index = graph.nodes_used
  store = new_node & (index < graph.capacity)
  graph = graph_lib.write_node(
      graph, jnp.where(store, index, graph.capacity), key=trans.key,
      embedding=trans.embedding, prior=leaf_prior, legal=trans.legal,
      value=leaf_nn_value, num_parents=1)
  indexed = store & (found < 0) & config.uses_table
  table = hash_table.write(graph.table, jnp.where(indexed, free_slot, -1), trans.key, index)

  parent, action = sel.parent, sel.action
  child_code = jnp.select([ends_game, link, store], [graph_lib.TERMINAL, found, index],
                          graph.child[parent, action])
  edge_row = jnp.where(expand, parent, graph.capacity)
  graph = graph.replace(
      table=table,
      nodes_used=index + store,
      # gathered + 1, not a scatter-add: keeps the update in place (backup.py).
      num_parents=graph.num_parents.at[jnp.where(link, found, graph.capacity)].set(
          graph.num_parents[safe_found] + 1, mode="drop"),
      child=graph.child.at[edge_row, action].set(child_code, mode="drop"),
      edge_reward=graph.edge_reward.at[edge_row, action].set(trans.reward, mode="drop"),
      edge_discount=graph.edge_discount.at[edge_row, action].set(trans.discount, mode="drop"),
  )

  linked_value = graph_lib.node_value(graph.visits[safe_found], graph.value_sum[safe_found])
  expanded_value = trans.reward + trans.discount * jnp.where(
      ends_game, 0.0, jnp.where(link, linked_value, leaf_nn_value))
  leaf_value = jnp.where(expand, expanded_value, stop_value)
  simulated = sel.kind != selection.NO_SIMULATION
  length = jnp.where(simulated, sel.length, 0)
  if config.solver:
    # The node the last edge leads to (new, linked, or one whose moves are all
    # proven losses) is examined first, then the path up to the root.
    last_child = jnp.where(simulated, graph.child[parent, action], -1)
    graph = solver.solve_path(graph, sel.path_nodes, length, last_child, sel.stale,
                              bounds=config.solver_bounds)
    safe_last = jnp.maximum(last_child, 0)
    leaf_proven = (last_child >= 0) & (graph.solved[safe_last] != graph_lib.UNKNOWN)
    leaf_value = jnp.where(
        leaf_proven, graph.edge_reward[parent, action] + graph.edge_discount[parent, action]
        * solver.exact_value(graph.solved[safe_last]), leaf_value)
  graph = backup_lib.backup(graph, sel.path_nodes, sel.path_actions, length, leaf_value,
                            config, start=sel.start)
  return graph_lib.add_stats(
      graph,
      simulations=simulated,
      nn_evals=needs_eval,
      transposition_hits=link,
      corrections=sel.kind == selection.CORRECTION,
      tt_cache_hits=cache_hit,
      terminal_visits=ends_game | (sel.kind == selection.TERMINAL_EDGE),
      solved_visits=sel.kind == selection.SOLVED_EDGE,
      collisions=collided,
      explorations=simulated & sel.explored,
      disconnected=simulated & (sel.start > 0),
      node_overflows=new_node & ~store,
      table_overflows=indexed & (free_slot < 0),
      depth_overflows=sel.kind == selection.DEPTH_LIMIT,
      nan_evals=needs_eval & nan,
  )


def _gather(tree, index):
  """tree [B, N, ...], index int32[B] -> tree [B, ...]."""
  return jax.tree.map(lambda x: jax.vmap(lambda row, i: row[i])(x, index), tree)


def _select_all(graph, rng, model, config):
  """Step 1 for all games: selection (with the exploration plan, if any)."""
  explore = None
  if config.eps_greedy > 0 or config.eps_constraint > 0:
    plan_rng, branch_rng = jax.random.split(jax.random.fold_in(rng, 1))
    mode, depth, node = jax.vmap(functools.partial(selection.plan_exploration, config=config))(
        graph, jax.random.split(plan_rng, graph.batch_size))
    legal = jax.vmap(lambda child, i: child[i] != graph_lib.ILLEGAL)(graph.child, node)
    if config.eps_constraint > 0:
      priority = model.priority(_gather(graph.embedding, node), legal) & legal
    else:
      priority = jnp.zeros_like(legal)
    explore = selection.Exploration(mode=mode, depth=depth, priority=priority,
                                    rng=jax.random.split(branch_rng, graph.batch_size))
  return jax.vmap(functools.partial(selection.select, config=config))(graph, explore=explore)


def _lookup(table, key, config):
  """Step 3: (found, free_slot) int32[...] of `key` in each game's table."""
  if not config.uses_table:
    return (jnp.full(key.shape[:-1], -1, jnp.int32),) * 2
  return jax.vmap(functools.partial(hash_table.find, max_probes=config.max_probes))(table, key)


def _descend(params, rng, graph, model, config):
  """Steps 1-3 for all games: selection, one batched transition, lookup."""
  sel = _select_all(graph, rng, model, config)
  trans = model.transition(params, rng, _gather(graph.embedding, sel.parent), sel.action)
  found, free_slot = _lookup(graph.table, trans.key, config)
  return sel, trans, found, free_slot


def _needs_eval(sel, trans, found, config):
  """bool[B]: the simulation ends at a new leaf that needs the network."""
  known = (found >= 0) & config.uses_table   # a link (mcgs) or a cached result (tt_cache)
  return (sel.kind == selection.EXPAND) & ~trans.terminal & ~known


def _deactivate(sel, active):
  """Games with `active` False run no simulation (their backup is a no-op)."""
  return sel.replace(kind=jnp.where(active, sel.kind, selection.NO_SIMULATION))


def simulate(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
             eval_fn: Any, config: config_lib.SearchConfig, active: chex.Array | None = None):
  """Runs one simulation in every game (in every game where `active` bool[B]).

  With `config.max_nn_evals` set, a game whose simulation ends without a
  network call (terminal, correction, transposition link, cached result,
  proven node) backs it up at once and selects again, up to
  `config.free_retries` times, so the step's one `eval_fn` call is spent on
  new leaves. Returns (graph, Selection of the last simulation).
  """
  model = model_lib.as_model(env)
  step_rng, eval_rng = jax.random.split(rng)
  if active is None:
    active = jnp.ones((graph.batch_size,), bool)
  if config.leaves_per_step > 1:
    return _simulate_leaves(params, step_rng, eval_rng, graph, model, eval_fn, config, active)
  sel, trans, found, free_slot = _descend(params, step_rng, graph, model, config)
  sel = _deactivate(sel, active)
  expand_and_backup = jax.vmap(functools.partial(_expand_and_backup, config=config))
  if config.max_nn_evals is not None and config.free_retries > 0:
    def is_free(graph, sel, trans, found):
      return ((sel.kind != selection.NO_SIMULATION) & ~_needs_eval(sel, trans, found, config)
              & (graph.stats["simulations"] < config.num_simulations))

    def cond(carry):
      retry, graph, sel, trans, found, _ = carry
      return (retry < config.free_retries) & jnp.any(is_free(graph, sel, trans, found))

    def body(carry):
      retry, graph, sel, trans, found, free_slot = carry
      free = is_free(graph, sel, trans, found)
      # Free simulations need no network output: zeros stand in for it.
      no_eval = jnp.zeros((graph.batch_size, graph.num_actions), jnp.float32)
      graph = expand_and_backup(graph, _deactivate(sel, free), trans, found, free_slot,
                                no_eval, no_eval[:, 0], jnp.zeros_like(free))
      fresh = _descend(params, jax.random.fold_in(step_rng, retry + 1), graph, model, config)
      # A game that has just used up its simulations selects nothing more.
      fresh = (_deactivate(fresh[0], graph.stats["simulations"] < config.num_simulations),
               ) + fresh[1:]
      # The games that backed up take their new descent; the others keep theirs.
      pick = lambda new, old: jax.tree.map(
          lambda x, y: jnp.where(free.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), new, old)
      sel, trans, found, free_slot = pick(fresh, (sel, trans, found, free_slot))
      return retry + 1, graph, sel, trans, found, free_slot

    _, graph, sel, trans, found, free_slot = jax.lax.while_loop(
        cond, body, (jnp.int32(0), graph, sel, trans, found, free_slot))
  prior, nn_value, nan = _evaluate(params, eval_rng, eval_fn, trans.embedding,
                                   trans.legal, graph.batch_size, graph.num_actions, config)
  graph = expand_and_backup(graph, sel, trans, found, free_slot, prior, nn_value, nan)
  return graph, sel


def _add_virtual_loss(graph, sel, config):
  """ONE game: every edge on the path counts one more visit that lost
  (value_min), so the next selection of the step looks elsewhere. Applied to
  a scratch copy only: the real graph never sees it, so reverting is exact."""
  on_path = jnp.arange(sel.path_nodes.shape[0]) < sel.length
  nodes = jnp.where(on_path, sel.path_nodes, graph.capacity)
  visits = graph.edge_visits[sel.path_nodes, sel.path_actions]
  q = graph.edge_q[sel.path_nodes, sel.path_actions]
  lost_q = (q * visits + config.value_min) / (visits + 1)
  return graph.replace(
      edge_visits=graph.edge_visits.at[nodes, sel.path_actions].set(visits + 1, mode="drop"),
      edge_q=graph.edge_q.at[nodes, sel.path_actions].set(lost_q, mode="drop"))


def _simulate_leaves(params, step_rng, eval_rng, graph, model, eval_fn, config, active):
  """`leaves_per_step` simulations per game with one batched transition and
  one `eval_fn` call over [L * B] leaves. Selections run one after another on
  a copy of the graph that carries virtual losses; then the leaves are
  expanded and backed up one after another on the real graph. A leaf whose
  edge an earlier leaf of the step has expanded is a collision: dropped
  (counted in `collisions`), as its position is already in the graph."""
  num_leaves, batch = config.leaves_per_step, graph.batch_size
  remaining = config.num_simulations - graph.stats["simulations"]

  def pick(virtual, leaf):
    sel = _select_all(virtual, jax.random.fold_in(step_rng, leaf), model, config)
    sel = _deactivate(sel, active & (leaf < remaining))
    return jax.vmap(functools.partial(_add_virtual_loss, config=config))(virtual, sel), sel

  _, sels = jax.lax.scan(pick, graph, jnp.arange(num_leaves))   # sels: [L, B, ...]
  parents = jax.vmap(lambda parent: _gather(graph.embedding, parent))(sels.parent)
  flat = lambda tree: jax.tree.map(lambda x: x.reshape((num_leaves * batch,) + x.shape[2:]), tree)
  unflat = lambda tree: jax.tree.map(lambda x: x.reshape((num_leaves, batch) + x.shape[1:]), tree)
  trans = model.transition(params, step_rng, flat(parents), flat(sels.action))
  prior, nn_value, nan = _evaluate(params, eval_rng, eval_fn, trans.embedding, trans.legal,
                                   num_leaves * batch, graph.num_actions, config)
  trans, prior, nn_value, nan = unflat((trans, prior, nn_value, nan))
  expand_and_backup = jax.vmap(functools.partial(_expand_and_backup, config=config))

  def back(graph, leaf):
    sel, tr, p, v, bad = jax.tree.map(lambda x: x[leaf], (sels, trans, prior, nn_value, nan))
    # Looked up again: an earlier leaf of this step may have stored the key.
    found, free_slot = _lookup(graph.table, tr.key, config)
    return expand_and_backup(graph, sel, tr, found, free_slot, p, v, bad), None

  graph, _ = jax.lax.scan(back, graph, jnp.arange(num_leaves))
  return graph, jax.tree.map(lambda x: x[-1], sels)


def _active(graph, config):
  """bool[B]: games still searching (budget left, root not proven)."""
  active = graph.stats["simulations"] < config.num_simulations
  if config.max_nn_evals is not None:
    active &= graph.stats["nn_evals"] < config.max_nn_evals
  if config.solver:
    active &= graph.solved[:, 0] == graph_lib.UNKNOWN
  return active


def summarize(graph: graph_lib.Graph, config: config_lib.SearchConfig,
              rng: chex.PRNGKey | None = None) -> SearchOutput:
  """Reads the move choice and statistics off the root of each game.

  `rng` is needed only with `config.visit_temperature > 0`, to draw the move.
  """
  visits = graph.edge_visits[:, 0]
  legal = graph.child[:, 0] != graph_lib.ILLEGAL
  q_values = jnp.where(legal, jnp.where(visits > 0, graph.edge_q[:, 0], config.q_init),
                       -jnp.inf)
  root_value = graph_lib.node_value(graph.visits[:, 0], graph.value_sum[:, 0])
  if config.solver:
    # Proven losses get no weight (unless every move is one).
    pruned = jax.vmap(solver.pruned_moves, in_axes=(0, None))(graph, jnp.int32(0))
    legal &= ~pruned | jnp.all(pruned | ~legal, axis=-1, keepdims=True)
  policy = move_selection.root_policy(visits, q_values, legal, config)
  # No simulation ran (num_simulations=0, an evaluation budget of 1): the
  # root's prior over its legal moves is the best policy there is, for the
  # move and as a training target.
  prior = jnp.where(legal, graph.prior[:, 0], 0.0)
  prior_total = prior.sum(axis=-1, keepdims=True)
  unsearched = (policy.sum(axis=-1, keepdims=True) <= 0) & (prior_total > 0)
  policy = jnp.where(unsearched, prior / jnp.where(prior_total > 0, prior_total, 1.0), policy)
  action = move_selection.choose_action(rng, policy, visits, graph.prior[:, 0], legal, config)
  if config.solver:
    # A proven root plays the shortest win (longest loss) and learns it.
    proven_action, root_proven = solver.proven_choice(graph)
    action = jnp.where(root_proven, proven_action, action)
    policy = jnp.where(root_proven[:, None],
                       jax.nn.one_hot(proven_action, policy.shape[-1]), policy)
    root_value = jnp.where(root_proven, solver.exact_value(graph.solved[:, 0]), root_value)
  stats = dict(graph.stats)
  return SearchOutput(
      action=action,
      action_weights=policy,
      root_value=root_value,
      root_solved=graph.solved[:, 0],
      root_end_in_ply=graph.end_in_ply[:, 0],
      q_values=q_values,
      visit_counts=visits,
      stats=SearchStats(
          nodes_used=graph.nodes_used,
          capacity_overflows=stats["node_overflows"] + stats["table_overflows"],
          **stats),
      graph=graph,
  )


def run_simulations(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
                    eval_fn: Any, config: config_lib.SearchConfig) -> graph_lib.Graph:
  """Runs up to `config.num_simulations` simulations per game on an existing
  graph (from `init`, or one re-rooted by `mcgs_jax.advance`, whose counters
  start again at 0). A game stops early once its root is proven (solver) or
  its network evaluations reach `config.max_nn_evals`; the loop ends when
  every game has stopped."""
  budgeted = (config.solver or config.max_nn_evals is not None
              or config.leaves_per_step > 1)

  def cond(carry):
    i, graph = carry
    running = i < config.num_simulations
    if budgeted:
      running &= jnp.any(_active(graph, config))
    return running

  def body(carry):
    i, graph = carry
    active = _active(graph, config) if budgeted else None
    graph, _ = simulate(params, jax.random.fold_in(rng, i), graph, env, eval_fn, config, active)
    return i + 1, graph

  _, graph = jax.lax.while_loop(cond, body, (jnp.int32(0), graph))
  return graph


def search(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
           config: config_lib.SearchConfig) -> SearchOutput:
  """Searches from every state of the batch `state` [B].

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
    SearchOutput. Jit with `static_argnames=("env", "eval_fn", "config")`.
  """
  init_rng, sim_rng = jax.random.split(rng)
  graph = init(params, init_rng, state, env, eval_fn, config)
  graph = run_simulations(params, sim_rng, graph, env, eval_fn, config)
  return summarize(graph, config, jax.random.fold_in(rng, 2))
