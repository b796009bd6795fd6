"""mcgs_jax: batched Monte-Carlo Graph Search in JAX.

The search API is imported on first use (`mcgs_jax.search`,
`from mcgs_jax import SearchConfig`), so that `import mcgs_jax` and the
`mcgs-jax` command's argument checks cost no jax import. The subpackages
(`mcgs_jax.envs`, `mcgs_jax.networks`, `mcgs_jax.learning`,
`mcgs_jax.benchmarks`, `mcgs_jax.experiments`) load the same way.
"""

import importlib
from importlib import metadata
from typing import TYPE_CHECKING

try:
  __version__ = metadata.version("mcgs_jax")
except metadata.PackageNotFoundError:   # a source tree on sys.path, not installed
  __version__ = "0+unknown"

# Public name -> the module that defines it.
_EXPORTS = {
    "BackupMode": "mcgs_jax.modes",
    "EnvModel": "mcgs_jax.model",
    "Graph": "mcgs_jax.graph",
    "MctxModel": "mcgs_jax.model",
    "Model": "mcgs_jax.model",
    "Root": "mcgs_jax.model",
    "SearchConfig": "mcgs_jax.config",
    "SearchOutput": "mcgs_jax.policies",
    "SearchStats": "mcgs_jax.graph",
    "Transition": "mcgs_jax.model",
    "advance": "mcgs_jax.reuse",
    "bytes_per_game": "mcgs_jax.graph",
    "from_mctx": "mcgs_jax.model",
    "init": "mcgs_jax.engine",
    "reroot": "mcgs_jax.reuse",
    "run_simulations": "mcgs_jax.engine",
    "search": "mcgs_jax.engine",
    "simulate": "mcgs_jax.engine",
    "summarize": "mcgs_jax.policies",
}

__all__ = [
    "BackupMode", "EnvModel", "Graph", "MctxModel", "Model", "Root", "SearchConfig",
    "SearchOutput", "SearchStats", "Transition", "__version__", "advance", "bytes_per_game",
    "from_mctx", "init", "modes", "reroot", "run_simulations", "search", "simulate", "summarize",
]

if TYPE_CHECKING:   # what the names are, for type checkers and IDEs
  from mcgs_jax import modes
  from mcgs_jax.config import SearchConfig
  from mcgs_jax.graph import Graph, SearchStats, bytes_per_game
  from mcgs_jax.model import EnvModel, MctxModel, Model, Root, Transition, from_mctx
  from mcgs_jax.modes import BackupMode
  from mcgs_jax.policies import SearchOutput, summarize
  from mcgs_jax.reuse import advance, reroot
  from mcgs_jax.engine import init, run_simulations, search, simulate


def __getattr__(name: str):
  if name in _EXPORTS:
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
  elif not name.startswith("__"):
    # A module or subpackage (`mcgs_jax.graph`, `mcgs_jax.envs`): importing
    # it binds it here.
    try:
      return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
      if error.name != f"{__name__}.{name}":
        raise
      raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
  else:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS))
