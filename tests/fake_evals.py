"""Stand-in networks for tests.

HashEval: prior logits and value are a hash of the state's key, computed
identically in JAX and in plain Python, so the JAX search and the reference
see the same numbers for the same state. RandomEval: random outputs drawn
from the rng (new searches without recompiling). NaNEval: a broken network.
"""

import dataclasses
import math

import jax
import jax.numpy as jnp

from mcgs_jax.envs import bits

M32 = 0xFFFFFFFF


def _mix_py(x):
  x &= M32
  x ^= x >> 16
  x = (x * 0x85EBCA6B) & M32
  x ^= x >> 13
  x = (x * 0xC2B2AE35) & M32
  return x ^ (x >> 16)


def hash_eval_py(key, legal, value_scale=1.0, logit_scale=1.0):
  """key: (lo, hi) ints; legal: list of bools -> (prior list, value)."""
  h = _mix_py(key[0] ^ _mix_py(key[1] + 0x9E3779B9))
  value = ((h & 0xFF) / 128.0 - 1.0) * value_scale
  logits = [(_mix_py(h + (a + 1) * 0x632BE5AB) & 0xFF) / 64.0 * logit_scale
            for a in range(len(legal))]
  top = max(l for l, ok in zip(logits, legal) if ok) if any(legal) else 0.0
  weights = [math.exp(l - top) if ok else 0.0 for l, ok in zip(logits, legal)]
  total = sum(weights)
  return [w / total for w in weights] if total > 0 else weights, value


@dataclasses.dataclass(frozen=True)
class HashEval:
  """Scales below 1 flatten the search (more breadth, more transpositions);
  powers of two keep both implementations' numbers identical."""
  num_actions: int
  value_scale: float = 1.0
  logit_scale: float = 1.0

  def __call__(self, params, rng, state):
    del params, rng
    key = state.key
    h = bits.mix32(key[:, 0] ^ bits.mix32(key[:, 1] + jnp.uint32(0x9E3779B9)))
    value = ((h & 0xFF).astype(jnp.float32) / 128.0 - 1.0) * self.value_scale
    salts = (jnp.arange(1, self.num_actions + 1, dtype=jnp.uint32) *
             jnp.uint32(0x632BE5AB))
    logits = (bits.mix32(h[:, None] + salts[None, :]) & 0xFF).astype(jnp.float32) / 64.0 * self.logit_scale
    return logits, value


@dataclasses.dataclass(frozen=True)
class RandomEval:
  """Random logits and values in [-1, 1] drawn from `rng`."""
  num_actions: int

  def __call__(self, params, rng, state):
    del params
    batch = state.key.shape[0]
    logit_rng, value_rng = jax.random.split(rng)
    logits = 2.0 * jax.random.normal(logit_rng, (batch, self.num_actions))
    value = jax.random.uniform(value_rng, (batch,), minval=-1.0, maxval=1.0)
    return logits, value


@dataclasses.dataclass(frozen=True)
class NaNEval:
  """NaN everywhere for the games whose key's low bit is set."""
  num_actions: int

  def __call__(self, params, rng, state):
    del params, rng
    bad = (state.key[:, 0] & 1) == 1
    logits = jnp.where(bad[:, None], jnp.nan, jnp.zeros((bad.shape[0], self.num_actions)))
    return logits, jnp.where(bad, jnp.nan, 0.5)
