"""Corrected backpropagation (paper Alg. 2) along one game's selection path.

Walking up from the last edge, each edge gets a value from its parent's mover
point of view: the plain value one step down through the edge (reward +
discount * value), except above a transposition node, where it is the
correction that pulls the edge's Q onto the node's updated value V*(s')
(`correction_value`), and above a node proven by the solver, where
it is the node's exact value. Each edge then takes a running-mean update
and each node adds the value to its sum.

In "katago" mode (`_katago_backup`) there is no correction: each path node's
value is recomputed from its own evaluation and its children's current values
(KataGo's graph search), so a transposition node shared by several parents
passes its current value to all of them.

Nodes on a path are distinct (the selection stops before it re-enters a node
of its path, and a link that would close a cycle stores a fresh node instead,
for keys that leave out the ply), so all values can be computed from the
pre-update statistics in one reverse loop, then written with one scatter per
array.
"""

import dataclasses
import functools

import chex
import jax
from jax import custom_batching
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib


@dataclasses.dataclass(frozen=True)
class Settings(config_lib.Fields):
  """The SearchConfig fields the backup reads: what expansion hands it
  (`Settings.of(config)`); its functions also take the SearchConfig itself."""
  value_min: float
  value_max: float
  backup_window: int
  recomputes_values: bool
  corrects_transpositions: bool


def correction_value(edge_visits: chex.Array, edge_q: chex.Array, target: chex.Array,
                     config: config_lib.SearchConfig) -> chex.Array:
  """The value that pulls Q(s, a) onto `target` in one running-mean update.

  (N Q + x) / (N + 1) = target gives x = N (target - Q) + target, clipped to
  [value_min, value_max]; `target` itself when N = 0.

  Args:
    edge_visits: f32 N(s, a), any shape (one game: a scalar).
    edge_q: f32 Q(s, a), same shape.
    target: f32 the value Q should take, same shape.
    config: reads `value_min` and `value_max`.

  Returns:
    f32 of the common shape, the value to back up through the edge.
  """
  corrected = jnp.clip(edge_visits * (target - edge_q) + target,
                       config.value_min, config.value_max)
  return jnp.where(edge_visits > 0, corrected, target)


# `backup_stop`'s kind for an edge just linked to an existing node (mcgs): its
# value is the current estimate through the edge, as at a depth limit.
LINKED = -1


def stop_value(kind, reward, discount, edge_visits, edge_q, child_visits, child_value_sum,
               child_solved, config: config_lib.SearchConfig) -> chex.Array:
  """The value of the last edge of a simulation that ends without expanding.

  By the end `kind` (graph.TERMINAL_EDGE, ...): the terminal reward, the
  proven node's exact value, the correction toward a diverged transposition,
  or the current estimate (depth limit, dead end, cycle, a `LINKED` edge);
  0 for the other kinds. The backup reads the statistics at backup time, so
  earlier leaves of a step (`leaves_per_step`) are taken into account, and
  through the gathers its own writes depend on (see `backup_stop`).

  Args:
    kind: int32, the simulation end code (`graph.Selection.kind`).
    reward: f32, the last edge's reward.
    discount: f32, the last edge's discount.
    edge_visits: int32, the last edge's visits.
    edge_q: f32, the last edge's Q.
    child_visits: int32, the visits of the node below the edge.
    child_value_sum: f32, that node's value sum.
    child_solved: int32, that node's solver state.
    config: SearchConfig.

  Returns:
    f32, the value from the mover's view at the edge's parent (same shape
    as the arguments).
  """
  target = reward + discount * graph_lib.node_value(child_visits, child_value_sum)
  corrected = correction_value(edge_visits.astype(jnp.float32), edge_q, target, config)
  exact = reward + discount * graph_lib.exact_value(child_solved)
  return graph_lib.select_first(
      [kind == graph_lib.TERMINAL_EDGE, kind == graph_lib.SOLVED_EDGE,
       kind == graph_lib.CORRECTION,
       (kind == graph_lib.DEPTH_LIMIT) | (kind == graph_lib.DEAD_END) |
       (kind == graph_lib.CYCLE) | (kind == LINKED)],
      [reward, exact, corrected, target], 0.0)


