"""Suite-wide fixtures.

Every compiled XLA:CPU executable keeps about 18 memory mappings alive while
jax's caches hold it. A pytest worker that runs hundreds of tests compiles
thousands of programs and reaches the kernel's limit on mappings per process
(`vm.max_map_count`, 65530 by default), after which the next compilation dies
with a segmentation fault inside XLA. Clearing jax's caches after each test
module keeps a worker's mappings bounded by what one module compiles.
"""

import gc

import jax
import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
  yield
  jax.clear_caches()
  gc.collect()
