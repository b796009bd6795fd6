"""mcgs_jax: batched Monte-Carlo Graph Search in JAX."""

from mcgs_jax import modes   # the backup modes' registry: modes.get, modes.names, modes.register
from mcgs_jax.config import SearchConfig
from mcgs_jax.graph import Graph, SearchStats, bytes_per_game
from mcgs_jax.model import EnvModel, MctxModel, Model, Root, Transition, from_mctx
from mcgs_jax.modes import BackupMode
from mcgs_jax.policies import SearchOutput, summarize
from mcgs_jax.reuse import advance, reroot
from mcgs_jax.search import init, run_simulations, search, simulate

__all__ = [
    "BackupMode", "EnvModel", "Graph", "MctxModel", "Model", "Root", "SearchConfig",
    "SearchOutput", "SearchStats", "Transition", "advance", "bytes_per_game", "from_mctx", "init",
    "reroot", "run_simulations", "search", "simulate", "summarize",
]
