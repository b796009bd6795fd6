"""Growing the graph by one edge: lookup, evaluation, storing, backing up.

The phases of a simulation step (`engine.simulation_step`) that read or
write the graph after the selection (`selection.select_batch`) and the
model's transition:
  - `lookup` (vmap) of the children's keys in each game's hash table;
  - `evaluate`: ONE batched `eval_fn` call, checked, NaNs sanitised;
  - `expand_and_backup` (vmap, one game): classify how the simulation ends,
    write the new node and the edge (a terminal edge, a transposition link,
    a new node indexed in the table), compute the leaf value (with the
    solver's proofs), back it up the path (`backup.backup_stop`), run the
    plug-ins' updates after it (hard pruning, AMAF), and count it.

The enhancements come in as plug-ins (`plugins.Plugins`, assembled by
`rules.of`): the expansion policy's deferral, the solver's path update and
proofs, the updates after a backup. This module imports none of them.
"""

import functools
from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import backup as backup_lib
from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table
from mcgs_jax import model as model_lib
from mcgs_jax import plugins as plugins_lib


def sanitize(logits: chex.Array, value: chex.Array, legal: chex.Array):
  """Replaces unusable network outputs by a uniform prior and value 0.

  Args:
    logits: f32[B, A] prior logits.
    value: f32[B].
    legal: bool[B, A].

  Returns:
    (prior f32[B, A]: softmax over the legal actions, 0 elsewhere;
     value f32[B]; nan bool[B]: the row had a NaN in a legal logit or value,
     or -inf on every legal action, and got the uniform prior).
  """
  # Reduced over the major axis of the [A, B] views: XLA's CPU reductions
  # over a short minor axis (A = 7) run element by element, about twice
  # the time of the whole softmax in this layout.
  logits, legal = logits.T, legal.T
  bad_logits = jnp.any(jnp.isnan(logits) & legal, axis=0)
  bad_value = jnp.isnan(value)
  logits = jnp.where(bad_logits, 0.0, logits)
  masked = jnp.where(legal, logits, -jnp.inf)
  top = jnp.max(masked, axis=0)
  weights = jnp.where(legal, jnp.exp(masked - jnp.where(jnp.isfinite(top), top, 0.0)), 0.0)
  # -inf on every legal action leaves no weight: the uniform prior instead.
  dead = (top == -jnp.inf) & jnp.any(legal, axis=0)
  weights = jnp.where(dead, legal.astype(weights.dtype), weights)
  total = weights.sum(axis=0)
  prior = jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0), 0.0).T
  return prior, jnp.where(bad_value, 0.0, value), bad_logits | bad_value | dead


class EvaluatorError(ValueError):
  """`eval_fn` returned a non-finite or out-of-range output
  (`SearchConfig.check_evaluator`)."""


class RootError(ValueError):
  """A root the search cannot search: not terminal, yet no legal move."""


def as_input_error(error: BaseException) -> "EvaluatorError | RootError | None":
  """The `EvaluatorError` or `RootError` inside a jax runtime error, or None.

  The checks raise from the host inside a jitted computation, so the error
  that reaches Python is jax's runtime error ("INTERNAL: CpuCallback
  error"), the check's message at the end of its text. A caller that
  blocks on a search's result can re-raise this one instead, so its
  message is the first line the user sees:
  `raise as_input_error(e) or e` or `... from None`.

  Args:
    error: any exception.

  Returns:
    The EvaluatorError or RootError (the same object if it is one), or None.
  """
  if isinstance(error, (EvaluatorError, RootError)):
    return error
  text = str(error)
  found = [(text.rindex(f"{kind.__name__}: "), kind) for kind in (EvaluatorError, RootError)
           if f"{kind.__name__}: " in text]
  if not found:
    return None
  start, kind = max(found, key=lambda pair: pair[0])
  message = text[start + len(kind.__name__) + 2:].strip().splitlines()
  return kind(message[0] if message else text)


def _raise_stuck_root(any_stuck, row, *, legal_shape):
  """Host side of `check_roots`."""
  if any_stuck:
    raise RootError(
        f"state.legal_action_mask is all False for row {int(row)} (field `legal_action_mask`, "
        f"shape {legal_shape}), but that state is not terminal: a root needs a legal move, "
        "or `terminated` set")


