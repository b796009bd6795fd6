"""Why tests/conftest.py clears jax's caches after each module: compiled
programs hold memory mappings, and clearing the caches gives them back."""

import gc

import jax
import pytest


def _mapping_count():
  try:
    with open("/proc/self/maps") as maps:
      return sum(1 for _ in maps)
  except OSError:  # Not Linux: nothing to measure.
    return 0



@pytest.mark.slow
def test_clearing_caches_releases_mappings():
  if not _mapping_count():
    pytest.skip("no /proc/self/maps on this platform")
  jax.clear_caches()
  gc.collect()
  before = _mapping_count()
  functions = [jax.jit(lambda x, k=k: x * k + 1) for k in range(50)]
  for f in functions:
    f(jax.numpy.ones(3)).block_until_ready()
  grown = _mapping_count()
  del functions
  jax.clear_caches()
  gc.collect()
  after = _mapping_count()
  assert grown > before + 100  # Compiled programs do hold mappings ...
  assert after < grown - 100  # ... and clearing the caches gives them back.
