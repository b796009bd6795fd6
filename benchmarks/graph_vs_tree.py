"""What the graph buys in self-play: the same recipe trained with graph
search (`mcgs`) and with tree search (`tree`), several seeds each; the
runs, their report and the final agents' match (`mcgs-jax graph-vs-tree` is
the command line, `mcgs_jax.experiments.graph_vs_tree`).

`train` runs `mcgs_jax.experiments.train` once per (game, search, seed), one after
another, each to its CPU budget (`cpu_s`: CPU seconds of self-play and
updates), in `--runs` (not in git). Rerunning it resumes the unfinished runs
and skips the finished ones, so a session that ends mid-run loses nothing.
Each run's `RUNS/NAME.commits` lists the commits its code came from, in
order (one more line each time it resumes on other code; "+dirty": with
uncommitted changes), and `report` puts them in runs.csv's `commit` column.
Reruns meant to compare commits are best started from a fixed git worktree.
Everything but `search` and `seed` is the game's recipe (`RECIPES`):
  connect4  `make train-connect4`'s settings (learning/config.py) with an
            evaluation every 300 CPU seconds (100 positions per Pons set,
            200 simulations), 1800 CPU seconds per run;
  nim       Nim (1, 3, 5, 7), where transpositions are dense, with a small
            MLP (32, 32); exact accuracy over every position every 5
            iterations, 300 CPU seconds per run;
  nim-wide  the same with an MLP (512, 512), whose evaluations outweigh
            the graph's bookkeeping;
  nim-budget  Nim with the MLP (32, 32) and an evaluation budget (64
            network evaluations and up to 256 simulations per move), where
            a simulation that ends without a network call selects again,
            600 CPU seconds per run.
`report` reads each run's `metrics.csv` and writes `runs.csv` (one row per
run: its last evaluation; errors are means over Pons' six sets for
Connect-4, 1 - the share of positions whose value the move keeps for Nim;
network evaluations and transposition hits per self-play position),
`by_search.csv` (mean over seeds with a 95% Student-t interval, at the end,
at equal CPU seconds, and of `final`'s figures and Elo where `--out` holds
them) and `curves.png` (search error against CPU
seconds and against self-play positions) into `--out`.
`final` scores the final Connect-4 agents of `--runs` on `--positions` per
Pons set (`final.csv`) and plays a round robin between them (`--arena-games`
per pair, both colours of each random opening, every agent searching with
`--simulations` mcgs simulations, so the networks are compared; games in
`arena_games.csv`, Bradley-Terry Elo with bootstrap 95% intervals in
`elo.csv`, the first agent at 0). Both resume: done agents and pairs are
skipped.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys

import jax

import mcgs_jax
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks.names import GRAPH_VS_TREE_GAMES as RECIPES
from mcgs_jax.learning import agents
from mcgs_jax.learning import arena
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import loop
from mcgs_jax.learning import plots

def run_name(game: str, search: str, seed: int) -> str:
  """The run's folder name, e.g. "connect4_mcgs_s0".

  Args:
    game: a recipe's game (`RECIPES`).
    search: the backup mode.
    seed: the seed.

  Returns:
    str.
  """
  return f"{game}_{search}_s{seed}"


def queue(games, searches, seeds) -> list[tuple[str, str, int]]:
  """(game, search, seed) in the order they are trained: game by game, seed
  by seed, every search of a seed together, so a partial queue holds
  matched pairs.

  Args:
    games: the games.
    searches: the backup modes.
    seeds: the seeds.

  Returns:
    list of (game, search, seed).
  """
  return [(game, search, seed) for game in games for seed in seeds for search in searches]


def code_version() -> str:
  """The commit the code runs from ("+dirty" with uncommitted changes to
  tracked files), or the package version outside a git checkout.

  Returns:
    str, e.g. "d2f8ec6d3582" or "d2f8ec6d3582+dirty".
  """
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  git = lambda *a: subprocess.run(["git", "-C", root, *a], capture_output=True, text=True)
  head = git("rev-parse", "--short=12", "HEAD")
  if head.returncode:
    return f"v{mcgs_jax.__version__}"
  dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
  return head.stdout.strip() + ("+dirty" if dirty else "")


def run_fields(game: str, search: str, seed: int) -> dict:
  """The `--config` fields of one run: the game's recipe (`RECIPES`) with
  its search's backup mode and the seed.

  A recipe without search fields names the backup as `search`, which sets
  both the self-play and the evaluation searches' backup (the older flat
  field, as the runs before the search fields had it); one with them gets
  them as the self-play search's fields, the backup in both searches.

  Args:
    game: a recipe's game.
    search: the backup mode.
    seed: the seed.

  Returns:
    dict of TrainConfig fields (JSON-able).
  """
  fields = dict(RECIPES[game][1])
  recipe_search = fields.pop("search", None)
  if recipe_search is None:
    return dict(fields, search=search, seed=seed)
  return dict(fields, search=dict(recipe_search, backup=search), eval_search=dict(backup=search),
              seed=seed)


def record_commit(runs: str, name: str, version: str) -> None:
  """Adds `version` to RUNS/NAME.commits unless it is the last one there: a
  run resumed on other code lists each commit it trained on, in order.

  Args:
    runs: the runs' folder.
    name: the run's name (`run_name`).
    version: `code_version()`.
  """
  path = os.path.join(runs, f"{name}.commits")
  seen = open(path).read().split() if os.path.exists(path) else []
  if seen[-1:] != [version]:
    with open(path, "a") as f:
      f.write(version + "\n")


def train(runs_dir: str, game_names, search_names, seed_list,
          cpu_budget: float | None = None) -> int:
  """Trains every run of the queue to its budget, one at a time.

  Args:
    runs_dir: the runs' folder (created; not in git).
    game_names: the games (`RECIPES`).
    search_names: the backup modes.
    seed_list: the seeds.
    cpu_budget: CPU seconds per run; None: the game's.

  Returns:
    0, or the first failing run's exit code.
  """
  os.makedirs(runs_dir, exist_ok=True)
  version = code_version()
  for game, search, seed in queue(game_names, search_names, seed_list):
    env_id, _, budget = RECIPES[game]
    budget = cpu_budget or budget
    name = run_name(game, search, seed)
    record_commit(runs_dir, name, version)
    config_path = os.path.join(runs_dir, f"{name}.json")
    with open(config_path, "w") as f:
      json.dump(run_fields(game, search, seed), f, indent=1)
    command = [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", env_id,
               "--out", os.path.join(runs_dir, name), "--config", config_path,
               "--iterations", "1000000", "--cpu-budget", str(budget)]
    print(f"== {name}: {' '.join(command[1:])}", flush=True)
    code = subprocess.call(command)
    if code:
      print(f"== {name}: exit {code}", flush=True)
      return code
  return 0


RUN_FIELDS = ("game", "search", "seed", "iterations", "cpu_s", "positions", "eval_iteration",
              "eval_cpu_s", "search_error_mean", "policy_error_mean", "value_sign_error_mean",
              "nn_evals_per_position", "transposition_hits_per_position", "target",
              "cpu_s_to_target", "positions_to_target", "commit")
# The search error each game's runs all reach within their budget: CPU
# seconds and positions to the first evaluation at or below it.
TARGETS = {"connect4": 0.07, "nim": 0.05, "nim-wide": 0.05, "nim-budget": 0.05}
SEARCH_FIELDS = ("game", "search", "runs", "at_cpu_s", "measure", "mean", "lo", "hi")


def _number(text: str) -> float:
  return float(text) if text not in ("", None) else math.nan


def errors(game: str, row: dict) -> dict:
  """The three errors of one evaluated metrics row (NaN where not measured).

  Args:
    game: a recipe's game ("connect4", or a Nim recipe).
    row: a metrics row with an evaluation.

  Returns:
    dict of search_error_mean, policy_error_mean, value_sign_error_mean.
  """
  if game == "connect4":
    return dict(search_error_mean=evaluation.mean_c4_error(row, "search_c4_error"),
                policy_error_mean=evaluation.mean_c4_error(row, "policy_c4_error"),
                value_sign_error_mean=evaluation.mean_c4_error(row, "value_c4_sign_error"))
  return dict(search_error_mean=1.0 - _number(row["search_keeps_value"]),
              policy_error_mean=1.0 - _number(row["policy_keeps_value"]),
              value_sign_error_mean=math.nan)


def evaluated(game: str, rows: list[dict]) -> list[dict]:
  """The metrics rows that hold an evaluation.

  Args:
    game: a recipe's game ("connect4", or a Nim recipe).
    rows: a run's metrics rows.

  Returns:
    the rows with an evaluation.
  """
  if game == "connect4":
    return [r for r in rows if not math.isnan(evaluation.mean_c4_error(r))]
  return [r for r in rows if r.get("search_keeps_value") not in ("", None)]


def run_row(game: str, search: str, seed: int, rows: list[dict], commit: str = "") -> dict:
  """One run's row of `RUN_FIELDS` from its metrics rows and the commits it
  trained on (`record_commit`, space-separated).

  Args:
    game: the run's game.
    search: its backup mode.
    seed: its seed.
    rows: its metrics rows.
    commit: the commits it trained on.

  Returns:
    dict of `RUN_FIELDS`.
  """
  last, final = rows[-1], evaluated(game, rows)[-1]
  positions = _number(last["positions_total"])
  reached = [r for r in evaluated(game, rows)
             if errors(game, r)["search_error_mean"] <= TARGETS[game] + 1e-9]
  return dict(game=game, search=search, seed=seed, iterations=int(last["iteration"]),
              cpu_s=round(_number(last["cpu_s"]), 1), positions=int(positions),
              eval_iteration=int(final["iteration"]), eval_cpu_s=round(_number(final["cpu_s"]), 1),
              **{k: round(v, 4) for k, v in errors(game, final).items()},
              nn_evals_per_position=round(_number(last["nn_evals_total"]) / positions, 2),
              transposition_hits_per_position=round(
                  sum(_number(r["transposition_hits"]) for r in rows) / positions, 3),
              target=TARGETS[game],
              cpu_s_to_target=round(_number(reached[0]["cpu_s"]), 1) if reached else math.nan,
              positions_to_target=int(reached[0]["positions_total"]) if reached else math.nan,
              commit=commit)


def _commits(runs: str, name: str) -> str:
  path = os.path.join(runs, f"{name}.commits")
  return " ".join(open(path).read().split()) if os.path.exists(path) else ""


def at_cpu(game: str, rows: list[dict], cpu_s: float) -> float:
  """The search error of the last evaluation at or before `cpu_s`.

  Args:
    game: the run's game.
    rows: its metrics rows.
    cpu_s: the CPU seconds.

  Returns:
    float, NaN before the first evaluation.
  """
  before = [r for r in evaluated(game, rows) if _number(r["cpu_s"]) <= cpu_s + 1.0]
  return errors(game, before[-1])["search_error_mean"] if before else math.nan


def report(runs_dir: str, out_dir: str, game_names, search_names, seed_list) -> int:
  """Writes runs.csv, by_search.csv and curves.png of the runs in `runs_dir`.

  Args:
    runs_dir: the runs' folder.
    out_dir: the folder written (runs.csv, by_search.csv, curves.png).
    game_names: the games.
    search_names: the backup modes.
    seed_list: the seeds.

  Returns:
    0.
  """
  runs = []
  for game in game_names:
    for search in search_names:
      for seed in seed_list:
        path = os.path.join(runs_dir, run_name(game, search, seed), "metrics.csv")
        if loop.stored_csv(path):
          runs.append((game, search, seed, loop.read_metrics(path)))
  if not runs:
    raise FileNotFoundError(f"no run under {runs_dir}")
  os.makedirs(out_dir, exist_ok=True)
  rows = [run_row(game, search, seed, metrics, _commits(runs_dir, run_name(game, search, seed)))
          for game, search, seed, metrics in runs]
  measure.write_csv(os.path.join(out_dir, "runs.csv"), rows, RUN_FIELDS)
  summary = []
  for game in game_names:
    budget = RECIPES[game][2]
    for search in search_names:
      mine = [(row, metrics) for row, (_, _, _, metrics) in zip(rows, runs)
              if row["game"] == game and row["search"] == search]
      if not mine:
        continue
      for name in ("search_error_mean", "policy_error_mean", "value_sign_error_mean",
                   "nn_evals_per_position", "transposition_hits_per_position", "positions",
                   "cpu_s_to_target", "positions_to_target"):
        mean, lo, hi = evaluation.seed_interval([float(row[name]) for row, _ in mine])
        summary.append(dict(game=game, search=search, runs=len(mine), at_cpu_s="end", measure=name,
                            mean=round(mean, 4), lo=round(lo, 4), hi=round(hi, 4)))
      for fraction in (1 / 3, 2 / 3):
        cpu_s = round(budget * fraction)
        mean, lo, hi = evaluation.seed_interval(
            [at_cpu(game, metrics, cpu_s) for _, metrics in mine])
        summary.append(dict(game=game, search=search, runs=len(mine), at_cpu_s=cpu_s,
                            measure="search_error_mean", mean=round(mean, 4), lo=round(lo, 4),
                            hi=round(hi, 4)))
  # The final agents' figures (`final`), where they are there already.
  final_rows = loop.read_metrics(os.path.join(out_dir, "final.csv"))
  elo_rows = {r["player"]: r for r in loop.read_metrics(os.path.join(out_dir, "elo.csv"))}
  for search in search_names:
    mine = [r for r in final_rows if r["search"] == search]
    for name in FINAL_FIELDS[4:] if mine else ():
      mean, lo, hi = evaluation.seed_interval([float(r[name]) for r in mine])
      summary.append(dict(game="connect4", search=search, runs=len(mine),
                          at_cpu_s=f"final, {mine[0]['positions']} positions per set",
                          measure=name, mean=round(mean, 4), lo=round(lo, 4), hi=round(hi, 4)))
    elos = [float(row["elo"]) for player, row in elo_rows.items()
            if player.startswith(f"connect4_{search}_s")]
    if elos:
      mean, lo, hi = evaluation.seed_interval(elos)
      summary.append(dict(game="connect4", search=search, runs=len(elos), at_cpu_s="arena",
                          measure="elo", mean=round(mean, 1), lo=round(lo, 1), hi=round(hi, 1)))
  # Graph-trained agents against tree-trained ones: their mean score per
  # pair (both colours of each opening), with an interval over the pairs.
  pairs = {}
  for game in arena.read_games(os.path.join(out_dir, "arena_games.csv")):
    kinds = [name.split("_")[1] for name in (game["a"], game["b"])]
    if kinds == ["mcgs", "tree"] or kinds == ["tree", "mcgs"]:
      score = game["score"] if kinds[0] == "mcgs" else 1.0 - game["score"]
      pairs.setdefault((game["a"], game["b"]), []).append(score)
  if pairs:
    mean, lo, hi = evaluation.seed_interval([statistics.mean(scores) for scores in pairs.values()])
    summary.append(dict(game="connect4", search="mcgs", runs=len(pairs), at_cpu_s="arena",
                        measure="score_vs_tree", mean=round(mean, 4), lo=round(lo, 4),
                        hi=round(hi, 4)))
  measure.write_csv(os.path.join(out_dir, "by_search.csv"), summary, SEARCH_FIELDS)
  print(measure.markdown_table(summary, SEARCH_FIELDS))
  games = [g for g in game_names if any(r["game"] == g for r in rows)]
  fig, axes = plots.plt.subplots(len(games), 2, figsize=(11, 3.8 * len(games)), squeeze=False)
  colours = {"mcgs": "tab:blue", "tree": "tab:orange", "tt_cache": "tab:green"}
  for game_axes, game in zip(axes, games):
    for game_, search, seed, metrics in runs:
      if game_ != game:
        continue
      points = evaluated(game, metrics)
      ys = [100 * errors(game, r)["search_error_mean"] for r in points]
      for ax, x in zip(game_axes, ("cpu_s", "positions_total")):
        ax.plot([_number(r[x]) for r in points], ys, marker=".", color=colours.get(search),
                label=f"{search} seed {seed}", alpha=0.5 + 0.25 * (seed % 3))
    for ax, x in zip(game_axes, ("CPU seconds", "self-play positions")):
      ax.set_xlabel(x)
      ax.set_ylabel("search error (%)")
      ax.set_title(f"{game}: search error against {x}")
      ax.grid(alpha=0.3)
    game_axes[0].legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(os.path.join(out_dir, "curves.png"), dpi=90)
  plots.plt.close(fig)
  print(f"{len(rows)} runs: {out_dir}/runs.csv, by_search.csv, curves.png")
  return 0


FINAL_FIELDS = ("run", "search", "seed", "positions", "search_mean", "policy_mean", "value_mean",
                "value_sign_mean")


def final(runs_dir: str, out_dir: str, search_names, seed_list, positions: int = 400,
          arena_games: int = 200, simulations: int = 64, opening_plies: int = 4,
          arena_seed: int = 0) -> int:
  """Scores the final Connect-4 agents and plays their round robin.

  Args:
    runs_dir: the runs' folder.
    out_dir: the folder written (final.csv, arena_games.csv, elo.csv).
    search_names: the backup modes.
    seed_list: the seeds.
    positions: positions per Pons set (0: no scoring).
    arena_games: games per pair (0: no arena).
    simulations: mcgs simulations per arena move.
    opening_plies: random plies before each arena game.
    arena_seed: the arena's seed.

  Returns:
    0.
  """
  names = [run_name("connect4", search, seed) for search in search_names for seed in seed_list
           if os.path.exists(os.path.join(runs_dir, run_name("connect4", search, seed),
                                          checkpoint.AGENT))]
  if len(names) < 2:
    raise FileNotFoundError(f"fewer than two Connect-4 agents under {runs_dir}")
  os.makedirs(out_dir, exist_ok=True)
  loaded = {name: checkpoint.load_agent(os.path.join(runs_dir, name)) for name in names}
  final_path = os.path.join(out_dir, "final.csv")
  rows = loop.read_metrics(final_path)
  for name in names:
    if positions <= 0 or any(r["run"] == name for r in rows):
      continue
    directory = os.path.join(runs_dir, name)
    config = config_lib.replace(checkpoint.load_config(directory), eval_positions=positions)
    env, eval_fn, params = loaded[name]
    summary = evaluation.connect4_error_summary(env, eval_fn, params, jax.random.PRNGKey(0),
                                                config)
    _, search, seed = name.split("_")
    rows.append(dict(run=name, search=search, seed=seed[1:], positions=positions,
                     **{k: round(summary[k], 4) for k in FINAL_FIELDS[4:]}))
    measure.write_csv(final_path, rows, FINAL_FIELDS)
    print(f"{name}: {positions} positions per set, search error "
          f"{100 * summary['search_mean']:.2f}%, policy {100 * summary['policy_mean']:.2f}%",
          flush=True)
  if arena_games <= 0:
    return 0
  players = {}
  for name, (env, eval_fn, params) in loaded.items():
    config = mcgs_jax.SearchConfig(num_simulations=simulations, backup="mcgs",
                                   max_nodes=3 * (simulations + 1), check_evaluator=True)
    players[name] = agents.SearchAgent(env=env, eval_fn=eval_fn, params=params, config=config,
                                       name=name)
  pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
  games = arena.play_missing_pairs(env, players, pairs, jax.random.PRNGKey(arena_seed),
                                   arena_games, os.path.join(out_dir, "arena_games.csv"),
                                   opening_plies=opening_plies)
  elo_rows, ratings, order = evaluation.elo_table([(g["a"], g["b"], g["score"]) for g in games],
                                                  baseline=names[0])
  measure.write_csv(os.path.join(out_dir, "elo.csv"), elo_rows, evaluation.ELO_FIELDS)
  print(ratings.table(order))
  return 0