def check_roots(legal: chex.Array, terminal: chex.Array,
                config: config_lib.SearchConfig) -> None:
  """Raises `RootError` at a non-terminal root with no legal move.

  Such a root can run no simulation, and its output (action 0, weights all
  zero) would be garbage. Concrete arrays (a search called outside jit) are
  checked at once, always; under jit, with `config.check_evaluator`, the host
  is called only when a root is stuck (`lax.cond`, once per search). A jitted
  search without the check pays nothing: a host callback in the program
  doubled the time of a search of one game (B = 1, S = 64) on the CPU.

  Args:
    legal: bool[B, A], the roots' legal moves.
    terminal: bool[B].
    config: reads `check_evaluator`.

  Raises:
    RootError: at once for concrete arrays; at run time, wrapped in jax's
      runtime error, under jit with `config.check_evaluator`.
  """
  stuck = ~terminal & ~jnp.any(legal, axis=-1)
  report = functools.partial(_raise_stuck_root, legal_shape=tuple(legal.shape))
  if not isinstance(stuck, jax.core.Tracer):
    report(bool(jnp.any(stuck)), int(jnp.argmax(stuck)))
    return
  if not config.check_evaluator:
    return
  jax.lax.cond(jnp.any(stuck),
               lambda: jax.debug.callback(report, jnp.any(stuck), jnp.argmax(stuck)),
               lambda: None)


# Values this far outside [value_min, value_max] are a broken value head, not
# rounding.
_VALUE_SLACK = 1e-3


def _raise_bad_output(any_bad, value_bad, value, value_row, logits, logits_row, *,
                      value_shape, logits_shape, bounds):
  """Host side of `check_outputs`: raises EvaluatorError naming the field."""
  if not any_bad:
    return
  if value_bad:
    raise EvaluatorError(
        f"eval_fn returned value {float(value)!r} for row {int(value_row)} (field `value`, shape "
        f"{value_shape}): values must be finite and in [{bounds[0]}, {bounds[1]}], from the "
        "view of the player to move (a value head without tanh? a NaN in the network?)")
  raise EvaluatorError(
      f"eval_fn returned prior logits {list(map(float, logits))} for row {int(logits_row)} "
      f"(field `prior_logits`, shape {logits_shape}): NaN or +inf on a legal action, or -inf "
      "on every one")


def check_outputs(logits: chex.Array, value: chex.Array, legal: chex.Array,
                  config: config_lib.SearchConfig) -> None:
  """Raises `EvaluatorError` (from the host) at the first bad output.

  Bad: a value that is not finite or lies outside [value_min, value_max]
  (beyond 1e-3), a NaN or +inf logit on a legal action, or -inf on every
  legal action (no prior at all), in a row with a legal action (terminal
  states are not checked). The host is called only
  when a row is bad (`lax.cond`), so a healthy search pays two reductions
  per evaluation; jax reports the error as its runtime error whose message
  ends with this one.

  Args:
    logits: f32[R, A].
    value: f32[R].
    legal: bool[R, A].
    config: reads `value_min`, `value_max`.
  """
  rows = jnp.any(legal, axis=-1)
  value_bad = rows & (~jnp.isfinite(value) | (value < config.value_min - _VALUE_SLACK)
                      | (value > config.value_max + _VALUE_SLACK))
  logits_bad = jnp.any(legal & (jnp.isnan(logits) | (logits == jnp.inf)), axis=-1)
  logits_bad |= rows & ~jnp.any(legal & (logits > -jnp.inf), axis=-1)
  any_bad = jnp.any(value_bad) | jnp.any(logits_bad)
  value_row = jnp.argmax(value_bad)
  logits_row = jnp.argmax(logits_bad)
  report = functools.partial(_raise_bad_output, value_shape=tuple(value.shape),
                             logits_shape=tuple(logits.shape),
                             bounds=(config.value_min, config.value_max))
  jax.lax.cond(any_bad,
               lambda: jax.debug.callback(report, any_bad, jnp.any(value_bad), value[value_row],
                                          value_row, logits[logits_row], logits_row),
               lambda: None)


