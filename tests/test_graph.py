"""graph.take: one game's read, and its batched rule (a flat-index gather);
graph.select_first."""

import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax import graph as graph_lib


def _arrays():
  rng = np.random.default_rng(0)
  array = jnp.asarray(rng.normal(size=(5, 4, 3)).astype(np.float32))
  node = jnp.asarray([1, 3, 0, 2, 2], jnp.int32)
  action = jnp.asarray([0, 2, 1, 1, 0], jnp.int32)
  return array, node, action


def test_take_unbatched_is_indexing():
  array, _, _ = _arrays()
  np.testing.assert_array_equal(graph_lib.take(array[0], 2, 1), array[0, 2, 1])
  np.testing.assert_array_equal(graph_lib.take(array[0], 3), array[0, 3])


def test_take_batched_elements_and_rows():
  array, node, action = _arrays()
  games = jnp.arange(5)
  elements = jax.vmap(graph_lib.take)(array, node, action)
  np.testing.assert_array_equal(elements, array[games, node, action])
  rows = jax.vmap(graph_lib.take)(array, node)
  np.testing.assert_array_equal(rows, array[games, node])
  # One batched index, the other shared.
  shared = jax.vmap(lambda a, n: graph_lib.take(a, n, 2))(array, node)
  np.testing.assert_array_equal(shared, array[games, node, 2])


def test_take_unbatched_array_batched_index():
  array, node, action = _arrays()
  out = jax.vmap(lambda n, a: graph_lib.take(array[0], n, a))(node, action)
  np.testing.assert_array_equal(out, array[0][node, action])


def test_take_nested_vmap_and_jit():
  array, node, action = _arrays()
  stacked = jnp.stack([array, 2 * array])
  out = jax.jit(jax.vmap(jax.vmap(graph_lib.take)))(stacked, jnp.stack([node, node]),
                                                      jnp.stack([action, action]))
  expected = array[jnp.arange(5), node, action]
  np.testing.assert_array_equal(out, jnp.stack([expected, 2 * expected]))


def test_take_clamps_out_of_range_indices():
  # Both forms clamp to the axis (no wrap-around of negative indices).
  array, node, _ = _arrays()
  games = jnp.arange(5)
  far = node + 10
  np.testing.assert_array_equal(jax.vmap(graph_lib.take)(array, far),
                                array[games, jnp.full(5, 3)])
  np.testing.assert_array_equal(jax.vmap(graph_lib.take)(array, -node),
                                array[games, jnp.zeros(5, jnp.int32)])
  np.testing.assert_array_equal(graph_lib.take(array[0], -1), array[0, 0])


def test_take_index_arrays():
  array, node, action = _arrays()
  nodes = jnp.stack([node, (node + 1) % 4], axis=1)      # [5, 2] per game: 2 nodes
  actions = jnp.stack([action, (action + 2) % 3], axis=1)
  out = jax.vmap(graph_lib.take)(array, nodes, actions)
  np.testing.assert_array_equal(out, array[jnp.arange(5)[:, None], nodes, actions])
  rows = jax.vmap(graph_lib.take)(array, nodes)
  np.testing.assert_array_equal(rows, array[jnp.arange(5)[:, None], nodes])
  # A shared scalar action with per-game node arrays.
  shared = jax.vmap(lambda a, n: graph_lib.take(a, n, 1))(array, nodes)
  np.testing.assert_array_equal(shared, array[jnp.arange(5)[:, None], nodes, 1])


def test_select_first_equals_jnp_select_and_stacks_nothing():
  rng = np.random.default_rng(1)
  # Overlapping conditions: the first true one wins, as in jnp.select.
  conditions = [jnp.asarray(rng.random(64) < p) for p in (0.2, 0.5, 0.5)]
  choices = [jnp.asarray(rng.normal(size=64).astype(np.float32)) for _ in range(3)]
  default = jnp.asarray(rng.normal(size=64).astype(np.float32))
  np.testing.assert_array_equal(graph_lib.select_first(conditions, choices, default),
                                jnp.select(conditions, choices, default))
  np.testing.assert_array_equal(graph_lib.select_first(conditions, [1, 2, 3], 0),
                                jnp.select(conditions, [1, 2, 3], 0))
  hlo = jax.jit(graph_lib.select_first).lower(conditions, choices, default).as_text()
  stacked = jax.jit(jnp.select).lower(conditions, choices, default).as_text()
  assert "concatenate" in stacked and "concatenate" not in hlo
