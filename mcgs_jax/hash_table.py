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


def _find_in(table, key, first, group, inspected=None):
  """Looks `key` up in the `group` slots from `first` on, the ones where
  `inspected` (bool[group]; None: all) holds: (node, free_slot, resolved),
  `resolved` False when every inspected slot holds another key (the
  sequence goes on).

  A stored key lies in no later group than its probe sequence's first free
  slot (it took the first free one it met, and an entry is cleared only
  where every key lies in its home group), so the group's match, if any,
  is where the lookup stops; otherwise the first free slot is. Both
  are reductions over the group (a maximum, a word of bits), with no read
  at a found position."""
  window = graph_lib.HashTable(entries=jax.lax.dynamic_slice_in_dim(table.entries, first, group))
  nodes = window.nodes
  occupied = nodes != graph_lib.EMPTY
  match = occupied & jnp.all(window.stored_keys == key, axis=-1)
  free = ~occupied
  if inspected is not None:
    match, free = match & inspected, free & inspected
  node = jnp.max(jnp.where(match, nodes, graph_lib.EMPTY))
  free_bits = jnp.sum(jnp.where(free, jnp.uint32(1) << jnp.arange(group, dtype=jnp.uint32),
                                jnp.uint32(0)), dtype=jnp.uint32)
  # The lowest set bit's place: the bits below it counted.
  first_free = jax.lax.population_count((free_bits & (~free_bits + jnp.uint32(1)))
                                        - jnp.uint32(1)).astype(jnp.int32)
  has_free = free_bits != 0
  free_slot = jnp.where((node < 0) & has_free, first + first_free, graph_lib.EMPTY)
  return node, free_slot, (node >= 0) | has_free


def find(table: graph_lib.HashTable, key: chex.Array, max_probes: int):
  """Looks `key` up.

  The probe sequence (linear, from `home_slot`, wrapping around) is
  inspected `PROBE_GROUP` slots at a time, a further group only while the
  key is neither found nor known absent (vmapped: while any game's is not),
  so a batch pays for the longest sequence it meets, not for `max_probes`.

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
  home = home_slot(key, size)
  if size // group < graph_lib.CODE_LIMIT:
    # Fused into the read, the hash would be recomputed for every lane read.
    home = group * graph_lib.computed_once(home // group)

  def trip(start):
    # Groups are aligned, so (home + start) mod T starts one in bounds; a
    # group wholly inside the sequence inspects every slot (no mask).
    first = (home + start) & (size - 1)
    if isinstance(start, int) and start + group <= probes:
      return _find_in(table, key, first, group)
    return _find_in(table, key, first, group, start + jnp.arange(group) < probes)

  node, free_slot, resolved = trip(0)
  if probes <= group:
    return node, free_slot

  def more(carry):
    start, _, _, resolved = carry
    return ~resolved & (start < probes)

  def next_group(carry):
    start = carry[0]
    return (start + group,) + trip(start)

  _, node, free_slot, _ = jax.lax.while_loop(
      more, next_group, (jnp.int32(group), node, free_slot, resolved))
  return node, free_slot


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

