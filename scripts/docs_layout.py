"""mkdocs hook: the package laid out as the wheel installs it, for the API reference.

The repository keeps `envs/`, `networks/`, ... beside `mcgs_jax/`; installed,
they are `mcgs_jax.envs`, `mcgs_jax.networks`, ... (pyproject's package-dir).
mkdocstrings reads the sources statically, so this hook links them into
`build/docs_api/` in the installed layout (mkdocs.yml points the handler
there) when mkdocs loads its config, before any page is rendered.
"""

import pathlib
import shutil

try:
  import tomllib
except ImportError:   # Python 3.10
  import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "build" / "docs_api"


def link_layout(root: pathlib.Path = ROOT, layout: pathlib.Path = LAYOUT) -> None:
  """Links every package's modules into `layout`, by installed name."""
  config = tomllib.loads((root / "pyproject.toml").read_text())
  mapping = config["tool"]["setuptools"]["package-dir"]
  shutil.rmtree(layout, ignore_errors=True)
  for package, folder in mapping.items():
    target = layout.joinpath(*package.split("."))
    target.mkdir(parents=True, exist_ok=True)
    for path in (root / folder).glob("*.py"):
      (target / path.name).symlink_to(path)


link_layout()
