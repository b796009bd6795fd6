"""Plots of a training run from its metrics.csv (matplotlib, PNG files)."""

import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top,wrong-import-position

# Columns that are not evaluation figures.
_NOT_EVAL = {"iteration", "wall_s", "positions", "positions_total", "nn_evals", "nn_evals_total",
             "games", "loss", "policy_loss", "value_loss", "devices", "replay_size",
             "transposition_hits", "capacity_overflows", "nan_evals", "selfplay_s", "train_s",
             "eval_s"}


def read_metrics(path: str) -> list[dict]:
  """Rows of a metrics CSV, numbers as floats (missing cells NaN)."""
  with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
  def number(text):
    try:
      return float(text)
    except (TypeError, ValueError):
      return math.nan
  return [{k: number(v) for k, v in row.items()} for row in rows]


def _series(rows, x, y):
  points = [(r[x], r[y]) for r in rows if not math.isnan(r.get(y, math.nan))]
  return [p[0] for p in points], [p[1] for p in points]


def plot_run(directory: str, label: str | None = None) -> list[str]:
  """Writes DIR/plots/{losses,evaluation}.png; returns the files written."""
  path = os.path.join(directory, "metrics.csv")
  if not os.path.exists(path):
    return []
  rows = read_metrics(path)
  if not rows:
    return []
  out = os.path.join(directory, "plots")
  os.makedirs(out, exist_ok=True)
  written = []
  fig, ax = plt.subplots(figsize=(6, 4))
  for column in ("loss", "policy_loss", "value_loss"):
    xs, ys = _series(rows, "iteration", column)
    if xs:
      ax.plot(xs, ys, label=column)
  ax.set_xlabel("iteration")
  ax.set_ylabel("loss")
  ax.set_title(label or os.path.basename(os.path.normpath(directory)))
  ax.legend()
  fig.tight_layout()
  written.append(os.path.join(out, "losses.png"))
  fig.savefig(written[-1], dpi=100)
  plt.close(fig)

  columns = [k for k in rows[0] if k not in _NOT_EVAL]
  columns = [c for c in columns if _series(rows, "iteration", c)[0]]
  if columns:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, x, name in zip(axes, ("iteration", "wall_s", "nn_evals_total"),
                           ("iteration", "wall time (s)", "network evaluations")):
      for column in columns:
        xs, ys = _series(rows, x, column)
        ax.plot(xs, ys, marker=".", label=column)
      ax.set_xlabel(name)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"evaluation: {label or os.path.basename(os.path.normpath(directory))}")
    fig.tight_layout()
    written.append(os.path.join(out, "evaluation.png"))
    fig.savefig(written[-1], dpi=100)
    plt.close(fig)
  return written
