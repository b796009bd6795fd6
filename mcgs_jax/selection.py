"""Selection: PUCT descent from the root to the edge where a simulation ends.

Acts on ONE game's graph (vmap for a batch). The descent stops at
  - an unexpanded edge (EXPAND: the game model is stepped, then the key looked up),
  - an edge into a terminal state (TERMINAL_EDGE: exact value, no network),
  - an edge into a transposition node whose value has diverged from the edge's
    Q by more than q_eps (CORRECTION: back up the correction, no network),
  - an edge into a node proven by the solver (SOLVED_EDGE: exact value),
  - max_depth (DEPTH_LIMIT), a non-terminal node without legal actions
    (DEAD_END), or an edge back into a node already on the path (CYCLE: keys
    that leave out the ply can close cycles; not looked for where the model
    declares `acyclic_keys`): back up the current estimate of the last edge.
The enhancements come in as plug-ins (`plugins.Plugins`, assembled by
`rules.of`): the move filter (the solver's proven losses, progressive
pruning), a Q adjustment (RAVE) and a score adjustment (minimum root
visits) of the PUCT scores, other scores at and below the root (the Gumbel
root), exploration plans, and the solver's proofs (a proven child ends the
descent, a proven root runs none, a stale node is flagged for the solver).
This module imports none of them.
"""

import dataclasses
import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import plugins as plugins_lib

# Why a simulation's descent ended (defined with the graph, where the backup
# reads them too).
RUNNING = graph_lib.RUNNING
EXPAND = graph_lib.EXPAND
TERMINAL_EDGE = graph_lib.TERMINAL_EDGE
CORRECTION = graph_lib.CORRECTION
DEPTH_LIMIT = graph_lib.DEPTH_LIMIT
DEAD_END = graph_lib.DEAD_END
NO_SIMULATION = graph_lib.NO_SIMULATION
SOLVED_EDGE = graph_lib.SOLVED_EDGE
CYCLE = graph_lib.CYCLE

@dataclasses.dataclass(frozen=True)
class Settings(config_lib.Fields):
  """The SearchConfig fields the descent reads: what the engine hands it
  (`Settings.of(config)`); its functions also take the SearchConfig itself."""
  max_depth: int
  corrects_transpositions: bool
  links_transpositions: bool
  q_eps: float
  recomputes_values: bool
  value_min: float
  q_init: float
  c_base: float
  c_init: float


def deactivate(sel: graph_lib.Selection, active: chex.Array) -> graph_lib.Selection:
  """Games that are not active run no simulation: their backup is a no-op.

  Args:
    sel: Selection with leading dimension B.
    active: bool[B].

  Returns:
    The Selection with kind NO_SIMULATION where `active` is False.
  """
  return sel.replace(kind=jnp.where(active, sel.kind, graph_lib.NO_SIMULATION))


def tracks_cycles(config: config_lib.SearchConfig, model: Any) -> bool:
  """Whether descents mark their path to stop where a link closes a cycle.

  Only links close cycles, and only keys that can repeat along a line of
  play let them: a model that declares `acyclic_keys` (every key implies
  the ply, or a quantity that only grows) skips the marks and the test.

  Args:
    config: reads `links_transpositions`.
    model: the `mcgs_jax.Model` (reads `acyclic_keys`).

  Returns:
    bool, static.
  """
  return config.links_transpositions and not model.acyclic_keys


def mark_path(path_nodes: chex.Array, length: chex.Array, capacity: int,
              tracks: bool) -> chex.Array:
  """`Selection.path_marks` of a path built outside the descent.

  Args:
    path_nodes: int32[D], the path's nodes from the root.
    length: int32 scalar, the path's edges (its first `length` nodes marked).
    capacity: N.
    tracks: `tracks_cycles` (no marks, bool[0], without).

  Returns:
    bool[N] (bool[0] without).
  """
  if not tracks:
    return jnp.zeros((0,), bool)
  marked = jnp.where(jnp.arange(path_nodes.shape[0]) < length, path_nodes, capacity)
  return jnp.zeros((capacity,), bool).at[marked].set(True, mode="drop")


def exploration_weight(total_visits: chex.Array, config: config_lib.SearchConfig):
  """c(s) = log((n + c_base + 1) / c_base) + c_init (paper eq. 6).

  Args:
    total_visits: n = sum_b N(s, b), any shape.
    config: reads `c_base`, `c_init`.

  Returns:
    f32 of the shape of `total_visits`.
  """
  return jnp.log((total_visits + config.c_base + 1.0) / config.c_base) + config.c_init


