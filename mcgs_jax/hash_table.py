"""On-device open-addressing hash table from 64-bit keys to node indices.

Keys are `uint32[2]` (two lanes of a 64-bit key). Linear probing over at most
`max_probes` slots from the start of the aligned group holding the key's hash
slot, inspected a group at a time (one contiguous read each): a key absent
from the first group with an empty slot is absent. Nothing is deleted but by
re-rooting, which clears entries only where every key lies in its home group
(`reuse.advance`). All functions act on one game's table; vmap them for a
batch. The table's data (`graph.HashTable`, `graph.empty_table`,
`graph.EMPTY`) lives in graph.py, the lowest module, with the graph that holds it.
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib


def slot_of(key: chex.Array, size: int) -> chex.Array:
  """Hash slot of `key` (a murmur3-style mix of both lanes); `home_slot` is
  the start of its group.

  Args:
    key: uint32[2].
    size: T, the table size (a power of two).

  Returns:
    int32 scalar in [0, T).
  """
  x = key[0] ^ (key[1] * jnp.uint32(0x9E3779B1))
  x = x ^ (x >> 16)
  x = x * jnp.uint32(0x85EBCA6B)
  x = x ^ (x >> 13)
  x = x * jnp.uint32(0xC2B2AE35)
  x = x ^ (x >> 16)
  return (x & jnp.uint32(size - 1)).astype(jnp.int32)


# Slots inspected per trip of a lookup, an aligned group of consecutive slots
# (one contiguous read per game). At the loads the search keeps (at most half
# full) almost every lookup ends within the first trip.
PROBE_GROUP = 8


def home_slot(key: chex.Array, size: int) -> chex.Array:
  """First slot of `key`'s probe sequence: the start of the aligned group of
  `PROBE_GROUP` slots (`size` if smaller) that holds its hash slot.

  Starting at a group boundary keeps every trip's slots contiguous and in
  bounds, so a trip reads them as one slice, not slot by slot.

  Args:
    key: uint32[2].
    size: T, the table size (a power of two).

  Returns:
    int32 scalar in [0, T), a multiple of min(PROBE_GROUP, T).
  """
  return slot_of(key, size) & ~(min(PROBE_GROUP, size) - 1)


def _best_in(table, key, first, group, inspected=None):
  """Looks `key` up in the `group` slots from `first` on, the ones where
  `inspected` (bool[group]; None: all) holds, in one maximum over them
  (`_answer` reads it): a match scores its node + T + 1, above every free
  slot's T - slot, highest at the first free slot; 0 when every inspected
  slot holds another key (the sequence goes on).

  A stored key lies in no later group than its probe sequence's first free
  slot (it took the first free one it met, and an entry is cleared only
  where every key lies in its home group), so the group's match, if any,
  is where the lookup stops; otherwise the first free slot is. One
  reduction, with no read at a found position: one kernel, not one per
  answer."""
  size = table.entries.shape[0]
  window = graph_lib.HashTable(entries=jax.lax.dynamic_slice_in_dim(table.entries, first, group))
  nodes = window.nodes
  occupied = nodes != graph_lib.EMPTY
  match = occupied & jnp.all(window.stored_keys == key, axis=-1)
  free = ~occupied
  if inspected is not None:
    match, free = match & inspected, free & inspected
  slot = first + jnp.arange(group, dtype=jnp.int32)
  return jnp.max(jnp.where(match, nodes + (size + 1), jnp.where(free, size - slot, 0)))


def _answer(best, size):
  """(node, free_slot) of `find` from `_best_in`'s `best` in a table of
  `size` slots."""
  found = best > size
  return (jnp.where(found, best - (size + 1), graph_lib.EMPTY),
          jnp.where((best > 0) & ~found, size - best, graph_lib.EMPTY))


def find(table: graph_lib.HashTable, key: chex.Array, max_probes: int):
  """Looks `key` up.

  The probe sequence (linear, from `home_slot`, wrapping around) is
  inspected `PROBE_GROUP` slots at a time, a further group only while the
  key is neither found nor known absent (vmapped: while any game's is not),
  so a batch pays for the longest sequence it meets, not for `max_probes`.
  Each value computed before the loop that the loop or the answer reads
  costs the batch a kernel, so the loop carries one number per game (the
  group's `_best_in`), which holds the answer whole, and finds its home
  again itself.

  Args:
    table: `graph.HashTable` of one game (T slots).
    key: uint32[2].
    max_probes: the longest probe sequence inspected. Static.

  Returns:
    (node, free_slot): node int32, the node stored under `key`, or EMPTY
    (`graph.EMPTY`); free_slot int32, where `key` would be inserted (the
    first empty slot of its probe sequence), or EMPTY if it is present or no
    slot is free within `max_probes`.
  """
  size = table.entries.shape[0]
  probes = min(max_probes, size)
  group = min(PROBE_GROUP, size)

  def best_at(trip):
    # Groups are aligned: the trip-th group of the sequence starts in
    # bounds. A group wholly inside the sequence inspects every slot.
    first = (home_slot(key, size) + trip * group) & (size - 1)
    if isinstance(trip, int) and (trip + 1) * group <= probes:
      return _best_in(table, key, first, group)
    return _best_in(table, key, first, group, trip * group + jnp.arange(group) < probes)

  best = best_at(0)
  if probes > group:
    _, best = jax.lax.while_loop(
        lambda carry: (carry[1] == 0) & ((carry[0] + 1) * group < probes),
        lambda carry: (carry[0] + 1, best_at(carry[0] + 1)), (jnp.int32(0), best))
  return _answer(best, size)


def write(table: graph_lib.HashTable, slot: chex.Array, key: chex.Array,
          node: chex.Array) -> graph_lib.HashTable:
  """Stores `node` under `key` at `slot`; a negative slot writes nothing.

  Args:
    table: `graph.HashTable` of one game.
    slot: int32 scalar, from `find`.
    key: uint32[2].
    node: int32 scalar.

  Returns:
    The updated `graph.HashTable`.
  """
  size = table.entries.shape[0]
  index = jnp.where(slot >= 0, slot, size)  # out of bounds -> dropped
  entry = graph_lib.table_entry(key, node)
  return graph_lib.HashTable(entries=table.entries.at[index].set(entry, mode="drop"))


def insert(table: graph_lib.HashTable, key: chex.Array, node: chex.Array, max_probes: int):
  """Inserts `key -> node` unless the key is present.

  Args:
    table: `graph.HashTable` of one game.
    key: uint32[2].
    node: int32 scalar, the node index to store.
    max_probes: the longest probe sequence inspected. Static.

  Returns:
    (table, stored): the updated `graph.HashTable` and a bool scalar, False
    when the key was present or no free slot lay within `max_probes`.
  """
  found, free_slot = find(table, key, max_probes)
  del found
  return write(table, free_slot, key, node), free_slot >= 0

