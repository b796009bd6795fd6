"""Graph reuse between moves: `advance` keeps exactly the subgraph reachable
from the played child (checked against a BFS on the host), the result is a
valid graph to search on, `reroot` falls back to a fresh root, and node fields
the graph gains later move with their nodes."""

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax import expansion
import mcgs_jax
from mcgs_jax.envs import nim
from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table
from tests import invariants
from tests.fake_evals import HashEval
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
run_jit = jax.jit(mcgs_jax.run_simulations, static_argnames=STATIC)
reroot_jit = jax.jit(mcgs_jax.reroot, static_argnames=STATIC)
advance_jit = jax.jit(mcgs_jax.advance, static_argnames=("config",))
summarize_jit = jax.jit(mcgs_jax.summarize, static_argnames=("config",))

ENV = envs.make("nim-piles:1,3,5")
# A flat value keeps the search broad: many transpositions in "mcgs" mode.
EVAL = HashEval(ENV.num_actions, value_scale=0.5)
PILES = [(1, 3, 5), (1, 2, 4)]
SIMS = 48
NODE_FIELDS = [f.name for f in dataclasses.fields(graph_lib.Graph)
               if f.name not in graph_lib.GAME_FIELDS]
COMPARED = ("visits", "value_sum", "nn_value", "prior", "key",
            "edge_visits", "edge_q", "edge_reward", "edge_discount")


def make_config(backup="mcgs", **kwargs):
  return mcgs_jax.SearchConfig(num_simulations=SIMS, backup=backup, **kwargs)


def states(piles=PILES):
  return envs.stack([nim.state_from_piles(ENV, p) for p in piles])


@functools.cache
def searched(backup):
  """(search output on device, its host copy) from the PILES positions."""
  out = search_jit(None, jax.random.PRNGKey(0), states(), ENV, EVAL, make_config(backup))
  return out, jax.device_get(out)


def best_stored_action(g):
  """Per game, the most visited root action whose edge leads to a stored node."""
  visits = np.where(g.child[:, 0] >= 0, g.edge_visits[:, 0], -1)
  return visits.argmax(-1).astype(np.int32)


@functools.cache
def advanced(backup):
  """(advanced graph on device, its host copy, the action) for `searched`."""
  _, host = searched(backup)
  action = best_stored_action(host.graph)
  graph, kept = advance_jit(searched(backup)[0].graph, action, make_config(backup))
  assert np.all(np.asarray(kept))
  return graph, jax.device_get(graph), action


def reachable(child, start):
  """Host BFS over `child` [N, A] edges from node `start`."""
  seen, frontier = {start}, [start]
  while frontier:
    node = frontier.pop()
    for c in child[node]:
      if c >= 0 and c not in seen:
        seen.add(int(c))
        frontier.append(int(c))
  return seen


def game(tree, b):
  return jax.tree.map(lambda x: np.asarray(x)[b], tree)


def assert_trees_equal(a, b):
  jax.tree.map(np.testing.assert_array_equal, a, b)


def legal_checker(g, b):
  return lambda i: np.asarray(g.embedding.legal_action_mask[b, i])


def check_rerooted(g, b, config):
  """`check_graph` after a re-root. It counts the root's edge visits against
  stats["simulations"], which `advance` restarts from zero while the root's
  edges keep the reused visits, so that one count is matched to the root."""
  simulations = np.array(g.stats.simulations)
  simulations[b] = g.edge_visits[b, 0].sum()
  return invariants.check_graph(g.replace(stats=g.stats.replace(simulations=simulations)), b,
                                config, legal_checker(g, b))


def blank_graph(g):
  return jax.device_get(graph_lib.empty(
      g.batch_size, g.capacity, g.num_actions, g.table.nodes.shape[-1],
      jax.tree.map(lambda x: x[:, 0], g.embedding)))


def find_all(table, keys, max_probes):
  """(node, free_slot) of each key (`hash_table.find`), on the host."""
  return jax.device_get(jax.vmap(hash_table.find, in_axes=(None, 0, None))(
      jax.tree.map(jnp.asarray, table), jnp.asarray(keys), max_probes))


