"""The Dual MCTS paper's experiment: AlphaZero vs MPV-MCTS vs Dual MCTS
training cells, the Connect-4 recipe runs, their ranking, tables, curves
and diagnosis (`mcgs-jax dual-mcts` is the command line,
`mcgs_jax.experiments.dual_mcts`).

One cell = (game, algorithm, backup, seed): `--steps` training steps of
`mcgs_jax.experiments.train` (self-play, replay, updates); after each step the new
network plays every earlier step's network (step 0: the untrained one) with
the cell's own search, both colours, random openings; Elo (Bradley-Terry,
step 0 at 0) and alpha-rank (`mcgs_jax.learning.alpharank`) are refitted over the
agents of all steps so far. The alpha-rank score of step t is the
alpha-rank mass of the agents that step t's agent does not lose to (mean
score >= 0.4 against them); the cell converges at the first step whose score
reaches 0.9; time to convergence = time per step x steps to convergence,
time per step the median self-play + update time of the steps after the
first (which compiles). Several seeds given at once share one process (and
its compilations).

Protocol (the Dual MCTS paper's, scaled where noted): the networks are ResNets of
4 layers x 64 (Connect-4: residual conv blocks, `--channels`; HSR and Nim:
residual Dense layers, `networks.ResMLP`), MPV-MCTS's small network 2 layers,
Dual MCTS's small head after the first 2 layers; b_S = 50, b_L = 35,
AlphaZero 85 simulations; Dual MCTS adds the sliding-window backup (w =
`mcgs_jax.dual.window_for(states)`) and epsilon-greedy 0.1 decaying by 0.97
per simulation. `--backup` chooses the tree or the graph (MCGS) under every
search.

Outputs under OUT/GAME/ALGO_BACKUP_sSEED/: train/ (the resumable training
run), snapshots/step_N.msgpack, games.csv (every game: a, b, score of a),
steps.csv (step, time, Elo, alpha-rank), summary.json, steps.png.
Rerunning the same command continues where it stopped.

`--recipe` (Connect-4 with the real learner): one run of `mcgs_jax.experiments.train`
per (algorithm, backup, seed) with the Connect-4 recipe's settings
(`mcgs_jax.learning.config`) wherever the paper does not fix them, and the paper's
where it does: residual networks of 4 layers x 64 (dense layers,
`networks.ResMLP`, as on HSR and Nim: a convolutional 4x64 costs 27x as much
per evaluation on a CPU), MPV-MCTS's small network 2 layers, Dual MCTS's
small head after layer 2, b_S = 50, b_L = 35, AlphaZero 85 simulations, PUCT
roots with Dirichlet noise, Dual MCTS's window and epsilon-greedy. Each run
is evaluated every `--eval-every-s` CPU seconds on 100 positions per Pons
set and stops at `--cpu-budget` CPU seconds (the cap); runs go to
`--out`/connect4_recipe/ALGO_BACKUP_sSEED/ (resumable). `--recipe-table`
writes one row per run (CPU seconds to `--target` mean search error, the
final error, and the steps to convergence that `--recipe-rank` measures:
each evaluation's snapshot against every earlier one and the untrained
network, `--games-per-pair` games, alpha-rank as above) to `--table-csv`
(docs/dual_mcts/connect4_runs.csv), after copying each run's metrics
(thinned: every evaluation, every 20th iteration), config and rank summary
to `--keep`/connect4_recipe/ (docs/dual_mcts/), which it
reads the rows from: the table outlives the run folders (checkpoints and
snapshots stay with the runs, so rank a run before its folder goes).
`--algo alphazero_noreuse` (with `--recipe` only) is an ablation of the
recipe's one asymmetry: AlphaZero's self-play keeps the played child's
subgraph between moves, the two searches' starts every move afresh; this
AlphaZero starts afresh too. `--algo alphazero_35` is that AlphaZero
searching 35 simulations in self-play (T_L's budget, so its policy targets
come from 35 visits as the two-search runs' large network's do) and still
85 in its evaluations. Their runs get rows of their own in the tables.
`--recipe-diagnose` adds to `--diagnosis-csv`
(docs/dual_mcts/connect4_diagnosis.csv) each finished run's last snapshot
measured under other evaluators: its own evaluation search, each head
searched alone (the large one with 85 and 35 simulations, the small one
with 50) and each head's raw policy and value sign, which splits a gap
between the algorithms into the network's part and the search's.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os
import shutil
import subprocess
import sys

import jax
import numpy as np

from mcgs_jax import dual
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks.names import ALGOS, BACKUPS, GAMES, RECIPE_ALGOS
from mcgs_jax.learning import agents
from mcgs_jax.learning import alpharank
from mcgs_jax.learning import arena
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import elo
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import loop
from mcgs_jax.learning import run_lock

CONVERGED = 0.9
# States of each game, for the sliding window (HSR and Nim: counted by
# `mcgs_jax.envs.exhaustive`; Connect-4: the known count of legal positions).
STATES = {"hsr:4,4,16": 2072, "nim:3,20": 20, "connect4": 4_531_985_219_092}
# The Dual MCTS paper's table: (time per step, steps, time to convergence).
SEED_TABLE = {
    ("hsr:4,4,16", "alphazero"): (9.34, 8, 74.72), ("hsr:4,4,16", "mpv"): (12.38, 7, 86.66),
    ("hsr:4,4,16", "dual"): (8.37, 8, 66.96),
    ("nim:3,20", "alphazero"): (10.71, 7, 74.97), ("nim:3,20", "mpv"): (14.67, 6, 88.02),
    ("nim:3,20", "dual"): (9.84, 7, 68.88),
    ("connect4", "alphazero"): (18.71, 13, 243.23), ("connect4", "mpv"): (24.62, 10, 246.20),
    ("connect4", "dual"): (15.32, 12, 183.84),
}
# Self-play and training per step, per game (scaled to a shared 2-core CPU).
_STEP = {
    "hsr:4,4,16": dict(games=64, moves_per_iteration=8, temperature_moves=8, opening_plies=2,
                       batch_size=128, updates_per_iteration=48, min_replay=64),
    "nim:3,20": dict(games=64, moves_per_iteration=10, temperature_moves=4, opening_plies=2,
                     batch_size=128, updates_per_iteration=48, min_replay=64),
    "connect4": dict(games=16, moves_per_iteration=14, temperature_moves=8, opening_plies=0,
                     batch_size=128, updates_per_iteration=16, min_replay=64),
}
_OPENING_PLIES = {"hsr:4,4,16": 2, "nim:3,20": 2, "connect4": 4}


def cell_config(game: str, algo: str, backup: str, seed: int, channels: int = 64,
                small: int = 50, large: int = 35) -> config_lib.TrainConfig:
  """The TrainConfig of one cell (see the module docstring).

  Args:
    game: one of `names.GAMES`.
    algo: one of `names.ALGOS`.
    backup: one of `names.BACKUPS`.
    seed: the run's seed.
    channels: Connect-4's ResNet channels.
    small: b_S, the small network's simulations.
    large: b_L, the large network's simulations.

  Returns:
    the TrainConfig.
  """
  flat = game != "connect4"
  width = {"width": 64} if flat else {"channels": channels}
  if algo == "alphazero":
    network = "resmlp" if flat else "resnet"
    kwargs = dict(width, **({"num_layers": 4} if flat else {"num_blocks": 4}))
  elif algo == "mpv":
    network = "pair"
    kwargs = dict(width, kind="resmlp" if flat else "resnet", small_blocks=2, large_blocks=4)
  else:
    network = "dual_mlp" if flat else "dual"
    kwargs = dict(width, small_head_after=2, **({"num_layers": 4} if flat else {"num_blocks": 4}))
  return config_lib.replace(
      config_lib.TrainConfig(), env=game, network=network, network_kwargs=kwargs,
      eval_every=0, seed=seed, learning_rate=1e-3, replay_capacity=20_000, node_factor=1.0,
      reuse_graph=False, **_STEP[game],
      **searches(game, algo, backup, small, large))


def searches(game: str, algo: str, backup: str, small: int = 50, large: int = 35,
             dirichlet_alpha: float = 0.5) -> dict:
  """The `search` and `eval_search` fields of one algorithm: self-play with
  Dirichlet noise at a PUCT root, evaluation with the same budget and no
  noise; AlphaZero one search of `small + large` simulations, MPV-MCTS and
  Dual MCTS two (Dual MCTS with its window and epsilon-greedy).

  Args:
    game: one of `names.GAMES`.
    algo: one of `names.RECIPE_ALGOS`.
    backup: one of `names.BACKUPS`.
    small: b_S.
    large: b_L.
    dirichlet_alpha: the root noise's alpha.

  Returns:
    dict of TrainConfig fields.
  """
  if algo == "alphazero":
    return dict(search=dict(backup=backup, num_simulations=small + large, root_policy="puct",
                            dirichlet_fraction=0.25, dirichlet_alpha=dirichlet_alpha),
                eval_search=dict(backup=backup, num_simulations=small + large))
  window = {}
  if algo == "dual":
    window = dict(backup_window=dual.window_for(STATES[game]), eps_decay=0.97)

  def part(simulations, noise):
    return dict(backup=backup, num_simulations=simulations, max_nodes=simulations + 1,
                dirichlet_fraction=0.25 if noise else 0.0, dirichlet_alpha=dirichlet_alpha,
                eps_greedy=0.1 if noise and algo == "dual" else 0.0, check_evaluator=True,
                **window)

  return {name: dict(kind="dual", small=part(small, noise), large=part(large, noise),
                     value_mix=0.5, rounds=1)
          for name, noise in (("search", True), ("eval_search", False))}


def recipe_config(algo: str, backup: str, seed: int, eval_every_s: float = 300.0) -> dict:
  """The `--config` fields of one `--recipe` run over Connect-4's defaults
  (see the module docstring).

  Args:
    algo: one of `names.RECIPE_ALGOS`.
    backup: one of `names.BACKUPS`.
    seed: the run's seed.
    eval_every_s: CPU seconds between evaluations.

  Returns:
    dict of TrainConfig fields.
  """
  if algo == "alphazero_noreuse":
    return dict(recipe_config("alphazero", backup, seed, eval_every_s), reuse_graph=False)
  if algo == "alphazero_35":
    fields = recipe_config("alphazero_noreuse", backup, seed, eval_every_s)
    return dict(fields, search=dict(fields["search"], num_simulations=35))
  fields = dict(seed=seed, eval_every_s=eval_every_s, eval_positions=100,
                **searches("connect4", algo, backup))
  if algo == "alphazero":
    return dict(fields, network="resmlp", network_kwargs={"num_layers": 4, "width": 64})
  if algo == "mpv":
    return dict(fields, network="pair",
                network_kwargs=dict(width=64, kind="resmlp", small_blocks=2, large_blocks=4))
  return dict(fields, network="dual_mlp",
              network_kwargs=dict(width=64, small_head_after=2, num_layers=4))


def recipe_dir(out: str, algo: str, backup: str, seed: int | str) -> str:
  """The folder of one `--recipe` run.

  Args:
    out: the runs' folder.
    algo: its algorithm.
    backup: its backup.
    seed: its seed, or a glob pattern.

  Returns:
    str, OUT/connect4_recipe/ALGO_BACKUP_sSEED.
  """
  return os.path.join(out, "connect4_recipe", f"{algo}_{backup}_s{seed}")


def run_recipe(out: str, algo: str, backup: str, seed: int, cpu_budget: float,
               eval_every_s: float) -> int:
  """Trains (or resumes) one `--recipe` run to its CPU budget.

  Args:
    out: the runs' folder.
    algo: one of `names.RECIPE_ALGOS`.
    backup: one of `names.BACKUPS`.
    seed: the run's seed.
    cpu_budget: CPU seconds to train to.
    eval_every_s: CPU seconds between evaluations.

  Returns:
    int, the training command's exit code.
  """
  directory = recipe_dir(out, algo, backup, seed)
  os.makedirs(directory, exist_ok=True)
  config_path = directory + ".json"
  with open(config_path, "w") as f:
    json.dump(recipe_config(algo, backup, seed, eval_every_s), f, indent=1)
  command = [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "connect4", "--out", directory,
             "--config", config_path, "--iterations", "1000000", "--cpu-budget", str(cpu_budget)]
  print(f"== {directory}: {' '.join(command[1:])}", flush=True)
  return subprocess.call(command)


RECIPE_FIELDS = ("algo", "backup", "seed", "cpu_s", "iterations", "positions", "target",
                 "cpu_s_to_target", "positions_to_target", "final_search_error_mean",
                 "final_policy_error_mean", "steps_to_convergence")


def ranked_snapshots(directory: str, metrics: list[dict]) -> list[int]:
  """The iterations of a `--recipe` run's snapshots that its metrics rows
  hold an evaluation of, ascending. A run resumed by older code kept the
  snapshots of iterations it then repeated; those are left out, in one
  printed line.

  Args:
    directory: the run's folder.
    metrics: its metrics rows.

  Returns:
    list of iterations.
  """
  evaluated = {int(r["iteration"]) for r in metrics if _evaluated(r)}
  found = evaluation.snapshot_iterations(directory)
  stale = [i for i in found if i not in evaluated]
  if stale:
    print(f"{directory}: snapshots of iterations {stale} have no evaluation in metrics.csv; "
          "left out", flush=True)
  return [i for i in found if i in evaluated]


def rank_recipe_run(directory: str, games_per_pair: int, seed: int = 0,
                    metrics: list[dict] | None = None) -> dict | None:
  """The paper's convergence criterion over one `--recipe` run's snapshots
  (one per evaluation, `--eval-every-s` CPU seconds apart): each snapshot's
  raw network plays every earlier one and the untrained network (step 0),
  both colours of random openings; alpha-rank over them as in the cells
  above. Resumable (`ranks.csv` keeps the games). Writes `steps.csv` and
  `summary.json` into the run; returns the summary (None: no snapshot).
  `metrics`: the run's metrics rows where the caller has read them. Holds
  the run's lock meanwhile (a training run or a second rank on it is
  refused).

  Args:
    directory: the run's folder.
    games_per_pair: games between each pair of snapshots.
    seed: the games' seed.
    metrics: the run's metrics rows.

  Returns:
    the run's rank summary (also written to its summary.json), or None
    without a snapshot.
  """
  lock = run_lock.acquire(directory)
  try:
    return _rank_recipe_run(directory, games_per_pair, seed, metrics)
  finally:
    lock.release()


def _rank_recipe_run(directory, games_per_pair, seed, metrics):
  if metrics is None:
    metrics = loop.read_metrics(os.path.join(directory, "metrics.csv"))
  iterations = ranked_snapshots(directory, metrics)
  if not iterations:
    return None
  snapshots = [evaluation.snapshot_path(directory, i) for i in iterations]
  config = checkpoint.load_config(directory)
  env, network, eval_fn = checkpoint.build_network(config)
  untrained = checkpoint.init_variables(network, env, jax.random.PRNGKey(config.seed))
  cpu_s = {int(r["iteration"]): float(r["cpu_s"]) for r in metrics}

  def agent(t):
    params = untrained if t == 0 else checkpoint.read_variables(snapshots[t - 1], untrained)
    return agents.PolicyAgent(eval_fn=eval_fn, params=params, name=str(t))

  games_path = os.path.join(directory, "ranks.csv")
  records = [(int(r["a"]), int(r["b"]), float(r["score"]))
             for r in loop.read_metrics(games_path)]
  done = {(a, b) for a, b, _ in records}
  for t in range(1, len(snapshots) + 1):
    for previous in range(t):
      if (t, previous) in done:
        continue
      result = arena.play_games(env, agent(t), agent(previous),
                                jax.random.PRNGKey(seed * 100_003 + t * 1009 + previous),
                                games_per_pair, opening_plies=_OPENING_PLIES["connect4"])
      records += [(t, previous, (float(x) + 1) / 2) for x in result.scores]
      measure.write_csv(games_path, [dict(a=a, b=b, score=x) for a, b, x in records],
                 ["a", "b", "score"])
  previous_cpu = [0.0] + [cpu_s.get(i, math.nan) for i in iterations]
  step_rows = [dict(step=t, iteration=iterations[t - 1], cpu_s=previous_cpu[t],
                    step_s=previous_cpu[t] - previous_cpu[t - 1])
               for t in range(1, len(snapshots) + 1)]
  rows, summary = summarize_steps(step_rows, records)
  fields = list(dict.fromkeys(k for r in rows for k in r))
  measure.write_csv(os.path.join(directory, "steps.csv"), rows, fields)
  with open(os.path.join(directory, "summary.json"), "w") as f:
    json.dump(dict(summary, games_per_pair=games_per_pair), f, indent=1)
  return summary


def _steps_to_convergence(directory: str):
  """A ranked run's convergence step ("" before `--recipe-rank`, "not
  converged" where no snapshot reached the criterion)."""
  path = os.path.join(directory, "summary.json")
  if not os.path.exists(path):
    return ""
  with open(path) as f:
    steps = json.load(f).get("steps_to_converge")
  return "not converged" if steps is None else steps


