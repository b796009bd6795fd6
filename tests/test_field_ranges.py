"""Every SearchConfig and TrainConfig field has its valid values stated
(`mcgs_jax.field_spec`), and a value outside them is refused at
construction: hypothesis draws wrong types and out-of-range values for every
field of both configs."""

import dataclasses
import math
import pathlib

import hypothesis
import pytest
from hypothesis import strategies as st

import mcgs_jax
from mcgs_jax.learning import config as config_lib
from mcgs_jax import config as search_config_lib
from mcgs_jax import field_spec
from mcgs_jax.field_spec import Spec

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = {
    "SearchConfig": (mcgs_jax.SearchConfig, search_config_lib.FIELDS,
                     lambda **kw: mcgs_jax.SearchConfig(**kw)),
    "TrainConfig": (config_lib.TrainConfig, config_lib.FIELDS,
                    lambda **kw: config_lib.replace(config_lib.TrainConfig(), **kw)),
    # Older configs' flat search fields, read through `migrate`: the same
    # one-line refusals as before.
    "TrainConfig (older fields)": (None, config_lib.LEGACY_FIELDS,
                                   lambda **kw: config_lib.replace(config_lib.TrainConfig(), **kw)),
}


def invalid_values(spec: Spec) -> st.SearchStrategy:
  """Values `spec` refuses: the wrong type, or outside its range or
  choices."""
  wrong_type = {
      bool: st.one_of(st.integers(), st.floats(), st.text(), st.just([True])),
      str: st.one_of(st.integers(), st.floats(), st.booleans(), st.just(["mcgs"])),
      tuple: st.one_of(st.integers(), st.text(), st.booleans()),
      int: st.one_of(st.floats().filter(lambda x: not float(x).is_integer()), st.text(),
                     st.booleans(), st.just([1])),
      float: st.one_of(st.text(), st.booleans(), st.just([1.0]),
                       st.sampled_from([math.nan, math.inf, -math.inf])),
  }.get(spec.kind)
  if wrong_type is None:   # a field holding configs of the classes `spec.kind`
    wrong_type = st.one_of(st.integers(), st.floats(), st.text(), st.booleans(), st.just([1]))
  options = [wrong_type]
  if not spec.optional and spec.kind is not bool:
    options.append(st.none())
  if spec.choices is not None:
    options.append(st.text().filter(lambda s: s not in spec.choices))
  number = st.integers if spec.kind is int else (
      lambda min_value=None, max_value=None: st.floats(min_value, max_value,
                                                        allow_nan=False))
  if spec.kind in (int, float):
    if spec.low is not None:
      below = (st.just(spec.low) if spec.low_open else
               number(max_value=spec.low - 1 if spec.kind is int else spec.low).filter(
                   lambda x: x < spec.low))
      options.append(below)
    if spec.high is not None:
      above = (st.just(spec.high) if spec.high_open else
               number(min_value=spec.high + 1 if spec.kind is int else spec.high).filter(
                   lambda x: x > spec.high))
      options.append(above)
    if spec.power_of_two:
      options.append(st.sampled_from([3, 5, 6, 7, 12, 100]))
  return st.one_of(options)


@pytest.mark.parametrize("owner", sorted(CONFIGS))
def test_every_field_has_its_valid_values(owner):
  cls, specs, _ = CONFIGS[owner]
  if cls is not None:
    assert [f.name for f in dataclasses.fields(cls)] == list(specs)
  for spec in specs.values():
    assert field_spec.describe(spec)


@pytest.mark.parametrize("owner", sorted(CONFIGS))
@hypothesis.settings(max_examples=400, deadline=None, derandomize=True)
@hypothesis.given(data=st.data())
def test_an_invalid_value_of_any_field_is_refused(owner, data):
  _, specs, make = CONFIGS[owner]
  name = data.draw(st.sampled_from(sorted(specs)), label="field")
  value = data.draw(invalid_values(specs[name]), label="value")
  with pytest.raises((TypeError, ValueError)) as caught:
    make(**{name: value})
  message = str(caught.value)
  assert "\n" not in message
  assert name in message or "mode" in message


def test_the_defaults_are_valid():
  mcgs_jax.SearchConfig()
  for env_id in ("tictactoe", "connect4", "nim", "nim:3,20", "hsr:4,4,16"):
    config_lib.default_config(env_id)


def test_the_issue_examples_are_refused():
  for changes in (dict(c_init=-1.0), dict(q_init=5.0), dict(c_base=0.0), dict(q_eps=-1.0)):
    with pytest.raises(ValueError):
      mcgs_jax.SearchConfig(**changes)
  with pytest.raises(TypeError, match=r"TrainConfig.simulations must be an int in \[1, 2147483647\], got 'many'"):
    config_lib.TrainConfig.from_json({"simulations": "many"})
  with pytest.raises(ValueError, match=r"'simulatons' \(did you mean 'simulations'\?\)"):
    config_lib.TrainConfig.from_json({"simulatons": 5})


def test_the_configuration_page_is_the_code_s():
  page = (ROOT / config_lib.CONFIGURATION_DOC).read_text()
  assert page == config_lib.configuration_markdown(), (
      "docs/configuration.md is stale: python -c 'from mcgs_jax.learning import config; "
      "config.write_configuration_doc()'")


@pytest.mark.parametrize("changes,message", [
    (dict(num_simulations=2 ** 31), r"SearchConfig.num_simulations must be an int in \[0, 536870912\]"),
    (dict(max_nodes=2 ** 31), r"SearchConfig.max_nodes must be None or an int in \[1, 536870912\]"),
    (dict(table_size=2 ** 40), r"SearchConfig.table_size must be None or an int .* in \[1, 1073741824\]"),
    (dict(max_depth=10 ** 400), r"SearchConfig.max_depth .* got an int of 401 digits"),
    (dict(c_init=10 ** 400), r"SearchConfig.c_init must be a number >= 0, got an int of 401 digits"),
])
def test_sizes_past_int32_name_their_field(changes, message):
  with pytest.raises(ValueError, match=message):
    mcgs_jax.SearchConfig(**changes)


def test_a_seed_past_int32_is_refused_before_the_run():
  with pytest.raises(ValueError, match=r"TrainConfig.seed must be an int in \[0, 2147483647\]"):
    config_lib.TrainConfig.from_json({"seed": 2 ** 70})


def test_many_unknown_fields_are_answered_at_once():
  import time  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  with pytest.raises(ValueError, match=r"unknown config fields 'key0', 'key1', 'key10' and "
                                       r"199997 more"):
    config_lib.TrainConfig.from_json({f"key{i}": i for i in range(200_000)})
  # A generous bound that still tells a linear answer (about 0.3 s here) from
  # a quadratic one (minutes at 200,000 fields) on a loaded machine.
  assert time.perf_counter() - start < 10.0
