"""The valid values of a config field, stated once: checked at construction,
described in the docs and drawn from by the tests.

`Spec` says a field's type (int, float, bool, str, tuple, or config
classes for a field that holds other configs), its range or its
choices, and whether None is allowed. `check(owner, name, value, spec)`
raises `TypeError` for a value of the wrong type (a count given as a float,
a bool as a number, a number as a string, ...) and `ValueError` for one out
of range, each in one line that names the field, the valid values and the
value given. `describe(spec)` is the same valid values in words (the tables
of docs/configuration.md).
"""

import dataclasses
import math
import numbers
from typing import Any

_NAMES = {int: "an int", float: "a number", bool: "a bool (true or false)", str: "a string",
          tuple: "a list or mapping"}
# The largest int a count may hold: sizes, budgets and seeds become int32
# arrays and shapes (jax has no int64 without x64).
INT32_MAX = 2 ** 31 - 1


@dataclasses.dataclass(frozen=True)
class Spec:
  """A field's valid values.

  Attributes:
    kind: int, float, bool, str or tuple, or a tuple of classes (a field
      holding a config of one of them). A float field takes ints too (JSON
      writes 1.0 as 1); no number field takes a bool.
    low, high: the range's ends (None: unbounded).
    low_open, high_open: the end itself is excluded.
    choices: the only values allowed (strings).
    optional: None is allowed too.
    power_of_two: an int field must be a power of two.
    note: what the range cannot say (checked elsewhere), for the docs.
  """
  kind: type | tuple
  low: float | None = None
  high: float | None = None
  low_open: bool = False
  high_open: bool = False
  choices: tuple | None = None
  optional: bool = False
  power_of_two: bool = False
  note: str | None = None


def count(low: int = 0, high: int = INT32_MAX, **kwargs) -> Spec:
  """An int field in [low, high].

  Args:
    low: the least value.
    high: the largest (default: int32's largest, as every count ends up in
      an int32 array or shape).
    **kwargs: other `Spec` attributes (`optional`, `note`, ...).

  Returns:
    The Spec.
  """
  return Spec(int, low=low, high=high, **kwargs)


def number(low: float | None = None, high: float | None = None, **kwargs) -> Spec:
  """A finite float field in [low, high] (ends open where asked).

  Args:
    low, high: the range's ends (None: unbounded).
    **kwargs: other `Spec` attributes (`low_open`, `note`, ...).

  Returns:
    The Spec.
  """
  return Spec(float, low=low, high=high, **kwargs)


def share(**kwargs) -> Spec:
  """A float field in [0, 1] (ends open where asked).

  Args:
    **kwargs: other `Spec` attributes (`low_open`, `high_open`).

  Returns:
    The Spec.
  """
  return Spec(float, low=0.0, high=1.0, **kwargs)


def one_of(*choices: str) -> Spec:
  """A string field that must be one of `choices`.

  Args:
    *choices: the allowed strings.

  Returns:
    The Spec.
  """
  return Spec(str, choices=tuple(choices))


FLAG = Spec(bool)
TEXT = Spec(str)


def describe(spec: Spec) -> str:
  """The valid values in words, e.g. "an int >= 1", "a number in (0, 1]".

  Args:
    spec: the Spec.

  Returns:
    The description.
  """
  if spec.choices is not None:
    text = "one of " + ", ".join(repr(c) for c in spec.choices)
  elif isinstance(spec.kind, tuple):
    text = " or ".join(f"a {kind.__name__}" for kind in spec.kind)
  else:
    text = _NAMES[spec.kind]
    if spec.power_of_two:
      text += " (a power of two)"
    if spec.low is not None and spec.high is not None:
      text += (f" in {'(' if spec.low_open else '['}{_number(spec.low)}, "
               f"{_number(spec.high)}{')' if spec.high_open else ']'}")
    elif spec.low is not None:
      text += f" {'>' if spec.low_open else '>='} {_number(spec.low)}"
    elif spec.high is not None:
      text += f" {'<' if spec.high_open else '<='} {_number(spec.high)}"
  text = ("None or " + text) if spec.optional else text
  return f"{text}; {spec.note}" if spec.note else text


def _number(value: float) -> str:
  return str(int(value)) if float(value).is_integer() else str(value)


def check(owner: str, name: str, value: Any, spec: Spec) -> None:
  """Checks one field's value.

  Args:
    owner: the config's name, e.g. "SearchConfig" (for the message).
    name: the field.
    value: its value.
    spec: its Spec.

  Raises:
    TypeError: the value has the wrong type.
    ValueError: it lies outside the range or the choices.
  """
  if value is None and spec.optional:
    return
  given = f"got {value!r} ({type(value).__name__})"
  wrong = f"{owner}.{name} must be {describe(spec)}, {given}"
  if spec.kind is bool:
    if not isinstance(value, bool):
      raise TypeError(wrong)
    return
  if spec.kind is str:
    if not isinstance(value, str):
      raise TypeError(wrong)
    if spec.choices is not None and value not in spec.choices:
      raise ValueError(wrong)
    return
  if spec.kind is tuple or isinstance(spec.kind, tuple):
    if not isinstance(value, spec.kind):
      raise TypeError(wrong)
    return
  if isinstance(value, bool):
    raise TypeError(wrong)
  if spec.kind is int and not isinstance(value, numbers.Integral):
    raise TypeError(wrong)
  if spec.kind is float and not isinstance(value, numbers.Real):
    raise TypeError(wrong)
  if isinstance(value, numbers.Integral) and abs(value) >= 10 ** 30:
    wrong = f"{owner}.{name} must be {describe(spec)}, got an int of {len(str(abs(value)))} digits"
  if spec.kind is float and not _finite(value):
    raise ValueError(wrong)
  if spec.low is not None and (value < spec.low or (spec.low_open and value == spec.low)):
    raise ValueError(wrong)
  if spec.high is not None and (value > spec.high or (spec.high_open and value == spec.high)):
    raise ValueError(wrong)
  if spec.power_of_two and int(value) & (int(value) - 1):
    raise ValueError(wrong)


def _finite(value: numbers.Real) -> bool:
  try:
    return math.isfinite(value)
  except OverflowError:   # an int too large for a float, in a float field
    return False


def check_fields(owner: str, config: Any, specs: dict[str, Spec]) -> None:
  """`check` on every field of a dataclass that `specs` names.

  Args:
    owner: the config's name.
    config: the dataclass instance.
    specs: field name -> Spec.
  """
  for field in dataclasses.fields(config):
    if field.name in specs:
      check(owner, field.name, getattr(config, field.name), specs[field.name])


def markdown_table(specs: dict[str, Spec], defaults: Any, show: Any = repr) -> str:
  """The valid values of every field as a markdown table.

  Args:
    specs: field name -> Spec, in the order of the table.
    defaults: an instance whose field values are the defaults shown, or a
      dict of them.
    show: the default's text (repr).

  Returns:
    The table (field, default, valid values).
  """
  lines = ["| field | default | valid values |", "|---|---|---|"]
  for name, spec in specs.items():
    default = defaults[name] if isinstance(defaults, dict) else getattr(defaults, name)
    lines.append(f"| `{name}` | `{show(default)}` | {describe(spec)} |")
  return "\n".join(lines)