def _path_and_below(graph, path_nodes, path_actions, length):
  """int32[D + 1]: the path's nodes, then the node below its last edge (0
  where there is none), whose statistics `stop_value` reads."""
  last = jnp.maximum(length - 1, 0)
  below = jnp.maximum(graph.child[path_nodes[last], path_actions[last]], 0)
  return jnp.concatenate([path_nodes, below[None]])


def _katago_backup(graph, path_nodes, path_actions, length, leaf_value, config, start, kind,
                   solved, proves):
  """`backup` in "katago" mode: KataGo's graph search (docs/GraphSearch.md,
  "Monte-Carlo Graph Search from First Principles").

  The path's edge and node visits go up by one, then from the bottom up each
  path node n takes Q(n) = (U(n) + sum_a N(n, a) Q(n, a)) / (1 + sum_a N(n, a)),
  U(n) its own evaluation (`nn_value`), Q(n, a) = `graph.edge_values` (children's
  current values, the one below already recomputed). value_sum = Q(n) *
  visits keeps `graph.node_value` equal to Q(n) (visits = 1 + sum_a N(n, a)),
  and the node's visited edges store Q(n, a), so `edge_q` stays
  reward + discount * V(child) as of the node's last backup. The last edge
  stores `leaf_value` first (it stays where the edge leads to no stored node).
  """
  if kind is not None:
    # Read before the writes, as in `backup` (their results feed the writes).
    leaf_value = _last_edge_value(_PathArrays.of(graph, solved), path_nodes, path_actions, length,
                                  kind, leaf_value, config, proves)
  arrays = (graph.visits, graph.value_sum, solved, graph.child, graph.edge_visits,
            graph.edge_q, graph.edge_reward, graph.edge_discount, graph.nn_value)
  visits, value_sum, edge_visits, edge_q = _custom_recompute(config, proves)(
      arrays, path_nodes, path_actions, length, jnp.asarray(start, jnp.int32),
      jnp.asarray(leaf_value, jnp.float32))
  return graph.replace(visits=visits, value_sum=value_sum, edge_visits=edge_visits,
                       edge_q=edge_q), leaf_value


def _last_edge_value(graph, path_nodes, path_actions, length, kind, leaf_value, config, proves):
  """ONE game's value of its path's last edge: `stop_value` of the edge and
  the node below it where `kind` stops the simulation, else `leaf_value`.

  `graph` is a `_PathArrays` of one game; `proves` (static): the solver
  runs, so `graph.solved` is read.
  """
  take = graph_lib.take   # vmapped: flat-index gathers
  last = jnp.maximum(length - 1, 0)
  parent, action = path_nodes[last], path_actions[last]
  below = jnp.maximum(take(graph.child, parent, action), 0)
  below_solved = take(graph.solved, below) if proves else jnp.int32(graph_lib.UNKNOWN)
  return jnp.where(_stops(kind), stop_value(
      kind, take(graph.edge_reward, parent, action), take(graph.edge_discount, parent, action),
      take(graph.edge_visits, parent, action), take(graph.edge_q, parent, action),
      take(graph.visits, below), take(graph.value_sum, below), below_solved, config),
      leaf_value)


def _with_batch_axis(axis_size, values, batched):
  """`values` with a leading batch axis B each: those a `custom_vmap` rule
  received unbatched (`batched` False) broadcast to it."""
  return [x if b else jnp.broadcast_to(x, (axis_size,) + x.shape)
          for x, b in zip(values, batched)]


@functools.lru_cache(maxsize=None)
def _custom_recompute(config, proves):
  """`_recompute_batch` for ONE game, and for a batch as its vmap rule."""
  def one(arrays, *path):
    batched = jax.tree.map(lambda x: x[None], (arrays, *path))
    outputs, _ = _recompute_batch(config, proves, 1,
                                  ((True,) * len(arrays),) + (True,) * len(path), *batched)
    return jax.tree.map(lambda x: x[0], outputs)

  recompute = custom_batching.custom_vmap(one)
  recompute.def_vmap(functools.partial(_recompute_batch, config, proves))
  return recompute