def assert_restricted(old, new, b, start):
  """Game `b` of `new` is `old` re-rooted at `start`: the BFS-reachable nodes
  in order (root first), their fields and remapped edges, cleared slots after."""
  order = [start] + sorted(reachable(old.child[b], start) - {start})
  used = len(order)
  new_of_old = {o: i for i, o in enumerate(order)}
  assert int(new.nodes_used[b]) == used
  for name in COMPARED:
    np.testing.assert_array_equal(getattr(new, name)[b, :used],
                                  getattr(old, name)[b, order], err_msg=name)
  assert_trees_equal(jax.tree.map(lambda x: x[b, :used], new.embedding),
                     jax.tree.map(lambda x: x[b, order], old.embedding))
  old_child = old.child[b, order]
  remapped = np.vectorize(lambda c: new_of_old[c] if c >= 0 else c)(old_child)
  np.testing.assert_array_equal(new.child[b, :used], remapped)
  parents = np.bincount(remapped[remapped >= 0], minlength=used)
  np.testing.assert_array_equal(new.num_parents[b, :used], parents)
  assert parents[0] == 0
  assert new.visits[b, 0] == old.visits[b, start]
  blank = blank_graph(new)
  for name in NODE_FIELDS:
    assert_trees_equal(jax.tree.map(lambda x: x[b, used:], getattr(new, name)),
                       jax.tree.map(lambda x: x[b, used:], getattr(blank, name)))
  return used


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree", "tt_cache"],
                                                        fast=["mcgs"]))
def test_advance_keeps_the_reachable_subgraph(backup):
  config = make_config(backup)
  _, out = searched(backup)
  old = out.graph
  _, new, action = advanced(backup)
  for b in range(len(PILES)):
    start = int(old.child[b, 0, action[b]])
    used = assert_restricted(old, new, b, start)
    assert 1 < used < old.nodes_used[b]
    assert all(int(v) == 0 for k, v in game(new.stats, b).items() if k != "nodes_used")
    check_rerooted(new, b, config)
    # Every kept key is found at its (first) node in the rebuilt table.
    found, _ = find_all(game(new.table, b), new.key[b, :used], config.max_probes)
    if backup == "tree":
      assert np.all(new.table.nodes[b] == graph_lib.EMPTY)
    elif backup == "mcgs":
      np.testing.assert_array_equal(found, np.arange(used))
    else:
      assert np.all((found >= 0) & (found <= np.arange(used)))
      np.testing.assert_array_equal(new.key[b, found], new.key[b, :used])
  if backup == "mcgs":
    assert new.num_parents.max() > 1   # the kept part is a DAG, not a tree


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree", "tt_cache"],
                                                        fast=["mcgs"]))
def test_search_continues_from_the_advanced_graph(backup):
  config = make_config(backup)
  _, new, _ = advanced(backup)
  graph = run_jit(None, jax.random.PRNGKey(1), advanced(backup)[0], ENV, EVAL, config)
  out = jax.device_get(summarize_jit(graph, config))
  np.testing.assert_array_equal(out.graph.visits[:, 0], new.visits[:, 0] + SIMS)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), new.edge_visits[:, 0].sum(-1) + SIMS)
  np.testing.assert_array_equal(out.stats.simulations, SIMS)
  for b in range(len(PILES)):
    check_rerooted(out.graph, b, config)
    assert out.graph.embedding.legal_action_mask[b, 0, out.action[b]]


