"""What the terminal solver costs per move: mcgs vs mcgs + solver on Connect-4.

  python -m experiments.bench_solver_cost                 # 1000 simulations, 5 repeats
  python -m experiments.bench_solver_cost --sims 400 --repeats 3

Both searches run in the same process from the same middle-game positions
(one game per call, uniform evaluator, so the search itself is what is
timed), one untimed compile call each, then timed calls interleaved: plain,
solver, plain, solver, ... Prints one row per position (median ms per move,
simulations run, ratio solver / plain) and the ratio of the summed medians,
and writes them to `--csv` (results/solver_cost.csv).
"""

import argparse
import functools
import statistics
import time

import jax

import envs
import mcgs_jax
from envs import connect4
from experiments import benchlib

# Middle-game positions (Pons' notation, 10-14 plies), none proven in 1000
# simulations with a uniform evaluator.
POSITIONS = ("4453432335", "44443332211", "5554224333", "527533114336")
FIELDS = ("position", "sims", "plain_ms", "solver_ms", "ratio", "plain_simulations",
          "solver_simulations", "solver_root")


def _search(env, sims, solver):
  config = mcgs_jax.SearchConfig(num_simulations=sims, solver=solver)
  return jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.uniform_eval(env),
                                   config=config))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sims", type=int, default=1000)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--positions", nargs="+", default=list(POSITIONS))
  parser.add_argument("--csv", default="results/solver_cost.csv")
  args = parser.parse_args()

  env = envs.make("connect4")
  searches = {False: _search(env, args.sims, False), True: _search(env, args.sims, True)}
  rows = []
  print(f"{'position':<14} {'plain ms':>9} {'solver ms':>10} {'ratio':>6} {'sims':>11} root")
  for moves in args.positions:
    state = envs.stack([connect4.from_moves(moves)])
    rng = jax.random.PRNGKey(0)
    outs = {s: jax.block_until_ready(f(None, rng, state)) for s, f in searches.items()}
    times = {False: [], True: []}
    for _ in range(args.repeats):
      for solver, fn in searches.items():
        start = time.perf_counter()
        jax.block_until_ready(fn(None, rng, state))
        times[solver].append(time.perf_counter() - start)
    plain, solved = (1e3 * statistics.median(times[s]) for s in (False, True))
    row = dict(position=moves, sims=args.sims, plain_ms=round(plain, 2),
               solver_ms=round(solved, 2), ratio=round(solved / plain, 3),
               plain_simulations=int(outs[False].stats.simulations[0]),
               solver_simulations=int(outs[True].stats.simulations[0]),
               solver_root=int(outs[True].root_solved[0]))
    rows.append(row)
    print(f"{moves:<14} {plain:>9.2f} {solved:>10.2f} {row['ratio']:>6.2f} "
          f"{row['plain_simulations']:>5}/{row['solver_simulations']:<5} {row['solver_root']}",
          flush=True)
  total = {s: sum(r[k] for r in rows) for s, k in ((False, "plain_ms"), (True, "solver_ms"))}
  print(f"{'all':<14} {total[False]:>9.2f} {total[True]:>10.2f} {total[True] / total[False]:>6.2f}")
  if args.csv:
    benchlib.write_csv(args.csv, rows, FIELDS)
    print(f"wrote {args.csv}")


if __name__ == "__main__":
  main()