def _recompute_batch(config, proves, axis_size, in_batched, arrays, path_nodes, path_actions,
                     length, start, leaf_value):
  """KataGo's update of every game's path, bottom-up (`_katago_backup`).

  One loop over the path slots, from max_b(length) - 1 down to min_b(start):
  iteration i takes every game's path node i (games whose path holds no edge
  there idle), adds its visit and its path edge's, stores `leaf_value` on the
  last edge, recomputes the node's value and visited edges' Q's and writes
  them in place, so the node above reads its children's current values and
  visits from the graph itself (path nodes are distinct). A per-game loop,
  vmapped, would select every carried array on each iteration instead.

  Args:
    config: SearchConfig.
    proves: the solver runs (`solved` is read). Static.
    axis_size: B.
    in_batched: which of the inputs carry the batch axis.
    arrays: (visits, value_sum, solved, child, edge_visits, edge_q,
      edge_reward, edge_discount, nn_value), [B, N] and [B, N, A] (`solved`
      a placeholder without the solver).
    path_nodes, path_actions: int32[B, D].
    length, start: int32[B], the path's edges and the first one updated.
    leaf_value: f32[B], the last edge's value.

  Returns:
    ((visits [B, N], value_sum [B, N], edge_visits [B, N, A], edge_q
    [B, N, A]), batched flags).
  """
  in_arrays, *in_rest = in_batched
  arrays = _with_batch_axis(axis_size, arrays, in_arrays)
  path_nodes, path_actions, length, start, leaf_value = _with_batch_axis(
      axis_size, (path_nodes, path_actions, length, start, leaf_value), in_rest)
  (visits, value_sum, solved, child, edge_visits, edge_q, edge_reward, edge_discount,
   nn_value) = arrays
  capacity, num_actions = edge_q.shape[1:]
  take = graph_lib.take

  def update_one(visits, value_sum, edge_visits, edge_q, solved, child, edge_reward,
                 edge_discount, nn_value, node, action, inside, is_last, leaf_value):
    one_hot = jnp.arange(num_actions) == action
    n = take(edge_visits, node) + one_hot
    stored_q = jnp.where(one_hot & is_last, leaf_value, take(edge_q, node))
    children = take(child, node)
    safe = jnp.maximum(children, 0)
    # One gather for the children's visits and the node's own: the node's
    # write depends on it, so XLA reads before it writes, in place.
    gathered = take(visits, jnp.append(safe, node))
    node_visits = gathered[-1] + 1
    q = graph_lib.edge_values_from(children, take(edge_reward, node), take(edge_discount, node),
                                   stored_q, gathered[:-1], take(value_sum, safe),
                                   take(solved, safe) if proves else None)
    weights = n.astype(jnp.float32)
    value = (take(nn_value, node) + jnp.sum(weights * q)) / (1.0 + jnp.sum(weights))
    row = jnp.where(inside, node, capacity)
    return (visits.at[row].set(node_visits, mode="drop"),
            value_sum.at[row].set(value * node_visits, mode="drop"),
            edge_visits.at[row].set(n, mode="drop"),
            edge_q.at[row].set(jnp.where(n > 0, q, stored_q), mode="drop"))

  def body(carry):
    i, visits, value_sum, edge_visits, edge_q = carry
    column = lambda x: jax.lax.dynamic_index_in_dim(x, i, 1, keepdims=False)
    inside = (i < length) & (i >= start)
    return (i - 1, *jax.vmap(update_one)(
        visits, value_sum, edge_visits, edge_q, solved, child, edge_reward, edge_discount,
        nn_value, column(path_nodes), column(path_actions), inside, i == length - 1,
        leaf_value))

  _, visits, value_sum, edge_visits, edge_q = jax.lax.while_loop(
      lambda carry: carry[0] >= jnp.min(start), body,
      (jnp.max(length) - 1, visits, value_sum, edge_visits, edge_q))
  return (visits, value_sum, edge_visits, edge_q), (True,) * 4


def _stops(kind):
  """bool: the end `kind` backs up a `stop_value`."""
  return ((kind == graph_lib.TERMINAL_EDGE) | (kind == graph_lib.SOLVED_EDGE) |
          (kind == graph_lib.CORRECTION) | (kind == graph_lib.DEPTH_LIMIT) |
          (kind == graph_lib.DEAD_END) | (kind == graph_lib.CYCLE) | (kind == LINKED))


