"""The import layers: no loop anywhere, experiments are leaves, mcgs_jax
imports none of the other packages (function-local imports included); a
default search runs the code of its own modules only, an enhancement's module
only when the config turns it on."""

import ast
import collections
import dataclasses
import functools
import pathlib
import sys

import jax
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import rules
from tests import variants

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Installed package -> its folder in the repository.
PACKAGES = {"mcgs_jax": "mcgs_jax", "mcgs_jax.envs": "envs", "mcgs_jax.networks": "networks",
            "mcgs_jax.learning": "learning", "mcgs_jax.benchmarks": "benchmarks",
            "mcgs_jax.experiments": "experiments"}
LIBRARY = ("mcgs_jax.envs", "mcgs_jax.networks", "mcgs_jax.learning")


def _modules() -> dict[str, pathlib.Path]:
  modules = {}
  for package, folder in PACKAGES.items():
    for path in (ROOT / folder).glob("*.py"):
      modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
  return modules


def _in(name: str, package: str) -> bool:
  return name == package or name.startswith(package + ".")


def _core(name: str) -> bool:
  """A module of the search itself (the `mcgs_jax/` folder)."""
  return _in(name, "mcgs_jax") and not any(_in(name, p) for p in PACKAGES if p != "mcgs_jax")


def _imports() -> dict[str, set[str]]:
  """Module -> the project modules it imports, at any depth of its code
  (`cli.lazy` included)."""
  modules = _modules()
  graph = collections.defaultdict(set)
  for name, path in modules.items():
    for node in ast.walk(ast.parse(path.read_text())):
      targets = []
      if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        # `from pkg import sub` imports the submodule; other names come from pkg.
        subs = [f"{node.module}.{a.name}" for a in node.names
                if f"{node.module}.{a.name}" in modules]
        targets = subs + ([node.module] if len(subs) < len(node.names) else [])
      elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "lazy" and node.args and isinstance(node.args[0], ast.Constant)):
        targets = [node.args[0].value]   # a command's `cli.lazy("mcgs_jax.learning.loop")`
      graph[name] |= {t for t in targets if t in modules and t != name}
  return graph


def _cycle(graph) -> list[str] | None:
  state, stack = {}, []

  def visit(node):
    state[node] = "open"
    stack.append(node)
    for child in sorted(graph[node]):
      if state.get(child) == "open":
        return stack[stack.index(child):] + [child]
      if child not in state:
        found = visit(child)
        if found:
          return found
    stack.pop()
    state[node] = "done"
    return None

  for node in sorted(graph):
    if node not in state:
      found = visit(node)
      if found:
        return found
  return None


def test_no_import_loop():
  assert _cycle(_imports()) is None, " -> ".join(_cycle(_imports()))


def test_experiments_are_leaves_and_the_search_stands_alone():
  graph = _imports()
  experiments = "mcgs_jax.experiments"
  upward = sorted((a, b) for a, deps in graph.items() for b in deps
                  if not _in(a, experiments) and _in(b, experiments))
  assert not upward, upward
  outside = sorted((a, b) for a, deps in graph.items() for b in deps if _core(a) and not _core(b))
  assert not outside, outside
  assert _core("mcgs_jax.graph") and not _core("mcgs_jax.envs.nim")   # the checker tells them apart


def test_experiments_are_command_lines_on_top_of_the_library():
  """No command line imports another (what two share lives in a library
  package), and only command lines import `benchmarks`."""
  graph = _imports()
  experiments = "mcgs_jax.experiments"
  between = sorted((a, b) for a, deps in graph.items() for b in deps
                   if _in(a, experiments) and _in(b, experiments) and a != experiments)
  assert not between, between
  upward = sorted((a, b) for a, deps in graph.items() for b in deps
                  if (_core(a) or a.startswith(LIBRARY)) and _in(b, "mcgs_jax.benchmarks"))
  assert not upward, upward
  assert graph["mcgs_jax.experiments.device_report"] >= {"mcgs_jax.benchmarks.report_plan",
                                                         "mcgs_jax.benchmarks.report"}