def evaluate(params: Any, rng: chex.PRNGKey, eval_fn: Any, embedding: Any,
             legal: chex.Array, config: config_lib.SearchConfig):
  """One `eval_fn` call on R rows, checked and sanitised.

  Args:
    params: passed to `eval_fn`.
    rng: passed to `eval_fn`.
    eval_fn: `(params, rng, embedding [R]) -> (logits [R, A], value [R])`.
    embedding: pytree [R, ...] of states.
    legal: bool[R, A].
    config: reads `node_temperature`.

  Returns:
    (prior f32[R, A], value f32[R], nan bool[R]), see `sanitize`.

  Raises:
    ValueError: (at trace time) `eval_fn` returned other shapes than
      [R, A] and [R].
    EvaluatorError: (at run time, wrapped in jax's runtime error) with
      `config.check_evaluator`, a non-finite or out-of-range output; see
      `check_outputs`.
  """
  rows, num_actions = legal.shape
  logits, value = eval_fn(params, rng, embedding)
  if logits.shape != (rows, num_actions) or value.shape != (rows,):
    raise ValueError(
        f"eval_fn must return prior_logits [B, A] = {(rows, num_actions)} and "
        f"value [B] = {(rows,)}; got {logits.shape} and {value.shape}")
  logits = logits.astype(jnp.float32)
  if config.check_evaluator:
    check_outputs(logits, value.astype(jnp.float32), legal, config)
  if config.node_temperature != 1.0:
    # p^(1/T) renormalised is the softmax of logits / T.
    logits = logits / config.node_temperature
  return sanitize(logits, value.astype(jnp.float32), legal)


def lookup(table: graph_lib.HashTable, key: chex.Array, config: config_lib.SearchConfig):
  """Looks each game's child key up in its table.

  Args:
    table: HashTable of each game ([B, T]).
    key: uint32[B, 2] the children's keys.
    config: SearchConfig (reads `uses_table`, `max_probes`).

  Returns:
    (found, free_slot) int32[B], see `hash_table.find`; both -1 in `tree`
    mode, which keeps no table.
  """
  if not config.uses_table:
    return (jnp.full(key.shape[:-1], -1, jnp.int32),) * 2
  return jax.vmap(functools.partial(hash_table.find, max_probes=config.max_probes))(table, key)


def closes_cycle(sel: graph_lib.Selection, found: chex.Array) -> chex.Array:
  """Whether linking the selected edge to `found` would close a cycle.

  ONE game (vmap for [B]): `found` is a node on the path (keys without the
  ply). Only descents that mark their path (`selection.tracks_cycles`) look.

  Args:
    sel: the game's Selection.
    found: int32 scalar, the node stored under the child's key, or -1.

  Returns:
    bool scalar.
  """
  if sel.path_marks.shape[-1] == 0:
    return jnp.zeros_like(found >= 0)
  # One read of the descent's marks. A scan of the path compiled into a
  # reduction into which XLA fused the whole lookup behind `found`, redone
  # for every path slot.
  return (found >= 0) & graph_lib.take(sel.path_marks, jnp.maximum(found, 0))


def needs_eval(sel: graph_lib.Selection, trans: model_lib.Transition, found: chex.Array,
               config: config_lib.SearchConfig) -> chex.Array:
  """Whether each game's simulation ends at a new leaf that needs the network.

  Args:
    sel: Selection with leading dimension B.
    trans: Transition [B] from the selected edges.
    found: int32[B], the nodes stored under the children's keys, or -1.
    config: SearchConfig.

  Returns:
    bool[B].
  """
  known = (found >= 0) & config.uses_table   # a link (mcgs) or a cached result (tt_cache)
  known &= ~jax.vmap(closes_cycle)(sel, found)
  return (sel.kind == graph_lib.EXPAND) & ~trans.terminal & ~known