def _next_value(value, visits, value_sum, edge_visits, edge_q, edge_reward, edge_discount,
                transposition, proven, exact, config):
  """What edge i - 1 receives, from what edge i receives (`value`), node i's
  pre-update statistics and flags and edge i - 1's statistics (any shape)."""
  updated = graph_lib.node_value(visits + 1, value_sum + value)
  plain = edge_reward + edge_discount * value
  target = edge_reward + edge_discount * updated
  corrected = correction_value(edge_visits, edge_q, target, config)
  exact_up = edge_reward + edge_discount * exact
  return graph_lib.select_first([proven, transposition], [exact_up, corrected], plain)


def _path_flags(num_parents, solved, config, proves):
  """(transposition, proven, exact) of path nodes from their parent counts
  and solver states (any shape): which pass up a correction, which their
  proven exact value (`_next_value`)."""
  transposition = (num_parents > 1) & config.corrects_transpositions
  proven = (solved != graph_lib.UNKNOWN) & proves
  return transposition, proven, graph_lib.exact_value(solved)


def _edge_values_one(config, visits, value_sum, edge_visits, edge_q, edge_reward, edge_discount,
                     transposition, proven, exact, leaf_value, length, start):
  """f32[D]: what each edge of ONE game's path receives, 0 outside
  [start, length): `leaf_value` at the last edge, then up the path by
  `_next_value` (node i's arrays at slot i, edge i - 1's at slot i - 1).

  `_backup_batch` runs the same recursion for a batch, chunk by chunk.
  """
  max_depth = visits.shape[0]

  def body(carry):
    i, value, values = carry
    values = values.at[i].set(value)
    up = jnp.maximum(i - 1, 0)
    value = _next_value(value, visits[i], value_sum[i], edge_visits[up], edge_q[up],
                        edge_reward[up], edge_discount[up], transposition[i], proven[i],
                        exact[i], config)
    return i - 1, value, values

  # A loop over the path's own length (not max_depth): paths are short.
  _, _, values = jax.lax.while_loop(
      lambda carry: carry[0] >= start, body,
      (length - 1, leaf_value, jnp.zeros((max_depth,), jnp.float32)))
  return values


@functools.lru_cache(maxsize=None)
def _custom_backup(config, alternating, proves):
  """`_backup_one` for `config` (static), vmapped by `_backup_batch`, which
  takes reward 0 and discount -1 inside the paths with `alternating`;
  `proves`: the solver runs (its codes are read)."""
  core = custom_batching.custom_vmap(functools.partial(_backup_one, config, proves))
  core.def_vmap(functools.partial(_backup_batch, config, alternating, proves))
  return core


def _backup_one(config, proves, arrays, path_nodes, path_actions, length, leaf_value, start,
                kind):
  """`backup_stop`'s corrected backup of ONE game's path over all its D slots.

  Args:
    config: SearchConfig.
    proves: the solver runs (`solved` is read). Static.
    arrays: the graph's (visits, value_sum, solved, parents, child,
      edge_visits, edge_q, edge_reward, edge_discount) of one game.
    path_nodes, path_actions: int32[D'], D' <= D slots holding the path.
    length, leaf_value, start, kind: as `backup_stop`'s (kind `RUNNING`: none).

  Returns:
    (visits, value_sum, edge_visits, edge_q) updated, f32 the last edge's value.
  """
  (visits_all, value_sum_all, solved_all, parents_all, child_all, edge_visits_all,
   edge_q_all, edge_reward_all, edge_discount_all) = arrays
  graph = _PathArrays(visits_all, value_sum_all, solved_all, parents_all, child_all,
                      edge_visits_all, edge_q_all, edge_reward_all, edge_discount_all)
  capacity = visits_all.shape[0]
  max_depth = path_nodes.shape[0]
  # One gather per array: the pre-update statistics of the path, and of the
  # node below it for the stop value (slot D).
  read_nodes = _path_and_below(graph, path_nodes, path_actions, length)
  visits_read = graph.visits[read_nodes]
  value_sum_read = graph.value_sum[read_nodes]
  solved_read = (graph.solved[read_nodes] if proves
                 else jnp.full(read_nodes.shape, graph_lib.UNKNOWN, jnp.int32))
  visits, value_sum = visits_read[:max_depth], value_sum_read[:max_depth]
  edge_visits = graph.edge_visits[path_nodes, path_actions]
  edge_q = graph.edge_q[path_nodes, path_actions]
  edge_reward = graph.edge_reward[path_nodes, path_actions]
  edge_discount = graph.edge_discount[path_nodes, path_actions]
  # Nodes proven by now (the solver runs before the backup) pass up exact values.
  transposition, proven, exact = _path_flags(graph.parents[path_nodes, 0],
                                              solved_read[:max_depth], config, proves)
  last = jnp.maximum(length - 1, 0)
  leaf_value = jnp.where(
      _stops(kind),
      stop_value(kind, edge_reward[last], edge_discount[last], edge_visits[last],
                  edge_q[last], visits_read[max_depth], value_sum_read[max_depth],
                  solved_read[max_depth], config),
      leaf_value)

  values = _edge_values_one(config, visits, value_sum, edge_visits.astype(jnp.float32), edge_q,
                            edge_reward, edge_discount, transposition, proven, exact, leaf_value,
                            length, jnp.asarray(start, jnp.int32))

  on_path = (jnp.arange(max_depth) < length) & (jnp.arange(max_depth) >= start)
  # Off-path entries point past the end and are dropped by the scatters (slot
  # D, the node below, too).
  nodes = jnp.where(on_path, path_nodes, capacity)
  new_q = edge_q + (values - edge_q) / (edge_visits + 1).astype(jnp.float32)
  # Writing gathered + 1 (rather than scatter-adding a constant) makes each
  # scatter depend on its gather, so XLA updates the arrays in place instead
  # of copying them; the nodes are distinct, so this equals an add.
  return (visits_all.at[jnp.append(nodes, capacity)].set(visits_read + 1, mode="drop"),
          value_sum_all.at[nodes].add(values, mode="drop"),
          edge_visits_all.at[nodes, path_actions].set(edge_visits + 1, mode="drop"),
          edge_q_all.at[nodes, path_actions].set(new_q, mode="drop"), leaf_value)


