"""The normal suite runs one variant of a parametrized check; `make
test-slow` runs them all.

A variant that takes the code path of another (the same search with another
backup mode, another game through the same adapter) costs a compilation of
its own, seconds each; the normal suite keeps its 12 minutes by running the
variants named here and leaving the others to the slow suite."""

import pytest


def slow_unless(values, fast):
  """`values` for `pytest.mark.parametrize`, those not in `fast` marked slow.

  Args:
    values: the parameter values (tuples for several argument names).
    fast: the values the normal suite runs.

  Returns:
    list of values and `pytest.param(..., marks=pytest.mark.slow)`.
  """
  fast = list(fast)
  out = []
  for value in values:
    if value in fast:
      out.append(value)
    else:
      args = value if isinstance(value, tuple) else (value,)
      out.append(pytest.param(*args, marks=pytest.mark.slow))
  missing = [value for value in fast if value not in values]
  if missing:
    raise ValueError(f"fast variants {missing} are not among {values}")
  return out