def puct_scores(graph: graph_lib.Graph, node: chex.Array, config: config_lib.SearchConfig,
                plugins: plugins_lib.Plugins, virtual_visits: chex.Array | None = None,
                rows: graph_lib.EdgeRows | None = None) -> chex.Array:
  """Q(s, a) + U(s, a) for every action of `node` of ONE game; -inf on
  illegal actions and on those the move filter leaves out.

  U = c(s) * P(s, a) * sqrt(1 + sum_b N(s, b)) / (1 + N(s, a)) (eq. 3-4).
  The plug-ins may adjust Q (`Plugins.adjust_q`: RAVE) and the scores
  (`Plugins.adjust_scores`: the root's starved moves take over).
  The node's own evaluation counts as one visit under the square root (as in
  mctx); without it the first descent through every fresh node would ignore
  the prior and take the lowest legal action.

  Args:
    graph: ONE game's graph.
    node: int32 node index.
    config: SearchConfig.
    plugins: the search's Plugins (`rules.of(config)`).
    virtual_visits: optional int32[N, A], pending leaves of this step through
      each edge (`leaves_per_step`): each counts as a visit that lost
      (value_min), N' = N + v, Q' = (N Q + v value_min) / N'.
    rows: `graph_lib.edge_rows(graph, node, virtual_visits)` where already
      read; None reads them.

  Returns:
    f32[A] scores.
  """
  take = graph_lib.take
  if rows is None:
    rows = graph_lib.edge_rows(graph, node, virtual_visits)
  edge_visits = rows.visits.astype(jnp.float32)
  edge_q = rows.q
  if config.recomputes_values:
    # katago: a child shared with other parents may have moved since this
    # node's last backup; Q is read off the child's current value.
    edge_q = graph_lib.edge_values(graph, node, plugins.proof_codes(graph))
  # sum_b N(s, b): the node's visits less its own evaluation (visits are
  # conserved: one per simulation that left the node through an edge), one
  # element instead of a reduction over the row.
  total = take(graph.visits, node).astype(jnp.float32) - 1.0
  if rows.pending is not None:
    pending = rows.pending.astype(jnp.float32)
    edge_q = jnp.where(pending > 0, (edge_q * edge_visits + pending * config.value_min)
                       / jnp.maximum(edge_visits + pending, 1.0), edge_q)
    edge_visits = edge_visits + pending
    total = total + pending.sum()
  # Proven losses are pruned: Q = -inf (the paper also zeroes their prior).
  legal = plugins_lib.allowed_moves(graph, node, plugins, rows.child)
  q = jnp.where(edge_visits > 0, edge_q, config.q_init)
  if plugins.adjust_q is not None:
    q = plugins.adjust_q(graph, node, q, edge_visits)
  prior = rows.prior
  u = exploration_weight(total, config) * prior * jnp.sqrt(total + 1.0) / (1.0 + edge_visits)
  scores = jnp.where(legal, q + u, -jnp.inf)
  if plugins.adjust_scores is not None:
    scores = plugins.adjust_scores(node, scores, edge_visits, prior)
  return scores


def _at(action, row):
  """row[action] of a row [A] as a masked sum: under vmap a fused reduction
  over [B, A] instead of a gather."""
  return jnp.sum(jnp.where(jnp.arange(row.shape[0]) == action, row, jnp.zeros_like(row)))


def _descent_start(config, capacity, tracks):
  """The descent's carry before the first step: (node, depth, kind, path_nodes
  [D], path_actions [D], length, stale, marks). With `tracks` (see
  `tracks_cycles`), `marks` bool[N] flags the nodes on the path (the root to
  start with), so the cycle test is one read instead of a scan of the path;
  bool[0] otherwise."""
  marks = jnp.arange(capacity if tracks else 0) == 0
  return (jnp.int32(0), jnp.int32(0), jnp.int32(RUNNING),
          jnp.zeros((config.max_depth,), jnp.int32), jnp.zeros((config.max_depth,), jnp.int32),
          jnp.int32(0), jnp.int32(-1), marks)


