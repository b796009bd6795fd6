"""Graph reuse between moves: re-root the search graph at the played child.

After a move, the subgraph below the reached child holds statistics that the
next search would otherwise recompute. `advance` keeps exactly the nodes
reachable from that child (in "mcgs" mode a node may have several parents, so
reachability is computed over the whole DAG, not a subtree), compacts them to
indices 0..M-1 with the new root at 0 and keeps (or rebuilds) the hash table; `reroot`
adds the fallback to a fresh root and fresh root noise, for play loops:

  out = search(...) -> state = env.step(state, out.action)
  -> graph = reroot(..., out.graph, out.action, state, ...)
  -> graph = run_simulations(..., graph, ...) -> out = summarize(graph, ...)

Everything is batched over B games, runs on device and is jittable (`config`
static; `env` and `eval_fn` static for `reroot`).
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import engine
from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table
from mcgs_jax import policies
from mcgs_jax import rules

# Graph fields without a node axis; every other field is [B, N, ...] and is
# moved with its node, so node fields added to `Graph` later need no edits here.
# The enhancements' records are moved the same way, by what they declare
# (`graph.EnhancementState`).
_NOT_NODE_FIELDS = graph_lib.GAME_FIELDS


def _node_fields(record: object, game_fields: tuple[str, ...]) -> list[str]:
  return [f.name for f in dataclasses.fields(record) if f.name not in game_fields]


def _jump_table(parent: chex.Array) -> chex.Array:
  """Pointer-jumping tables over one parent pointer per node, for ONE game.

  Args:
    parent: int32[N], a parent of each node, or -1 for none.

  Returns:
    int32[N, ceil(log2 N)]: column k maps each node to its 2^k-th ancestor
    along the pointers (saturating at a node without a parent), for 2^k < N,
    so `_close` follows any such chain in log2(N) steps.
  """
  n = parent.shape[0]
  up = jnp.where(parent >= 0, parent, jnp.arange(n, dtype=jnp.int32))
  # A loop, not unrolled steps: XLA would fuse the unrolled chain of gathers
  # into one kernel that recomputes each step twice per read of it.
  _, jumps = jax.lax.scan(lambda up, _: (up[up], up), up, length=max(1, (n - 1).bit_length()))
  # Node-major: a batch's tables are then [B, N, K] as they are made, and a
  # loop that closes over them reads them in place, not a transposed copy
  # made each time it starts (vmap batches a scan's rows on axis 1).
  return jumps.T


def _ancestor_jumps(child: chex.Array) -> chex.Array:
  """`_jump_table` over the highest-numbered parent of each node, found by
  one scatter over ONE game's edges `child` (int32[N, A], node indices or
  negative codes)."""
  n, num_actions = child.shape
  index = jnp.arange(n, dtype=jnp.int32)
  parent = jnp.full(n, -1, jnp.int32).at[jnp.where(child >= 0, child, n).reshape(-1)].max(
      jnp.repeat(index, num_actions), mode="drop")
  return _jump_table(parent)


def _close(seeds: chex.Array, jumps: chex.Array) -> chex.Array:
  """bool[N]: the seeds and every node whose chain of parent pointers
  (`_jump_table`) passes through a seed."""
  return jax.lax.fori_loop(0, jumps.shape[1], lambda k, reach: reach | reach[jumps[:, k]], seeds)


def _follow_links(reach, jumps, parents_of):
  """The closure of `reach` (bool[N], closed under `jumps`) along every
  edge: the nodes with edges from reached nodes (`parents_of(reach)`,
  int32[N], their number) are added and the closure taken again, until
  nothing is added. Returns (reach, parents int32[N]: the edges from reached
  nodes into each node)."""

  def grow(carry):
    reach, parents, _ = carry
    reach = _close(reach | (parents > 0), jumps)
    return (reach,) + added(reach)

  def added(reach):
    parents = parents_of(reach)
    return parents, jnp.any((parents > 0) & ~reach)

  reach, parents, _ = jax.lax.while_loop(lambda carry: carry[2], grow, (reach,) + added(reach))
  return reach, parents


def _edges_into(targets: chex.Array, n: int) -> chex.Array:
  """int32[N]: how many of the edges `targets` (int32[E], N for none) lead
  into each node."""
  return jnp.zeros(n, jnp.int32).at[targets].add(1, mode="drop")


def _reachable(child: chex.Array, start: chex.Array, links: bool):
  """Nodes reachable from `start` along `child` edges, for ONE game.

  Each node keeps one parent pointer (`_ancestor_jumps`), and the nodes
  below the reached ones along those pointers are reached in log2(N)
  gathers. Without transposition links every node has one parent, so that
  is all. With links a node may be reached only through another parent:
  the edges out of the reached nodes are followed (one scatter) and the
  closure taken again, until nothing is added, usually after one or two
  such passes however deep the graph (links can also point from a later
  node to an earlier one, so no pass in index order would do).
  `_reachable_listed` does the same on a list of the edges.

  Args:
    child: int32[N, A], node indices or negative codes.
    start: int32, a node index, or negative for none.
    links: whether the graph may hold transposition links (several parents
      per node). Static.

  Returns:
    (reach, parents): bool[N]; with `links`, int32[N], the number of edges
    from reached nodes into each node (None without).
  """
  n = child.shape[0]
  jumps = _ancestor_jumps(child)
  reach = _close(jnp.arange(n) == start, jumps)
  if not links:
    return reach, None

  return _follow_links(reach, jumps, lambda reach: _edges_into(
      jnp.where(reach[:, None] & (child >= 0), child, n).reshape(-1), n))


# Edge slots read as one word of bits (`_edge_list`).
_WORD = 32


def _set_bit_of_rank(bits: chex.Array, rank: chex.Array, width: int) -> chex.Array:
  """int32: where each word's `rank`-th set bit (from 0) lies: the highest
  bit with at most `rank` set bits below it, found by a binary search.

  Args:
    bits: uint32 words of `width` bits.
    rank: int32, the same shape.
    width: bits per word, a power of two. Static.
  """
  bit = jnp.zeros(rank.shape, jnp.int32)
  step = width // 2
  while step:
    below = jax.lax.population_count(
        bits & ((jnp.uint32(1) << (bit + step).astype(jnp.uint32)) - 1)).astype(jnp.int32)
    bit = jnp.where(below <= rank, bit + step, bit)
    step //= 2
  return bit


def _edge_list(child: chex.Array, max_edges: int):
  """Every game's stored edges (those into nodes) as a list.

  Each node's row of edge slots is read as ceil(A / 32) words of bits, one
  per stored edge, in one pass over the N * A slots; every later step is
  over the words or the L places. Each word holding edges marks the place
  of its first edge and a running maximum carries the mark to the places
  after it, so each place knows its word; bit counts find its slot in the
  word. (Placing each slot's edge by a scatter over all N * A slots, after
  counting the edges before it, costs several times more on XLA's CPU.)

  Args:
    child: int32[B, N, A], node indices or negative codes.
    max_edges: L, the list's length. Static.

  Returns:
    (source, target, count): int32[B, L] each, every game's edges in
    (node, action) order, padded with source -1 and target N; and int32[B],
    the number of stored edges (> L: the list holds only the first L).
  """
  batch, n, num_actions = child.shape
  words_per_node = -(-num_actions // _WORD)
  words = n * words_per_node
  stored = jnp.pad(child >= 0, ((0, 0), (0, 0), (0, words_per_node * _WORD - num_actions)))
  bits = jnp.sum(stored.reshape(batch, words, _WORD).astype(jnp.uint32)
                 << jnp.arange(_WORD, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)
  per_word = jax.lax.population_count(bits).astype(jnp.int32)
  word_end = jax.lax.associative_scan(jnp.add, per_word, axis=1)
  count = word_end[:, -1]

  # Flat indices: XLA's CPU runs one-dimensional gathers and scatters faster
  # than batched ones.
  game = jnp.arange(batch, dtype=jnp.int32)[:, None]
  first_place = word_end - per_word
  marks = jnp.zeros(batch * max_edges, jnp.int32).at[
      jnp.where((per_word > 0) & (first_place < max_edges), game * max_edges + first_place,
                batch * max_edges).reshape(-1)].max(
                    jnp.broadcast_to(jnp.arange(words, dtype=jnp.int32), (batch, words)).reshape(-1),
                    mode="drop")
  # Barriers keep each running result in one kernel, not recomputed by each
  # of its readers.
  word = jax.lax.optimization_barrier(
      jax.lax.associative_scan(jnp.maximum, marks.reshape(batch, max_edges), axis=1))
  flat_word = game * words + word
  word_bits = bits.reshape(-1)[flat_word]
  place = jnp.arange(max_edges, dtype=jnp.int32)[None, :]
  rank = place - first_place.reshape(-1)[flat_word]
  bit = jax.lax.optimization_barrier(_set_bit_of_rank(word_bits, rank, _WORD))
  source = word // words_per_node
  action = jnp.minimum((word % words_per_node) * _WORD + bit, num_actions - 1)
  listed = place < count[:, None]
  target = child.reshape(-1)[(game * n + source) * num_actions + action]
  return jnp.where(listed, source, -1), jnp.where(listed, target, n), count


def _reachable_listed(source: chex.Array, target: chex.Array, start: chex.Array, n: int):
  """`_reachable` with links, for ONE game, from the list of all its edges
  (`_edge_list`).

  The same walk, but each pass scatters the L listed edges instead of all
  N * A edge slots: a graph holds few stored edges (one per node, plus its
  links) among many unexpanded ones.

  Args:
    source: int32[L], each edge's node, -1 past the list's end.
    target: int32[L], the node it leads to, N past the end.
    start: int32, a node index, or negative for none.
    n: N, the node capacity. Static.

  Returns:
    (reach bool[N], parents int32[N]), as `_reachable` with links.
  """
  parent = jnp.full(n, -1, jnp.int32).at[target].max(source, mode="drop")
  jumps = _jump_table(parent)
  reach = _close(jnp.arange(n) == start, jumps)

  return _follow_links(reach, jumps, lambda reach: _edges_into(
      jnp.where((source >= 0) & reach[jnp.maximum(source, 0)], target, n), n))


def _reachable_by_rows(listed: chex.Array, start: chex.Array):
  """`_reachable` with links, for ONE game, from the parents each node lists
  (`Graph.parents`), where every node lists all of its parents.

  The same walk, but no edge is scattered: one of each node's listed
  parents (the highest-numbered) is its pointer, and a pass gathers whether
  each node's listed parents are reached.

  Args:
    listed: int32[N, P], each node's parents (`Graph.parents[..., 1:]`).
    start: int32, a node index, or negative for none.

  Returns:
    (reach bool[N], parents int32[N]), as `_reachable` with links.
  """
  n = listed.shape[0]
  jumps = _jump_table(jnp.max(listed, axis=1))
  reach = _close(jnp.arange(n) == start, jumps)

  return _follow_links(reach, jumps, lambda reach: _reached_parents(listed, reach))


def _reached_parents(listed: chex.Array, reach: chex.Array) -> chex.Array:
  """int32[N]: how many of each node's listed parents (int32[N, P], -1 in
  free slots) are reached (bool[N]), a parent listed twice counted twice."""
  return jnp.sum((listed >= 0) & reach[jnp.maximum(listed, 0)], axis=1, dtype=jnp.int32)


# Above this many nodes a round of `_reachable_by_bits` (N * N / 32 words)
# costs more than the gathers of `_reachable_by_rows` (on Nim's and
# Connect-4's self-play graphs: cheaper or level up to N = 602, 2.7x dearer
# at N = 1602).
_BITS_MAX_NODES = 512


def _reachable_by_bits(listed: chex.Array, start: chex.Array):
  """`_reachable_by_rows` as a breadth-first walk over sets of bits, for
  ONE game, on graphs of at most `_BITS_MAX_NODES` nodes.

  Each node's listed parents become a set of N bits (ceil(N / 32) words,
  built once), and so do the reached nodes; a round adds every node whose
  parents meet the reached ones, an AND over [N, N / 32] words with no
  gather, until a round adds nothing (as many rounds as the walk is deep).
  `_reachable_by_rows` gathers at every step of its closures and passes,
  which XLA's CPU runs element by element: on Nim's self-play graphs
  (N = 130) this walk takes under a third of its time.

  Args:
    listed: int32[N, P], each node's parents (`Graph.parents[..., 1:]`).
    start: int32, a node index, or negative for none.

  Returns:
    (reach bool[N], parents int32[N]), as `_reachable` with links.
  """
  n = listed.shape[0]
  words = -(-n // _WORD)
  valid = listed >= 0
  safe = jnp.maximum(listed, 0)
  bit = jnp.left_shift(jnp.uint32(1), (safe & (_WORD - 1)).astype(jnp.uint32))
  # From `listed`, not `safe`: with `safe` shared by this and the count's
  # gather below, the walk took 7% longer (XLA's fusion, measured).
  word = jnp.where(valid, listed >> _WORD.bit_length() - 1, -1)
  in_word = word[:, :, None] == jnp.arange(words)
  # An OR, not a sum: a parent with two edges into a node is listed twice.
  parent_bits = jax.lax.reduce(jnp.where(in_word, bit[:, :, None], jnp.uint32(0)), jnp.uint32(0),
                               jax.lax.bitwise_or, (1,))

  def as_bits(reach):
    # The shifts made here: an array of them from outside the loop, which
    # the loop then carries, made the walk a fifth slower.
    padded = jnp.pad(reach, (0, words * _WORD - n)).reshape(words, _WORD)
    return jnp.sum(padded.astype(jnp.uint32) << jnp.arange(_WORD, dtype=jnp.uint32), axis=1,
                   dtype=jnp.uint32)

  def grow(carry):
    reach, _ = carry
    grown = reach | jnp.any((parent_bits & as_bits(reach)) != 0, axis=1)
    return grown, jnp.any(grown != reach)

  reach, _ = jax.lax.while_loop(lambda carry: carry[1], grow,
                                (jnp.arange(n) == start, start >= 0))
  return reach, _reached_parents(listed, reach)


def _lists_all_parents(parents: chex.Array) -> chex.Array:
  """bool[B]: whether each game's `Graph.parents` rows list every parent of
  their nodes: each node's count equals its listed parents (a row lists
  some of the node's parent edges, one a slot, so no fewer means all)."""
  return jnp.all(parents[..., 0] == jnp.sum(parents[..., 1:] >= 0, axis=-1, dtype=jnp.int32),
                 axis=1)