def test_batch_with_games_not_kept():
  """Per game: a kept child, an illegal move, a move that ends the game."""
  config = make_config()
  device_out, out = searched("mcgs")
  old = out.graph
  best = best_stored_action(old)
  illegal = int(np.flatnonzero(old.child[1, 0] == graph_lib.ILLEGAL)[0])
  new, kept = jax.device_get(advance_jit(device_out.graph, np.array([best[0], illegal]), config))
  np.testing.assert_array_equal(kept, [True, False])
  assert_restricted(old, new, 0, int(old.child[0, 0, best[0]]))
  assert new.nodes_used[1] == 0 and new.stats["table_overflows"][1] == 0
  assert_trees_equal(game(new, 1), game(blank_graph(new), 1))
  # Taking the last 3 stones ends the game: no stored child.
  end = search_jit(None, jax.random.PRNGKey(0), states([(1, 3, 5), (0, 0, 3)]), ENV, EVAL, config)
  take_3 = 2 * ENV.take_limit + 2
  assert int(end.graph.child[1, 0, take_3]) == graph_lib.TERMINAL
  new, kept = advance_jit(end.graph, jnp.array([best[0], take_3]), config)
  np.testing.assert_array_equal(kept, [True, False])
  np.testing.assert_array_equal(new.nodes_used, [int(new.nodes_used[0]), 0])


@pytest.mark.parametrize("max_edges", [4, 2 * (SIMS + 1)])
def test_reachable_nodes_from_every_stored_node(max_edges):
  """The walk over the edge list (every game's edges fit) and the one over
  the edge slots (they do not: max_edges 4) both give the host BFS's nodes
  and each kept node's count of edges from kept nodes."""
  _, out = searched("mcgs")
  child = out.graph.child
  walk = jax.jit(functools.partial(mcgs_jax.reuse.reachable_nodes, links=True,
                                   max_edges=max_edges))
  for node in range(int(out.graph.nodes_used.min())):
    starts = np.full(child.shape[0], node, np.int32)
    if node == 0:
      starts[-1] = -1   # a game with nothing kept
    reach, parents = jax.device_get(walk(child, starts))
    for b in range(child.shape[0]):
      expected = reachable(child[b], node) if starts[b] >= 0 else set()
      assert set(np.flatnonzero(reach[b])) == expected
      edges = [c for row in child[b][sorted(expected)] for c in row if c >= 0]
      np.testing.assert_array_equal(parents[b], np.bincount(edges, minlength=child.shape[1]))


def test_reachable_nodes_along_the_listed_parents():
  """Where every node lists all its parents, both walks along them (the
  rows' and the bits') give the host BFS's nodes and counts; a game with a
  node that lists fewer parents than it has sends the batch along the
  edges, with the same result."""
  _, out = searched("mcgs")
  child, rows = out.graph.child, np.array(out.graph.parents)
  # A game whose transposition node lost a listed parent.
  linked = np.argwhere(rows[..., 0] > 1)[0]
  rows[linked[0], linked[1], 1:] = np.where(
      rows[linked[0], linked[1], 1:] == rows[linked[0], linked[1], 1:].max(), -1,
      rows[linked[0], linked[1], 1:])
  complete = np.asarray(mcgs_jax.reuse._lists_all_parents(rows))
  assert complete.any() and not complete.all()
  walks = [jax.jit(jax.vmap(walk)) for walk in (mcgs_jax.reuse._reachable_by_rows,
                                                  mcgs_jax.reuse._reachable_by_bits)]
  along = jax.jit(functools.partial(mcgs_jax.reuse.reachable_nodes, links=True,
                                    max_edges=2 * (SIMS + 1)))
  games = np.flatnonzero(complete)
  for node in range(int(out.graph.nodes_used.min())):
    starts = np.full(child.shape[0], node, np.int32)
    walked = [jax.device_get(walk(rows[games, :, 1:], starts[games])) for walk in walks]
    chosen = jax.device_get(along(child, starts, parents=rows))
    for b in range(child.shape[0]):
      expected = reachable(child[b], node)
      edges = [c for row in child[b][sorted(expected)] for c in row if c >= 0]
      counts = np.bincount(edges, minlength=child.shape[1])
      results = [(chosen, b)]
      if b in games:
        results += [(result, int(np.searchsorted(games, b))) for result in walked]
      for (reach, parents), row in results:
        assert set(np.flatnonzero(reach[row])) == expected
        np.testing.assert_array_equal(parents[row], counts)