def recipe_runs(out: str):
  """(algo, backup, seed, metrics rows) of each `--recipe` run under `out`
  that has a metrics file, in the cells' order.

  Args:
    out: the runs' folder.
  """
  for algo in RECIPE_ALGOS:
    for backup in BACKUPS:
      prefix = recipe_dir(out, algo, backup, "")
      seeds = sorted(int(path[len(prefix):]) for path in glob.glob(prefix + "*")
                     if path[len(prefix):].isdigit())
      for seed in seeds:
        path = os.path.join(recipe_dir(out, algo, backup, seed), "metrics.csv")
        if os.path.exists(path):
          yield algo, backup, seed, loop.read_metrics(path)


def _evaluated(row: dict) -> bool:
  """Whether a metrics row holds an evaluation on Pons' sets."""
  return not math.isnan(evaluation.mean_c4_error(row, "search_c4_error"))


def recipe_rows(out: str, target: float) -> list[dict]:
  """One row (`RECIPE_FIELDS`) per `--recipe` run under `out`.

  Args:
    out: the runs' (or kept runs') folder.
    target: the mean search error the time is measured to.

  Returns:
    list of rows.
  """
  rows = []
  mean = lambda r, kind: evaluation.mean_c4_error(r, f"{kind}_c4_error")
  for algo, backup, seed, metrics in recipe_runs(out):
    evaluated = [r for r in metrics if _evaluated(r)]
    reached = [r for r in evaluated if mean(r, "search") <= target + 1e-9]
    last = metrics[-1]
    rows.append(dict(
        algo=algo, backup=backup, seed=seed, cpu_s=round(float(last["cpu_s"]), 1),
        iterations=int(last["iteration"]), positions=int(float(last["positions_total"])),
        target=target,
        cpu_s_to_target=round(float(reached[0]["cpu_s"]), 1) if reached else "",
        positions_to_target=int(float(reached[0]["positions_total"])) if reached else "",
        final_search_error_mean=round(mean(evaluated[-1], "search"), 4) if evaluated else "",
        final_policy_error_mean=round(mean(evaluated[-1], "policy"), 4) if evaluated else "",
        steps_to_convergence=_steps_to_convergence(recipe_dir(out, algo, backup, seed))))
  return rows


