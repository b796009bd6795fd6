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

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import solver


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


def _stop_value(kind, reward, discount, edge_visits, edge_q, child_visits, child_value_sum,
                child_solved, config):
  """`stop_value` from the last edge's statistics and its child's, read by the
  caller (scalars)."""
  target = reward + discount * graph_lib.node_value(child_visits, child_value_sum)
  corrected = correction_value(edge_visits.astype(jnp.float32), edge_q, target, config)
  exact = reward + discount * solver.exact_value(child_solved)
  return jnp.select(
      [kind == graph_lib.TERMINAL_EDGE, kind == graph_lib.SOLVED_EDGE,
       kind == graph_lib.CORRECTION,
       (kind == graph_lib.DEPTH_LIMIT) | (kind == graph_lib.DEAD_END) |
       (kind == graph_lib.CYCLE) | (kind == LINKED)],
      [reward, exact, corrected, target], 0.0)


def stop_value(graph: graph_lib.Graph, parent: chex.Array, action: chex.Array,
               kind: chex.Array, config: config_lib.SearchConfig) -> chex.Array:
  """The value of the last edge of ONE game's simulation that ends without expanding.

  By the end `kind` (graph.TERMINAL_EDGE, ...): the terminal reward, the
  proven node's exact value, the correction toward a diverged transposition,
  or the current estimate (depth limit, dead end, cycle); 0 for the other
  kinds. Read from the graph's current statistics, at backup time, so
  earlier leaves of a step (`leaves_per_step`) are taken into account
  (`backup_stop` with `kind` reads the same values itself).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    parent: int32 scalar, the edge's node.
    action: int32 scalar, the edge's action.
    kind: int32 scalar, the simulation end code (`selection.Selection.kind`).
    config: SearchConfig.

  Returns:
    f32 scalar, the value from the mover's view at `parent`.
  """
  child = jnp.maximum(graph.child[parent, action], 0)
  return _stop_value(kind, graph.edge_reward[parent, action], graph.edge_discount[parent, action],
                     graph.edge_visits[parent, action], graph.edge_q[parent, action],
                     graph.visits[child], graph.value_sum[child], graph.solved[child], config)


def _path_and_below(graph, path_nodes, path_actions, length):
  """int32[D + 1]: the path's nodes, then the node below its last edge (0
  where there is none), whose statistics `stop_value` reads."""
  last = jnp.maximum(length - 1, 0)
  below = jnp.maximum(graph.child[path_nodes[last], path_actions[last]], 0)
  return jnp.concatenate([path_nodes, below[None]])


def edge_values(graph: graph_lib.Graph, node: chex.Array,
                config: config_lib.SearchConfig, held=None) -> chex.Array:
  """Every edge's value for the mover at `node` of ONE game, read off its child.

  Used in "katago" mode: reward + discount * V(child), the exact value of a
  child proven by the solver, the reward of a terminal edge, and the stored
  Q of an edge without a stored child (unexpanded; a leaf not stored for lack
  of capacity).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    config: SearchConfig (reads `solver`).
    held: optional pair (nodes int32[K], value sums f32[K]) whose sums stand
      in for `graph.value_sum` of those nodes (distinct; -1: none), for
      values computed but not yet written.

  Returns:
    f32[A].
  """
  child = graph.child[node]
  safe = jnp.maximum(child, 0)
  value_sum = graph.value_sum[safe]
  if held is not None:
    held_nodes, held_sums = held
    match = safe[:, None] == held_nodes
    value_sum = jnp.where(jnp.any(match, axis=-1),
                          jnp.sum(jnp.where(match, held_sums, 0.0), axis=-1), value_sum)
  value = graph_lib.node_value(graph.visits[safe], value_sum)
  if config.solver:
    solved = graph.solved[safe]
    value = jnp.where(solved != graph_lib.UNKNOWN, solver.exact_value(solved), value)
  reward = graph.edge_reward[node]
  return jnp.select([child >= 0, child == graph_lib.TERMINAL],
                    [reward + graph.edge_discount[node] * value, reward], graph.edge_q[node])