def reachable_nodes(child: chex.Array, start: chex.Array, links: bool, max_edges: int,
                    parents: chex.Array | None = None):
  """Every game's nodes reachable from its `start` (see `_reachable`).

  With `parents` (`Graph.parents`), the walk follows the parents each node
  lists when every game's nodes list all of theirs (`_reachable_by_bits`
  on graphs of at most `_BITS_MAX_NODES` nodes, `_reachable_by_rows` on
  larger ones).
  Otherwise, with links, it runs on each game's list of stored edges
  (`_edge_list`, L = `max_edges`) when every game's edges fit in it, and on
  the edge slots themselves otherwise (the same result, slower).

  Args:
    child: int32[B, N, A].
    start: int32[B], a node index per game, or negative for none.
    links: whether the graph may hold transposition links. Static.
    max_edges: L. Static.
    parents: optional int32[B, N, 1 + P], the graph's parent rows.

  Returns:
    (reach bool[B, N], parents int32[B, N] or None without links).
  """
  if parents is not None and not links:
    # Every node but a root lists its one parent.
    return jax.vmap(lambda listed, s: _close(jnp.arange(listed.shape[0]) == s,
                                             _jump_table(listed[:, 0])))(
                                                 parents[..., 1:], start), None
  if not links:
    return jax.vmap(lambda c, s: _reachable(c, s, False))(child, start)
  n = child.shape[1]

  def along_edges():
    source, target, count = _edge_list(child, max_edges)
    return jax.lax.cond(
        jnp.all(count <= max_edges),
        lambda: jax.vmap(lambda s, t, x: _reachable_listed(s, t, x, n))(source, target, start),
        lambda: jax.vmap(lambda c, x: _reachable(c, x, True))(child, start))

  if parents is None:
    return along_edges()
  along_rows = _reachable_by_bits if n <= _BITS_MAX_NODES else _reachable_by_rows
  return jax.lax.cond(jnp.all(_lists_all_parents(parents)),
                      lambda: jax.vmap(along_rows)(parents[..., 1:], start), along_edges)