# What `--recipe-table` keeps of a run in the docs: enough to redraw its
# curves and its row without the run folder (checkpoints and snapshots stay
# with the run), its metrics thinned (`thin_metrics`).
_KEPT_FILES = ("metrics.csv", "config.json", "summary.json", "steps.csv")
# Iterations between the kept metrics rows besides the evaluations.
_KEPT_EVERY = 20


def thin_metrics(rows: list[dict], every: int = _KEPT_EVERY) -> list[dict]:
  """The metrics rows a kept run needs: every evaluation (its rows and
  curves), the last row (its budget and positions) and one iteration in
  `every` (the losses' course); a run's 5,000 rows would otherwise take
  0.8 MB each in the repository.

  Args:
    rows: the run's metrics rows.
    every: one iteration in this many is kept.

  Returns:
    the kept rows.
  """
  return [r for i, r in enumerate(rows)
          if i == len(rows) - 1 or int(r["iteration"]) % every == 0 or _evaluated(r)]


def keep_recipe_runs(out: str, keep: str) -> None:
  """Copies each `--recipe` run's `_KEPT_FILES` under `out` to the same place
  under `keep`, its metrics thinned.

  Args:
    out: the runs' folder.
    keep: the folder they are kept in.
  """
  for directory in sorted(glob.glob(os.path.join(out, "connect4_recipe", "*_s*"))):
    if not os.path.isdir(directory) or os.path.abspath(out) == os.path.abspath(keep):
      continue
    target = os.path.join(keep, "connect4_recipe", os.path.basename(directory))
    os.makedirs(target, exist_ok=True)
    for name in _KEPT_FILES:
      source = os.path.join(directory, name)
      if not os.path.exists(source):
        continue
      if name == "metrics.csv":
        rows = loop.read_metrics(source)
        measure.write_csv(os.path.join(target, name), thin_metrics(rows), loop.metric_fields(rows))
      else:
        shutil.copyfile(source, os.path.join(target, name))


