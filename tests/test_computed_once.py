"""graph_lib.computed_once: exact codes, and one kernel holding the reads."""

import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax import graph as graph_lib


def test_computed_once_keeps_codes_exactly():
  codes = np.concatenate([np.arange(70_000), np.random.default_rng(2).integers(0, 1 << 22, 10_000),
                          [(1 << 22) - 1]]).astype(np.int32)
  np.testing.assert_array_equal(jax.jit(graph_lib.computed_once)(jnp.asarray(codes)), codes)
  flags = jnp.asarray([True, False, False, True])
  once = graph_lib.computed_once(flags)
  assert once.dtype == jnp.bool_
  np.testing.assert_array_equal(once, flags)


def _fused_computations(hlo):
  """The bodies of the compiled HLO's fused computations."""
  return [body for body in hlo.split("\n\n") if body.lstrip().startswith("%fused_computation")]


def test_computed_once_fuses_the_reads_into_one_kernel():
  # A code read through gathers, with two consumers that broadcast it: the
  # gathers go into the code's own kernel (the one with the square root).
  def outputs(table, index):
    rows = jnp.arange(table.shape[0])
    code = ((table[rows, index] > 0.5).astype(jnp.int32) +
            (table[rows, index + 1] > 0.2).astype(jnp.int32))
    code = graph_lib.computed_once(code)
    return (jnp.where(code > 0, 1.0, 2.0)[:, None] * jnp.ones((1, 7)),
            jnp.where(code == 2, 5, 3)[:, None] + jnp.zeros((1, 5), jnp.int32))

  table = jnp.asarray(np.random.default_rng(3).random((64, 9)).astype(np.float32))
  index = jnp.asarray(np.random.default_rng(4).integers(0, 8, 64).astype(np.int32))
  hlo = jax.jit(outputs).lower(table, index).compile().as_text()
  with_gathers = [body for body in _fused_computations(hlo) if " gather(" in body]
  assert with_gathers and all(" sqrt(" in body for body in with_gathers)
  first, second = outputs(table, index)
  code = (table[jnp.arange(64), index] > 0.5).astype(int) + (table[jnp.arange(64), index + 1] > 0.2)
  np.testing.assert_array_equal(first[:, 0], np.where(code > 0, 1.0, 2.0))
  np.testing.assert_array_equal(second[:, 0], np.where(code == 2, 5, 3))
