"""Copies XLA inserts inside a compiled search's loops, by array shape.

Compiles `mcgs_jax.search` (Connect-4, a small MLP) for each search variant and
counts the `copy` / `copy-start` instructions outside the entry computation
(the simulation loop's body and the computations it calls) whose result has
the graph's leading [B, N] axes. The graph arrays are meant to be updated in
place: every such copy moves O(B N A) (or O(B N)) bytes per simulation where
the simulation itself touches O(B A). `--show` prints the copy instructions.

`mcgs-jax loop-copies` is the command line (`mcgs_jax.experiments.loop_copies`).
"""

from __future__ import annotations

import collections
import functools
import re

import jax

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax import networks

_COMPUTATION = re.compile(r"^(ENTRY )?%?([^\s(]+)")
_COPY = re.compile(r"^\s*%?(\S+) = (\w+)\[([\d,]*)\]\S* (copy|copy-start)\(")


def graph_copies(hlo_text: str, batch: int, capacity: int):
  """The copies of arrays shaped [batch, capacity, ...] outside the entry
  computation of compiled HLO text.

  Returns:
    list of (computation, instruction name, "dtype[dims]").

  Args:
    hlo_text: compiled HLO (`compiled_search_text`).
    batch: B.
    capacity: N.
  """
  copies = []
  computation, entry = None, False
  for line in hlo_text.splitlines():
    if line and not line[0].isspace() and line.rstrip().endswith("{"):
      match = _COMPUTATION.match(line)
      computation, entry = match.group(2), bool(match.group(1))
      continue
    match = _COPY.match(line)
    if match is None or entry:
      continue
    dims = tuple(int(d) for d in match.group(3).split(",") if d)
    if dims[:2] == (batch, capacity):
      copies.append((computation, match.group(1), f"{match.group(2)}{list(dims)}"))
  return copies


def compiled_search_text(config: mcgs_jax.SearchConfig, batch: int, hidden=(8,)) -> str:
  """Optimised HLO of `mcgs_jax.search` on Connect-4 with an MLP eval_fn.

  Args:
    config: the SearchConfig.
    batch: B, games.
    hidden: the MLP's hidden sizes.

  Returns:
    str, the HLO text.
  """
  env = envs.make("connect4")
  network = networks.MLP(num_actions=env.num_actions, hidden_sizes=tuple(hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = networks.init_params(network, jax.random.PRNGKey(0), state.observation)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=networks.MLPEval(network),
                                     config=config))
  return search.lower(params, jax.random.PRNGKey(1), state).compile().as_text()


def count_loop_copies(config: mcgs_jax.SearchConfig, batch: int) -> collections.Counter:
  """Counter "dtype[dims]" -> copies of graph-shaped arrays in the loops.

  Args:
    config: the SearchConfig.
    batch: B, games.

  Returns:
    Counter "dtype[dims]" -> copies.
  """
  copies = graph_copies(compiled_search_text(config, batch), batch, config.node_capacity)
  return collections.Counter(shape for _, _, shape in copies)
