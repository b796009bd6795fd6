"""Two training runs side by side: their curves, final figures and arena
(`mcgs-jax race` is the command line, `mcgs_jax.experiments.race`).

* The curves: every evaluated row of both runs' `metrics.csv` (Pons error
  rates of the raw policy and of the 200-simulation search, the same
  evaluation for both) goes to `--out/peer_recipe.csv` with the columns
  `agent` (ours / peer, or the two `--names`), `wall_s`, `cpu_s`,
  `iteration`, `nn_evals_total` and the error rates, and
  `--out/peer_recipe.png` plots the mean search and policy error of both
  against wall time.
* The arena: the final networks of both runs, each searching
  `--simulations` PUCT simulations per move (no noise), play each other and
  the random-rollout MCGS baseline (`--baseline-simulations`), `--games`
  games per pairing, both colours from the same random openings of
  `--opening-plies` moves. Games are appended to `--out/race_games.csv`
  (a rerun skips finished pairings); Bradley-Terry Elo with bootstrap 95%
  intervals, the baseline at 0, goes to `--out/race_elo.csv`.
* The final figures: both final networks on `--positions` positions per
  Pons set (400 by default, about +-2 points per set where the curves' 100
  give +-4), the same 200-simulation search and raw policy, go to
  `--out/race_final.csv` (a rerun skips the agents already there).
"""

from __future__ import annotations

import errno
import os

import jax

from mcgs_jax import config as search_config_lib
from mcgs_jax.learning import agents
from mcgs_jax.learning import arena as arena_lib
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import loop
from mcgs_jax.benchmarks.names import RACE_BASELINE as BASELINE
from mcgs_jax.benchmarks.names import RACE_NAMES as NAMES



def curve_rows(directory: str, agent: str) -> list[dict]:
  """The evaluated rows of a run's metrics, in the race CSV's columns.

  Args:
    directory: the run's folder.
    agent: its name in the rows.

  Returns:
    the rows (none without a metrics file).
  """
  path = os.path.join(directory, loop.METRICS)
  if not os.path.exists(path):
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
  out = []
  for row in loop.read_metrics(path):
    if not row.get(f"search_c4_error_{list(ground_truth.C4_SETS)[-1]}"):
      continue
    entry = dict(agent=agent, wall_s=float(row["wall_s"]), cpu_s=float(row.get("cpu_s") or "nan"),
                 iteration=int(row["iteration"]),
                 nn_evals_total=float(row.get("nn_evals_total") or "nan"))
    for kind in ("search", "policy"):
      entry.update({f"{kind}_{s}": float(row[f"{kind}_c4_error_{s}"]) for s in ground_truth.C4_SETS})
      entry[f"{kind}_mean"] = evaluation.mean_c4_error(row, f"{kind}_c4_error")
    out.append(entry)
  return out




def write_curves(ours: str, peer: str, out: str,
                 names: tuple[str, str] = NAMES) -> list[dict]:
  """Writes peer_recipe.csv and peer_recipe.png; returns the rows.

  Args:
    ours: our run's folder.
    peer: the peer run's folder.
    out: the folder written.
    names: the two runs' names.

  Returns:
    the curve rows written.
  """
  rows = curve_rows(ours, names[0]) + curve_rows(peer, names[1])
  os.makedirs(out, exist_ok=True)
  loop.write_metrics(os.path.join(out, "peer_recipe.csv"), rows)
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
  for axis, kind in zip(axes, ("search", "policy")):
    for agent in names:
      points = [r for r in rows if r["agent"] == agent]
      axis.plot([r["wall_s"] / 60 for r in points], [100 * r[f"{kind}_mean"] for r in points],
                marker="o", ms=3, label=agent)
    axis.set_title(f"Connect-4, {'200-simulation search' if kind == 'search' else 'raw policy'}")
    axis.set_xlabel("wall time of self-play and training, minutes")
    axis.set_ylabel("mean error over Pons' six sets, %")
    axis.grid(alpha=0.3)
    axis.legend()
  figure.tight_layout()
  figure.savefig(os.path.join(out, "peer_recipe.png"), dpi=90)
  plt.close(figure)
  return rows


def final_rows(ours: str, peer: str, out: str, positions: int,
               agents_to_run: tuple[str, ...] = NAMES,
               names: tuple[str, str] = NAMES) -> list[dict]:
  """Evaluates the final agents on `positions` per set; writes race_final.csv.

  Args:
    ours: our run's folder.
    peer: the peer run's folder.
    out: the folder written.
    positions: positions per Pons set.
    agents_to_run: the names evaluated now (the others are kept as they are).
    names: the two runs' names.

  Returns:
    the rows of race_final.csv.
  """
  path = os.path.join(out, "race_final.csv")
  rows = loop.read_metrics(path)
  done = {r["agent"] for r in rows}
  for agent, directory in zip(names, (ours, peer)):
    if agent in done or agent not in agents_to_run:
      continue
    last = curve_rows(directory, agent)[-1]
    config = config_lib.replace(checkpoint.load_config(directory), eval_positions=positions)
    env, eval_fn, params = checkpoint.load_agent(directory)
    row = dict(agent=agent, wall_s=last["wall_s"], cpu_s=last["cpu_s"],
               iteration=last["iteration"], positions=positions)
    row.update(evaluation.connect4_error_summary(env, eval_fn, params, jax.random.PRNGKey(0),
                                                 config))
    rows.append(row)
    print(f"{agent} final, {positions} positions per set: search mean "
          f"{100 * row['search_mean']:.1f}%, policy mean {100 * row['policy_mean']:.1f}%",
          flush=True)
    os.makedirs(out, exist_ok=True)
    loop.write_metrics(path, rows)
  return rows


def run_arena(ours: str, peer: str, out: str, games: int, simulations: int,
              baseline_simulations: int, opening_plies: int, seed: int,
              agents_to_run: tuple[str, ...] = NAMES,
              names: tuple[str, str] = NAMES) -> list[dict]:
  """Plays the pairings of `agents_to_run` (and the baseline) not yet in
  race_games.csv; writes race_elo.csv.

  Args:
    ours: our run's folder.
    peer: the peer run's folder.
    out: the folder written.
    games: games per pairing (even).
    simulations: the two agents' simulations per move.
    baseline_simulations: the rollout baseline's.
    opening_plies: random plies before each game.
    seed: the games' seed.
    agents_to_run: the names that play now.
    names: the two runs' names.

  Returns:
    the Elo rows of race_elo.csv.
  """
  players = {}
  for name, directory in zip(names, (ours, peer)):
    if name not in agents_to_run:
      continue
    env, eval_fn, params = checkpoint.load_agent(directory)
    config = search_config_lib.SearchConfig(
        num_simulations=simulations, backup="mcgs", max_nodes=3 * (simulations + 1),
        check_evaluator=True)
    players[name] = agents.SearchAgent(env=env, eval_fn=eval_fn, params=params, config=config,
                                       name=name)
  players[BASELINE] = agents.rollout_baseline(env, baseline_simulations)
  games_path = os.path.join(out, "race_games.csv")
  pairs = ((names[0], names[1]), (names[0], BASELINE), (names[1], BASELINE))
  games_played = arena_lib.play_missing_pairs(env, players, pairs, jax.random.PRNGKey(seed),
                                              games, games_path, opening_plies=opening_plies)
  records = [(g["a"], g["b"], g["score"]) for g in games_played]
  rows, ratings, names = evaluation.elo_table(records, baseline=BASELINE)
  loop.write_metrics(os.path.join(out, "race_elo.csv"), rows)
  print(ratings.table(names))
  return rows
