"""The compiled search loop updates the graph in place: no copies of the
[B, N, ...] node and edge arrays per simulation (benchmarks/loop_copies).

A read of an array's old version that XLA may schedule after its in-place
write (a fused consumer of the stop value, of a link's value, of the root's
`solved`; the select a vmapped while loop applies to the arrays it carries)
makes XLA copy the whole array on every simulation. These tests compile small
searches and count such copies in the optimised HLO; they check the CPU
compiler this project benchmarks on.
"""

import jax
import jax.numpy as jnp
import pytest

import mcgs_jax
from mcgs_jax.benchmarks import loop_copies
from mcgs_jax.benchmarks import names
from tests import variants

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the copy counts were established with XLA:CPU")


@pytest.mark.parametrize("name", variants.slow_unless(["mcgs", "tree", "solver", "katago"],
                                                     fast=["mcgs", "solver"]))
def test_no_graph_copies_in_the_simulation_loop(name):
  config = mcgs_jax.SearchConfig(num_simulations=8, **names.LOOP_COPY_VARIANTS[name])
  counts = loop_copies.count_loop_copies(config, batch=3)
  assert not counts, f"{name}: graph-shaped copies in the loop body: {dict(counts)}"


def _outer_loop_copies(inner):
  """Graph-shaped copies of a while loop over `inner(x [3, 5], n [3])`."""
  def outer(x, n):
    return jax.lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, inner(c[1], n)),
                              (0, x))[1]
  text = jax.jit(outer).lower(jnp.ones((3, 5)), jnp.array([1, 2, 3])).compile().as_text()
  return loop_copies.graph_copies(text, 3, 5)


def test_the_counter_sees_copies():
  # The two patterns the search loop avoids must show up as copies, or the
  # test above proves nothing.
  def read_after_write(x, n):
    old = x[:, n[0]]              # a read of the old array...
    y = x.at[:, 0].set(0.0)       # ...an in-place write...
    return y.at[:, 1].set(old)    # ...the old value used after it

  def vmapped_loop(x, n):
    def one(row, count):
      return jax.lax.while_loop(lambda c: c[0] < count,
                                lambda c: (c[0] + 1, c[1].at[c[0]].set(c[1][c[0]] + 1.0)),
                                (0, row))[1]
    return jax.vmap(one)(x, n)

  def in_place(x, n):
    return x.at[:, n[0]].set(x[:, n[1]] + 1.0)

  assert _outer_loop_copies(read_after_write)
  assert _outer_loop_copies(vmapped_loop)
  assert not _outer_loop_copies(in_place)
