"""Counting compilations, to check that a step reuses compiled code."""

import contextlib

from jax import monitoring

# Every jitted call that misses its in-memory executable cache lowers the
# program to MLIR, whether or not a persistent compilation cache then spares
# the backend compilation.
LOWERING = "/jax/core/compile/jaxpr_to_mlir_module_duration"


@contextlib.contextmanager
def compilations():
  """Collects the compilations (lowerings to MLIR) started inside the block.

  Yields:
    A list that holds one duration (seconds) per lowering, filled as they
    happen.
  """
  durations = []

  def listener(name, seconds, **kwargs):
    del kwargs
    if name == LOWERING:
      durations.append(seconds)

  monitoring.register_event_duration_secs_listener(listener)
  try:
    yield durations
  finally:
    monitoring.unregister_event_duration_listener(listener)
