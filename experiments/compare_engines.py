"""Two versions of the engine in one process, timed interleaved: this checkout's
`mcgs_jax` against another checkout's (e.g. an earlier commit).

  git worktree add /tmp/base <commit>     # or: git archive <commit> | tar -x -C /tmp/base
  python -m experiments.compare_engines --base /tmp/base phases --batch 1024 --sims 64
  python -m experiments.compare_engines --base /tmp/base phases --game nim-piles:3,5,7,9 \
      --backups mcgs katago --batch 256 --sims 1024 --evals 64
  python -m experiments.compare_engines --base /tmp/base solver --sims 1000

The other checkout's `mcgs_jax/` is copied to a temporary folder as the
package `mcgs_jax_base` (its imports rewritten), so both run in the same
process on the same envs, networks and inputs; every timed round calls each
variant once, in turn. Times are CPU seconds of the process
(`time.process_time`), steadier than wall time on a machine shared with
other jobs; medians over the rounds. Ratios (to the floor, between the
engines, between the modes) are medians of each round's paired ratio, with
the middle half of the rounds' ratios: the machine's drift from round to
round cancels in a pair.

  phases  Connect-4 from the empty board, MLP(128, 128) (or `--game` Nim, the
          noisy evaluator of `mcgs_vs_mcts`): the network+env-only floor
          (`bench_phases.network_only`) and `search` in each of `--backups`
          (mcgs and tree) with each engine; ratios to the floor.
  solver  `bench_solver_cost`'s middle-game positions, one game, uniform
          evaluator: plain mcgs and + solver with each engine, summed over
          the positions.
"""

import argparse
import functools
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

import jax

import envs
import mcgs_jax
from envs import connect4
from experiments import bench_phases
from learning import benchmarks
from experiments import bench_solver_cost
from learning import cli


def import_base(base_dir: str):
  """The `mcgs_jax` package of the checkout at `base_dir`, imported as
  `mcgs_jax_base`."""
  folder = tempfile.mkdtemp(prefix="mcgs_base_")
  target = os.path.join(folder, "mcgs_jax_base")
  shutil.copytree(os.path.join(base_dir, "mcgs_jax"), target)
  for name in os.listdir(target):
    if name.endswith(".py"):
      path = os.path.join(target, name)
      text = open(path).read()
      text = re.sub(r"\bfrom mcgs_jax\b", "from mcgs_jax_base", text)
      text = re.sub(r"^import mcgs_jax$", "import mcgs_jax_base as mcgs_jax", text, flags=re.M)
      open(path, "w").write(text)
  sys.path.insert(1, folder)
  import mcgs_jax_base  # pylint: disable=import-outside-toplevel
  return mcgs_jax_base


def cpu_times(calls: dict, rounds: int) -> dict:
  """name -> CPU ms of `calls[name]()` in each round, after one untimed call
  each, the calls interleaved round by round, in reverse order every other
  round (a call's place in the round can bias its time by a few percent)."""
  for call in calls.values():
    jax.block_until_ready(call())
  times = {name: [] for name in calls}
  for round_index in range(rounds):
    order = list(calls.items())
    for name, call in order if round_index % 2 == 0 else reversed(order):
      start = time.process_time()
      jax.block_until_ready(call())
      times[name].append(1e3 * (time.process_time() - start))
  return times


def cpu_medians(calls: dict, rounds: int) -> dict:
  """name -> median CPU ms of `calls[name]()` (`cpu_times`)."""
  return {name: statistics.median(t) for name, t in cpu_times(calls, rounds).items()}


def paired_ratio(numerator: list, denominator: list) -> str:
  """The median over rounds of numerator / denominator, each round's two
  calls paired (the machine's drift between rounds cancels), with the
  middle half of the rounds' ratios."""
  ratios = sorted(a / b for a, b in zip(numerator, denominator))
  quarter = len(ratios) // 4
  return (f"{statistics.median(ratios):.3f} (middle half {ratios[quarter]:.3f}-"
          f"{ratios[len(ratios) - 1 - quarter]:.3f})")