def _katago_backup(graph, path_nodes, path_actions, length, leaf_value, config, start, kind):
  """`backup` in "katago" mode: KataGo's graph search (docs/GraphSearch.md,
  "Monte-Carlo Graph Search from First Principles").

  The path's edge and node visits go up by one, then from the bottom up each
  path node n takes Q(n) = (U(n) + sum_a N(n, a) Q(n, a)) / (1 + sum_a N(n, a)),
  U(n) its own evaluation (`nn_value`), Q(n, a) = `edge_values` (children's
  current values, the one below already recomputed). value_sum = Q(n) *
  visits keeps `graph.node_value` equal to Q(n) (visits = 1 + sum_a N(n, a)),
  and the node's visited edges store Q(n, a), so `edge_q` stays
  reward + discount * V(child) as of the node's last backup.
  """
  max_depth = path_nodes.shape[0]
  steps = jnp.arange(max_depth)
  on_path = (steps < length) & (steps >= start)
  nodes = jnp.where(on_path, path_nodes, graph.capacity)
  # The last edge keeps `leaf_value` where it leads to no stored node.
  last = jnp.maximum(length - 1, 0)
  last_row = jnp.where(length > start, path_nodes[last], graph.capacity)
  # As in `backup`: the stop value is read through the gathers the writes
  # below depend on.
  read_nodes = _path_and_below(graph, path_nodes, path_actions, length)
  visits = graph.visits[read_nodes]
  edge_visits = graph.edge_visits[path_nodes, path_actions]
  edge_q = graph.edge_q[path_nodes, path_actions]
  if kind is not None:
    leaf_value = jnp.where(
        _stops(kind),
        _stop_value(kind, graph.edge_reward[path_nodes[last], path_actions[last]],
                    graph.edge_discount[path_nodes[last], path_actions[last]],
                    edge_visits[last], edge_q[last], visits[max_depth],
                    graph.value_sum[read_nodes[max_depth]], graph.solved[read_nodes[max_depth]],
                    config),
        leaf_value)
  graph = graph.replace(
      visits=graph.visits.at[jnp.append(nodes, graph.capacity)].set(visits + 1, mode="drop"),
      edge_visits=graph.edge_visits.at[nodes, path_actions].set(edge_visits + 1, mode="drop"),
      edge_q=graph.edge_q.at[last_row, path_actions[last]].set(leaf_value, mode="drop"))

  # The recomputed values are kept per path slot and written once after the
  # loop: a loop that carried the graph would, once vmapped, select and copy
  # its [N] and [N, A] arrays whole on every iteration.
  def body(carry):
    i, value_sums, q_rows = carry
    node = path_nodes[i]
    # Path nodes below slot i are recomputed already (path nodes are distinct).
    done = (steps > i) & (steps < length)
    q = edge_values(graph, node, config, held=(jnp.where(done, path_nodes, -1), value_sums))
    n = graph.edge_visits[node].astype(jnp.float32)
    value = (graph.nn_value[node] + jnp.sum(n * q)) / (1.0 + jnp.sum(n))
    return (i - 1, value_sums.at[i].set(value * graph.visits[node]),
            q_rows.at[i].set(jnp.where(n > 0, q, graph.edge_q[node])))

  # Bottom-up: a child on the path is recomputed before its parent reads it.
  _, value_sums, q_rows = jax.lax.while_loop(
      lambda carry: carry[0] >= start, body,
      (length - 1, jnp.zeros((max_depth,), jnp.float32),
       jnp.zeros((max_depth, graph.num_actions), jnp.float32)))
  return graph.replace(value_sum=graph.value_sum.at[nodes].set(value_sums, mode="drop"),
                       edge_q=graph.edge_q.at[nodes].set(q_rows, mode="drop")), leaf_value


def _stops(kind):
  """bool: the end `kind` backs up a `stop_value`."""
  return ((kind == graph_lib.TERMINAL_EDGE) | (kind == graph_lib.SOLVED_EDGE) |
          (kind == graph_lib.CORRECTION) | (kind == graph_lib.DEPTH_LIMIT) |
          (kind == graph_lib.DEAD_END) | (kind == graph_lib.CYCLE) | (kind == LINKED))