def batched_expand_and_backup(model: model_lib.Model, config: config_lib.SearchConfig,
                              plugins: plugins_lib.Plugins) -> Callable[..., graph_lib.Graph]:
  """`expand_and_backup` vmapped over a batch, with `config`, the model's
  static declarations and the plug-ins bound: what every simulation loop
  calls.

  Args:
    model: the Model (its `alternating_zero_sum` is bound).
    config: SearchConfig.
    plugins: the search's Plugins (`rules.of(config)`).

  Returns:
    fn(graph [B, N, A], sel, trans, found, free_slot, prior, nn_value, nan)
    -> graph, each argument with leading dimension B.
  """
  return jax.vmap(functools.partial(expand_and_backup, config=config, plugins=plugins,
                                    alternating=model.alternating_zero_sum))


class _Outcome(NamedTuple):
  """How ONE game's simulation ends, decided on the graph before any write.

  Attributes (bool scalars):
    collided: the selected edge was expanded, or its correction made
      unneeded, by an earlier leaf of the step: the simulation is dropped.
    expand: the selected edge is expanded now.
    ends_game: it leads to a terminal state.
    link: it is linked to `found`, the stored transposition.
    cycle: `found` is on the path: a fresh node stands in for it.
    cache_hit: the child's evaluation is read from `found` (tt_cache).
    new_node: the child is a new node (stored unless deferred or the node
      arrays are full).
    evaluated: the network's output for the child is used.
    deferred: the expansion policy does not store the new node yet.
  """
  collided: chex.Array
  expand: chex.Array
  ends_game: chex.Array
  link: chex.Array
  cycle: chex.Array
  cache_hit: chex.Array
  new_node: chex.Array
  evaluated: chex.Array
  deferred: chex.Array


def expand_and_backup(graph: graph_lib.Graph, sel: graph_lib.Selection,
                      trans: model_lib.Transition, found: chex.Array, free_slot: chex.Array,
                      prior: chex.Array, nn_value: chex.Array, nan: chex.Array,
                      config: config_lib.SearchConfig, plugins: plugins_lib.Plugins,
                      alternating: bool = False) -> graph_lib.Graph:
  """ONE game (vmap for a batch): expands the selected edge and backs the
  simulation's value up its path.

  The phases: `_classify` (how the simulation ends, read before any write),
  `_write_child` (the new node, its table entry, the edge), `_leaf_value`
  (the value backed up, with the solver's proofs), `_back_up` (the path,
  then the plug-ins' `after_backup`) and `_count` (the counters).

  Args:
    graph: ONE game's graph [N, A].
    sel: its Selection.
    trans: the Transition from the selected edge (no batch dimension).
    found: int32, the node stored under `trans.key`, or -1 (`lookup`).
    free_slot: int32, the table slot for `trans.key`, or -1 (`lookup`).
    prior: f32[A], the network's (sanitised) prior for the child, used when
      it is stored as a new node.
    nn_value: f32, the network's (sanitised) value of the child.
    nan: bool, the network's output for the child had a NaN.
    config: SearchConfig.
    plugins: the search's Plugins (`rules.of(config)`).
    alternating: the model's `alternating_zero_sum` (static, see
      `backup.backup_stop`).

  Returns:
    The graph with the edge expanded (a terminal edge, a link to `found`, or a
    new node, indexed in the table unless its key is known), the path backed
    up, the counters updated.
  """
  sel, outcome = _classify(graph, sel, trans, found, config, plugins, alternating)
  graph, stored, indexed = _write_child(graph, sel, trans, found, free_slot, prior, nn_value,
                                        outcome, config)
  graph, leaf_value, stop_kind, length = _leaf_value(graph, sel, trans, found, nn_value,
                                                     outcome, plugins)
  graph = _back_up(graph, sel, length, leaf_value, stop_kind, config, plugins, alternating)
  return _count(graph, sel, outcome, stored, indexed, free_slot, nan)