def test_walk_over_bits_counts_edges_and_spans_words():
  """The walk over sets of bits on a graph of 70 nodes (three words): a
  node two of whose edges come from one parent counts both, nodes past the
  first word are reached through parents in it and beyond, a node no edge
  reaches from the start is not, and a game with no start reaches nothing."""
  n, slots = 70, 3
  listed = np.full((n, slots), -1, np.int32)
  for node in range(1, n - 1):   # a chain 0 -> 1 -> ... -> 68
    listed[node, 0] = node - 1
  listed[40, 1] = 2              # a link from the first word into the second
  listed[65, 1:] = [33, 33]      # two edges from 33
  # 69 lists no parent: no walk but one from it reaches it.
  walk = jax.jit(jax.vmap(mcgs_jax.reuse._reachable_by_bits))
  reach, parents = jax.device_get(walk(np.stack([listed] * 3),
                                       np.array([0, 34, -1], np.int32)))
  np.testing.assert_array_equal(reach[0], np.arange(n) < n - 1)
  assert parents[0, 65] == 3 and parents[0, 40] == 2 and parents[0, 1] == 1
  # From 34: the chain below it, and 65 counts only its edge from 64.
  np.testing.assert_array_equal(np.flatnonzero(reach[1]), np.arange(34, n - 1))
  assert parents[1, 65] == 1 and parents[1, 34] == 0
  assert not reach[2].any() and not parents[2].any()


def test_moved_parents_renumbered_in_their_slots():
  """Kept parents renumbered where they are listed, a dropped one's slot
  freed; the count is the walk's, so a row that lost an unlisted parent
  edge's source still lists fewer than its count."""
  rows = jnp.array([[[0, -1, -1, -1], [3, 0, 2, 3], [4, 0, 1, 3], [1, 0, -1, -1],
                     [2, -1, 2, -1]]], jnp.int32)
  new_of_old = jnp.array([[1, -1, 0, 2, 3]], jnp.int32)   # old 1 dropped, old 2 the root
  count = jnp.array([[0, 3, 2, 1, 2]], jnp.int32)
  moved = mcgs_jax.reuse._moved_parents(rows, new_of_old, count, links=True)
  np.testing.assert_array_equal(moved[0], [[0, -1, -1, -1], [3, 1, 0, 2], [2, 1, -1, 2],
                                           [1, 1, -1, -1], [2, -1, 0, -1]])
  np.testing.assert_array_equal(mcgs_jax.reuse._lists_all_parents(moved), [False])
  np.testing.assert_array_equal(mcgs_jax.reuse._lists_all_parents(moved[:, :4]), [True])
  tree_rows = jnp.array([[[0, -1, -1, -1], [1, 0, -1, -1], [1, 1, -1, -1]]], jnp.int32)
  moved = mcgs_jax.reuse._moved_parents(tree_rows, jnp.array([[-1, 0, 1]], jnp.int32),
                                        jnp.array([[0, 0, 1]], jnp.int32), links=False)
  np.testing.assert_array_equal(moved[0], [[0, -1, -1, -1], [0, -1, -1, -1], [1, 0, -1, -1]])


def test_a_link_lists_its_parent_in_the_first_free_slot():
  """The expansion raises the count and writes the parent into the row's
  first free slot (one freed by re-rooting included); a full row keeps its
  slots, so the row lists fewer parents than its count."""
  rows = jnp.array([[0, -1, -1, -1], [2, 4, -1, 7], [3, 4, 5, 6]], jnp.int32)
  rows = expansion._add_parent(rows, jnp.int32(1), jnp.int32(9))
  rows = expansion._add_parent(rows, jnp.int32(2), jnp.int32(9))
  rows = expansion._add_parent(rows, jnp.int32(3), jnp.int32(9))   # out of range: nothing
  rows = expansion._add_parent(rows, jnp.int32(0), jnp.int32(8))
  np.testing.assert_array_equal(rows, [[1, 8, -1, -1], [3, 4, 9, 7], [4, 4, 5, 6]])
  np.testing.assert_array_equal(
      mcgs_jax.reuse._lists_all_parents(rows[None]), [False])
  np.testing.assert_array_equal(
      mcgs_jax.reuse._lists_all_parents(rows[None, :2]), [True])