def recipe_table(out: str, keep: str, table_csv: str, target: float,
                 cpu_budget: float = 3600.0) -> list[dict]:
  """`--recipe-table`: keeps the runs under `out` in `keep`, then writes one
  row per kept run to `table_csv`, where a row already there whose run is
  kept nowhere (its folder lost before it was kept) stays as it was, and
  draws the runs that reached `cpu_budget` (`plot_recipe_curves`) beside
  it.

  Args:
    out: the runs' folder.
    keep: where the runs are kept.
    table_csv: the CSV written.
    target: the mean search error the time is measured to.
    cpu_budget: the runs' CPU budget.

  Returns:
    the rows written.
  """
  keep_recipe_runs(out, keep)
  rows = recipe_rows(keep, target)
  have = {(r["algo"], r["backup"], int(r["seed"])) for r in rows}
  if os.path.exists(table_csv):
    with open(table_csv, newline="") as f:
      rows += [r for r in csv.DictReader(f)
               if (r["algo"], r["backup"], int(r["seed"])) not in have]
  order = {(a, b): i for i, (a, b) in enumerate((a, b) for a in RECIPE_ALGOS for b in BACKUPS)}
  rows.sort(key=lambda r: (int(r["seed"]), order[r["algo"], r["backup"]]))
  measure.write_csv(table_csv, rows, RECIPE_FIELDS)
  plot_recipe_curves(keep, os.path.join(os.path.dirname(table_csv) or ".",
                                        "connect4_curves.png"), cpu_budget)
  return rows


def recipe_curves(keep: str, cpu_budget: float) -> dict:
  """{(algo, backup): [seeds, evaluations, 3]} of the kept `--recipe` runs
  that reached `cpu_budget`: per evaluation, its CPU seconds and mean search
  and policy error % on Pons' sets; a cell's runs cut to its shortest
  (every run evaluates on the same CPU-second schedule).

  Args:
    keep: the kept runs' folder.
    cpu_budget: the budget a run must have reached.

  Returns:
    the curves.
  """
  cells = {}
  for algo, backup, _, metrics in recipe_runs(keep):
    if not _finished(metrics[-1]["cpu_s"], cpu_budget):
      continue
    cells.setdefault((algo, backup), []).append(
        [(float(r["cpu_s"]), 100 * evaluation.mean_c4_error(r, "search_c4_error"),
          100 * evaluation.mean_c4_error(r, "policy_c4_error"))
         for r in metrics if _evaluated(r)])
  curves = {}
  for cell, runs in cells.items():
    evaluations = min(len(points) for points in runs)
    curves[cell] = np.array([points[:evaluations] for points in runs])
  return curves