def _classify(graph, sel, trans, found, config, plugins, alternating):
  """How the simulation ends (`_Outcome`), read off the graph before the
  writes; a collision's Selection is returned with kind NO_SIMULATION."""
  collided = (sel.kind == graph_lib.EXPAND) & (
      graph.child[sel.parent, sel.action] != graph_lib.UNEXPANDED)
  if plugins.several_leaves and config.corrects_transpositions:
    # The leaves of a step were selected on the graph before any of them was
    # backed up: an earlier leaf's correction may have pulled this edge's Q
    # back onto its node. Tested again on the live graph; a correction no
    # longer needed is dropped like a collision (one leaf: never).
    collided |= (sel.kind == graph_lib.CORRECTION) & ~graph_lib.transposition_diverged(
        graph, sel.parent, sel.action, graph.child[sel.parent, sel.action], config, alternating)
  sel = sel.replace(kind=jnp.where(collided, graph_lib.NO_SIMULATION, sel.kind))
  expand = sel.kind == graph_lib.EXPAND
  ends_game = expand & trans.terminal
  hit = expand & ~trans.terminal & (found >= 0)
  # A link back into the path would close a cycle: a fresh node, evaluated and
  # not indexed, stands in for the transposition (its key stays with `found`).
  cycle = hit & closes_cycle(sel, found)
  link = hit & config.links_transpositions & ~cycle
  cache_hit = hit & config.caches_evaluations
  new_node = expand & ~trans.terminal & ~link
  evaluated = new_node & ~cache_hit
  deferred = jnp.bool_(False)
  if plugins.defer is not None:
    deferred = new_node & plugins.defer(graph, sel.parent, sel.action)
  return sel, _Outcome(collided=collided, expand=expand, ends_game=ends_game, link=link,
                       cycle=cycle, cache_hit=cache_hit, new_node=new_node, evaluated=evaluated,
                       deferred=deferred)


def _add_parent(parents, node, parent):
  """`Graph.parents` of ONE game with one more edge into `node` (none where
  `node` is out of range), from `parent`: its count raised, `parent` listed
  in the row's first free slot if it has one."""
  row = parents[jnp.minimum(node, parents.shape[0] - 1)]
  slot = jnp.arange(row.shape[-1])
  # A chain of selects over the slots, not a reduction: one kernel fewer.
  first_free = jnp.int32(row.shape[-1])
  for place in reversed(range(1, row.shape[-1])):
    first_free = jnp.where(row[place] < 0, place, first_free)
  # The row gathered and rewritten, not a scatter-add: keeps the update in
  # place (backup.py).
  return parents.at[node].set(
      jnp.where(slot == 0, row[0] + 1, jnp.where(slot == first_free, parent, row)), mode="drop")


def _write_child(graph, sel, trans, found, free_slot, prior, nn_value, outcome, config):
  """Writes the new node (its table entry) and the expanded edge.

  Returns (graph, stored, indexed): bools, the node was stored / is to be
  indexed in the table."""
  safe_found = jnp.maximum(found, 0)
  leaf_prior = jnp.where(outcome.cache_hit, graph.prior[safe_found], prior)
  leaf_nn_value = jnp.where(outcome.cache_hit, graph.nn_value[safe_found], nn_value)

  index = graph.nodes_used
  store = outcome.new_node & ~outcome.deferred & (index < graph.capacity)
  with jax.named_scope("write_node"):
    graph = graph_lib.write_node(
        graph, jnp.where(store, index, graph.capacity), key=trans.key,
        embedding=trans.embedding, prior=leaf_prior, legal=trans.legal,
        value=leaf_nn_value)
  indexed = store & (found < 0) & config.uses_table
  table = hash_table.write(graph.table, jnp.where(indexed, free_slot, -1), trans.key, index)

  parent, action, link = sel.parent, sel.action, outcome.link
  child_code = graph_lib.select_first(
      [outcome.ends_game, link, store], [graph_lib.TERMINAL, found, index],
      graph.child[parent, action])
  edge_row = jnp.where(outcome.expand, parent, graph.capacity)
  graph = graph.replace(
      table=table,
      stats=graph.stats.replace(nodes_used=index + store),
      # A link's node, or the new node (a blank row), gains the edge.
      parents=_add_parent(graph.parents, graph_lib.select_first([link, store], [found, index],
                                                                graph.capacity), parent),
      child=graph.child.at[edge_row, action].set(child_code, mode="drop"),
      edge_reward=graph.edge_reward.at[edge_row, action].set(trans.reward, mode="drop"),
      edge_discount=graph.edge_discount.at[edge_row, action].set(trans.discount, mode="drop"),
  )
  return graph, store, indexed


