"""Steering XLA's fusion from JAX: values that must be computed once."""

import chex
import jax.numpy as jnp

# Codes `computed_once` keeps exactly: 0 <= code < CODE_LIMIT.
CODE_LIMIT = 2**22


def computed_once(code: chex.Array) -> chex.Array:
  """`code` (bool, or int32 in [0, 2^22)), computed in a kernel of its own.

  XLA fuses a cheap producer into each of its consumers, so a value that
  several consumers read (a descent step's end code: the next node, depth,
  path length and code all follow from it) is recomputed in each of them,
  every gather behind it included, and the gathers feeding several such
  kernels get kernels of their own. XLA never duplicates a producer that
  ends in an operation it deems expensive (a square root): the value gets
  one kernel, with the gathers behind it fused in, and its consumers read
  the result. round(sqrt(k)^2) = k exactly for 0 <= k < 2^22.

  Args:
    code: bool or int32 array of small non-negative codes.

  Returns:
    The same values, dtype and shape.
  """
  root = jnp.sqrt(code.astype(jnp.float32))
  return jnp.round(root * root).astype(code.dtype)
