"""Structural invariants of a search graph, checked on host copies."""

import numpy as np

from mcgs_jax import graph as graph_lib


def check_graph(g, b, config, legal_of=None):
  """Asserts the invariants of game `b` of the host graph `g`.

  Args:
    g: a graph fetched with `jax.device_get`.
    b: the game index.
    config: the search's `SearchConfig`.
    legal_of: optional `node_index -> bool[A]`, the legal mask of the node's
      stored state, to check that no illegal action has an edge.
  """
  used = int(g.nodes_used[b])
  child = g.child[b, :used]
  edge_visits = g.edge_visits[b, :used]
  visits = g.visits[b, :used]
  assert 1 <= used <= g.visits.shape[1]
  # Slots not yet used hold `graph_lib.empty`'s blank values (`write_node`
  # relies on it).
  blank = dict(visits=0, value_sum=0.0, nn_value=0.0, prior=0.0, num_parents=0,
               child=graph_lib.UNEXPANDED, edge_visits=0, edge_q=0.0, edge_reward=0.0,
               edge_discount=0.0)
  for name, value in blank.items():
    assert np.all(np.asarray(getattr(g, name))[b, used:] == value), name
  # So do the enhancements' records (their node fields).
  records = {"solver": dict(solved=0, end_in_ply=0, bounds=graph_lib.UNBOUNDED),
             "pruning": dict(pruned=False), "rave": dict(visits=0, q=0.0)}
  for record, fields in records.items():
    for name, value in fields.items():
      if record in g.enhancements:
        array = np.asarray(getattr(g.enhancements[record], name))
        assert np.all(array[b, used:] == value), (record, name)
  # Every stored child index points at a stored node.
  assert np.all((child < used) & (child >= graph_lib.ILLEGAL))
  # Visit conservation: a node's visits are its own evaluation plus one per
  # simulation that left it through an edge.
  np.testing.assert_array_equal(visits, 1 + edge_visits.sum(axis=-1))
  # (Disconnected exploration trajectories are backed up below the root only.)
  assert edge_visits[0].sum() == g.stats["simulations"][b] - g.stats["disconnected"][b]
  # Values in range.
  visited = edge_visits > 0
  q = g.edge_q[b, :used][visited]
  assert np.all((q >= config.value_min - 1e-5) & (q <= config.value_max + 1e-5))
  v = g.value_sum[b, :used] / visits
  assert np.all((v >= config.value_min - 1e-5) & (v <= config.value_max + 1e-5))
  assert np.all(np.isfinite(g.prior[b, :used]))
  # Illegal edges are never visited and have no prior mass.
  illegal = child == graph_lib.ILLEGAL
  assert not np.any(visited & illegal)
  assert np.all(g.prior[b, :used][illegal] == 0)
  if legal_of is not None:
    for i in range(used):
      np.testing.assert_array_equal(~illegal[i], legal_of(i))
  # Parent counts.
  parents = np.zeros(used, np.int64)
  for c in child[child >= 0]:
    parents[c] += 1
  np.testing.assert_array_equal(parents, g.num_parents[b, :used])
  # Each node lists nodes its parent edges leave, one a slot (-1 in the free
  # ones): all of them where its count equals the listed ones.
  rows = np.asarray(g.parents[b])
  assert np.all(rows[used:, 1:] == -1)
  for node in range(used):
    listed = sorted(x for x in rows[node, 1:].tolist() if x >= 0)
    sources = sorted(np.nonzero(child == node)[0].tolist())
    if len(listed) == len(sources):
      assert listed == sources, (node, listed, sources)
    else:
      assert len(listed) < len(sources) and not set(listed) - set(sources), (node, listed, sources)
  assert parents[0] == 0
  if not config.links_transpositions:
    assert np.all(parents[1:] == 1)
  # Acyclic, and every node reachable from the root. Keys that leave out the
  # ply can close cycles through links (counted in `cycles`): then only
  # reachability is checked.
  cycles = int(g.stats["cycles"][b])
  if cycles == 0:
    order = _topological_order(child, parents)
    assert len(order) == used, "cycle or unreachable node"
  else:
    order = _reachable_order(child)
    assert len(order) == used, "unreachable node"
  # Hash table: every indexed key sits at its node, keys are unique.
  if config.uses_table:
    nodes = g.table.nodes[b]
    stored = nodes != graph_lib.EMPTY
    table_keys = g.table.stored_keys[b][stored]
    np.testing.assert_array_equal(table_keys, g.key[b][nodes[stored]])
    assert len({tuple(k) for k in table_keys}) == len(table_keys)
    if g.stats["table_overflows"][b] == 0:
      graph_keys = {tuple(k) for k in g.key[b, :used]}
      assert graph_keys == {tuple(k) for k in table_keys}
      if config.links_transpositions:
        # One node per key, but for the fresh nodes that stood in for links
        # closing a cycle (not indexed).
        assert stored.sum() == len(graph_keys)
        assert used - cycles <= stored.sum() <= used
  return order


def _reachable_order(child):
  """Nodes reachable from the root, depth first."""
  seen, frontier = {0}, [0]
  while frontier:
    n = frontier.pop()
    for c in child[n][child[n] >= 0]:
      if int(c) not in seen:
        seen.add(int(c))
        frontier.append(int(c))
  return sorted(seen)


def _topological_order(child, parents):
  """Kahn's algorithm from the root; `parents` is each node's in-degree."""
  indegree = parents.copy()
  frontier = [0] if indegree[0] == 0 else []
  order = []
  while frontier:
    n = frontier.pop()
    order.append(n)
    for c in child[n][child[n] >= 0]:
      indegree[c] -= 1
      if indegree[c] == 0:
        frontier.append(c)
  return order