def test_tests_run_the_command_lines_as_processes():
  """No test module imports a command line: tests import the library, and a
  command line's own test runs it as a process."""
  importers = []
  for path in sorted((ROOT / "tests").glob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
      names = []
      if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
      if any(_in(name, "mcgs_jax.experiments") for name in names):
        importers.append(path.name)
  assert not importers, sorted(set(importers))


def test_phases_keep_to_their_rooms():
  """Selection selects, expansion expands, the backup backs up: what two
  phases share lives in `graph` (the Selection record, edge values, the
  transposition test), and a phase imports only the phase that follows it
  (expansion ends with the backup)."""
  graph = _imports()
  assert not graph["mcgs_jax.selection"] & {"mcgs_jax.expansion", "mcgs_jax.backup"}
  assert "mcgs_jax.selection" not in graph["mcgs_jax.expansion"]
  assert "mcgs_jax.backup" in graph["mcgs_jax.expansion"]
  assert not graph["mcgs_jax.backup"] & {"mcgs_jax.selection", "mcgs_jax.expansion"}
  # The plug-ins' contract (with the move filter) lies below the phases that
  # take it; the rules that assemble it, above them.
  assert graph["mcgs_jax.selection"] >= {"mcgs_jax.plugins"}
  assert not graph["mcgs_jax.plugins"] & {
      "mcgs_jax.selection", "mcgs_jax.expansion", "mcgs_jax.backup", "mcgs_jax.rules"}


# The engine: the phases and the graph. Enhancements plug into it
# (`plugins.Plugins`, assembled by `rules`); it imports none of them.
ENGINE_MODULES = ("selection", "expansion", "backup", "graph", "hash_table", "plugins")


def test_the_engine_imports_no_enhancement():
  graph = _imports()
  assert graph["mcgs_jax.rules"] >= {f"mcgs_jax.{m}" for m in ("solver", "gumbel", "rave")}
  enhancements = {f"mcgs_jax.{m}" for m in ENHANCEMENT_MODULES} | {"mcgs_jax.rules"}
  for module in ENGINE_MODULES:
    # At any depth: what an engine module imports imports no enhancement either.
    seen, todo = set(), [f"mcgs_jax.{module}"]
    while todo:
      name = todo.pop()
      for dep in graph[name] - seen:
        seen.add(dep)
        todo.append(dep)
    assert not seen & enhancements, (module, sorted(seen & enhancements))


def test_the_graph_keeps_the_core_and_the_enhancements_their_own_state():
  fields = [f.name for f in dataclasses.fields(mcgs_jax.graph.Graph)]
  assert len(fields) <= 15, fields
  assert not {"solved", "bounds", "pruned", "amaf_visits", "root_gumbel"} & set(fields)
  env = envs.make("nim-piles:1,2")
  state = env.init(jax.random.PRNGKey(0), batch_size=1)

  def records(**switches):
    config = mcgs_jax.SearchConfig(num_simulations=2, **switches)
    out = jax.eval_shape(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.uniform_eval(env),
                                           config=config), None, jax.random.PRNGKey(0), state)
    return set(out.graph.enhancements)

  assert records() == set()
  assert records(solver=True, root_policy="gumbel", rave=True,
                 progressive_pruning="hard") == {"solver", "gumbel", "rave", "pruning"}
  assert records(progressive_pruning="soft") == set()   # soft pruning keeps no mask


def test_the_checker_sees_a_loop():
  graph = collections.defaultdict(set, {"a": {"b"}, "b": {"c"}, "c": {"a"}})
  assert _cycle(graph) == ["a", "b", "c", "a"]
  assert _cycle(collections.defaultdict(set, {"a": {"b"}, "b": set()})) is None
  # The real graph is not empty: the checker reads the code.
  assert len(_imports()["mcgs_jax.learning.loop"]) >= 5