def backup(graph: graph_lib.Graph, path_nodes: chex.Array, path_actions: chex.Array,
           length: chex.Array, leaf_value: chex.Array, config: config_lib.SearchConfig,
           start: chex.Array = 0) -> graph_lib.Graph:
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

  Returns:
    The graph with node visits/value sums and edge visits/Q updated.
  """
  return backup_stop(graph, path_nodes, path_actions, length, leaf_value, config, start)[0]


def backup_stop(graph: graph_lib.Graph, path_nodes: chex.Array, path_actions: chex.Array,
                length: chex.Array, leaf_value: chex.Array, config: config_lib.SearchConfig,
                start: chex.Array = 0, kind: chex.Array | None = None):
  """`backup`, where a simulation that ends without expanding backs up its
  `stop_value`, read here.

  With `kind` (int32, how the simulation ended) the last edge of a stopping
  kind (`stop_value`'s) takes `stop_value(graph, parent, action, kind)`
  instead of `leaf_value`, the same value, but read through the gathers the
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
    kind: optional int32, how the simulation ended (`selection.Selection.kind`
      or `LINKED`).

  Returns:
    (graph as `backup`'s, f32 the value the last edge received).
  """
  if config.backup_window > 0:
    # Sliding window: only the last `backup_window` edges take the value.
    start = jnp.maximum(start, length - config.backup_window)
  if config.recomputes_values:
    return _katago_backup(graph, path_nodes, path_actions, length, leaf_value, config, start,
                          kind)
  max_depth = path_nodes.shape[0]
  # One gather per array: the pre-update statistics of the path, and of the
  # node below it for the stop value (slot D).
  read_nodes = _path_and_below(graph, path_nodes, path_actions, length)
  visits_read = graph.visits[read_nodes]
  value_sum_read = graph.value_sum[read_nodes]
  solved_read = graph.solved[read_nodes]
  visits, value_sum = visits_read[:max_depth], value_sum_read[:max_depth]
  transposition = (graph.num_parents[path_nodes] > 1) & config.corrects_transpositions
  edge_visits = graph.edge_visits[path_nodes, path_actions]
  edge_q = graph.edge_q[path_nodes, path_actions]
  edge_reward = graph.edge_reward[path_nodes, path_actions]
  edge_discount = graph.edge_discount[path_nodes, path_actions]
  # Nodes proven by now (the solver runs before the backup) pass up exact values.
  proven = (solved_read[:max_depth] != graph_lib.UNKNOWN) & config.solver
  exact = solver.exact_value(solved_read[:max_depth])
  leaf_value = jnp.asarray(leaf_value, jnp.float32)
  if kind is not None:
    last = jnp.maximum(length - 1, 0)
    leaf_value = jnp.where(
        _stops(kind),
        _stop_value(kind, edge_reward[last], edge_discount[last], edge_visits[last],
                    edge_q[last], visits_read[max_depth], value_sum_read[max_depth],
                    solved_read[max_depth], config),
        leaf_value)

  def body(carry):
    i, value, values = carry
    # `value` is what edge i receives; derive what edge i - 1 receives.
    values = values.at[i].set(value)
    updated = graph_lib.node_value(visits[i] + 1, value_sum[i] + value)
    up = jnp.maximum(i - 1, 0)
    plain = edge_reward[up] + edge_discount[up] * value
    target = edge_reward[up] + edge_discount[up] * updated
    corrected = correction_value(edge_visits[up].astype(jnp.float32), edge_q[up],
                                           target, config)
    exact_up = edge_reward[up] + edge_discount[up] * exact[i]
    return i - 1, jnp.select([proven[i], transposition[i]], [exact_up, corrected], plain), values

  # A loop over the path's own length (not max_depth): paths are short.
  # `values` [D] ends up holding what each path edge receives, 0 beyond `length`.
  _, _, values = jax.lax.while_loop(
      lambda carry: carry[0] >= start, body,
      (length - 1, leaf_value, jnp.zeros((max_depth,), jnp.float32)))

  on_path = (jnp.arange(max_depth) < length) & (jnp.arange(max_depth) >= start)
  # Off-path entries point past the end and are dropped by the scatters (slot
  # D, the node below, too).
  nodes = jnp.where(on_path, path_nodes, graph.capacity)
  new_q = edge_q + (values - edge_q) / (edge_visits + 1).astype(jnp.float32)
  # Writing gathered + 1 (rather than scatter-adding a constant) makes each
  # scatter depend on its gather, so XLA updates the arrays in place instead
  # of copying them; the nodes are distinct, so this equals an add.
  return graph.replace(
      visits=graph.visits.at[jnp.append(nodes, graph.capacity)].set(visits_read + 1,
                                                                    mode="drop"),
      value_sum=graph.value_sum.at[nodes].add(values, mode="drop"),
      edge_visits=graph.edge_visits.at[nodes, path_actions].set(edge_visits + 1, mode="drop"),
      edge_q=graph.edge_q.at[nodes, path_actions].set(new_q, mode="drop"),
  ), leaf_value