def _root_scores(graph, virtual_visits, plugins):
  """The root's scores of `Plugins.root_scores` (the root's statistics do
  not change during a descent: scored once), None without."""
  if plugins.root_scores is None:
    return None
  rows = graph_lib.edge_rows(graph, 0, virtual_visits)
  return plugins.root_scores(graph, plugins_lib.allowed_moves(graph, 0, plugins, rows.child),
                             rows)


def _write_slot(column, slot, value, running):
  """column[slot] = value where `running`, else 0 (what the slot holds: a
  descent writes slot i at step i only, and one that has stopped has its
  path above). `slot` is the step's number, a running descent's depth, the
  same for every game of a batch: under vmap this is a column update in
  place, neither a scatter nor a select over the whole column."""
  return jax.lax.dynamic_update_index_in_dim(
      column, jnp.where(running, value, jnp.zeros_like(value)), slot, 0)


def _descent_step(graph, explore, virtual_visits, root_scores, step, carry, buffer, config,
                  plugins, alternating, q_from_row=True):
  """Step `step` (int32, unbatched) of ONE game's descent; a no-op once its
  `kind` is no longer RUNNING (its path stays, the rest is kept), so a batch
  of descents can step together until the last one stops: a running
  descent's depth is `step`. With `alternating` (the model's
  `alternating_zero_sum`) an edge into a stored node has reward 0 and
  discount -1 without reading them. `buffer` is the step's
  `graph_lib.edge_rows` buffer; returns (carry, the buffer for the next
  step)."""
  max_depth = config.max_depth
  use_corrections = config.corrects_transpositions
  exploring = explore is not None
  (node, depth, kind_before, path_nodes, path_actions, length_before, stale_before,
   marks) = carry
  running = kind_before == RUNNING
  stale = stale_before
  if plugins.stale is not None:
    stale = jnp.where(plugins.stale(graph, node), depth, stale)
  # The node's edge rows, for the scores, the chosen edge's child and its
  # transposition test below: in one read into the carried buffer for the
  # Gumbel root's scoring (`graph_lib.edge_rows`), as gathers XLA fuses into
  # the PUCT scores otherwise (`graph_lib.edge_rows_direct`).
  if root_scores is not None:
    rows = graph_lib.edge_rows(graph, node, virtual_visits, buffer)
  else:
    rows = graph_lib.edge_rows_direct(graph, node, virtual_visits).replace(buffer=buffer)
  if root_scores is not None:
    scores = jnp.where(depth == 0, root_scores, plugins.interior_scores(
        graph, node, plugins_lib.allowed_moves(graph, node, plugins, rows.child), rows))
  else:
    scores = puct_scores(graph, node, config, plugins, rows=rows)
  action = jnp.argmax(scores).astype(jnp.int32)
  has_move = scores[action] > -jnp.inf
  following = jnp.bool_(False)
  proofs = plugins.proof_codes(graph)
  if exploring:
    active = explore.active
    following = active & (depth < explore.depth)
    at_branch = active & (depth == explore.depth)
    action = graph_lib.select_first(
        [following, at_branch],
        [plugins_lib.most_visited_action(graph, node, plugins),
         plugins.explore_action(graph, node, action, explore, plugins)], action)
  if proofs is not None:
    has_move &= (depth > 0) | (proofs[0] == graph_lib.UNKNOWN)
  path_nodes = _write_slot(path_nodes, step, node, running)
  path_actions = _write_slot(path_actions, step, action, running)

  take = graph_lib.take
  child = _at(action, rows.child)
  is_node = child >= 0
  safe_child = jnp.maximum(child, 0)
  # The test's Q: from the row the scores read, or (`q_from_row` False) as
  # one element fused with the child's reads, which spares a batch the
  # row's own gather kernel (the row would have two users).
  diverged = use_corrections & graph_lib.transposition_diverged(
      graph, node, action, child, config, alternating,
      _at(action, rows.q) if q_from_row else None)
  proven = jnp.bool_(False)
  if proofs is not None:
    proven = is_node & (take(proofs, safe_child) != graph_lib.UNKNOWN)
  diverged &= ~proven & ~following
  at_limit = is_node & ~diverged & ~proven & (depth + 1 >= max_depth)
  # Only links close cycles; descending into a node of the path would make
  # the backup update it twice, so the simulation stops there.
  cycle = jnp.bool_(False)
  tracks = marks.shape[0] > 0
  if tracks:
    cycle = is_node & ~proven & take(marks, safe_child)

  kind = graph_lib.select_first(
      [~has_move & (depth == 0), ~has_move, child == graph_lib.UNEXPANDED,
       child == graph_lib.TERMINAL, proven, cycle, diverged, at_limit],
      [NO_SIMULATION, DEAD_END, EXPAND, TERMINAL_EDGE, SOLVED_EDGE, CYCLE, CORRECTION,
       DEPTH_LIMIT],
      RUNNING).astype(jnp.int32)
  # Every output of the step follows from `kind`: one kernel computes it
  # with the transposition test's reads, instead of a copy in each consumer.
  kind = graph_lib.computed_once(kind)
  descend = kind == RUNNING
  next_node = jnp.where(descend, safe_child, node)
  if tracks:
    marks = marks.at[jnp.where(running & descend, safe_child, marks.shape[0])].set(
        True, mode="drop")
  next_depth = jnp.where(descend, depth + 1, depth)
  # The last edge: at a dead end it is the edge into `node`, one step up.
  length = jnp.where(~has_move, depth, depth + 1)
  keep = lambda new, old: jnp.where(running, new, old)
  return (keep(next_node, node), keep(next_depth, depth), keep(kind, kind_before), path_nodes,
          path_actions, keep(length, length_before), keep(stale, stale_before),
          marks), rows.buffer