# The modules of `mcgs_jax` a default search (PUCT, mcgs backup, no solver,
# no enhancement) runs code of while it is traced; an enhancement's module is
# entered only where the config turns it on.
# The config resolves what follows from its fields on construction; tracing
# runs of `config` only `Fields.of`, which reads a phase's few settings
# (`selection.Settings`, `backup.Settings`) off it.
DEFAULT_SEARCH_MODULES = {"engine", "rules", "plugins", "selection", "expansion", "backup",
                          "graph", "hash_table", "model", "policies", "config"}
ENHANCEMENT_MODULES = {"gumbel": dict(root_policy="gumbel"), "solver": dict(solver=True),
                       "pruning": dict(progressive_pruning="soft"), "rave": dict(rave=True),
                       "depth_i": dict(depth_i=1), "leaves": dict(leaves_per_step=2),
                       "exploration": dict(eps_greedy=0.5),
                       "expansion_policy": dict(expansion_policy="visits",
                                                expansion_threshold=2.0)}


def _entered(**fields) -> set[str]:
  """The `mcgs_jax` modules whose code runs while jax traces one search."""
  env = envs.make("nim-piles:1,2")
  search = functools.partial(mcgs_jax.search, env=env, eval_fn=envs.uniform_eval(env),
                             config=mcgs_jax.SearchConfig(num_simulations=4, **fields))
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  package = str(ROOT / "mcgs_jax") + "/"
  entered = set()

  def note(frame, event, unused_arg):   # Python calls only; no line events
    if event == "call" and frame.f_code.co_filename.startswith(package):
      entered.add(pathlib.Path(frame.f_code.co_filename).stem)

  rules.of.cache_clear()   # a cached assembly would run no code of `rules`
  sys.settrace(note)
  try:
    jax.eval_shape(search, None, jax.random.PRNGKey(0), state)   # traced, not compiled
  finally:
    sys.settrace(None)
  return entered


def test_a_default_search_enters_only_its_own_modules():
  assert _entered() == DEFAULT_SEARCH_MODULES


@pytest.mark.parametrize("module", variants.slow_unless(list(ENHANCEMENT_MODULES),
                                                       fast=["gumbel", "solver"]))
def test_an_enhancement_is_entered_only_when_on(module):
  entered = _entered(**ENHANCEMENT_MODULES[module])
  assert module in entered, (module, sorted(entered))
  assert module not in DEFAULT_SEARCH_MODULES


# Each enhancement's SearchConfig fields, read (as `config.<field>`) by the
# rules that switch it on and by its own module, not all over the core.
ENHANCEMENT_FIELDS = {
    "solver": ("solver", "solver_bounds"),
    "gumbel": ("root_policy", "max_considered_actions", "gumbel_scale", "value_scale",
               "maxvisit_init"),
    "pruning": ("progressive_pruning", "pruning_r_d", "pruning_min_visits",
                "pruning_max_visits_per_move", "min_root_visit_fraction"),
    "rave": ("rave", "rave_b"),
    "exploration": ("eps_greedy", "eps_constraint", "eps_decay"),
    "leaves": ("leaves_per_step",),
    "depth_i": ("depth_i",),
    "expansion_policy": ("expansion_policy", "expansion_threshold"),
}


def _config_reads() -> dict[str, set[str]]:
  """SearchConfig field -> the `mcgs_jax` modules (config.py aside) reading
  it as `config.<field>`."""
  reads = collections.defaultdict(set)
  for path in (ROOT / "mcgs_jax").glob("*.py"):
    if path.stem == "config":
      continue
    for node in ast.walk(ast.parse(path.read_text())):
      if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
          and node.value.id == "config"):
        reads[node.attr].add(path.stem)
  return reads


def test_each_enhancement_is_read_in_at_most_two_modules():
  reads = _config_reads()
  assert reads["c_init"] == {"selection"}   # the checker reads the code
  for enhancement, fields in ENHANCEMENT_FIELDS.items():
    readers = set().union(*(reads[f] for f in fields)) - {"rules", enhancement}
    assert len(readers) <= 1, (enhancement, sorted(readers))
    for field in fields:
      assert len(reads[field]) <= 2, (field, sorted(reads[field]))