def phases(engines, batch, sims, rounds, backups=("mcgs", "tree"), game="connect4",
           evals=None):
  env, state, params, eval_fn = benchmarks.profiled_game(game, batch)
  rng = jax.random.PRNGKey(1)
  only = jax.jit(functools.partial(bench_phases.network_only, env=env, eval_fn=eval_fn,
                                   num_steps=sims))
  calls = {"network+env only": functools.partial(only, params, state)}
  for backup in backups:
    for name, engine in engines.items():
      config = engine.SearchConfig(num_simulations=sims, backup=backup,
                                   **benchmarks.evaluation_budget(evals))
      search = jax.jit(functools.partial(engine.search, env=env, eval_fn=eval_fn, config=config))
      calls[f"search {backup} ({name})"] = functools.partial(search, params, rng, state)
  times = cpu_times(calls, rounds)
  floor = times["network+env only"]
  print(f"{game}, B={batch}, S={sims}, max_nn_evals={evals}, {benchmarks.evaluator_name(game)}, "
        f"{rounds} rounds, CPU ms; ratios: medians of the rounds' paired ratios")
  print("| row | CPU ms | vs network |\n|---|---|---|")
  for row, value in times.items():
    print(f"| {row} | {statistics.median(value):.1f} | {paired_ratio(value, floor)} |")
  def runs(backup, name):
    return times[f"search {backup} ({name})"]

  names = list(engines)
  for backup in backups:
    for name in names[1:]:
      print(f"{backup}, {name} / {names[0]}: "
            f"{paired_ratio(runs(backup, name), runs(backup, names[0]))}")
  for name in names:
    for backup in backups[1:]:
      print(f"{backups[0]} / {backup} ({name}): "
            f"{paired_ratio(runs(backups[0], name), runs(backup, name))}")


def solver(engines, sims, rounds):
  env = envs.make("connect4")
  searches = {}
  for name, engine in engines.items():
    for variant, switches in (("plain", {}), ("solver", dict(solver=True))):
      config = engine.SearchConfig(num_simulations=sims, **switches)
      searches[f"{variant} ({name})"] = jax.jit(functools.partial(
          engine.search, env=env, eval_fn=envs.uniform_eval(env), config=config))
  total = dict.fromkeys(searches, 0.0)
  for moves in bench_solver_cost.POSITIONS:
    state = envs.stack([connect4.from_moves(moves)])
    ms = cpu_medians({key: functools.partial(fn, None, jax.random.PRNGKey(0), state)
                      for key, fn in searches.items()}, rounds)
    print(moves, "  ".join(f"{key} {value:.1f}" for key, value in ms.items()), flush=True)
    for key, value in ms.items():
      total[key] += value
  print(f"sums, {sims} simulations, {rounds} rounds, CPU ms: " +
        "  ".join(f"{key} {value:.1f}" for key, value in total.items()))
  for name in engines:
    print(f"solver / plain ({name}): {total[f'solver ({name})'] / total[f'plain ({name})']:.3f}")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--base", required=True, help="a checkout holding the other mcgs_jax/")
  parser.add_argument("which", choices=["phases", "solver"])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--sims", type=int, default=None, help="64 (phases), 1000 (solver)")
  parser.add_argument("--rounds", type=int, default=9)
  parser.add_argument("--backups", nargs="+", default=["mcgs", "tree"],
                      help="phases: the modes timed; ratios to the first")
  parser.add_argument("--game", default="connect4", help="phases: connect4, or a Nim env id")
  parser.add_argument("--evals", type=int, default=None, help="phases: max_nn_evals")
  args = parser.parse_args(argv)
  engines = {"base": import_base(args.base), "this": mcgs_jax}
  if args.which == "phases":
    phases(engines, args.batch, args.sims or 64, args.rounds, tuple(args.backups), args.game,
           args.evals)
  else:
    solver(engines, args.sims or 1000, args.rounds)


if __name__ == "__main__":
  sys.exit(cli.main(main))
