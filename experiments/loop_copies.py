"""Copies XLA inserts inside a compiled search's loops, by array shape.

  mcgs-jax loop-copies                      # mcgs, tree, solver; B=4, S=16
  mcgs-jax loop-copies --searches mcgs --batch 8 --sims 32 --show

What is counted, and why, is `mcgs_jax.benchmarks.loop_copies`'s (its
docstring); this command compiles each variant and prints the counts.
"""

from __future__ import annotations

import collections
import sys

import mcgs_jax
from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.loop_copies")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--searches", nargs="+", default=["mcgs", "tree", "solver"],
                      choices=list(names.LOOP_COPY_VARIANTS))
  parser.add_argument("--batch", type=int, default=4)
  parser.add_argument("--sims", type=int, default=16)
  parser.add_argument("--show", action="store_true", help="print each copy instruction")
  args = parser.parse_args(argv)
  for name in args.searches:
    config = mcgs_jax.SearchConfig(num_simulations=args.sims, **names.LOOP_COPY_VARIANTS[name])
    copies = study.graph_copies(study.compiled_search_text(config, args.batch), args.batch,
                                config.node_capacity)
    counts = collections.Counter(shape for _, _, shape in copies)
    summary = ", ".join(f"{n} x {shape}" for shape, n in sorted(counts.items())) or "none"
    print(f"{name}: {len(copies)} graph-shaped copies in the loops: {summary}")
    if args.show:
      for computation, instruction, shape in copies:
        print(f"    {computation}: {instruction} {shape}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
