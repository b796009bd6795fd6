"""A checkout laid out as the wheel installs it, for code that must import a
tree other than the installed one.

The repository keeps `envs/`, `networks/`, ... beside `mcgs_jax/`; installed,
they are `mcgs_jax.envs`, `mcgs_jax.networks`, ... (pyproject's
`package-dir`). `link` builds that layout out of symlinks into the tree's
files, so that a process with the layout first on its path imports exactly
that tree: `mcgs-jax bench-compare` runs its base commit this way, and the
docs' API reference reads the sources from it.
"""

import pathlib
import shutil

try:
  import tomllib
except ImportError:   # Python 3.10
  import tomli as tomllib


def package_dirs(root: pathlib.Path) -> dict[str, str]:
  """The installed package name -> its folder in the tree at `root`.

  Args:
    root: a checkout of the project.

  Returns:
    pyproject's `[tool.setuptools.package-dir]` mapping.

  Raises:
    ValueError: a tree without the mapping (a commit before the one
      namespace, whose packages were top-level folders).
  """
  config = tomllib.loads((pathlib.Path(root) / "pyproject.toml").read_text())
  mapping = config.get("tool", {}).get("setuptools", {}).get("package-dir")
  if not mapping:
    raise ValueError(f"{root} has no [tool.setuptools.package-dir] in its pyproject.toml: a "
                     "commit before the one namespace (0.2.0) cannot be laid out")
  return mapping


def link(root: pathlib.Path, layout: pathlib.Path) -> pathlib.Path:
  """Links every module of the tree at `root` into `layout`, by installed name.

  Args:
    root: a checkout of the project.
    layout: the folder to build (replaced if it exists); put it first on
      `sys.path` (`PYTHONPATH`) to import that tree.

  Returns:
    `layout`.
  """
  root, layout = pathlib.Path(root), pathlib.Path(layout)
  shutil.rmtree(layout, ignore_errors=True)
  for package, folder in package_dirs(root).items():
    target = layout.joinpath(*package.split("."))
    target.mkdir(parents=True, exist_ok=True)
    for path in (root / folder).iterdir():
      if path.suffix == ".py" or (path.is_dir() and not (path / "__init__.py").exists()
                                  and path.name != "__pycache__"):
        (target / path.name).symlink_to(path.resolve())   # modules, and data folders
  return layout
