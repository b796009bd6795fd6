"""The backup modes' registry (`mcgs_jax.modes`): every mode list reads it,
`SearchConfig`'s capabilities are the mode's fields, and `register` adds a
mode that searches like the built-in one it copies."""

import dataclasses

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import modes
from tests.fake_evals import RandomEval

CAPABILITIES = ("uses_table", "links_transpositions", "corrects_transpositions",
                "caches_evaluations", "recomputes_values")
# The capabilities as `SearchConfig` answered them before the registry, by name.
BUILT_IN = {
    "mcgs": dict(uses_table=True, links_transpositions=True, corrects_transpositions=True,
                 caches_evaluations=False, recomputes_values=False),
    "tree": dict(uses_table=False, links_transpositions=False, corrects_transpositions=False,
                 caches_evaluations=False, recomputes_values=False),
    "tt_cache": dict(uses_table=True, links_transpositions=False, corrects_transpositions=False,
                     caches_evaluations=True, recomputes_values=False),
    "katago": dict(uses_table=True, links_transpositions=True, corrects_transpositions=False,
                   caches_evaluations=False, recomputes_values=True),
}


@pytest.fixture
def registry(monkeypatch):
  """A copy of the registry for one test: what it registers is gone after."""
  monkeypatch.setattr(modes, "MODES", dict(modes.MODES))
  return modes.MODES


def test_the_registry_lists_the_four_modes_in_order():
  assert modes.names() == ("mcgs", "tree", "tt_cache", "katago")
  assert mcgs_jax.config.BACKUP_MODES == modes.names()
  assert [modes.get(n) for n in modes.names()] == [modes.MCGS, modes.TREE, modes.TT_CACHE,
                                                    modes.KATAGO]
  assert all(modes.get(n).name == n and modes.get(n).description for n in modes.names())
  assert mcgs_jax.SearchConfig().mode is modes.MCGS


def test_capability_fields_are_the_engine_switches():
  fields = [f.name for f in dataclasses.fields(modes.BackupMode)]
  assert tuple(fields) == ("name", "description") + CAPABILITIES
  # Resolved on construction: every config has them, none is a field.
  config = mcgs_jax.SearchConfig()
  assert all(hasattr(config, c) for c in CAPABILITIES)
  assert not set(CAPABILITIES) & {f.name for f in dataclasses.fields(config)}


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_built_in_capabilities_are_unchanged(name):
  config = mcgs_jax.SearchConfig(backup=name)
  assert {c: getattr(config, c) for c in CAPABILITIES} == BUILT_IN[name]


def test_search_config_reads_every_capability_off_the_mode(registry):
  # A combination no built-in mode has (katago's recomputation on a tree):
  # config.py answers it without an edit.
  modes.register(modes.BackupMode("tree_recompute", "a tree, values recomputed",
                                  recomputes_values=True))
  for name in modes.names():
    config = mcgs_jax.SearchConfig(backup=name)
    assert config.mode is registry[name]
    for capability in CAPABILITIES:
      assert getattr(config, capability) == getattr(registry[name], capability), (name, capability)


def test_unknown_names_list_the_known_ones():
  with pytest.raises(ValueError, match="unknown backup mode 'graph'; known: mcgs, tree, "
                                       "tt_cache, katago"):
    modes.get("graph")
  with pytest.raises(ValueError, match="known: mcgs, tree, tt_cache, katago"):
    mcgs_jax.SearchConfig(backup="graph")
  with pytest.raises(TypeError, match="SearchConfig.backup must be a string"):
    mcgs_jax.SearchConfig(backup=None)


def test_register_adds_a_mode_and_refuses_taken_names(registry):
  copy = dataclasses.replace(modes.MCGS, name="mcgs_copy", description="mcgs by another name")
  assert modes.register(copy) is copy
  assert modes.names()[-1] == "mcgs_copy" and modes.get("mcgs_copy") is copy
  assert mcgs_jax.SearchConfig(backup="mcgs_copy").mode is copy
  with pytest.raises(ValueError, match="'mcgs_copy' is already registered"):
    modes.register(copy)
  with pytest.raises(ValueError, match="'tree' is already registered"):
    modes.register(modes.BackupMode("tree", "another tree"))
  with pytest.raises(TypeError, match="BackupMode"):
    modes.register("mcgs_copy")
  assert registry is modes.MODES


def test_registrations_do_not_leak_between_tests():
  assert modes.names() == ("mcgs", "tree", "tt_cache", "katago")
  with pytest.raises(ValueError, match="unknown backup mode"):
    mcgs_jax.SearchConfig(backup="mcgs_copy")


@pytest.mark.parametrize("switches, problem", [
    (dict(links_transpositions=True), "links_transpositions needs uses_table"),
    (dict(caches_evaluations=True), "caches_evaluations needs uses_table"),
    (dict(uses_table=True), "uses_table needs links_transpositions or caches_evaluations"),
    (dict(uses_table=True, links_transpositions=True, caches_evaluations=True),
     "exclude each other"),
    (dict(uses_table=True, caches_evaluations=True, corrects_transpositions=True),
     "corrects_transpositions needs links_transpositions"),
])
def test_inconsistent_modes_are_refused(switches, problem):
  with pytest.raises(ValueError, match=f"inconsistent backup mode 'bad': .*{problem}"):
    modes.BackupMode("bad", "inconsistent", **switches)


def test_a_mode_needs_a_name():
  with pytest.raises(ValueError, match="non-empty string"):
    modes.BackupMode("", "no name")


def test_a_registered_copy_of_mcgs_searches_exactly_like_mcgs(registry):
  modes.register(dataclasses.replace(modes.MCGS, name="mcgs_copy"))
  # One pile of 20, take 1-3: move orders meet at once, so within 16
  # simulations the search links transpositions and corrects diverged ones.
  env = envs.make("nim:3,20")
  state = env.init(jax.random.PRNGKey(0), 1)
  eval_fn = RandomEval(env.num_actions)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  outs = [jax.device_get(search(None, jax.random.PRNGKey(1), state, env, eval_fn,
                                mcgs_jax.SearchConfig(num_simulations=16, backup=name)))
          for name in ("mcgs", "mcgs_copy")]
  leaves = [jax.tree_util.tree_leaves_with_path(out) for out in outs]
  assert len(leaves[0]) == len(leaves[1]) > 0
  for (path, a), (_, b) in zip(*leaves):
    np.testing.assert_array_equal(a, b, err_msg=jax.tree_util.keystr(path))
  assert outs[1].stats.transposition_hits[0] > 0 and outs[1].stats.corrections[0] > 0
