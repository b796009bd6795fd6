"""On-device open-addressing hash table from 64-bit keys to node indices.

Keys are `uint32[2]` (two lanes of a 64-bit key). Linear probing over at most
`max_probes` slots, inspected a group of slots at a time (one vectorised
gather each), and no deletion: a key absent before the first empty slot is
absent. All functions act on one game's table; vmap them for a batch.
"""

import chex
import jax
import jax.numpy as jnp

EMPTY = -1


@chex.dataclass(frozen=True)
class HashTable:
  """One game's table of T slots (T a power of two).

  Attributes:
    keys: uint32[T, 2] the stored keys.
    nodes: int32[T] the node index stored under each key, EMPTY where free.
  """
  keys: chex.Array   # uint32[T, 2]
  nodes: chex.Array  # int32[T], EMPTY where free


def empty(size: int) -> HashTable:
  """A table of `size` slots, all free.

  Args:
    size: T, the number of slots (a power of two).

  Returns:
    HashTable with keys uint32[T, 2] and nodes int32[T].
  """
  return HashTable(keys=jnp.zeros((size, 2), jnp.uint32),
                   nodes=jnp.full((size,), EMPTY, jnp.int32))


def slot_of(key: chex.Array, size: int) -> chex.Array:
  """Home slot of `key`: a murmur3-style mix of both lanes.

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


# Slots inspected per trip of a lookup. At the loads the search keeps (at
# most half full) almost every lookup ends within the first trip.
PROBE_GROUP = 8


def _find_in(table, key, slots):
  """Looks `key` up in `slots` (int32[P], consecutive in probe order):
  (node, free_slot, resolved), `resolved` False when every slot holds
  another key (the sequence goes on past them)."""
  nodes = table.nodes[slots]
  occupied = nodes != EMPTY
  match = occupied & jnp.all(table.keys[slots] == key, axis=-1)
  stop = match | ~occupied
  first = jnp.argmax(stop)
  resolved = stop[first]
  node = jnp.where(resolved & match[first], nodes[first], EMPTY)
  free_slot = jnp.where(resolved & ~occupied[first], slots[first], EMPTY)
  return node, free_slot, resolved


def find(table: HashTable, key: chex.Array, max_probes: int):
  """Looks `key` up.

  The probe sequence is inspected `PROBE_GROUP` slots at a time, a further
  group only while the key is neither found nor known absent (vmapped: while
  any game's is not), so a batch pays for the longest sequence it meets, not
  for `max_probes`.

  Args:
    table: HashTable of one game (T slots).
    key: uint32[2].
    max_probes: the longest probe sequence inspected. Static.

  Returns:
    (node, free_slot): node int32, the node stored under `key`, or EMPTY;
    free_slot int32, where `key` would be inserted (the first empty slot of
    its probe sequence), or EMPTY if it is present or no slot is free within
    `max_probes`.
  """
  size = table.nodes.shape[0]
  probes = min(max_probes, size)
  group = min(PROBE_GROUP, probes)
  home = slot_of(key, size)
  offsets = jnp.arange(group)

  def trip(start):
    # Past `probes`, slots repeat the last one inspected: no new answer.
    return _find_in(table, key, (home + jnp.minimum(start + offsets, probes - 1)) & (size - 1))

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


def write(table: HashTable, slot: chex.Array, key: chex.Array,
          node: chex.Array) -> HashTable:
  """Stores `node` under `key` at `slot`; a negative slot writes nothing.

  Args:
    table: HashTable of one game.
    slot: int32 scalar, from `find`.
    key: uint32[2].
    node: int32 scalar.

  Returns:
    The updated HashTable.
  """
  size = table.nodes.shape[0]
  index = jnp.where(slot >= 0, slot, size)  # out of bounds -> dropped
  return HashTable(keys=table.keys.at[index].set(key, mode="drop"),
                   nodes=table.nodes.at[index].set(node, mode="drop"))


def insert(table: HashTable, key: chex.Array, node: chex.Array, max_probes: int):
  """Inserts `key -> node` unless the key is present.

  Args:
    table: HashTable of one game.
    key: uint32[2].
    node: int32 scalar, the node index to store.
    max_probes: the longest probe sequence inspected. Static.

  Returns:
    (table, stored): the updated HashTable and a bool scalar, False when the
    key was present or no free slot lay within `max_probes`.
  """
  found, free_slot = find(table, key, max_probes)
  del found
  return write(table, free_slot, key, node), free_slot >= 0