def _renumbered(new_of_old: chex.Array, index: chex.Array) -> chex.Array:
  """`index` (int32[B, N, ...], old node indices or negative codes) with each
  node index replaced by its new one (`new_of_old`, int32[B, N]; -1 for a
  dropped node), the codes kept."""
  return jnp.where(index >= 0, jax.vmap(lambda m, i: m[jnp.maximum(i, 0)])(new_of_old, index),
                   index)


def _moved_parents(rows: chex.Array, new_of_old: chex.Array, count: chex.Array,
                   links: bool) -> chex.Array:
  """The re-rooted graph's `Graph.parents`: each kept node's listed parents
  renumbered in their slots, a dropped one's slot freed (-1), and its count
  of kept parent edges.

  Args:
    rows: int32[B, N, 1 + P], the old rows moved to the kept
      nodes' new places.
    new_of_old: int32[B, N], each old node's new index, -1 if dropped.
    count: int32[B, N], each kept node's kept parent edges.
    links: whether nodes may have several parents. Static.

  Returns:
    int32[B, N, 1 + P].
  """
  # Without links a node lists its one parent in the first slot (the new
  # root's is dropped: -1), the others stay free.
  listed = rows[..., 1:] if links else rows[..., 1:2]
  return jnp.concatenate([count[..., None], _renumbered(new_of_old, listed),
                          rows[..., 1 + listed.shape[-1]:]], axis=-1)


