"""Copies XLA inserts inside a compiled search's loops, by array shape.

  mcgs-jax loop-copies                      # mcgs, tree, solver; B=4, S=16
  mcgs-jax loop-copies --searches mcgs --batch 8 --sims 32 --show

Compiles `mcgs_jax.search` (Connect-4, a small MLP) for each search variant and
counts the `copy` / `copy-start` instructions outside the entry computation
(the simulation loop's body and the computations it calls) whose result has
the graph's leading [B, N] axes. The graph arrays are meant to be updated in
place: every such copy moves O(B N A) (or O(B N)) bytes per simulation where
the simulation itself touches O(B A). `--show` prints the copy instructions.
"""

from __future__ import annotations

import collections
import functools
import re
import sys

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
networks = cli.lazy("mcgs_jax.networks")
jax = cli.lazy("jax")

# name -> SearchConfig switches: every backup mode, then the solver's loops.
VARIANTS = {mode: dict(backup=mode) for mode in mcgs_jax.modes.names()}
VARIANTS.update({
    "solver": dict(backup="mcgs", solver=True),
    "bounds": dict(backup="mcgs", solver=True, solver_bounds=True),
})

_COMPUTATION = re.compile(r"^(ENTRY )?%?([^\s(]+)")
_COPY = re.compile(r"^\s*%?(\S+) = (\w+)\[([\d,]*)\]\S* (copy|copy-start)\(")


def graph_copies(hlo_text: str, batch: int, capacity: int):
  """The copies of arrays shaped [batch, capacity, ...] outside the entry
  computation of compiled HLO text.

  Returns:
    list of (computation, instruction name, "dtype[dims]").
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
  """Optimised HLO of `mcgs_jax.search` on Connect-4 with an MLP eval_fn."""
  env = envs.make("connect4")
  network = networks.MLP(num_actions=env.num_actions, hidden_sizes=tuple(hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = networks.init_params(network, jax.random.PRNGKey(0), state.observation)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=networks.MLPEval(network),
                                     config=config))
  return search.lower(params, jax.random.PRNGKey(1), state).compile().as_text()


def count_loop_copies(config: mcgs_jax.SearchConfig, batch: int) -> collections.Counter:
  """Counter "dtype[dims]" -> copies of graph-shaped arrays in the loops."""
  copies = graph_copies(compiled_search_text(config, batch), batch, config.node_capacity)
  return collections.Counter(shape for _, _, shape in copies)


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--searches", nargs="+", default=["mcgs", "tree", "solver"],
                      choices=list(VARIANTS))
  parser.add_argument("--batch", type=int, default=4)
  parser.add_argument("--sims", type=int, default=16)
  parser.add_argument("--show", action="store_true", help="print each copy instruction")
  args = parser.parse_args(argv)
  for name in args.searches:
    config = mcgs_jax.SearchConfig(num_simulations=args.sims, **VARIANTS[name])
    copies = graph_copies(compiled_search_text(config, args.batch), args.batch,
                          config.node_capacity)
    counts = collections.Counter(shape for _, _, shape in copies)
    summary = ", ".join(f"{n} x {shape}" for shape, n in sorted(counts.items())) or "none"
    print(f"{name}: {len(copies)} graph-shaped copies in the loops: {summary}")
    if args.show:
      for computation, instruction, shape in copies:
        print(f"    {computation}: {instruction} {shape}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
