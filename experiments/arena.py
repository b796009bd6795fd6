"""Elo ladder of a training run: its snapshots against fixed baselines.

  mcgs-jax arena --run runs/connect4_recipe --games 64
  mcgs-jax arena --run runs/connect4_recipe --solver --opening-plies 12

Every evaluation snapshot of the run (`DIR/snapshots/`, at most `--snapshots`
of them, evenly spaced, the latest included) plays `--games` games (half with
each colour, random openings of `--opening-plies` moves) against the random-
rollout MCGS baseline (`--baseline-simulations`), against the previous
snapshot of the ladder, and with `--solver` (Connect-4) against the exact
solver. Agents search `--simulations` simulations per move with their network.
Bradley-Terry Elo with bootstrap 95% intervals, the baseline at 0.

Resumable: each finished pairing is appended to `DIR/arena/games.csv` and
skipped when the command runs again. Writes `DIR/arena/elo.csv` and
`DIR/plots/elo.png`.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcgs_jax.learning import cli
from mcgs_jax.learning import run_lock

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
plots = cli.lazy("mcgs_jax.learning.plots")   # matplotlib with the Agg backend
np = cli.lazy("numpy")
agents = cli.lazy("mcgs_jax.learning.agents")
arena_lib = cli.lazy("mcgs_jax.learning.arena")
checkpoint = cli.lazy("mcgs_jax.learning.checkpoint")
evaluation = cli.lazy("mcgs_jax.learning.evaluation")
loop = cli.lazy("mcgs_jax.learning.loop")

BASELINE = "rollout"
SOLVER = "solver"


def spaced(items: list[int], count: int) -> list[int]:
  """At most `count` of `items`, evenly spaced, first and last included."""
  if len(items) <= count:
    return items
  index = np.unique(np.round(np.linspace(0, len(items) - 1, count)).astype(int))
  return [items[i] for i in index]


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--run", required=True, help="training run directory")
  parser.add_argument("--games", type=int, default=64, help="games per pairing (even)")
  parser.add_argument("--snapshots", type=int, default=6)
  parser.add_argument("--iterations", type=int, nargs="+",
                      help="these snapshots instead of --snapshots evenly spaced ones")
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--baseline-simulations", type=int, default=800)
  parser.add_argument("--opening-plies", type=int, default=2)
  parser.add_argument("--solver", action="store_true", help="also play the exact solver "
                      "(Connect-4; use --opening-plies >= 10: early positions are slow to solve)")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  agent = checkpoint.load_agent(args.run)   # a folder without one: one line, nothing written
  # The run's lock for the arena's life: a training run or a second arena on
  # the same folder is refused before either writes there.
  lock = run_lock.acquire(args.run)
  try:
    play_ladder(args, *agent)
  finally:
    lock.release()


def play_ladder(args, env, eval_fn, params) -> None:
  """Plays and rates the ladder `main` parsed (see the module docstring)."""
  config = checkpoint.load_config(args.run)
  search_config = config.search_config(args.simulations, noise=False)
  available = evaluation.snapshot_iterations(args.run)
  if args.iterations:
    missing = sorted(set(args.iterations) - set(available))
    if missing:
      raise SystemExit(f"{args.run} has no snapshots of iterations {missing}")
    ladder = sorted(args.iterations)
  else:
    ladder = spaced(available, args.snapshots)
  if not ladder:
    raise SystemExit(f"{args.run} has no snapshots (they are written at each evaluation)")
  out = os.path.join(args.run, "arena")
  os.makedirs(out, exist_ok=True)

  def snapshot_agent(iteration):
    variables = checkpoint.read_variables(evaluation.snapshot_path(args.run, iteration), params)
    return agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables, config=search_config,
                              name=str(iteration))

  players = {BASELINE: agents.rollout_baseline(env, args.baseline_simulations)}
  if args.solver:
    players[SOLVER] = agents.Connect4SolverAgent(randomize=True)
  opponents = list(players)
  players.update({str(iteration): snapshot_agent(iteration) for iteration in ladder})
  # Each snapshot against the baselines, then against the one before it.
  pairs = [(str(iteration), name) for index, iteration in enumerate(ladder)
           for name in opponents + [str(ladder[index - 1])] * (index > 0)]
  games = arena_lib.play_missing_pairs(env, players, pairs, jax.random.PRNGKey(args.seed),
                                       args.games, os.path.join(out, "games.csv"),
                                       opening_plies=args.opening_plies)
  write_ratings(args.run, games)


def write_ratings(directory: str, games: list[dict]) -> list[dict]:
  """Fits the ladder, writes DIR/arena/elo.csv and DIR/plots/elo.png."""
  rows, ratings, names = evaluation.elo_table([(g["a"], g["b"], g["score"]) for g in games],
                                              baseline=BASELINE)
  loop.write_metrics(os.path.join(directory, "arena", "elo.csv"), rows)
  print(ratings.table(names))
  snaps = [r for r in rows if r["player"].isdigit()]
  if snaps:
    os.makedirs(os.path.join(directory, "plots"), exist_ok=True)
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    xs = [int(r["player"]) for r in snaps]
    ax.errorbar(xs, [r["elo"] for r in snaps],
                yerr=[[r["elo"] - r["elo_low"] for r in snaps],
                      [r["elo_high"] - r["elo"] for r in snaps]], marker="o", capsize=3)
    for r in rows:
      if not r["player"].isdigit():
        ax.axhline(r["elo"], linestyle="--", color="gray")
        ax.annotate(r["player"], (xs[0], r["elo"]), fontsize="small")
    ax.set_xlabel("iteration")
    ax.set_ylabel("Elo (rollout baseline = 0)")
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "plots", "elo.png"), dpi=100)
    plots.plt.close(fig)
  return rows


if __name__ == "__main__":
  sys.exit(cli.main(main))