def _compaction(reach: chex.Array, start: chex.Array):
  """Index maps of the kept nodes of ONE game: `start` first, the others in
  their old order.

  Returns:
    new_of_old: int32[N], the new index of each kept node, -1 elsewhere.
    old_of_new: int32[N], the old index of each new slot (0 past the kept count).
    count: int32, the number of kept nodes.
  """
  n = reach.shape[0]
  index = jnp.arange(n, dtype=jnp.int32)
  others = reach & (index != start)
  new_of_old = jnp.where(index == start, 0, jnp.cumsum(others, dtype=jnp.int32))
  new_of_old = jnp.where(reach, new_of_old, -1)
  old_of_new = jnp.zeros(n, jnp.int32).at[jnp.where(reach, new_of_old, n)].set(
      index, mode="drop")
  return new_of_old, old_of_new, reach.sum(dtype=jnp.int32)


def _index_nodes(key: chex.Array, count: chex.Array, table_size: int, max_probes: int):
  """A fresh hash table of ONE game's first `count` nodes (a key held by
  several nodes maps to the first). Returns (table, number of keys that found
  no free slot).

  All keys are placed at once, one probe a round: in round r every key not
  yet placed asks for the r-th slot of its probe sequence (`hash_table`'s:
  linear from its home slot); of the keys asking for a free slot the
  lowest-numbered takes it, and a key whose slot went to an equal key (a
  lower-numbered node of the same position) is done. A key placed at its
  r-th slot finds the r slots before it taken, so `hash_table.find` reaches
  it, as after inserting the keys one by one. A few rounds (until every key
  is placed, `max_probes` at most), each some vector operations over the
  nodes, instead of one sequential probe loop per node.
  """
  capacity = key.shape[0]
  index = jnp.arange(capacity, dtype=jnp.int32)
  home = jax.vmap(lambda k: hash_table.home_slot(k, table_size))(key)
  mask = table_size - 1

  def probe(carry):
    r, slots, waiting = carry
    want = (home + r) & mask
    free = waiting & (slots[want] == graph_lib.EMPTY)
    claims = jnp.full(table_size, capacity, jnp.int32).at[
        jnp.where(free, want, table_size)].min(index, mode="drop")
    won = free & (claims[want] == index)
    slots = slots.at[jnp.where(won, want, table_size)].set(index, mode="drop")
    holder = slots[want]
    twin = (~won & (holder != graph_lib.EMPTY)
            & jnp.all(key[jnp.maximum(holder, 0)] == key, axis=-1))
    return r + 1, slots, waiting & ~won & ~twin

  # Rounds until every key is placed (at the tables' loads, a few), or the
  # probe sequences end.
  probes = min(max_probes, table_size)
  _, slots, waiting = jax.lax.while_loop(
      lambda carry: (carry[0] < probes) & jnp.any(carry[2]), probe,
      (jnp.int32(0), jnp.full(table_size, graph_lib.EMPTY, jnp.int32), index < count))
  entries = graph_lib.table_entry(key[jnp.maximum(slots, 0)] * (slots >= 0)[:, None].astype(
      jnp.uint32), slots)
  return graph_lib.HashTable(entries=entries), waiting.sum(dtype=jnp.int32)


