"""Why tests/conftest.py clears jax's caches once a worker holds many mappings: compiled
programs hold memory mappings, and clearing the caches gives them back."""

import gc

import jax
import pytest

from tests import compile_count


@pytest.mark.slow
def test_clearing_caches_releases_mappings():
  if compile_count.mapping_count() is None:
    pytest.skip("no /proc/self/maps on this platform")
  jax.clear_caches()
  gc.collect()
  before = compile_count.mapping_count()
  functions = [jax.jit(lambda x, k=k: x * k + 1) for k in range(50)]
  for f in functions:
    f(jax.numpy.ones(3)).block_until_ready()
  grown = compile_count.mapping_count()
  del functions
  jax.clear_caches()
  gc.collect()
  after = compile_count.mapping_count()
  assert grown > before + 100  # Compiled programs do hold mappings ...
  assert after < grown - 100  # ... and clearing the caches gives them back.
