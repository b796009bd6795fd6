"""The hash table against linear probing written out in Python: the same slots
filled, the same answers, across probe sequences longer than one trip."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table

SIZE = 32


def reference_find(slots, key, home, max_probes):
  """(node, free_slot) by linear probing over a Python list of slots."""
  for i in range(min(max_probes, SIZE)):
    slot = (home + i) % SIZE
    if slots[slot] is None:
      return graph_lib.EMPTY, slot
    if slots[slot][0] == key:
      return slots[slot][1], graph_lib.EMPTY
  return graph_lib.EMPTY, graph_lib.EMPTY


def home_of(key):
  return int(hash_table.home_slot(jnp.asarray(key, jnp.uint32), SIZE))


def insert_all(keys, max_probes):
  """Inserts keys[i] -> node i one by one (jitted scan) and in Python."""
  def body(table, item):
    key, node = item
    table, stored = hash_table.insert(table, key, node, max_probes)
    return table, stored

  table, stored = jax.jit(lambda k: jax.lax.scan(
      body, graph_lib.empty_table(SIZE), (k, jnp.arange(k.shape[0], dtype=jnp.int32))))(
          jnp.asarray(keys, jnp.uint32))
  slots = [None] * SIZE
  expected_stored = []
  for node, key in enumerate(map(tuple, keys)):
    found, free = reference_find(slots, key, home_of(key), max_probes)
    if free != graph_lib.EMPTY:
      slots[free] = (key, node)
    expected_stored.append(free != graph_lib.EMPTY)
  return table, np.asarray(stored), slots, expected_stored


def clustered_keys(rng, count):
  """Random keys, two thirds of them sharing 2 home groups: clusters far
  longer than one trip of `PROBE_GROUP` slots."""
  keys = []
  while len(keys) < count:
    key = tuple(int(x) for x in rng.integers(0, 2**32, size=2, dtype=np.uint64))
    if len(keys) % 3 == 0 or home_of(key) in (8, 24):
      keys.append(key)
  return np.array(keys, np.uint32)


@pytest.mark.parametrize("max_probes", [3, 8, 13, 32])
def test_insert_and_find_match_linear_probing(max_probes):
  rng = np.random.default_rng(max_probes)
  keys = clustered_keys(rng, 26)
  table, stored, slots, expected_stored = insert_all(keys, max_probes)
  np.testing.assert_array_equal(stored, expected_stored)
  expected_nodes = [graph_lib.EMPTY if s is None else s[1] for s in slots]
  np.testing.assert_array_equal(np.asarray(table.nodes), expected_nodes)
  if max_probes > hash_table.PROBE_GROUP:
    # Some key sits more than one trip away from its home slot.
    distances = [(slot - home_of(s[0])) % SIZE for slot, s in enumerate(slots) if s]
    assert max(distances) >= hash_table.PROBE_GROUP
  absent = clustered_keys(np.random.default_rng(100 + max_probes), 12)
  queries = np.concatenate([keys, absent])
  found, free = jax.jit(jax.vmap(lambda k: hash_table.find(table, k, max_probes)))(
      jnp.asarray(queries, jnp.uint32))
  expected = [reference_find(slots, tuple(k), home_of(tuple(k)), max_probes) for k in queries]
  np.testing.assert_array_equal(np.asarray(found), [e[0] for e in expected])
  np.testing.assert_array_equal(np.asarray(free), [e[1] for e in expected])


def test_batched_tables_answer_as_one_at_a_time():
  """vmapped over games, where one game's lookup needs more trips than the
  others': each answer as alone."""
  rng = np.random.default_rng(7)
  tables, queries = [], []
  for count in (2, 26, 9):
    keys = clustered_keys(rng, count)
    tables.append(insert_all(keys, 32)[0])
    queries.append(np.concatenate([keys[-1:], clustered_keys(rng, 1)]))
  batched = jax.tree.map(lambda *x: jnp.stack(x), *tables)
  queries = jnp.asarray(np.stack(queries), jnp.uint32)   # [3, 2, 2]
  found, free = jax.jit(jax.vmap(jax.vmap(
      lambda t, k: hash_table.find(t, k, 32), in_axes=(None, 0))))(batched, queries)
  for b, table in enumerate(tables):
    for q in range(2):
      alone = hash_table.find(table, queries[b, q], 32)
      assert (int(found[b, q]), int(free[b, q])) == tuple(int(x) for x in alone)
  assert int(found[1, 0]) == 25   # the last key of the long cluster is found
