"""Plots of a training run from its metrics.csv (matplotlib, PNG files)."""

import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top,wrong-import-position

def read_metrics(path: str) -> list[dict]:
  """Rows of a metrics CSV, numbers as floats (missing cells NaN).

  Args:
    path: the CSV file.

  Returns:
    A list of {column: float} rows.
  """
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
  """Writes the plots of one run under DIR/plots.

  losses.png, evaluation.png (exact figures of the raw policy and the search
  vs iteration, wall time and network evaluations) and arena_elo.png.

  Args:
    directory: the run directory (with metrics.csv).
    label: a title for the figures; None: the directory name.

  Returns:
    The files written ([] without metrics).
  """
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
  if ax.get_legend_handles_labels()[0]:   # no losses yet before the first update
    ax.legend()
  fig.tight_layout()
  written.append(os.path.join(out, "losses.png"))
  fig.savefig(written[-1], dpi=100)
  plt.close(fig)

  keys = []
  for row in rows:
    keys += [k for k in row if k not in keys]
  groups = []
  for prefix, title in (("policy_", "raw policy"), ("search_", "search")):
    columns = [k for k in keys if k.startswith(prefix) and not k.endswith("_loss")
               and _series(rows, "iteration", k)[0]]
    if columns:
      groups.append((title, prefix, columns))
  if groups:
    axes_x = (("iteration", "iteration"), ("wall_s", "wall time (s)"),
              ("nn_evals_total", "network evaluations"))
    fig, axes = plt.subplots(len(groups), 3, figsize=(15, 3.6 * len(groups)), squeeze=False)
    for row_axes, (title, prefix, columns) in zip(axes, groups):
      for ax, (x, name) in zip(row_axes, axes_x):
        for column in columns:
          xs, ys = _series(rows, x, column)
          ax.plot(xs, ys, marker=".", label=column[len(prefix):])
        ax.set_xlabel(name)
        ax.set_ylabel("error rate (share of positions)" if any("c4_error" in c for c in columns)
                      else "share of positions")
        ax.set_title(title, fontsize="small")
        ax.grid(alpha=0.3)
      row_axes[0].legend(fontsize="small")
    fig.suptitle(f"exact evaluation: {label or os.path.basename(os.path.normpath(directory))}")
    fig.tight_layout()
    written.append(os.path.join(out, "evaluation.png"))
    fig.savefig(written[-1], dpi=100)
    plt.close(fig)
  xs, ys = _series(rows, "iteration", "elo")
  if xs:
    low = _series(rows, "iteration", "elo_low")[1]
    high = _series(rows, "iteration", "elo_high")[1]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar(xs, ys, yerr=[[y - l for y, l in zip(ys, low)], [h - y for y, h in zip(ys, high)]],
                marker="o", capsize=3)
    ax.axhline(0, linestyle="--", color="gray")
    ax.set_xlabel("iteration")
    ax.set_ylabel("Elo (rollout baseline = 0)")
    fig.tight_layout()
    written.append(os.path.join(out, "arena_elo.png"))
    fig.savefig(written[-1], dpi=100)
    plt.close(fig)
  return written


def compare(directories: list[str], columns: list[str], out: str,
            labels: list[str] | None = None) -> str:
  """One figure of `columns` for several runs, vs iteration and wall time.

  E.g. a warm start beside the from-scratch run.

  Args:
    directories: the run directories.
    columns: metrics.csv columns to plot, one row of panels each.
    out: the PNG file to write.
    labels: a legend label per run; None: the directory names.

  Returns:
    The PNG path.
  """
  labels = labels or [os.path.basename(os.path.normpath(d)) for d in directories]
  fig, axes = plt.subplots(len(columns), 2, figsize=(11, 3.6 * len(columns)), squeeze=False)
  for directory, label in zip(directories, labels):
    rows = read_metrics(os.path.join(directory, "metrics.csv"))
    for row_axes, column in zip(axes, columns):
      for ax, x, name in zip(row_axes, ("iteration", "wall_s"), ("iteration", "wall time (s)")):
        xs, ys = _series(rows, x, column)
        ax.plot(xs, ys, marker=".", label=label)
        ax.set_xlabel(name)
        ax.set_ylabel(column)
        ax.grid(alpha=0.3)
  axes[0][0].legend(fontsize="small")
  fig.tight_layout()
  os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
  fig.savefig(out, dpi=100)
  plt.close(fig)
  return out


if __name__ == "__main__":
  import argparse  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description="Plots of training runs.")
  parser.add_argument("runs", nargs="+", help="run directories")
  parser.add_argument("--compare", nargs="+", metavar="COLUMN",
                      help="one figure of these metrics.csv columns for all runs")
  parser.add_argument("--out", default="comparison.png")
  parser.add_argument("--labels", nargs="+")
  args = parser.parse_args()
  if args.compare:
    print(compare(args.runs, args.compare, args.out, args.labels))
  else:
    for run in args.runs:
      print(plot_run(run))