class _PathArrays:
  """The graph arrays `_backup_one` reads, under `Graph`'s field names, and
  the solver's codes as `solved`."""

  def __init__(self, visits, value_sum, solved, parents, child, edge_visits, edge_q,
               edge_reward, edge_discount):
    self.visits, self.value_sum, self.solved = visits, value_sum, solved
    self.parents, self.child = parents, child
    self.edge_visits, self.edge_q = edge_visits, edge_q
    self.edge_reward, self.edge_discount = edge_reward, edge_discount

  @classmethod
  def of(cls, graph, solved):
    return cls(graph.visits, graph.value_sum, solved, graph.parents, graph.child,
               graph.edge_visits, graph.edge_q, graph.edge_reward, graph.edge_discount)


def _backup_batch(config, alternating, proves, axis_size, in_batched, arrays, path_nodes,
                  path_actions, length, leaf_value, start, kind):
  """`_backup_one` for a batch of games, chunk by chunk of `_CHUNK` path
  slots, from the deepest chunk that holds some game's path edge up.

  Paths are mostly far shorter than D = `max_depth`, so nothing here is
  [B, D]-wide: each trip of one loop reads a chunk [B, K] of every game's
  path statistics, runs the value recursion through it (one inner loop over
  its slots for the whole batch, with `_next_value`, so results equal
  `_backup_one`'s bit for bit) and writes the chunk back. A chunk's reads
  come after the writes of the deeper chunks, which touch other nodes (path
  nodes are distinct), so they read the pre-backup statistics; each write
  depends on its array's read, so XLA updates the arrays in place.

  With `alternating` (the model's `alternating_zero_sum`) the chunks take
  reward 0 and discount -1 for their edges without reading them: a chunk's
  edges that enter the recursion lead to path nodes, never to the end of a
  game (the last edge's own values are read by `_last_edge_value`).
  """
  in_arrays, *in_rest = in_batched
  arrays = _with_batch_axis(axis_size, arrays, in_arrays)
  path_nodes, path_actions, length, leaf_value, start, kind = _with_batch_axis(
      axis_size, (path_nodes, path_actions, length, leaf_value, start, kind), in_rest)
  (visits_all, value_sum_all, solved_all, parents_all, child_all, edge_visits_all,
   edge_q_all, edge_reward_all, edge_discount_all) = arrays
  capacity = visits_all.shape[1]
  max_depth = path_nodes.shape[1]
  chunk = _CHUNK if max_depth % _CHUNK == 0 else max_depth
  take = graph_lib.take   # vmapped: flat-index gathers

  leaf_value = jax.vmap(
      lambda arrays, *path: _last_edge_value(_PathArrays(*arrays), *path, config, proves))(
          arrays, path_nodes, path_actions, length, kind, leaf_value)

  def read_one(visits, value_sum, solved, parents, edge_visits, edge_q, edge_reward,
               edge_discount, nodes, actions):
    # Statistics this mode never reads are not gathered.
    unknown = jnp.zeros(nodes.shape, jnp.int32)
    if alternating:
      reward = jnp.zeros(nodes.shape, jnp.float32)
      discount = jnp.full(nodes.shape, -1.0, jnp.float32)
    else:
      reward, discount = take(edge_reward, nodes, actions), take(edge_discount, nodes, actions)
    return (take(visits, nodes), take(value_sum, nodes),
            take(solved, nodes) if proves else unknown,
            take(parents, nodes, 0) if config.corrects_transpositions else unknown,
            take(edge_visits, nodes, actions), take(edge_q, nodes, actions), reward, discount)

  def write_one(visits_all, value_sum_all, edge_visits_all, edge_q_all, nodes, actions, visits,
                values, edge_visits, new_q):
    return (visits_all.at[nodes].set(visits + 1, mode="drop"),
            value_sum_all.at[nodes].add(values, mode="drop"),
            edge_visits_all.at[nodes, actions].set(edge_visits + 1, mode="drop"),
            edge_q_all.at[nodes, actions].set(new_q, mode="drop"))

  longest, lowest = jnp.max(length), jnp.min(start)

  def chunk_trip(carry):
    c, above, written = carry
    visits_now, value_sum_now, edge_visits_now, edge_q_now = written
    first = c * chunk
    nodes, actions = (jax.lax.dynamic_slice_in_dim(x, first, chunk, axis=1)
                      for x in (path_nodes, path_actions))
    visits, value_sum, solved, num_parents, edge_visits, edge_q, edge_reward, edge_discount = (
        jax.vmap(read_one)(visits_now, value_sum_now, solved_all, parents_all,
                           edge_visits_now, edge_q_now, edge_reward_all, edge_discount_all,
                           nodes, actions))
    transposition, proven, exact = _path_flags(num_parents, solved, config, proves)
    edge_visits_f = edge_visits.astype(jnp.float32)

    def column(x, j):
      return jax.lax.dynamic_index_in_dim(x, j, 1, keepdims=False)

    # Slot i receives the leaf value at the last edge, else _next_value of
    # what slot i + 1 received, node i + 1's statistics and edge i's: `above`
    # carries slot i + 1's value and node statistics, across chunks too.
    def slot_trip(inner):
      j, above, values = inner
      i = first + j
      value_up, visits_up, value_sum_up, transposition_up, proven_up, exact_up = above
      value = jnp.where(i == length - 1, leaf_value, _next_value(
          value_up, visits_up, value_sum_up, column(edge_visits_f, j), column(edge_q, j),
          column(edge_reward, j), column(edge_discount, j), transposition_up, proven_up,
          exact_up, config))
      values = jax.lax.dynamic_update_index_in_dim(values, value, j, 1)
      above = (value, column(visits, j), column(value_sum, j), column(transposition, j),
               column(proven, j), column(exact, j))
      return j - 1, above, values

    top = jnp.minimum(longest - 1 - first, chunk - 1)
    bottom = jnp.maximum(lowest - first, 0)
    _, above, values = jax.lax.while_loop(
        lambda inner: inner[0] >= bottom, slot_trip,
        (top, above, jnp.zeros((axis_size, chunk), jnp.float32)))
    slots = first + jnp.arange(chunk)
    on_path = (slots < length[:, None]) & (slots >= start[:, None])
    values = jnp.where(on_path, values, 0.0)
    new_q = edge_q + (values - edge_q) / (edge_visits + 1).astype(jnp.float32)
    written = jax.vmap(write_one)(*written, jnp.where(on_path, nodes, capacity), actions,
                                  visits, values, edge_visits, new_q)
    return c - 1, above, written

  zeros = jnp.zeros((axis_size,), jnp.float32)
  no_flag = jnp.zeros((axis_size,), bool)
  above = (leaf_value, jnp.zeros((axis_size,), jnp.int32), zeros, no_flag, no_flag, zeros)
  _, _, written = jax.lax.while_loop(
      lambda carry: carry[0] >= lowest // chunk, chunk_trip,
      ((longest + chunk - 1) // chunk - 1, above,
       (visits_all, value_sum_all, edge_visits_all, edge_q_all)))
  return (*written, leaf_value), (True,) * 5


