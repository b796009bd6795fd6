"""One lent accelerator, one command: the accelerator report, then the
Connect-4 recipe trained for the rest of the time.

  mcgs-jax device-session                  # 9.5 min on an H100-class GPU
  mcgs-jax device-session --quick          # CPU smoke run, < 3 min
  mcgs-jax device-session --seconds 570 --out docs

Steps, each a subprocess (so each has the accelerator's memory to itself):
  1. report    `mcgs_jax.experiments.device_report` (its `FULL_PLAN`; `--quick`: its
               smoke plan), writing `<out>/device/<device>.md` and its CSVs:
               search grid against mctx, self-play, memory, phases, training
               throughput, XLA options side by side, kernels per step.
  2. training  `mcgs_jax.experiments.train --env connect4` with the recipe's settings
               sized for an accelerator (`gpu_config`: 8x the games per
               iteration and the updates with them, a replay buffer 8x as
               large), evaluated on Pons' sets every `eval_every`
               iterations, until the session's deadline; the run folder
               (checkpoints included) lives under `--runs`, outside git.
  3. results   the run's config, metrics, final network and plots copied to
               `<out>/learning/gpu/<name>/`, with `curve.csv` and
               `curve.png`: its Pons error curve against wall seconds beside
               the shipped CPU recipe's (`networks/pretrained/connect4`).
  4. summary   `<out>/device/<device>-session.md`: the plan's prediction,
               each step's seconds and outcome.

The plan is predicted before anything runs (`predict`): the report's section
budgets plus start-up, then training for what is left of `--seconds` less a
closing margin; the command says whether the prediction fits `--seconds` and
the lent machine's 12 minutes (its start-up included). Every step runs even
when one before it failed; the training stops at the deadline (SIGTERM: it
finishes its iteration and checkpoints; rerunning the same command resumes
it).

`mcgs-jax device-session` is the command line
(`mcgs_jax.experiments.device_session`); this module holds its plan,
steps, curves and summary.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import math
import os
import shutil
import signal
import subprocess
import time

from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import report_plan

# The lent machine: 12 minutes of device time for the whole call, of which
# starting the machine and copying the tree take up to 90 s (45 s on
# 2026-11-28).
DEVICE_MINUTES = 12.0
MACHINE_START_S = 90.0
# Python, jax and the report's imports and networks before its first section.
REPORT_START_S = 25.0
# After the training stops: copies, curve, plots and the summary.
CLOSING_S = 25.0
# A training run needs at least this long to reach its first evaluation.
MIN_TRAINING_S = 60.0
CPU_RECIPE = os.path.join("networks", "pretrained", "connect4")
CURVE_FIELDS = ("run", "iteration", "wall_s", "elapsed_s", "positions_total",
                "search_error_mean", "policy_error_mean", "value_sign_error_mean")
C4_SETS = ("L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3")


def gpu_config(quick: bool) -> dict:
  """The training run's `--config` over the connect4 defaults.

  The accelerator runs 8x the recipe's 128 games per iteration in about
  the time of one batch of 128 (docs/learning/gpu/), so the games, the
  updates per iteration (the same replay ratio) and the replay buffer (the
  same number of iterations' positions) grow by 8; evaluations come every
  `eval_every` iterations (the recipe's `eval_every_s` counts CPU seconds,
  which say little on an accelerator), checkpoints every 50.

  Args:
    quick: the CPU smoke run's tiny settings instead.

  Returns:
    dict of TrainConfig fields.
  """
  if quick:
    return dict(network_kwargs={"num_layers": 1, "width": 16}, games=8,
                search=dict(num_simulations=8), eval_search=dict(num_simulations=8),
                moves_per_iteration=14, updates_per_iteration=2, batch_size=32, min_replay=32,
                replay_capacity=2000, eval_every=2, eval_every_s=0.0, eval_positions=4,
                checkpoint_every=2, decay_updates=0)
  return dict(games=1024, updates_per_iteration=256, replay_capacity=800_000,
              min_replay=32_768, decay_updates=80_000, eval_every=40, eval_every_s=0.0,
              checkpoint_every=50)


@dataclasses.dataclass(frozen=True)
class Prediction:
  """Seconds the session's steps are planned to take."""
  report_s: float
  training_s: float
  closing_s: float

  @property
  def total_s(self) -> float:
    """The command's predicted seconds: report, training and closing."""
    return self.report_s + self.training_s + self.closing_s

  @property
  def device_s(self) -> float:
    """With the lent machine's start-up."""
    return self.total_s + MACHINE_START_S


def predict(plan: report_plan.Plan, seconds: float, quick: bool) -> Prediction:
  """The session's plan: the report's section budgets and start-up, the
  closing margin, and training for the rest of `seconds` (0 when less than
  `MIN_TRAINING_S` is left; the quick run trains a fixed 4 iterations,
  about 40 s on a CPU).

  Args:
    plan: the report's Plan.
    seconds: the session's wall budget.
    quick: the smoke run.

  Returns:
    Prediction.
  """
  report_s = REPORT_START_S + sum(plan.budgets_s.values())
  if quick:
    return Prediction(report_s=report_s, training_s=40.0, closing_s=5.0)
  training_s = seconds - report_s - CLOSING_S
  return Prediction(report_s=report_s, training_s=training_s if training_s >= MIN_TRAINING_S
                    else 0.0, closing_s=CLOSING_S)


def _error_mean(row: dict, prefix: str) -> float:
  values = [row.get(f"{prefix}_{s}", "") for s in C4_SETS]
  try:
    numbers = [float(v) for v in values]
  except ValueError:
    return math.nan
  return 100.0 * sum(numbers) / len(numbers)


def curve_rows(metrics_path: str, run: str) -> list[dict]:
  """The evaluated iterations of a run's metrics.csv: Pons error means (%)
  against wall seconds (`wall_s`: self-play and updates) and elapsed
  seconds (`wall_s` plus evaluations and compiles so far).

  Args:
    metrics_path: the run's metrics.csv.
    run: the run's label.

  Returns:
    Rows of `CURVE_FIELDS`.
  """
  with open(metrics_path, newline="") as f:
    rows = list(csv.DictReader(f))
  out, overhead = [], 0.0
  for row in rows:
    for key in ("eval_s", "compile_s"):
      try:
        overhead += float(row.get(key) or 0.0)
      except ValueError:
        pass
    search = _error_mean(row, "search_c4_error")
    if math.isnan(search):
      continue
    wall = float(row["wall_s"])
    out.append(dict(run=run, iteration=int(row["iteration"]), wall_s=round(wall, 1),
                    elapsed_s=round(wall + overhead, 1),
                    positions_total=int(float(row["positions_total"])),
                    search_error_mean=round(search, 2),
                    policy_error_mean=round(_error_mean(row, "policy_c4_error"), 2),
                    value_sign_error_mean=round(_error_mean(row, "value_c4_sign_error"), 2)))
  return out


def plot_curves(rows: list[dict], path: str) -> None:
  """Search error mean against wall seconds (log scale), one line per run.

  Args:
    rows: `curve_rows`' rows of one or more runs.
    path: the PNG written.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(10, 4))
  for run in dict.fromkeys(r["run"] for r in rows):
    mine = [r for r in rows if r["run"] == run]
    for ax, column in zip(axes, ("search_error_mean", "policy_error_mean")):
      ax.plot([max(r["wall_s"], 1.0) for r in mine], [r[column] for r in mine], marker=".",
              label=run)
  for ax, title in zip(axes, ("search (200 simulations)", "raw policy")):
    ax.set_xscale("log")
    ax.set_xlabel("wall seconds of self-play and updates")
    ax.set_ylabel("mean error on Pons' six sets (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
  # AlphaZero.jl's Connect-4 agent: 1.9% mean search error on the same sets.
  axes[0].axhline(1.9, color="grey", linestyle=":", linewidth=1, label="AlphaZero.jl (1.9%)")
  axes[0].legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def run_step(command: list[str], deadline: float, env: dict) -> tuple[str, float]:
  """Runs `command` until it ends or `deadline` (`time.monotonic()`),
  then SIGTERM, and SIGKILL 30 s later.

  Returns:
    (outcome, seconds): "exit 0", "exit N", "stopped at the deadline".

  Args:
    command: the subprocess's argv.
    deadline: `time.monotonic()` at which it is stopped.
    env: its environment.
  """
  start = time.monotonic()
  process = subprocess.Popen(command, env=env)
  try:
    code = process.wait(timeout=max(deadline - start, 1.0))
    return f"exit {code}", time.monotonic() - start
  except subprocess.TimeoutExpired:
    process.send_signal(signal.SIGTERM)
    try:
      process.wait(timeout=30)
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()
    return "stopped at the deadline", time.monotonic() - start


def collect_run(run_dir: str, dest: str, label: str) -> list[dict]:
  """Copies a run's tracked-size files to `dest` and writes its curve beside
  the CPU recipe's.

  Returns:
    The curve rows (the run's, then the CPU recipe's).

  Args:
    run_dir: the training run's folder.
    dest: the folder its results are copied to.
    label: the run's name in the curve.
  """
  os.makedirs(dest, exist_ok=True)
  for name in ("config.json", "metrics.csv", "agent.msgpack"):
    if os.path.exists(os.path.join(run_dir, name)):
      shutil.copy2(os.path.join(run_dir, name), os.path.join(dest, name))
  for png in glob.glob(os.path.join(run_dir, "plots", "*.png")):
    shutil.copy2(png, os.path.join(dest, os.path.basename(png)))
  rows = []
  if os.path.exists(os.path.join(run_dir, "metrics.csv")):
    rows += curve_rows(os.path.join(run_dir, "metrics.csv"), label)
  recipe = os.path.join(CPU_RECIPE, "metrics.csv")
  if os.path.exists(recipe):
    rows += curve_rows(recipe, "CPU recipe (2 cores, networks/pretrained/connect4)")
  measure.write_csv(os.path.join(dest, "curve.csv"), rows, CURVE_FIELDS)
  if rows:
    plot_curves(rows, os.path.join(dest, "curve.png"))
  return rows


def summary_text(quick: bool, seconds: float, command: str, prediction: Prediction,
                 steps: list[dict], curve: list[dict], label: str) -> str:
  """The session's markdown summary.

  Args:
    quick: the CPU smoke run.
    seconds: the command's wall budget.
    command: the command line, as typed.
    prediction: `predict`'s plan.
    steps: each step's row (step, outcome, seconds).
    curve: `collect_run`'s rows.
    label: the training run's name.

  Returns:
    str, the Markdown.
  """
  lines = [
      f"# Accelerator session{' (quick)' if quick else ''}",
      "",
      f"Command: `{command}`",
      "",
      f"Predicted: report {prediction.report_s:.0f} s + training {prediction.training_s:.0f} s"
      f" + closing {prediction.closing_s:.0f} s = {prediction.total_s:.0f} s of the command's "
      f"{seconds:.0f} s; with the machine's start-up about {prediction.device_s:.0f} s "
      f"of {60 * DEVICE_MINUTES:.0f} s of device time.",
      "",
      "| step | outcome | seconds |",
      "|---|---|---|",
  ]
  lines += [f"| {s['step']} | {s['outcome']} | {s['seconds']:.0f} |" for s in steps]
  mine = [r for r in curve if r["run"] == label]
  if mine:
    lines += ["", f"Training `{label}` (`learning/gpu/{label}/`): Pons error means (%) at its "
              "evaluations.", "",
              "| iteration | wall_s | elapsed s | positions | search | policy | value sign |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['iteration']} | {r['wall_s']:.0f} | {r['elapsed_s']:.0f} | "
              f"{r['positions_total']:,} | {r['search_error_mean']:.1f} | "
              f"{r['policy_error_mean']:.1f} | {r['value_sign_error_mean']:.1f} |" for r in mine]
  return "\n".join(lines) + "\n"
