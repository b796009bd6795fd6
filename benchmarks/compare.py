"""Trees' hot paths, interleaved in one run (the library of `mcgs-jax bench-compare`).

One worker process per tree (`compare_worker.py`, copied out of this tree so
that every base runs the same measuring code; it calls only the public API
the trees share) compiles the key cells first, then the workers take turns:
round by round, cell by cell, one timed batch of calls each, the order turned
by one each round, so that load from elsewhere falls
on all alike. Only one worker runs at a time, so all may be pinned to one
core (`cores`): on a small machine a process on several cores ran at one of
two speeds by the run. The rounds run in sessions (two by default), each with
fresh workers, started bases first in one and work first in the next: which
process starts second moves its speed by a few percent, and a process keeps
its luck for its life. The key cells are the worker's
(`compare_worker.make_cells`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from mcgs_jax.benchmarks import layout

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare_worker.py")
FIELDS = ("cell", "base_ms", "work_ms", "ratio", "ratio_min", "ratio_max", "rounds", "base")


class Worker:
  """A measuring process over one tree, driven line by line (`compare_worker`)."""

  def __init__(self, tree: str, quick: bool, label: str, cores: set[int] | None = None):
    """Starts the worker.

    Args:
      tree: the checkout it measures.
      quick: tiny shapes.
      label: its name in messages ("base", "work").
      cores: the cores it may run on (it pins itself before jax starts); None:
        this process's.
    """
    self.label = label
    folder = tempfile.mkdtemp(prefix=f"bench-{label}-")
    # The tree laid out as installed, first on the path: the worker imports
    # this tree's subpackages too, not the installed checkout's.
    packages = layout.link(tree, os.path.join(folder, "packages"))
    env = dict(os.environ, PYTHONPATH=str(packages), PYTHONUNBUFFERED="1")
    env.pop("MCGS_BENCH_CORES", None)
    if cores:
      env["MCGS_BENCH_CORES"] = ",".join(str(core) for core in sorted(cores))
    script = os.path.join(folder, "compare_worker.py")
    shutil.copy(WORKER, script)   # the same measuring code for both trees
    self.process = subprocess.Popen([sys.executable, script] + (["--quick"] if quick else []),
                                    cwd=tree, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)

  def ask(self, command: str) -> dict:
    """Sends one command line and waits for its JSON answer.

    Args:
      command: e.g. "compile", "time puct-b1 3".

    Returns:
      The answer, a dict.
    """
    self.process.stdin.write(command + "\n")
    self.process.stdin.flush()
    while True:
      line = self.process.stdout.readline()
      if not line:
        raise RuntimeError(f"the {self.label} worker ended (exit {self.process.wait()})")
      if line.startswith("{"):
        return json.loads(line)

  def close(self) -> None:
    """Asks the worker to quit and waits for it."""
    try:
      self.process.stdin.write("quit\n")
      self.process.stdin.flush()
    except OSError:
      pass
    self.process.wait(timeout=60)


def balanced_ratio(ratios: list[float], sessions: list[str]) -> float:
  """work / base with each session of workers weighing the same.

  The process started second runs faster, so a session's ratios lean one
  way (rounds of the work-first half read higher), and an odd number of
  rounds has more of one session: the median of all rounds leans with it (5
  rounds, 3 base first: gumbel-b1024 1.018 where the halves read 1.02 and
  1.07).

  Args:
    ratios: each round's work / base.
    sessions: each round's session (a label; its workers' start order).

  Returns:
    The geometric mean of the sessions' medians (one session: its median).
  """
  medians = [statistics.median([r for r, s in zip(ratios, sessions) if s == session])
             for session in dict.fromkeys(sessions)]
  return math.prod(medians) ** (1 / len(medians))


def compare(base_tree: str | dict[str, str], work_tree: str, rounds: int, repeats: int,
            quick: bool, cores: set[int] | None = None, cells: list[str] | None = None,
            sessions: int = 2) -> list[dict]:
  """The key cells of the trees, interleaved.

  Args:
    base_tree: the base checkout's folder, or several: label -> folder.
    work_tree: the working checkout's folder.
    rounds: interleaved rounds (spread over the sessions).
    repeats: timed calls per cell and turn.
    quick: tiny shapes.
    cores: the cores the workers run on (one at a time); None: this
      process's.
    cells: the key cells to time (None: all), in the worker's order.
    sessions: sets of fresh workers, started in turn in the trees' order and
      in reverse (the bases first, then the work; then the work first).

  Returns:
    One row per cell and base (`FIELDS`), then the `overhead` rows of each
    tree (with the floor and PUCT search cells).
  """
  bases = {"base": base_tree} if isinstance(base_tree, str) else dict(base_tree)
  trees = dict(bases, work=work_tree)
  times, session_of_round = {}, []
  chosen = None
  # Sessions of workers started in turn bases first and work first: a process
  # started second ran a B = 1024 search 2-4% faster, whichever tree it held
  # (docs/benchmarks.md), and the sessions cancel that; with several trees
  # each round also turns the order by one.
  for session in range(min(sessions, rounds)):
    order = list(trees) if session % 2 == 0 else list(trees)[::-1]
    session_rounds = rounds // sessions + (session < rounds % sessions)
    workers = {}
    try:
      for name in order:
        workers[name] = Worker(trees[name], quick, name, cores)
        compiled = workers[name].ask("compile" if cells is None else "compile " + ",".join(cells))
        if "error" in compiled:
          raise ValueError(compiled["error"])
        print(f"  {name}: compiled {', '.join(compiled['cells'])} "
              f"({compiled['seconds']:.0f} s; on {compiled['cores']} core(s))", flush=True)
        chosen = compiled["cells"]
      for round_index in range(session_rounds):
        # Turned by one a round: each tree takes each place in turn (two
        # trees: the first alternates).
        turn = order[round_index % len(order):] + order[:round_index % len(order)]
        for cell in chosen:
          for tree in turn:
            times.setdefault((tree, cell), []).append(
                workers[tree].ask(f"time {cell} {repeats}")["median_ms"])
        session_of_round.append(f"{session}:{order[0]}")
        done = len(session_of_round)
        print(f"  round {done}/{rounds} ({order[0]} started first): " + ", ".join(
            f"{cell} " + "/".join(f"{times['work', cell][-1] / times[base, cell][-1]:.2f}"
                                  for base in bases) for cell in chosen), flush=True)
    finally:
      for worker in workers.values():
        worker.close()
  rows = []
  for cell in chosen:
    for base in bases:
      ratios = [w / b for w, b in zip(times["work", cell], times[base, cell])]
      rows.append(dict(cell=cell, base_ms=statistics.median(times[base, cell]),
                       work_ms=statistics.median(times["work", cell]),
                       ratio=balanced_ratio(ratios, session_of_round), ratio_min=min(ratios),
                       ratio_max=max(ratios), rounds=rounds, base=base))
  floors = [c for c in chosen if c.startswith("floor-b")]
  searches = [c.replace("floor", "puct") for c in floors if c.replace("floor", "puct") in chosen]
  if floors and searches:
    floor, search = floors[0], searches[0]
    for tree in trees:
      overhead = [s / f for s, f in zip(times[tree, search], times[tree, floor])]
      rows.append(dict(cell=f"overhead ({tree}: {search} / {floor})", base_ms=float("nan"),
                       work_ms=float("nan"), ratio=balanced_ratio(overhead, session_of_round),
                       ratio_min=min(overhead), ratio_max=max(overhead), rounds=rounds,
                       base=tree if tree != "work" else ""))
  return rows


def format_table(rows: list[dict]) -> str:
  """The rows as a markdown table.

  Args:
    rows: `compare`'s rows.

  Returns:
    str.
  """
  lines = ["| cell | base | base ms | work ms | work / base (sessions' medians, balanced) | min "
           "| max |", "|---|---|---|---|---|---|---|"]
  for r in rows:
    ms = lambda v: "-" if v != v else f"{v:.2f}"
    lines.append(f"| {r['cell']} | {r.get('base', '')} | {ms(r['base_ms'])} | {ms(r['work_ms'])} "
                 f"| {r['ratio']:.3f} | {r['ratio_min']:.3f} | {r['ratio_max']:.3f} |")
  return "\n".join(lines)


def write_csv(rows: list[dict], path: str) -> None:
  """Writes `compare`'s rows (`FIELDS`) to `path`.

  Args:
    rows: `compare`'s rows.
    path: the CSV's path (its folder is created).
  """
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  with open(path, "w") as f:
    f.write(",".join(FIELDS) + "\n")
    for r in rows:
      f.write(",".join(json.dumps(r.get(k, "")) if k in ("cell", "base") else str(r[k])
                       for k in FIELDS) + "\n")
