"""Counting XLA compilations, to check that a step reuses compiled code."""

import contextlib

from jax import monitoring

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def backend_compiles():
  """Collects the backend compilations run inside the block.

  Yields:
    A list that holds one duration (seconds) per compilation, filled as
    they happen.
  """
  durations = []

  def listener(name, seconds, **kwargs):
    del kwargs
    if name == BACKEND_COMPILE:
      durations.append(seconds)

  monitoring.register_event_duration_secs_listener(listener)
  try:
    yield durations
  finally:
    monitoring.unregister_event_duration_listener(listener)