@pytest.mark.parametrize("num_actions,slots", [(7, 3), (15, 3), (16, 7), (28, 7)])
def test_nodes_list_more_parents_where_they_have_more_actions(num_actions, slots):
  graph = graph_lib.empty(2, 5, num_actions, 16, jnp.zeros((2, 3)))
  assert graph.parents.shape == (2, 5, 1 + slots) and slots == graph_lib.parent_slots(num_actions)
  np.testing.assert_array_equal(graph.parents[..., 0], 0)
  np.testing.assert_array_equal(graph.parents[..., 1:], -1)


@pytest.mark.parametrize("num_actions,max_edges", [(3, 40), (32, 40), (33, 40), (70, 40), (70, 5)])
def test_edge_list_holds_the_stored_edges_in_order(num_actions, max_edges):
  """Every game's stored edges, in (node, action) order, padded with -1 / N,
  and their count; with more edges than places (max_edges 5), the first
  ones. Rows of 33 and 70 slots span several words of bits."""
  rng = np.random.default_rng(num_actions)
  batch, n = 3, 9
  child = np.where(rng.random((batch, n, num_actions)) < 0.06,
                   rng.integers(0, n, (batch, n, num_actions)),
                   -rng.integers(1, 4, (batch, n, num_actions))).astype(np.int32)
  child[1] = graph_lib.UNEXPANDED   # a game without edges
  child[2, -1, -1] = n - 1          # the very last slot
  source, target, count = jax.device_get(
      jax.jit(mcgs_jax.reuse._edge_list, static_argnums=1)(jnp.asarray(child), max_edges))
  for b in range(batch):
    nodes, actions = np.nonzero(child[b] >= 0)
    assert count[b] == len(nodes)
    listed = min(len(nodes), max_edges)
    np.testing.assert_array_equal(source[b, :listed], nodes[:listed])
    np.testing.assert_array_equal(target[b, :listed], child[b][nodes, actions][:listed])
    assert np.all(source[b, listed:] == -1) and np.all(target[b, listed:] == n)


def _check_index(key, count, slots, overflows, max_probes):
  """Each key of the first `count` nodes is found at its first node or is
  left out, counted per node in `overflows`; nothing else is stored."""
  first = {}
  for node in range(count):
    first.setdefault(tuple(key[node]), node)
  table = graph_lib.HashTable(entries=graph_lib.table_entry(
      jnp.asarray(key[np.maximum(slots, 0)] * (slots >= 0)[:, None]), jnp.asarray(slots)))
  found, _ = find_all(table, key, max_probes)
  missing = [node for node in first.values() if found[node] != node]
  assert all(found[node] == graph_lib.EMPTY for node in missing)
  # Counted per node: a missing key's twins too.
  assert np.sum(found[:count] == graph_lib.EMPTY) == overflows
  assert sorted(slots[slots != graph_lib.EMPTY]) == sorted(set(first.values()) - set(missing))


@pytest.mark.parametrize("table_size,max_probes", [(64, 16), (16, 3), (8, 16)])
def test_index_nodes_finds_each_kept_key_at_its_first_node(table_size, max_probes):
  """Many twins (nodes of one position) and shared slots: each indexed key
  found at the first of its nodes, a key left out only when counted (a
  table too small, probe sequences too short)."""
  rng = np.random.default_rng(table_size + max_probes)
  batch, n = 6, 24
  key = rng.integers(0, 12, (batch, n, 2)).astype(np.uint32)
  count = np.array([n, 17, 9, 5, 1, 0], np.int32)
  index = jax.jit(jax.vmap(mcgs_jax.reuse._index_nodes, in_axes=(0, 0, None, None)),
                  static_argnums=(2, 3))
  table, overflows = jax.device_get(index(key, count, table_size, max_probes))
  for b in range(batch):
    _check_index(key[b], count[b], table.nodes[b], overflows[b], max_probes)
  assert (overflows == 0).all() if table_size == 64 else overflows[0] > 0


