"""What the terminal solver costs per move: mcgs vs mcgs + solver on Connect-4.

  python -m experiments.bench_solver_cost                 # 1000 simulations, 5 repeats
  python -m experiments.bench_solver_cost --sims 400 --repeats 3

Three searches (plain mcgs, + solver, + solver with score bounds) run in the
same process from the same middle-game positions (one game per call,
uniform evaluator, so the search itself is what is timed), one untimed
compile call each, then timed calls interleaved: plain, solver, bounds,
plain, ... Prints one row per position (median ms per move, ratios to
plain, simulations run) and the ratios of the summed medians, and writes
the rows to `--csv` (results/solver_cost.csv).
"""

import argparse
import functools
import statistics
import sys
import time

import jax

import envs
import mcgs_jax
from envs import connect4
from learning import benchmarks
from learning import cli

# Middle-game positions (Pons' notation, 10-14 plies), none proven in 1000
# simulations with a uniform evaluator.
POSITIONS = ("4453432335", "44443332211", "5554224333", "527533114336")
VARIANTS = {"plain": {}, "solver": dict(solver=True),
            "bounds": dict(solver=True, solver_bounds=True)}
FIELDS = ("position", "sims", "plain_ms", "solver_ms", "bounds_ms", "solver_ratio",
          "bounds_ratio", "plain_simulations", "solver_simulations", "bounds_simulations",
          "solver_root", "bounds_root")


def _search(env, sims, switches):
  config = mcgs_jax.SearchConfig(num_simulations=sims, **switches)
  return jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.uniform_eval(env),
                                   config=config))


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sims", type=int, default=1000)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--positions", nargs="+", default=list(POSITIONS))
  parser.add_argument("--csv", default="results/solver_cost.csv")
  args = parser.parse_args(argv)

  env = envs.make("connect4")
  searches = {name: _search(env, args.sims, switches) for name, switches in VARIANTS.items()}
  rows = []
  print(f"{'position':<14} {'plain ms':>9} {'solver ms':>10} {'bounds ms':>10} {'ratio':>6} "
        f"{'ratio':>6}  simulations")
  for moves in args.positions:
    state = envs.stack([connect4.from_moves(moves)])
    rng = jax.random.PRNGKey(0)
    outs = {name: jax.block_until_ready(f(None, rng, state)) for name, f in searches.items()}
    times = {name: [] for name in searches}
    for _ in range(args.repeats):
      for name, fn in searches.items():
        start = time.perf_counter()
        jax.block_until_ready(fn(None, rng, state))
        times[name].append(time.perf_counter() - start)
    ms = {name: 1e3 * statistics.median(t) for name, t in times.items()}
    row = dict(position=moves, sims=args.sims)
    for name in searches:
      row[f"{name}_ms"] = round(ms[name], 2)
      row[f"{name}_simulations"] = int(outs[name].stats.simulations[0])
    for name in ("solver", "bounds"):
      row[f"{name}_ratio"] = round(ms[name] / ms["plain"], 3)
      row[f"{name}_root"] = int(outs[name].root_solved[0])
    rows.append(row)
    print(f"{moves:<14} {ms['plain']:>9.2f} {ms['solver']:>10.2f} {ms['bounds']:>10.2f} "
          f"{row['solver_ratio']:>6.2f} {row['bounds_ratio']:>6.2f}  "
          f"{row['plain_simulations']}/{row['solver_simulations']}/{row['bounds_simulations']}",
          flush=True)
  total = {name: sum(r[f"{name}_ms"] for r in rows) for name in searches}
  print(f"{'all':<14} {total['plain']:>9.2f} {total['solver']:>10.2f} {total['bounds']:>10.2f} "
        f"{total['solver'] / total['plain']:>6.2f} {total['bounds'] / total['plain']:>6.2f}")
  if args.csv:
    benchmarks.write_csv(args.csv, rows, FIELDS)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