# Path slots per chunk of `_backup_batch`'s loops.
_CHUNK = 8


def backup(graph: graph_lib.Graph, path_nodes: chex.Array, path_actions: chex.Array,
           length: chex.Array, leaf_value: chex.Array, config: config_lib.SearchConfig,
           start: chex.Array = 0, solved: chex.Array | None = None) -> graph_lib.Graph:
  """Backs `leaf_value` up ONE game's path.

  Args:
    graph: ONE game's graph [N, A].
    path_nodes: int32[D], the path's nodes from the root.
    path_actions: int32[D], the action taken at each path node.
    length: int32, number of edges on the path (0: nothing to do).
    leaf_value: f32, the value of the last edge for its parent's mover.
    config: SearchConfig.
    start: int32, first edge updated (0: the root; a disconnected exploration
      trajectory leaves the line above its branch node alone); with
      `config.backup_window` w > 0 at least length - w.
    solved: int32[N], the solver's codes (`plugins.Plugins.proofs`): proven
      nodes pass up their exact values; None without the solver.

  Returns:
    The graph with node visits/value sums and edge visits/Q updated.
  """
  return backup_stop(graph, path_nodes, path_actions, length, leaf_value, config, start,
                     solved=solved)[0]


def backup_stop(graph: graph_lib.Graph, path_nodes: chex.Array, path_actions: chex.Array,
                length: chex.Array, leaf_value: chex.Array, config: config_lib.SearchConfig,
                start: chex.Array = 0, kind: chex.Array | None = None,
                alternating: bool = False, solved: chex.Array | None = None):
  """`backup`, where a simulation that ends without expanding backs up its
  `stop_value`, read here.

  With `kind` (int32, how the simulation ended) the last edge of a stopping
  kind (`stop_value`'s) takes `stop_value` of its statistics instead of
  `leaf_value`, read through the gathers the
  backup's own writes depend on; kind `LINKED` (an edge just linked to an
  existing node) takes reward + discount * V(child), as a depth limit does.
  A read of the pre-backup statistics that no write depends on leaves XLA
  free to run it after the in-place writes, and then it copies the whole
  [N, A] arrays every simulation to keep their old versions alive.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    path_nodes: int32[D], the nodes of the path from the root.
    path_actions: int32[D], the action taken at each path node.
    length: int32, number of edges on the path (0: nothing to do).
    leaf_value: f32, the value of the last edge for its parent's mover (used
      unless `kind` is a stopping kind).
    config: SearchConfig.
    start: int32, first edge updated (as in `backup`).
    kind: optional int32, how the simulation ended (`graph.Selection.kind`
      or `LINKED`).
    alternating: the model's `alternating_zero_sum` (static): vmapped, the
      backup then takes reward 0 and discount -1 for the edges inside the
      path instead of reading them.

  Returns:
    (graph as `backup`'s, f32 the value the last edge received).
  """
  if config.backup_window > 0:
    # Sliding window: only the last `backup_window` edges take the value.
    start = jnp.maximum(start, length - config.backup_window)
  proves = solved is not None
  if not proves:
    # Never read (`proves` False): a stand-in keeps the arrays' layout.
    solved = jnp.zeros_like(graph.visits)
  if config.recomputes_values:
    return _katago_backup(graph, path_nodes, path_actions, length, leaf_value, config, start,
                          kind, solved, proves)
  arrays = (graph.visits, graph.value_sum, solved, graph.parents, graph.child,
            graph.edge_visits, graph.edge_q, graph.edge_reward, graph.edge_discount)
  kind = graph_lib.RUNNING if kind is None else kind
  visits, value_sum, edge_visits, edge_q, leaf_value = _custom_backup(config, alternating,
                                                                      proves)(
      arrays, path_nodes, path_actions, length, jnp.asarray(leaf_value, jnp.float32),
      jnp.asarray(start, jnp.int32), jnp.asarray(kind, jnp.int32))
  return graph.replace(visits=visits, value_sum=value_sum, edge_visits=edge_visits,
                       edge_q=edge_q), leaf_value