@pytest.mark.parametrize("table_size,max_probes,spills", [(64, 16, False), (16, 16, True),
                                                         (16, 3, False)])
def test_kept_table_finds_what_a_rebuilt_table_finds(table_size, max_probes, spills):
  """Where the old table lets itself be kept (no entry outside its home
  group, every kept node indexed), the kept table finds each kept key at
  its new node, holds as many keys in each group as a rebuilt table, and
  finds any other key absent, with a free slot in the group a rebuilt table
  gives it; elsewhere it says so. Small tables spill, twins leave nodes
  out."""
  rng = np.random.default_rng(table_size + max_probes)
  batch, n = 40, 14
  key = rng.integers(0, 2**32, (batch, n, 2), dtype=np.uint32)
  key[:8, 5] = key[:8, 2]  # twins
  count = rng.integers(0, n + 1, batch).astype(np.int32)
  index = jax.jit(jax.vmap(mcgs_jax.reuse._index_nodes, in_axes=(0, 0, None, None)),
                  static_argnums=(2, 3))
  old_table, old_overflows = index(key, count, table_size, max_probes)
  node = np.arange(n)[None, :]
  start = np.where(count > 0, rng.integers(0, n, batch) % np.maximum(count, 1), -1)
  reach = (rng.random((batch, n)) < 0.6) & (node < count[:, None]) | (node == start[:, None])
  reach &= start[:, None] >= 0
  new_of_old, old_of_new, new_count = jax.vmap(mcgs_jax.reuse._compaction)(
      jnp.asarray(reach), jnp.asarray(start, jnp.int32))
  new_key = np.where((node < np.asarray(new_count)[:, None])[..., None],
                     np.take_along_axis(key, np.asarray(old_of_new)[..., None], axis=1), 0)
  kept, fits = jax.device_get(jax.jit(mcgs_jax.reuse._kept_table)(
      old_table, new_of_old, new_count))
  rebuilt, overflows = jax.device_get(index(new_key.astype(np.uint32), new_count, table_size,
                                            max_probes))
  old_table, old_overflows = jax.device_get((old_table, old_overflows))
  homes = np.asarray(jax.vmap(jax.vmap(lambda k: hash_table.home_slot(k, table_size)))(
      jnp.asarray(old_table.stored_keys)))
  group = min(hash_table.PROBE_GROUP, table_size)
  spilled = 0
  for b in range(batch):
    occupied = old_table.nodes[b] >= 0
    in_group = np.all(homes[b][occupied] // group == np.flatnonzero(occupied) // group)
    old_keys = {tuple(k) for k in old_table.stored_keys[b][occupied]}
    indexed = set(np.asarray(new_of_old)[b][old_table.nodes[b][occupied]]) - {-1}
    assert fits[b] == (in_group and indexed == set(range(new_count[b]))), b
    spilled += not in_group and indexed == set(range(new_count[b]))
    if not fits[b]:
      continue
    assert len({tuple(k) for k in new_key[b, :new_count[b]]} & old_keys) == new_count[b]
    _check_index(new_key[b], new_count[b], kept.nodes[b], 0, max_probes)
    np.testing.assert_array_equal((kept.nodes[b] >= 0).reshape(-1, group).sum(-1),
                                  (rebuilt.nodes[b] >= 0).reshape(-1, group).sum(-1))
    assert overflows[b] == 0
    absent = rng.integers(0, 2**32, (20, 2), dtype=np.uint32)
    kept_found, kept_free = find_all(game(kept, b), absent, max_probes)
    rebuilt_found, rebuilt_free = find_all(game(rebuilt, b), absent, max_probes)
    assert np.all(kept_found == graph_lib.EMPTY) and np.all(rebuilt_found == graph_lib.EMPTY)
    np.testing.assert_array_equal(kept_free // group, rebuilt_free // group)
  assert fits.any() and not fits.all() and bool(spilled) == spills


@chex.dataclass(frozen=True)
class TaggedGraph(graph_lib.Graph):
  """A graph with a node field `Graph` does not have."""
  tag: chex.Array   # f32[B, N, 2]


def test_node_fields_move_with_their_nodes():
  config = make_config()
  device_out, out = searched("mcgs")
  old = out.graph
  b_n = old.visits.shape
  ids = (np.arange(b_n[0])[:, None] * 1000 + np.arange(b_n[1])[None, :]).astype(np.int32)
  tagged = TaggedGraph(**{f.name: getattr(device_out.graph, f.name)
                          for f in dataclasses.fields(graph_lib.Graph)},
                       tag=jnp.stack([ids, -ids], axis=-1).astype(jnp.float32))
  tagged = tagged.replace(nn_value=jnp.asarray(ids + 7, jnp.float32))
  action = best_stored_action(old)
  new, kept = jax.device_get(advance_jit(tagged, action, config))
  assert isinstance(new, TaggedGraph) and np.all(kept)
  for b in range(b_n[0]):
    start = int(old.child[b, 0, action[b]])
    order = [start] + sorted(reachable(old.child[b], start) - {start})
    used = len(order)
    np.testing.assert_array_equal(new.nn_value[b, :used], ids[b, order] + 7)
    np.testing.assert_array_equal(new.tag[b, :used, 0], ids[b, order])
    np.testing.assert_array_equal(new.tag[b, :used, 1], -ids[b, order])
    assert np.all(new.nn_value[b, used:] == 0) and np.all(new.tag[b, used:] == 0)
  bad = tagged.replace(tag=jnp.zeros((b_n[0], 3)))
  with pytest.raises(ValueError, match="tag"):
    mcgs_jax.advance(bad, action, config)


def test_play_games_with_reroot():
  """Whole games, searching from the re-rooted graph after every move; at the
  first move game 1 plays a move the search never tried (fresh root)."""
  config = make_config()
  state = states()
  rng = jax.random.PRNGKey(0)
  out = search_jit(None, rng, state, ENV, EVAL, config)
  reused = fresh_roots = 0
  for move in range(ENV.max_game_length + 1):
    if np.all(np.asarray(state.terminated)):
      break
    old = jax.device_get(out.graph)
    action = np.array(out.action)
    if move == 0:
      untried = np.flatnonzero(old.child[1, 0] == graph_lib.UNEXPANDED)
      assert untried.size, "every root move was tried; lower SIMS"
      action[1] = untried[0]
    next_state = ENV.step(state, jnp.asarray(action))
    rng, sub = jax.random.split(rng)
    graph = reroot_jit(None, sub, out.graph, action, next_state, ENV, EVAL, config)
    host = jax.device_get(graph)
    fresh = jax.device_get(init_jit(None, sub, next_state, ENV, EVAL, config))
    for b in range(len(PILES)):
      code = int(old.child[b, 0, action[b]])
      if code >= 0:
        reused += 1
        assert host.visits[b, 0] == old.visits[b, code]
        np.testing.assert_array_equal(host.key[b, 0], np.asarray(next_state.key[b]))
      else:
        fresh_roots += 1
        assert_trees_equal(game(host, b), game(fresh, b))
    graph = run_jit(None, sub, graph, ENV, EVAL, config)
    out = summarize_jit(graph, config)
    host = jax.device_get(out.graph)
    for b in range(len(PILES)):
      check_rerooted(host, b, config)
    state = next_state
  assert np.all(np.asarray(state.terminated))
  assert reused > 2 and fresh_roots >= 1


def test_reroot_ignores_a_graph_of_another_state_and_adds_root_noise():
  config = make_config()
  device_out, out = searched("mcgs")
  action = best_stored_action(out.graph)
  # A next state that is not the played child: the graph must not be reused.
  other = states([(0, 3, 5), (0, 2, 4)])
  graph = reroot_jit(None, jax.random.PRNGKey(1), device_out.graph, action, other,
                     ENV, EVAL, config)
  assert_trees_equal(jax.device_get(graph),
                     jax.device_get(init_jit(None, jax.random.PRNGKey(1), other, ENV,
                                             EVAL, config)))
  # The played child, with root noise: only the new root's prior changes.
  child = ENV.step(states(), jnp.asarray(action))
  noisy = jax.device_get(reroot_jit(None, jax.random.PRNGKey(1), device_out.graph, action,
                                    child, ENV, EVAL, make_config(dirichlet_fraction=0.5)))
  _, plain, _ = advanced("mcgs")
  assert_trees_equal(noisy.replace(prior=plain.prior), plain)
  legal = plain.child[:, 0] != graph_lib.ILLEGAL
  assert not np.allclose(noisy.prior[:, 0], plain.prior[:, 0])
  np.testing.assert_allclose(noisy.prior[:, 0].sum(-1), 1.0, rtol=1e-5)
  assert np.all(noisy.prior[:, 0][~legal] == 0)
  np.testing.assert_array_equal(noisy.prior[:, 1:], plain.prior[:, 1:])


def _reroot_by_selection(params, rng, graph, action, next_state, env, eval_fn, config):
  """`reroot` as the composition it stands for: the advanced graph where it
  holds the played child, else a whole fresh graph (`init`)."""
  init_rng, noise_rng = jax.random.split(rng)
  advanced_graph, kept = mcgs_jax.advance(graph, action, config)
  fresh = mcgs_jax.init(params, init_rng, next_state, env, eval_fn, config)
  kept &= jnp.all(advanced_graph.key[:, 0] == fresh.key[:, 0], axis=-1)
  advanced_graph = mcgs_jax.policies.renoise_roots(noise_rng, advanced_graph, config)
  advanced_graph = mcgs_jax.policies.with_root_gumbel(
      jax.random.fold_in(noise_rng, 1), advanced_graph,
      advanced_graph.child[:, 0] != graph_lib.ILLEGAL, config)
  return jax.tree.map(
      lambda a, f: jnp.where(kept.reshape(kept.shape + (1,) * (a.ndim - 1)), a, f),
      advanced_graph, fresh)


@pytest.mark.parametrize("options", [
    dict(dirichlet_fraction=0.25, dirichlet_alpha=0.3),
    dict(backup="tree", dirichlet_fraction=0.25, dirichlet_alpha=0.3),
    dict(root_policy="gumbel", max_considered_actions=4),
    dict(solver=True),
], ids=["mcgs-dirichlet", "tree", "gumbel", "solver"])
def test_reroot_is_the_advanced_graph_or_a_fresh_one(options):
  """Game 0 plays its most visited move, game 1 an untried one, game 2 is
  given a state that is not the played child: `reroot` writes fresh roots
  into the games it cannot keep, equal (bit for bit) to selecting between
  the advanced graph and a whole fresh one."""
  config = make_config(**options)
  piles = [(1, 3, 5), (1, 2, 4), (0, 3, 5)]
  state = states(piles)
  out = search_jit(None, jax.random.PRNGKey(0), state, ENV, EVAL, config)
  host = jax.device_get(out.graph)
  action = best_stored_action(host)
  untried = np.flatnonzero(host.child[1, 0] == graph_lib.UNEXPANDED)
  assert untried.size, "every root move was tried; lower SIMS"
  action[1] = untried[0]
  next_state = ENV.step(state, jnp.asarray(action))
  other = states([(1, 3, 5), (1, 2, 4), (0, 1, 1)])
  next_state = jax.tree.map(lambda n, o: n.at[2].set(o[2]), next_state, other)
  args = (None, jax.random.PRNGKey(3), out.graph, jnp.asarray(action), next_state)
  graph = jax.device_get(reroot_jit(*args, ENV, EVAL, config))
  expected = jax.device_get(jax.jit(_reroot_by_selection, static_argnames=STATIC)(
      *args, ENV, EVAL, config))
  assert_trees_equal(graph, expected)
  assert graph.stats.nodes_used[0] > 1
  np.testing.assert_array_equal(graph.stats.nodes_used[1:], 1)