def plot_recipe_curves(keep: str, path: str, cpu_budget: float = 3600.0) -> None:
  """`recipe_curves` into `path`: per cell the mean over seeds against CPU
  seconds, shaded between the seeds' lowest and highest; colour the
  algorithm, dashed the graph.

  Args:
    keep: the kept runs' folder.
    path: the PNG written.
    cpu_budget: the budget a run must have reached.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
  colours = dict(zip(RECIPE_ALGOS, ("tab:blue", "tab:orange", "tab:green", "tab:grey",
                                    "tab:brown")))
  cells = recipe_curves(keep, cpu_budget)
  for (algo, backup), curves in cells.items():
    seeds = len(curves)
    cpu_s = curves[:, :, 0].mean(axis=0)
    for ax, column in zip(axes, (1, 2)):
      ax.plot(cpu_s, curves[:, :, column].mean(axis=0), color=colours[algo], marker=".",
              linestyle="--" if backup == "mcgs" else "-",
              label=f"{algo}, {backup} ({seeds} seed{'s' * (seeds > 1)})")
      if seeds > 1:
        ax.fill_between(cpu_s, curves[:, :, column].min(axis=0),
                        curves[:, :, column].max(axis=0), color=colours[algo], alpha=0.1)
  for ax, kind in zip(axes, ("search", "policy")):
    ax.set_xlabel("CPU seconds")
    ax.set_title(f"{kind} error on Pons' 6 sets (mean over seeds; band: their range)",
                 fontsize=10)
    ax.grid(alpha=0.3)
  axes[0].set_ylabel("% of positions (100 per set)")
  if cells:
    axes[0].legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=90)
  plt.close(fig)


def _finished(cpu_s, cpu_budget: float) -> bool:
  """Whether a run that has spent `cpu_s` reached its CPU budget (the
  last iteration may stop up to 1% short of it)."""
  return float(cpu_s) >= 0.99 * cpu_budget


def _finished_runs(table_csv: str, cpu_budget: float) -> list[dict]:
  """The rows of `table_csv` whose runs reached their CPU budget."""
  with open(table_csv, newline="") as f:
    return [r for r in csv.DictReader(f) if _finished(r["cpu_s"], cpu_budget)]


def _interval_text(values, scale=1.0, digits=1) -> str:
  """"mean [low, high]" over seeds (`evaluation.seed_interval`), "mean"
  with one value, "-" with none."""
  mean, lo, hi = evaluation.seed_interval([scale * v for v in values])
  if math.isnan(mean):
    return "-"
  if math.isnan(lo):
    return f"{mean:.{digits}f}"
  return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def recipe_summary(table_csv: str, cpu_budget: float) -> str:
  """The Markdown table of the `--recipe` runs in `table_csv` that reached
  their CPU budget, one row per cell: 95% Student-t intervals over seeds
  (`evaluation.seed_interval`), beside the Dual MCTS paper's Connect-4 row.

  Args:
    table_csv: `recipe_table`'s CSV.
    cpu_budget: the budget a run must have reached.

  Returns:
    str, the table.
  """
  runs = _finished_runs(table_csv, cpu_budget)

  lines = ["| backup | algorithm | runs | reached 5% | CPU s to 5% | final search error % | "
           "positions / CPU s | steps to conv. | Dual MCTS paper: time/step s, steps, "
           "time to conv. s |", "|---|---|---|---|---|---|---|---|---|"]
  for backup in BACKUPS:
    for algo in RECIPE_ALGOS:
      mine = [r for r in runs if (r["algo"], r["backup"]) == (algo, backup)]
      if not mine:
        continue
      reached = [float(r["cpu_s_to_target"]) for r in mine if r["cpu_s_to_target"]]
      steps = [float(r["steps_to_convergence"]) for r in mine
               if r["steps_to_convergence"] not in ("", "not converged")]
      ranked = [r for r in mine if r["steps_to_convergence"]]
      paper = SEED_TABLE.get(("connect4", algo), ("-",) * 3)
      lines.append(
          f"| {backup} | {algo} | {len(mine)} | {len(reached)}/{len(mine)} | "
          f"{_interval_text(reached, digits=0)} | "
          f"{_interval_text([float(r['final_search_error_mean']) for r in mine], 100.0)} | "
          f"{_interval_text([float(r['positions']) / float(r['cpu_s']) for r in mine], digits=0)}"
          " | "
          f"{_interval_text(steps) if steps else '-'} ({len(steps)}/{len(ranked)}) | "
          f"{paper[0]}, {paper[1]}, {paper[2]} |")
  return "\n".join(lines)


def recipe_run_summary(table_csv: str, diagnosis_csv: str, cpu_budget: float) -> str:
  """The Markdown table of the `--recipe` runs in `table_csv` that reached
  their CPU budget, one row per run (cells in `recipe_summary`'s order,
  then seeds): its final errors, speed and convergence step, and its last
  network searched alone with 85 simulations ("-" before `--recipe-diagnose`
  has a row for it in `diagnosis_csv`).

  Args:
    table_csv: `recipe_table`'s CSV.
    diagnosis_csv: `recipe_diagnosis`'s CSV.
    cpu_budget: the budget a run must have reached.

  Returns:
    str, the table.
  """
  runs = _finished_runs(table_csv, cpu_budget)
  large_85 = {}
  if os.path.exists(diagnosis_csv):
    with open(diagnosis_csv, newline="") as f:
      large_85 = {(r["algo"], r["backup"], r["seed"]): float(r["search_error_mean"])
                  for r in csv.DictReader(f) if r["evaluator"] == "large_85"}
  order = {cell: i for i, cell in enumerate(
      (backup, algo) for backup in BACKUPS for algo in RECIPE_ALGOS)}
  runs.sort(key=lambda r: (order[r["backup"], r["algo"]], int(r["seed"])))
  lines = ["| backup | algorithm | seed | final search error % | final policy error % | "
           "positions / CPU s | steps to conv. | large alone, 85 % |",
           "|---|---|---|---|---|---|---|---|"]
  for r in runs:
    alone = large_85.get((r["algo"], r["backup"], r["seed"]))
    lines.append(
        f"| {r['backup']} | {r['algo']} | {r['seed']} | "
        f"{100 * float(r['final_search_error_mean']):.1f} | "
        f"{100 * float(r['final_policy_error_mean']):.1f} | "
        f"{float(r['positions']) / float(r['cpu_s']):.0f} | "
        f"{r['steps_to_convergence'] or '-'} | "
        f"{'-' if alone is None else f'{100 * alone:.1f}'} |")
  return "\n".join(lines)


# `--recipe-diagnose`: each evaluator of a run's last snapshot, as
# (name, head, simulations): a plain search on one head, or with 0 the
# head's raw policy; "own" is the run's own evaluation search.
_DIAGNOSES = (("own", None, None), ("large_85", "large", 85), ("large_35", "large", 35),
              ("small_50", "small", 50), ("policy_large", "large", 0),
              ("policy_small", "small", 0))
_DIAGNOSIS_TITLES = dict(own="own search", large_85="large alone, 85",
                         large_35="large alone, 35", small_50="small alone, 50",
                         policy_large="large policy", policy_small="small policy")
DIAGNOSIS_FIELDS = ("algo", "backup", "seed", "iteration", "cpu_s", "evaluator",
                    "search_error_mean", "value_sign_error_mean")


def diagnose_recipe_run(directory: str, algo: str, backup: str, seed: int) -> list[dict]:
  """Why a `--recipe` run's search error is what it is: its last snapshot's
  mean error on Pons' sets (the run's `eval_positions` per set) under each
  of `_DIAGNOSES` (the small head's only where the run has one), and the
  value sign error of each head. Rows of `DIAGNOSIS_FIELDS`.

  Args:
    directory: the run's folder.
    algo: its algorithm.
    backup: its backup.
    seed: its seed.

  Returns:
    rows of `DIAGNOSIS_FIELDS`.
  """
  config = checkpoint.load_config(directory)
  env, network, eval_fn = checkpoint.build_network(config)
  iteration = evaluation.snapshot_iterations(directory)[-1]
  variables = checkpoint.read_variables(
      evaluation.snapshot_path(directory, iteration),
      checkpoint.init_variables(network, env, jax.random.PRNGKey(config.seed)))
  cpu_s = {int(r["iteration"]): float(r["cpu_s"])
           for r in loop.read_metrics(os.path.join(directory, "metrics.csv"))}
  heads = ({"large": eval_fn.large, "small": eval_fn.small} if config.two_searches
           else {"large": eval_fn})
  plain = searches("connect4", "alphazero", backup)["eval_search"]
  rng = jax.random.PRNGKey(0)
  limits = dict(positions_per_set=config.eval_positions)
  rows = []
  for name, head, simulations in _DIAGNOSES:
    if head is not None and head not in heads:
      continue
    if head is None:
      agent = agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables,
                                 config=config.search_config(noise=False), name=name)
    elif simulations:
      search = config_lib.search_from_json(
          dict(plain, num_simulations=simulations,
               max_nodes=int(config.node_factor * (simulations + 1))), None)
      agent = agents.SearchAgent(env=env, eval_fn=heads[head], params=variables,
                                 config=search, name=name)
    else:
      agent = agents.PolicyAgent(eval_fn=heads[head], params=variables, name=name)
    errors = ground_truth.evaluate(env, agent, rng, **limits)
    value_sign = ""
    if head is not None and not simulations:
      values = ground_truth.connect4_value_errors(heads[head], variables, rng, **limits)
      value_sign = round(evaluation.mean_c4_error(values, "c4_sign_error"), 4)
    rows.append(dict(algo=algo, backup=backup, seed=seed, iteration=iteration,
                     cpu_s=round(cpu_s.get(iteration, math.nan), 1), evaluator=name,
                     search_error_mean=round(evaluation.mean_c4_error(errors, "c4_error"), 4),
                     value_sign_error_mean=value_sign))
  return rows


def recipe_diagnosis(out: str, seeds, diagnosis_csv: str, cpu_budget: float) -> list[dict]:
  """`--recipe-diagnose`: adds to `diagnosis_csv` the rows
  (`diagnose_recipe_run`) of each `--recipe` run under `out` that reached
  `cpu_budget` and has none there yet; returns all its rows.

  Args:
    out: the runs' folder.
    seeds: the seeds diagnosed.
    diagnosis_csv: the CSV added to.
    cpu_budget: the budget a run must have reached.

  Returns:
    the rows added.
  """
  rows = []
  if os.path.exists(diagnosis_csv):
    with open(diagnosis_csv, newline="") as f:
      rows = list(csv.DictReader(f))
  done = {(r["algo"], r["backup"], int(r["seed"])) for r in rows}
  for algo, backup, seed, metrics in recipe_runs(out):
    if (seed not in seeds or (algo, backup, seed) in done
        or not _finished(metrics[-1]["cpu_s"], cpu_budget)):
      continue
    rows += diagnose_recipe_run(recipe_dir(out, algo, backup, seed), algo, backup, seed)
    measure.write_csv(diagnosis_csv, rows, DIAGNOSIS_FIELDS)
    print(f"{algo}_{backup}_s{seed}: diagnosed", flush=True)
  return rows


def diagnosis_summary(diagnosis_csv: str) -> str:
  """The Markdown table of `--recipe-diagnose`'s rows, one row per cell:
  mean error % under each evaluator (value sign: each head's raw value),
  95% Student-t intervals over seeds.

  Args:
    diagnosis_csv: `recipe_diagnosis`'s CSV.

  Returns:
    str, the table.
  """
  with open(diagnosis_csv, newline="") as f:
    rows = list(csv.DictReader(f))
  names = [name for name, _, _ in _DIAGNOSES]
  lines = ["| backup | algorithm | runs | " + " | ".join(_DIAGNOSIS_TITLES[n] for n in names)
           + " | value sign, large | value sign, small |", "|---" * (len(names) + 5) + "|"]
  for backup in BACKUPS:
    for algo in RECIPE_ALGOS:
      mine = [r for r in rows if (r["algo"], r["backup"]) == (algo, backup)]
      if not mine:
        continue

      def cell(name, column="search_error_mean", mine=mine):
        return _interval_text([float(r[column]) for r in mine
                               if r["evaluator"] == name and r[column] != ""], 100.0)

      lines.append(f"| {backup} | {algo} | {len({r['seed'] for r in mine})} | "
                   + " | ".join(cell(n) for n in names) + " | "
                   + " | ".join(cell(f"policy_{h}", "value_sign_error_mean")
                                for h in ("large", "small")) + " |")
  return "\n".join(lines)


def cell_dir(out: str, game: str, algo: str, backup: str, seed: int) -> str:
  """The folder of one cell.

  Args:
    out: the cells' folder.
    game: its game.
    algo: its algorithm.
    backup: its backup.
    seed: its seed.

  Returns:
    str, OUT/GAME/ALGO_BACKUP_sSEED (the game's ":" and "," as "_").
  """
  return os.path.join(out, game.replace(":", "_").replace(",", "_"), f"{algo}_{backup}_s{seed}")


def ratings(records, num_agents):
  """(Elo [K], alpha-rank [K]) over agents 0..K-1 from (i, j, score) games.

  Args:
    records: (i, j, score of i) per game.
    num_agents: K.

  Returns:
    (elo f32[K], alpha-rank mass f32[K]).
  """
  fit = elo.fit(records, num_agents, reference=0, num_bootstrap=0)
  payoffs, _ = alpharank.payoff_matrix(records, num_agents)
  return fit.elo, alpharank.stationary_distribution(payoffs)


def summarize_steps(step_rows, records, truth=None):
  """steps.csv rows with Elo and alpha-rank over every step so far (and the
  raw policy's exact value-keeping rate, `truth` {step: rate}), and the
  cell's summary (convergence step and times).

  Args:
    step_rows: the steps' rows (step, time).
    records: the ranking games, (i, j, score of i).
    truth: {step: exact value-keeping rate}, or None.

  Returns:
    (rows, summary).
  """
  truth = truth or {}
  num_agents = len(step_rows) + 1
  elos, ranks = ratings(records, num_agents)
  payoffs, _ = alpharank.payoff_matrix(records, num_agents)
  cumulative = alpharank.not_losing_mass(payoffs, ranks)
  rows = []
  for t in range(num_agents):
    base = step_rows[t - 1] if t else dict(step=0, step_s="")
    rows.append(dict(base, step=t, elo=round(float(elos[t]), 1),
                     alpharank=round(float(ranks[t]), 4),
                     alpharank_score=round(float(cumulative[t]), 4),
                     keeps_value=truth.get(t)))
  times = [float(r["step_s"]) for r in step_rows[1:]] or [float(r["step_s"]) for r in step_rows]
  per_step = float(np.median(times)) if times else math.nan
  converged = next((t for t in range(num_agents) if cumulative[t] >= CONVERGED), None)
  exact = next((t for t in range(num_agents) if (truth.get(t) or 0) >= CONVERGED), None)
  summary = dict(steps_run=len(step_rows), time_per_step=per_step, steps_to_converge=converged,
                 time_to_converge=None if converged is None else per_step * converged,
                 final_elo=float(elos[-1]), steps_to_exact=exact,
                 final_keeps_value=truth.get(num_agents - 1))
  return rows, summary


def plot(directory, rows):
  """steps.png of a cell: Elo and alpha-rank score against the step.

  Args:
    directory: the cell's folder.
    rows: its steps.csv rows.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  steps = [int(r["step"]) for r in rows]
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
  ax1.plot(steps, [float(r["elo"]) for r in rows], marker="o")
  ax1.set_xlabel("training step")
  ax1.set_ylabel("Elo (step 0 = 0)")
  ax2.plot(steps, [float(r["alpharank_score"]) for r in rows], marker="o", label="score")
  ax2.plot(steps, [float(r["alpharank"]) for r in rows], marker=".", label="mass of the step")
  ax2.axhline(CONVERGED, color="grey", linestyle="--")
  ax2.set_xlabel("training step")
  ax2.set_ylabel("alpha-rank")
  ax2.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(directory, "steps.png"))
  plt.close(fig)


def run_cell(out, game, algo, backup, seed, steps, games_per_pair, channels, players="policy",
             log=print):
  """Runs (or continues) one cell up to `steps` training steps.

  Args:
    out: the cells' folder.
    game: one of `names.GAMES`.
    algo: one of `names.ALGOS`.
    backup: one of `names.BACKUPS`.
    seed: the cell's seed.
    steps: training steps.
    games_per_pair: games between each pair of steps' agents.
    channels: Connect-4's ResNet channels.
    players: "policy" or "search", what plays the ranking games.
    log: a function of one line of progress.

  Returns:
    the cell's summary (also written to summary.json).
  """
  directory = cell_dir(out, game, algo, backup, seed)
  os.makedirs(os.path.join(directory, "snapshots"), exist_ok=True)
  config = cell_config(game, algo, backup, seed, channels)
  run = loop.Run(os.path.join(directory, "train"), config)
  try:
    env, eval_fn = run.env, run.eval_fn
    search_config = config.search_config(noise=False)
    snapshot = lambda t: os.path.join(directory, "snapshots", f"step_{t:04d}.msgpack")
    if not os.path.exists(snapshot(0)):
      if int(run.state["iteration"]) != 0:
        raise SystemExit(f"{directory}: the training run is past step 0 but step 0's "
                         "snapshot is missing")
      checkpoint.write_variables(snapshot(0), jax.device_get(run.state["variables"]))
    last = int(run.state["iteration"])
    if last and not os.path.exists(snapshot(last)):
      # Stopped between the step's checkpoint and its snapshot.
      checkpoint.write_variables(snapshot(last), jax.device_get(run.state["variables"]))
    games_path = os.path.join(directory, "games.csv")
    records = [(int(r["a"]), int(r["b"]), float(r["score"]))
               for r in loop.read_metrics(games_path)]
    done = {(a, b) for a, b, _ in records}
    step_rows = [dict(step=int(r["iteration"]), step_s=float(r["selfplay_s"]) + float(r["train_s"]),
                      loss=r.get("loss", "")) for r in run.rows]

    truth_path = os.path.join(directory, "truth.csv")
    truth = {int(r["step"]): float(r["keeps_value"]) for r in loop.read_metrics(truth_path)}

    def variables_of(t):
      return checkpoint.read_variables(snapshot(t), jax.device_get(run.state["variables"]))

    def agent(t):
      if players == "policy":
        # The network alone (the large head / network for mpv and dual).
        return agents.PolicyAgent(eval_fn=eval_fn, params=variables_of(t), name=str(t))
      return agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables_of(t),
                                config=search_config, name=str(t))

    def keeps_value(t):
      """Share of positions where step t's raw policy keeps the exact value."""
      if game == "connect4":
        return None
      if t not in truth:
        policy = agents.PolicyAgent(eval_fn=eval_fn, params=variables_of(t), name=str(t))
        truth[t] = ground_truth.evaluate(env, policy, jax.random.PRNGKey(t))["keeps_value"]
        measure.write_csv(truth_path, [dict(step=k, keeps_value=v) for k, v in sorted(truth.items())],
                   ["step", "keeps_value"])
      return truth[t]

    summary = None
    while True:
      t = len(step_rows)
      # Games of step t (finished steps whose games a stop interrupted included).
      if t > 0:
        current = agent(t)
        for previous in range(t):
          if (t, previous) in done:
            continue
          result = arena.play_games(env, current, agent(previous),
                                    jax.random.PRNGKey(seed * 100_003 + t * 1009 + previous),
                                    games_per_pair, opening_plies=_OPENING_PLIES[game])
          new = [(t, previous, (float(s) + 1) / 2) for s in result.scores]
          records += new
          done.add((t, previous))
          measure.write_csv(games_path, [dict(a=a, b=b, score=s) for a, b, s in records],
                     ["a", "b", "score"])
        for step in range(t + 1):
          keeps_value(step)
        rows, summary = summarize_steps(step_rows, records, truth)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        measure.write_csv(os.path.join(directory, "steps.csv"), rows, fields)
        with open(os.path.join(directory, "summary.json"), "w") as f:
          json.dump(dict(summary, game=game, algo=algo, backup=backup, seed=seed,
                         channels=channels if game == "connect4" else None,
                         games_per_pair=games_per_pair), f, indent=1)
        plot(directory, rows)
        log(f"{directory} step {t}: {json.dumps(rows[-1])}")
      if t >= steps:
        break
      row = run.step()
      checkpoint.write_variables(snapshot(t + 1), jax.device_get(run.state["variables"]))
      step_rows.append(dict(step=row["iteration"], step_s=row["selfplay_s"] + row["train_s"],
                            loss=row.get("loss")))
    return summary
  finally:
    run.close()


def table(out: str) -> str:
  """The Markdown table over every cell under `out`: mean and spread over
  seeds, beside the Dual MCTS paper's numbers.

  Args:
    out: the cells' folder.

  Returns:
    str, the table.
  """
  cells = {}
  for root, _, files in os.walk(out):
    if "summary.json" in files:
      with open(os.path.join(root, "summary.json")) as f:
        s = json.load(f)
      cells.setdefault((s["game"], s["backup"], s["algo"]), []).append(s)
  lines = ["| game | backup | algorithm | seeds | steps run | time/step s | steps to conv. | "
           "time to conv. s | steps to 90% exact | final exact | "
           "Dual MCTS paper: time/step, steps, time to conv. |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]

  def spread(values, digits):
    values = [v for v in values if v is not None]
    if not values:
      return "-"
    mean = np.mean(values)
    if len(values) == 1:
      return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {np.std(values, ddof=1):.{digits}f}"

  def exact_cell(runs):
    if all(r.get("final_keeps_value") is None for r in runs):
      return "-"
    reached = [r["steps_to_exact"] for r in runs if r.get("steps_to_exact") is not None]
    return f"{spread(reached, 1)} ({len(reached)}/{len(runs)})"

  rows = []
  for (game, backup, algo), runs in sorted(cells.items(),
                                           key=lambda kv: (GAMES.index(kv[0][0]), kv[0][1],
                                                           ALGOS.index(kv[0][2]))):
    converged = [r for r in runs if r["steps_to_converge"] is not None]
    paper = SEED_TABLE.get((game, algo))
    rows.append(dict(game=game, backup=backup, algo=algo, seeds=len(runs),
                     time_per_step=np.mean([r["time_per_step"] for r in runs]),
                     steps=np.mean([r["steps_to_converge"] for r in converged]) if converged
                     else None))
    lines.append(
        f"| {game} | {backup} | {algo} | {len(runs)} | {min(r['steps_run'] for r in runs)} | "
        f"{spread([r['time_per_step'] for r in runs], 2)} | "
        f"{spread([r['steps_to_converge'] for r in runs], 1)} "
        f"({len(converged)}/{len(runs)}) | {spread([r['time_to_converge'] for r in runs], 2)} | "
        f"{exact_cell(runs)} | "
        f"{spread([r.get('final_keeps_value') for r in runs], 2)} | "
        f"{paper[0]}, {paper[1]}, {paper[2]} |")
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, "table.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  return "\n".join(lines)


def bench_search(game: str, backup: str, batch: int, channels: int, rounds: int = 5) -> str:
  """Wall time of one jitted search (a batch of `batch` initial positions) of
  each algorithm with its untrained network, the three interleaved per round
  (medians over `rounds`): the per-move cost behind a step's self-play.

  Args:
    game: one of `names.GAMES`.
    backup: one of `names.BACKUPS`.
    batch: positions per search.
    channels: Connect-4's ResNet channels.
    rounds: timed rounds.

  Returns:
    str, the table.
  """
  import time  # pylint: disable=g-import-not-at-top
  search_fns = {}
  for algo in ALGOS:
    config = cell_config(game, algo, backup, 0, channels)
    env, network, eval_fn = checkpoint.build_network(config)
    variables = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
    agent = agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables,
                               config=config.search_config(noise=False))
    states = env.init(jax.random.PRNGKey(1), batch_size=batch)
    agent.act(jax.random.PRNGKey(2), states)   # compiles
    search_fns[algo] = (agent, states)
  times = {algo: [] for algo in ALGOS}
  for r in range(rounds):
    for algo, (agent, states) in search_fns.items():
      start = time.perf_counter()
      agent.act(jax.random.PRNGKey(3 + r), states)
      times[algo].append(time.perf_counter() - start)
  base = np.median(times["alphazero"])
  lines = [f"{game}, backup {backup}, {batch} games per call, medians of {rounds} interleaved "
           "rounds", "| algorithm | ms per search | vs AlphaZero |", "|---|---|---|"]
  for algo in ALGOS:
    median = np.median(times[algo])
    lines.append(f"| {algo} | {1000 * median:.1f} | {median / base:.2f} |")
  return "\n".join(lines)