def _leaf_value(graph, sel, trans, found, nn_value, outcome, plugins):
  """The value the simulation backs up, read from the written graph; with
  the solver, the path's proofs first.

  Returns (graph, leaf_value f32, stop_kind int32 for `backup.backup_stop`,
  length int32: the path's edges, 0 without a simulation)."""
  # Everything read from here on is read from the written graph: the writes
  # above touch only the new node's row and the expanded edge, which no read
  # below depends on, and a read of an array's old version after its in-place
  # write would make XLA copy the whole array every simulation. The value of
  # a simulation that stops without expanding (`backup.stop_value`) is read
  # by the backup, for the same reason.
  # So is the value of a link, reward + discount * V(found), `found` being the
  # node below the last edge now.
  safe_found = jnp.maximum(found, 0)
  leaf_nn_value = jnp.where(outcome.cache_hit, graph.nn_value[safe_found], nn_value)
  expanded_value = trans.reward + trans.discount * jnp.where(outcome.ends_game, 0.0,
                                                             leaf_nn_value)
  leaf_value = jnp.where(outcome.expand, expanded_value, 0.0)
  stop_kind = jnp.where(outcome.link, backup_lib.LINKED, sel.kind)
  simulated = sel.kind != graph_lib.NO_SIMULATION
  length = jnp.where(simulated, sel.length, 0)
  if plugins.proves:
    parent, action = sel.parent, sel.action
    # The node the last edge leads to (new, linked, or one whose moves are all
    # proven losses) is examined first, then the path up to the root.
    last_child = jnp.where(simulated, graph.child[parent, action], -1)
    graph = plugins.solve_path(graph, sel.path_nodes, length, last_child, sel.stale)
    safe_last = jnp.maximum(last_child, 0)
    last_code = plugins.proofs(graph)[safe_last]
    leaf_proven = (last_child >= 0) & (last_code != graph_lib.UNKNOWN)
    leaf_value = jnp.where(
        leaf_proven, graph.edge_reward[parent, action] + graph.edge_discount[parent, action]
        * graph_lib.exact_value(last_code), leaf_value)
    stop_kind = jnp.where(leaf_proven, graph_lib.RUNNING, stop_kind)
  return graph, leaf_value, stop_kind, length


def _back_up(graph, sel, length, leaf_value, stop_kind, config, plugins, alternating):
  """Backs `leaf_value` up the path's first `length` edges, then runs the
  plug-ins' updates (`Plugins.after_backup`) along it."""
  with jax.named_scope("backup"):
    graph, leaf_value = backup_lib.backup_stop(
        graph, sel.path_nodes, sel.path_actions, length, leaf_value, backup_lib.Settings.of(config),
        start=sel.start,
        kind=stop_kind, alternating=alternating,
        solved=plugins.proof_codes(graph))
  for update in plugins.after_backup:
    graph = update(graph, sel, length, leaf_value, plugins)
  return graph


def _count(graph, sel, outcome, stored, indexed, free_slot, nan):
  """Adds the simulation to the counters (`graph.SearchStats`)."""
  simulated = sel.kind != graph_lib.NO_SIMULATION
  return graph_lib.add_stats(
      graph,
      simulations=simulated,
      nn_evals=outcome.evaluated,
      transposition_hits=outcome.link,
      corrections=sel.kind == graph_lib.CORRECTION,
      tt_cache_hits=outcome.cache_hit,
      terminal_visits=outcome.ends_game | (sel.kind == graph_lib.TERMINAL_EDGE),
      solved_visits=sel.kind == graph_lib.SOLVED_EDGE,
      collisions=outcome.collided,
      explorations=simulated & sel.explored,
      disconnected=simulated & (sel.start > 0),
      node_overflows=outcome.new_node & ~outcome.deferred & ~stored,
      table_overflows=indexed & (free_slot < 0),
      depth_overflows=sel.kind == graph_lib.DEPTH_LIMIT,
      nan_evals=outcome.evaluated & nan,
      cycles=outcome.cycle | (sel.kind == graph_lib.CYCLE),
      deferred_expansions=outcome.deferred,
  )