def _kept_table(table: graph_lib.HashTable, new_of_old: chex.Array, count: chex.Array):
  """Every game's table kept rather than rebuilt, where that gives the same
  lookups: each kept entry renumbered in its slot, each dropped one cleared.

  A lookup reads a group of slots at once (`hash_table.find`): it finds a
  key anywhere in the group, and a key not there is absent when the group
  has a free slot. So where every entry lies in its home group
  (`hash_table.home_slot`), clearing the dropped entries in place leaves
  every kept key found, every other key absent, and each group as full as
  in a rebuilt table (`_index_nodes`): lookups and insertions find what
  they would find there, though a group's slots may be taken in another
  order. That holds where no entry spilled into a later group and each kept
  node has its entry (no twins, no overflows).

  Args:
    table: HashTable [B, T], the old graph's.
    new_of_old: int32[B, N], each old node's new index, -1 if dropped.
    count: int32[B], the number of kept nodes.

  Returns:
    (table, fits): the kept table, HashTable [B, T], and bool[B], whether it
    gives the lookups of a rebuilt one.
  """
  batch, table_size = table.nodes.shape
  capacity = new_of_old.shape[1]
  group = min(hash_table.PROBE_GROUP, table_size)
  old_node = table.nodes
  occupied = old_node != graph_lib.EMPTY
  game = jnp.arange(batch, dtype=jnp.int32)[:, None]
  node = jnp.where(occupied,
                   new_of_old.reshape(-1)[game * capacity + jnp.maximum(old_node, 0)], -1)
  keep = node >= 0
  slot = jnp.arange(table_size, dtype=jnp.int32)[None, :]
  home = jax.vmap(jax.vmap(lambda key: hash_table.home_slot(key, table_size)))(
      table.stored_keys)
  fits = (jnp.all(~occupied | (home // group == slot // group), axis=1)
          & (jnp.sum(keep, axis=1, dtype=jnp.int32) == count))
  entries = jnp.where(keep[..., None], graph_lib.table_entry(table.stored_keys, node),
                      graph_lib.empty_table(table_size).entries)
  return graph_lib.HashTable(entries=entries), fits


def _played_child(graph: graph_lib.Graph, action: chex.Array) -> chex.Array:
  """int32[B]: the root's `child` code of each game's played action (an
  action out of range clamped to the nearest one)."""
  return graph.child[jnp.arange(graph.batch_size), 0, jnp.clip(action, 0, graph.num_actions - 1)]


def advance(graph: graph_lib.Graph, action: chex.Array,
            config: config_lib.SearchConfig) -> tuple[graph_lib.Graph, chex.Array]:
  """Re-roots every game's graph at the child its root reaches by `action`.

  The kept nodes keep all their statistics (visits, values, priors, edge
  counts and Q), so the new root starts with N = the old child's visits.
  Nodes not reachable from the new root are dropped and their slots cleared
  as in `graph.empty`, so the graph can grow again; the hash table indexes
  the kept keys (the old table with its dropped entries cleared where that
  finds them all, `_kept_table`, else a rebuilt one) and the
  `stats` counters restart from zero (except `table_overflows`, which counts
  kept keys the new table could not index). The reachable nodes are found
  along each node's listed parents (`Graph.parents`) where every node lists
  all of its, else along the edges; the kept nodes' parents are renumbered
  (`_moved_parents`).
  The enhancements' records (`Graph.enhancements`) move alike: their node
  fields with their nodes, their per-game fields cleared, then their own
  `rerooted` (the Gumbel root's noise stays cleared, `reroot` draws it
  afresh, and the new root's edge visits become the base of its
  sequential-halving schedule).

  Args:
    graph: Graph [B, N, A], e.g. `SearchOutput.graph`.
    action: int32[B], the move played at each root.
    config: the `SearchConfig` the graph was built with. Static.

  Returns:
    (graph, kept): the re-rooted Graph [B, N, A], and bool[B], False where the
    played edge leads to no stored node (unexpanded, terminal, illegal, or
    not stored for lack of capacity). Such a game's graph is empty
    (nodes_used 0): start it from a fresh root (`init`, or `reroot`).

  Raises:
    ValueError: (at trace time) a node field of `graph` (e.g. of a Graph
      subclass, or of an enhancement's record) is not indexed [B, N, ...].
  """
  batch, capacity = graph.batch_size, graph.capacity
  records = [("", graph, _NOT_NODE_FIELDS)] + [
      (f"{name}.", record, record.game_fields) for name, record in graph.enhancements.items()]
  for prefix, record, game_fields in records:
    for name in _node_fields(record, game_fields):
      for leaf in jax.tree.leaves(getattr(record, name)):
        if leaf.shape[:2] != (batch, capacity):
          raise ValueError(f"Graph field {prefix + name!r} has shape {leaf.shape}; every field "
                           f"but {game_fields} must be indexed [B, N, ...] = "
                           f"[{batch}, {capacity}, ...]")
  action = jnp.asarray(action, jnp.int32)
  chex.assert_shape(action, (batch,))

  in_range = (action >= 0) & (action < graph.num_actions)
  start = _played_child(graph, action)
  kept = in_range & (graph.nodes_used > 0) & (start >= 0)
  start = jnp.where(kept, start, -1)

  reach, parents = reachable_nodes(graph.child, start, config.links_transpositions,
                                   max_edges=2 * capacity, parents=graph.parents)
  new_of_old, old_of_new, count = jax.vmap(_compaction)(reach, start)
  used = jnp.arange(capacity)[None, :] < count[:, None]

  blank = graph_lib.empty(batch, capacity, graph.num_actions, graph.table.nodes.shape[-1],
                          jax.tree.map(lambda x: x[:, 0], graph.embedding),
                          graph_lib.state_types(graph))

  def move(x, blank_x):
    gathered = jax.vmap(lambda row, index: row[index])(x, old_of_new)
    return jnp.where(used.reshape(used.shape + (1,) * (x.ndim - 2)), gathered, blank_x)

  def moved_fields(record, blank_record, game_fields):
    fields = {}
    for name in _node_fields(record, game_fields):
      value = getattr(record, name)
      # A field `graph.empty` does not know (a Graph subclass) is cleared to 0.
      blank_value = getattr(blank_record, name, None)
      if blank_value is None:
        blank_value = jax.tree.map(jnp.zeros_like, value)
      fields[name] = jax.tree.map(move, value, blank_value)
    return fields

  moved = moved_fields(graph, blank, _NOT_NODE_FIELDS)
  states = {name: record.replace(**moved_fields(record, blank.enhancements[name],
                                                record.game_fields),
                                 **{f: getattr(blank.enhancements[name], f)
                                    for f in record.game_fields})
            for name, record in graph.enhancements.items()}

  moved["child"] = _renumbered(new_of_old, moved["child"])
  if config.links_transpositions:
    # The kept edges into each kept node (counted by the reachability walk).
    kept_parents = move(parents, blank.num_parents)
  else:
    # Without links every node but a root has one parent, the edge that
    # stored it, which is kept with it; the new root loses its own.
    node = jnp.arange(capacity)[None, :]
    kept_parents = ((node > 0) & used).astype(jnp.int32)
  moved["parents"] = _moved_parents(moved["parents"], new_of_old, kept_parents,
                                    config.links_transpositions)

  stats = jax.tree.map(jnp.zeros_like, graph.stats).replace(nodes_used=count)
  if config.uses_table:
    kept_table, fits = _kept_table(graph.table, new_of_old, count)
    table, overflows = jax.lax.cond(
        jnp.all(fits),
        lambda: (kept_table, jnp.zeros_like(count)),
        lambda: jax.vmap(lambda key, n: _index_nodes(
            key, n, graph.table.nodes.shape[-1], config.max_probes))(moved["key"], count))
    stats = stats.replace(table_overflows=overflows)
  else:
    table = blank.table
  advanced = graph.replace(table=table, stats=stats, **moved)
  return advanced.replace(enhancements={name: record.rerooted(advanced)
                                        for name, record in states.items()}), kept


def reroot(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, action: chex.Array,
           next_state: Any, env: Any, eval_fn: Any,
           config: config_lib.SearchConfig) -> graph_lib.Graph:
  """The graph to search from after `action` was played.

  The old graph advanced where it holds the reached state, else a fresh root.
  A kept root is also checked against `next_state`'s key, so a model whose
  transitions are random (or a `next_state` that is not the played child)
  falls back to a fresh root instead of reusing the wrong statistics. With
  `config.dirichlet_fraction > 0`, kept roots get fresh Dirichlet noise on
  their prior, and with `config.root_policy == "gumbel"` fresh Gumbel noise,
  as `init` gives new roots.

  Args:
    params: network parameters, for `eval_fn`.
    rng: a PRNG key.
    graph: Graph [B, N, A] of the last search.
    action: int32[B], the move played in each game.
    next_state: the batch of states [B] after the move (`env.step`).
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: `SearchConfig`. Static.

  Returns:
    Graph [B, N, A]; call `run_simulations` then `summarize` on it.

  Raises:
    ValueError: (at trace time) as `advance` and `engine.init`.
  """
  init_rng, noise_rng = jax.random.split(rng)
  roots = engine.evaluate_roots(params, init_rng, next_state, env, eval_fn, config)
  # A kept root must hold the reached state; a game whose does not is
  # advanced as if the move led nowhere (an empty graph).
  start = _played_child(graph, action)
  holds = jnp.all(graph.key[jnp.arange(graph.batch_size), jnp.maximum(start, 0)] == roots.key,
                  axis=-1)
  advanced, kept = advance(graph, jnp.where(holds, action, -1), config)
  # The fresh roots written into the emptied games' node 0 only, rather than
  # a whole fresh graph selected game by game (a pass over every array).
  graph = engine.write_roots(advanced, roots, config, rows=~kept)
  graph = policies.renoise_roots(noise_rng, graph, config, rows=kept)
  if rules.of(config).root_noise is None:
    return graph
  legal = graph.child[:, 0] != graph_lib.ILLEGAL
  kept_noise = policies.with_root_gumbel(jax.random.fold_in(noise_rng, 1), graph, legal, config)
  fresh_noise = policies.with_root_gumbel(jax.random.fold_in(init_rng, 2), graph, legal, config)

  def select(kept_x, fresh_x):
    return jnp.where(kept.reshape(kept.shape + (1,) * (kept_x.ndim - 1)), kept_x, fresh_x)

  return graph.replace(enhancements=jax.tree.map(select, kept_noise.enhancements,
                                                 fresh_noise.enhancements))
