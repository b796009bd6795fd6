"""The training command's screen: a progress bar, the evaluations named above it.

`Screen` is what `mcgs-jax train` shows; `evaluation_summary` and
`short_summary` turn a metrics row's evaluation into text.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time

from mcgs_jax.learning import ground_truth


def evaluation_summary(row: dict, width: int | None = None) -> str:
  """The evaluation figures of a metrics row, each named ('' without).

  Connect-4: the error rates of the search and the raw policy on each of
  Pons' six sets (percent, "End-Easy 0.8%"); small games: the share of
  positions whose value the move keeps; the arena's Elo when computed.

  Args:
    row: a metrics row.
    width: wrap the text to lines of at most this many characters (None:
      one line).

  Returns:
    The text.
  """
  parts = []
  for kind in ("search", "policy"):
    errors = [(name, row[f"{kind}_c4_error_{key}"]) for key, name in ground_truth.C4_SETS.items()
              if f"{kind}_c4_error_{key}" in row]
    if errors:
      mean = 100 * sum(e for _, e in errors) / len(errors)
      parts.append(f"{kind} errors: " + ", ".join(f"{name} {100 * e:.1f}%" for name, e in errors)
                   + f" (mean {mean:.1f}%)")
    elif f"{kind}_keeps_value" in row:
      parts.append(f"{kind} keeps value {row[f'{kind}_keeps_value']:.4f}")
  if "elo" in row:
    parts.append(f"Elo {row['elo']:+.0f} [{row['elo_low']:+.0f}, {row['elo_high']:+.0f}]")
  text = "; ".join(parts)
  if width is None or not text:
    return text
  return "\n".join(textwrap.wrap(text, width=max(width, 40), subsequent_indent="  "))


def short_summary(row: dict) -> str:
  """The evaluation in a few characters, for the bar.

  Args:
    row: a metrics row.

  Returns:
    The text ('' without an evaluation).
  """
  for kind in ("search", "policy"):
    errors = [row[k] for k in row if k.startswith(f"{kind}_c4_error_")]
    if errors:
      return f"{kind} {100 * sum(errors) / len(errors):.1f}%"
    if f"{kind}_keeps_value" in row:
      return f"{kind} keeps {row[f'{kind}_keeps_value']:.3f}"
  return ""


class Screen:
  """The training screen: a bar that ends where the run stops.

  The run stops at `--iterations` or at a CPU or wall budget, whichever
  comes first, so the bar shows the largest of those fractions, and its
  estimate of the time left is this process's own pace since its first
  iteration (a resumed run's earlier hours and the first iteration's
  compilation do not count). Evaluations are written above the bar, named
  and wrapped to the terminal's width; the bar's text is kept short. With
  no terminal (a log file), every iteration's metrics row is printed as one
  JSON line instead.
  """

  def __init__(self, config, state: dict, iterations: int, budgets: dict, quiet: bool = False):
    from tqdm import tqdm  # pylint: disable=g-import-not-at-top
    self.quiet = quiet   # the other processes of a multi-process job: process 0 reports
    self.iterations = iterations
    self.budgets = {key: budget for key, budget in budgets.items() if budget is not None}
    self.bar = tqdm(total=1000, initial=self._progress(state), disable=True if quiet else None,
                    desc=f"train {config.env}", dynamic_ncols=True,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")
    self.first = None   # (clock, fraction) after this process's first iteration
    self.evaluation = ""

  def _fraction(self, state: dict) -> float:
    fractions = [int(state["iteration"]) / self.iterations]
    fractions += [float(state[key]) / budget for key, budget in self.budgets.items()]
    return min(max(fractions), 1.0)

  def _progress(self, state: dict) -> int:
    return int(1000 * self._fraction(state))

  def left(self, state: dict, now: float) -> str:
    """The time left at this process's pace.

    Args:
      state: the run's state (its iteration and seconds).
      now: the clock (`time.monotonic`).

    Returns:
      The text ("" before this process has a pace).
    """
    fraction = self._fraction(state)
    if self.first is None:
      self.first = (now, fraction)
      return ""
    began, start = self.first
    if fraction <= start or now <= began:
      return ""
    seconds = (1.0 - fraction) * (now - began) / (fraction - start)
    hours, rest = divmod(int(seconds), 3600)
    return f"~{hours}h{rest // 60:02d}m left" if hours else f"~{rest // 60}m{rest % 60:02d}s left"

  def update(self, state: dict, row: dict) -> None:
    """After an iteration: the bar, or the JSON line without a terminal.

    Args:
      state: the run's state.
      row: the iteration's metrics row.
    """
    if self.quiet:
      return
    if self.bar.disable:
      print(json.dumps(row), flush=True)
      return
    if short_summary(row):
      self.evaluation = short_summary(row)
      width = shutil.get_terminal_size((100, 20)).columns
      self.bar.write(f"iteration {row['iteration']}: {evaluation_summary(row, width)}")
    loss = "-" if row["loss"] is None else f"{row['loss']:.3f}"
    parts = [f"it {row['iteration']}", f"loss {loss}", self.evaluation,
             self.left(state, time.monotonic())]
    self.bar.set_postfix_str(", ".join(p for p in parts if p), refresh=False)
    self.bar.update(self._progress(state) - self.bar.n)

  def write(self, text: str) -> None:
    """A line above the bar (nothing on a quiet process).

    Args:
      text: the line.
    """
    if not self.quiet:
      self.bar.write(text)

  def close(self) -> None:
    """Closes the bar."""
    self.bar.close()