def _descent_end(carry, explore):
  """ONE game's Selection from its finished descent."""
  _, _, kind, path_nodes, path_actions, length, stale, marks = carry
  last = jnp.maximum(length - 1, 0)
  explored = jnp.bool_(False) if explore is None else explore.active
  start = jnp.int32(0) if explore is None else explore.start
  return graph_lib.Selection(path_nodes=path_nodes, path_actions=path_actions, length=length,
                   kind=kind, parent=path_nodes[last],
                   action=path_actions[last], start=start, explored=explored, stale=stale,
                   path_marks=marks)


def select_batch(graph: graph_lib.Graph, rng: chex.PRNGKey, model: Any,
                 config: config_lib.SearchConfig, plugins: plugins_lib.Plugins,
                 virtual_visits: chex.Array | None = None) -> graph_lib.Selection:
  """Step 1 for all B games: draws the exploration plans (`Plugins.plan`,
  when exploration is on) and descends.

  Args:
    graph: Graph [B, N, A].
    rng: a PRNG key (exploration draws).
    model: the `mcgs_jax.Model` (constraint-first exploration reads its
      `priority` moves; `tracks_cycles` its `acyclic_keys`).
    config: SearchConfig.
    plugins: the search's Plugins (`rules.of(config)`).
    virtual_visits: optional int32[B, N, A], pending leaves of the step,
      which steer PUCT away (`puct_scores`); the transposition test reads
      the real statistics, which they never enter.

  Returns:
    Selection [B] (`graph.Selection`).
  """
  explore = None
  if plugins.plan is not None:
    explore = plugins.plan(graph, rng, model, plugins)
  # One loop over the batch, stepping every game's descent (a stopped one
  # idles) until the last stops: the steps of a per-game descent vmapped,
  # without the select vmap puts on every carried array, the paths [B, D]
  # included, at every step of a per-game loop.
  root_scores = jax.vmap(functools.partial(_root_scores, plugins=plugins))(graph, virtual_visits)
  # The loop also carries the buffer each step writes its node's edge rows
  # to (`graph_lib.edge_rows`).
  # One game alone keeps the row's Q: there the one-element read made XLA's
  # CPU runtime run the step's kernels concurrently, at a cost (docs/benchmarks.md).
  step = jax.vmap(functools.partial(_descent_step, config=config, plugins=plugins,
                                    alternating=model.alternating_zero_sum,
                                    q_from_row=graph.batch_size == 1),
                  in_axes=(0, 0, 0, 0, None, 0, 0))
  start = (_descent_start(config, graph.capacity, tracks_cycles(config, model)),
           graph_lib.edge_rows_buffer(graph.num_actions, virtual_visits is not None))
  _, (carry, _) = jax.lax.while_loop(
      lambda loop: jnp.any(loop[1][0][2] == RUNNING),
      lambda loop: (loop[0] + 1, step(graph, explore, virtual_visits, root_scores, loop[0],
                                      *loop[1])),
      (jnp.int32(0), jax.tree.map(lambda x: jnp.broadcast_to(x, (graph.batch_size,) + x.shape),
                                  start)))
  return jax.vmap(_descent_end)(carry, explore)
