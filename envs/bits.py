"""64-bit unsigned arithmetic on pairs of uint32 lanes.

JAX has no uint64 unless x64 mode is on, so a 64-bit word is a pair
`(lo, hi)` of uint32 arrays of the same shape (`lo` holds bits 0..31, `hi`
bits 32..63). `pack`/`unpack` convert to and from the stored form
`uint32[..., 2]` (lane 0 = lo, lane 1 = hi). Every function is elementwise,
so it works on scalars and on any batch shape, and is jittable. Shift
amounts are static Python ints, except in `bit`, whose index may be traced.
"""

import jax
import jax.numpy as jnp
import numpy as np

U64 = tuple[jax.Array, jax.Array]

_MASK32 = 0xFFFFFFFF


def pack(x: U64) -> jax.Array:
  """(lo, hi) -> stored form uint32[..., 2].

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].

  Returns:
    uint32[..., 2] (lane 0 = lo, lane 1 = hi).
  """
  return jnp.stack([x[0], x[1]], axis=-1)


def unpack(a: jax.Array) -> U64:
  """Stored form uint32[..., 2] -> (lo, hi).

  Args:
    a: uint32[..., 2].

  Returns:
    The U64 pair (lo, hi), each uint32[...].
  """
  return a[..., 0], a[..., 1]


def const(value: int) -> U64:
  """A Python int in [0, 2**64) as a pair of uint32 scalars.

  Args:
    value: the int.

  Returns:
    The U64 pair (lo, hi) of uint32 [].
  """
  return jnp.uint32(value & _MASK32), jnp.uint32((value >> 32) & _MASK32)


def from_int(value: int) -> np.ndarray:
  """A Python int in [0, 2**64) as a host array in stored form.

  Args:
    value: the int.

  Returns:
    np.ndarray uint32[2] (lo, hi).
  """
  return np.array([value & _MASK32, (value >> 32) & _MASK32], np.uint32)


def to_int(a) -> int:
  """Stored form of one word (host or device) -> Python int.

  Args:
    a: uint32[2].

  Returns:
    The int in [0, 2**64).
  """
  a = np.asarray(a)
  return int(a[0]) | (int(a[1]) << 32)


def zeros_like(x: U64) -> U64:
  """The zero word of the shape of `x`.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].

  Returns:
    The U64 pair of zeros, shaped as `x`.
  """
  return jnp.zeros_like(x[0]), jnp.zeros_like(x[1])


def and_(x: U64, y: U64) -> U64:
  """x & y, bitwise.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    The U64 pair.
  """
  return x[0] & y[0], x[1] & y[1]


def or_(x: U64, y: U64) -> U64:
  """x | y, bitwise.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    The U64 pair.
  """
  return x[0] | y[0], x[1] | y[1]


def xor(x: U64, y: U64) -> U64:
  """x ^ y, bitwise.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    The U64 pair.
  """
  return x[0] ^ y[0], x[1] ^ y[1]


def not_(x: U64) -> U64:
  """~x, bitwise.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].

  Returns:
    The U64 pair.
  """
  return ~x[0], ~x[1]


def shl(x: U64, n: int) -> U64:
  """x << n for a static n >= 0 (bits shifted past bit 63 are dropped).

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    n: the shift, a Python int.

  Returns:
    The U64 pair.
  """
  lo, hi = x
  if n == 0:
    return x
  if n >= 64:
    return zeros_like(x)
  if n >= 32:
    return jnp.zeros_like(lo), lo << (n - 32)
  return lo << n, (hi << n) | (lo >> (32 - n))


def shr(x: U64, n: int) -> U64:
  """x >> n (logical) for a static n >= 0.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    n: the shift, a Python int.

  Returns:
    The U64 pair.
  """
  lo, hi = x
  if n == 0:
    return x
  if n >= 64:
    return zeros_like(x)
  if n >= 32:
    return hi >> (n - 32), jnp.zeros_like(hi)
  return (lo >> n) | (hi << (32 - n)), hi >> n


def add(x: U64, y: U64) -> U64:
  """x + y modulo 2**64.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    The U64 pair.
  """
  lo = x[0] + y[0]
  carry = (lo < x[0]).astype(jnp.uint32)
  return lo, x[1] + y[1] + carry


def sub(x: U64, y: U64) -> U64:
  """x - y modulo 2**64.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    The U64 pair.
  """
  lo = x[0] - y[0]
  borrow = (x[0] < y[0]).astype(jnp.uint32)
  return lo, x[1] - y[1] - borrow


def nonzero(x: U64) -> jax.Array:
  """x != 0.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].

  Returns:
    bool[...].
  """
  return (x[0] | x[1]) != 0


def equal(x: U64, y: U64) -> jax.Array:
  """x == y.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].
    y: a U64 word broadcastable with `x`.

  Returns:
    bool[...].
  """
  return (x[0] == y[0]) & (x[1] == y[1])


def popcount(x: U64) -> jax.Array:
  """Number of set bits.

  Args:
    x: a U64 word, a pair (lo, hi) of uint32[...].

  Returns:
    int32[...].
  """
  return (jax.lax.population_count(x[0]).astype(jnp.int32)
          + jax.lax.population_count(x[1]).astype(jnp.int32))


def bit(index: jax.Array) -> U64:
  """1 << index for a (possibly traced) int index in [0, 64); 0 outside.

  Args:
    index: int32[...], maybe traced.

  Returns:
    The U64 pair, each uint32[...].
  """
  index = jnp.asarray(index, jnp.int32)
  one = jnp.uint32(1)
  lo_shift = jnp.clip(index, 0, 31).astype(jnp.uint32)
  hi_shift = jnp.clip(index - 32, 0, 31).astype(jnp.uint32)
  in_lo = (index >= 0) & (index < 32)
  in_hi = (index >= 32) & (index < 64)
  return (jnp.where(in_lo, one << lo_shift, jnp.uint32(0)),
          jnp.where(in_hi, one << hi_shift, jnp.uint32(0)))


def mix32(x: jax.Array) -> jax.Array:
  """murmur3's 32-bit finaliser: a well-mixed uint32 hash of a uint32.

  Args:
    x: uint32[...].

  Returns:
    uint32[...].
  """
  x = x ^ (x >> 16)
  x = x * jnp.uint32(0x85EBCA6B)
  x = x ^ (x >> 13)
  x = x * jnp.uint32(0xC2B2AE35)
  return x ^ (x >> 16)
