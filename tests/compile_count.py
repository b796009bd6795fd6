"""Counting compilations, to check that a step reuses compiled code, and the
memory mappings compiled programs hold."""

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


def mapping_count() -> int | None:
  """Memory mappings of this process; None where /proc is not there.

  Returns:
    The number of lines of /proc/self/maps, or None.
  """
  try:
    with open("/proc/self/maps", "rb") as maps:
      return sum(1 for _ in maps)
  except OSError:
    return None
