"""Every public definition of the library carries a Google-style docstring.

Walks the names exported by `mcgs_jax.__all__` and the public module-level
functions and classes (plus their public methods and `__call__`) of every module
of `mcgs_jax`, `envs`, `networks`, `learning` and `benchmarks`, and checks that each has a
docstring, with an `Args:` section when it takes arguments and a `Returns:`
(or `Yields:`) section when it returns something.

"Returns something" is judged from the source: the function body (not counting
nested functions) contains a `return <value>` statement other than
`return None`, or its signature is annotated with a return type other than
`None`. Properties are attributes, so they only need a docstring. Nothing is
jitted: the test only imports and reads source.
"""

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import textwrap

import pytest

import mcgs_jax

PACKAGES = ("mcgs_jax", "mcgs_jax.envs", "mcgs_jax.networks", "mcgs_jax.learning",
            "mcgs_jax.benchmarks")
SKIP_ARGS = {"self", "cls"}


def _modules():
  for name in PACKAGES:
    package = importlib.import_module(name)
    yield package
    for info in pkgutil.iter_modules(package.__path__):
      yield importlib.import_module(f"{name}.{info.name}")


def _returns_value(node: ast.FunctionDef) -> bool:
  """Whether `node` returns a value (annotation or a `return x` in its own body)."""
  if node.returns is not None:
    is_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
    if not is_none:
      return True
  stack = list(node.body)
  while stack:
    child = stack.pop()
    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
      continue
    if isinstance(child, ast.Return) and child.value is not None:
      if not (isinstance(child.value, ast.Constant) and child.value.value is None):
        return True
    stack.extend(ast.iter_child_nodes(child))
  return False


def _function_node(fn):
  source = textwrap.dedent(inspect.getsource(fn))
  tree = ast.parse(source)
  return next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _function_problems(qualname: str, fn) -> list[str]:
  fn = inspect.unwrap(fn)
  doc = inspect.getdoc(fn)
  if not doc:
    return [f"{qualname}: no docstring"]
  node = _function_node(fn)
  args = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
  args = [a for a in args if a not in SKIP_ARGS]
  if node.args.vararg:
    args.append(node.args.vararg.arg)
  if node.args.kwarg:
    args.append(node.args.kwarg.arg)
  problems = []
  if args and "Args:" not in doc:
    problems.append(f"{qualname}: takes {args} but has no Args: section")
  if _returns_value(node) and "Returns:" not in doc and "Yields:" not in doc:
    problems.append(f"{qualname}: returns a value but has no Returns: section")
  return problems


def _class_problems(qualname: str, cls) -> list[str]:
  # A class's own docstring: not a base class's, nor the signature that
  # `dataclasses` writes into `__doc__` when there is none.
  doc = (cls.__dict__.get("__doc__") or "").strip()
  written = bool(doc)
  if written and dataclasses.is_dataclass(cls):
    try:
      generated = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
      generated = None
    written = doc != generated
  problems = [] if written else [f"{qualname}: no docstring"]
  for name, member in vars(cls).items():
    if name.startswith("_") and name != "__call__":
      continue
    function = getattr(member, "fget", None) or getattr(member, "__func__", member)
    if getattr(function, "__qualname__", "") != f"{cls.__qualname__}.{name}":
      continue  # generated (e.g. chex dataclass `replace`), not written here
    if isinstance(member, property):
      if not (member.fget and member.fget.__doc__):
        problems.append(f"{qualname}.{name}: property without docstring")
    elif isinstance(member, (staticmethod, classmethod)):
      problems += _function_problems(f"{qualname}.{name}", member.__func__)
    elif inspect.isfunction(member):
      problems += _function_problems(f"{qualname}.{name}", member)
  return problems


def _public_definitions():
  """(qualified name, object) for every public function or class to check."""
  seen = set()
  for name in mcgs_jax.__all__:
    obj = getattr(mcgs_jax, name)
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
      continue   # __version__, the modes registry (a module, checked below)
    seen.add(id(obj))
    yield f"mcgs_jax.{name}", obj
  for module in _modules():
    for name, obj in vars(module).items():
      if name.startswith("_") or id(obj) in seen:
        continue
      if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        continue
      if getattr(obj, "__module__", None) != module.__name__:
        continue  # imported from elsewhere; checked where it is defined
      seen.add(id(obj))
      yield f"{module.__name__}.{name}", obj


def test_module_docstrings():
  missing = [m.__name__ for m in _modules() if not (m.__doc__ or "").strip()]
  assert not missing, f"modules without a docstring: {missing}"


def test_public_docstrings():
  problems = []
  for qualname, obj in _public_definitions():
    if inspect.isclass(obj):
      problems += _class_problems(qualname, obj)
    else:
      problems += _function_problems(qualname, obj)
  assert not problems, "\n".join(problems)


def test_checker_catches_missing_sections():
  def documented(x, y):
    """Adds.

    Args:
      x: a number.
      y: another.

    Returns:
      The sum.
    """
    return x + y

  def no_args_section(x):
    """Doubles."""
    return 2 * x

  def side_effect_only(x) -> None:
    """Prints.

    Args:
      x: what to print.
    """
    print(x)

  assert _function_problems("documented", documented) == []
  assert _function_problems("side_effect_only", side_effect_only) == []
  problems = _function_problems("no_args_section", no_args_section)
  assert len(problems) == 2 and "Args" in problems[0] and "Returns" in problems[1]


def test_checker_rejects_generated_class_docstrings():
  @dataclasses.dataclass(frozen=True)
  class Undocumented:
    x: int

  @dataclasses.dataclass(frozen=True)
  class Documented:
    """A point."""
    x: int

  class Subclass(Documented):
    pass

  assert _class_problems("Undocumented", Undocumented) == ["Undocumented: no docstring"]
  assert _class_problems("Documented", Documented) == []
  assert _class_problems("Subclass", Subclass) == ["Subclass: no docstring"]


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_are_walked(package):
  names = [m.__name__ for m in _modules()]
  assert sum(n == package or n.startswith(package + ".") for n in names) > 1


def test_the_public_entry_points_are_annotated():
  """Every argument and the return of the functions users call first carry
  type annotations (the package ships py.typed)."""
  from mcgs_jax import envs  # pylint: disable=g-import-not-at-top
  entry_points = [mcgs_jax.search, mcgs_jax.init, mcgs_jax.simulate, mcgs_jax.run_simulations,
                  mcgs_jax.summarize, mcgs_jax.advance, mcgs_jax.reroot, mcgs_jax.from_mctx,
                  envs.make]
  missing = []
  for fn in entry_points:
    signature = inspect.signature(fn)
    missing += [f"{fn.__name__}({name})" for name, p in signature.parameters.items()
                if p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
      missing.append(f"{fn.__name__} -> ?")
  assert not missing, missing
  for cls in (mcgs_jax.SearchConfig, mcgs_jax.SearchOutput):
    fields = dataclasses.fields(cls)
    assert fields and all(f.type is not None for f in fields), cls
