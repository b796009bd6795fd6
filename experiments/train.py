"""AlphaZero training with the graph search: self-play, replay, optax updates.

  mcgs-jax train --env tictactoe --out runs/ttt
  mcgs-jax train --env connect4 --out runs/c4 --iterations 200
  mcgs-jax train --out runs/c4            # resume with the saved config

Each iteration plays `moves_per_iteration` moves in each of `games` games
(one search per move), adds the positions of finished games to the replay
buffer and makes `updates_per_iteration` optimizer steps. Every iteration
appends one row to `DIR/metrics.csv` and is checkpointed (orbax; with the
config's `checkpoint_every` N, the first, every N-th and the last one before
the run stops); running the same command again on the same `DIR` resumes
from the last complete checkpoint, whenever the previous run was stopped
(SIGKILL included): no iteration is lost (a SIGKILL repeats at most N - 1),
and the result equals an uninterrupted run.

Options not on the command line come from `--config FILE.json` (fields of
`mcgs_jax.learning.config.TrainConfig`) over the env's defaults. Outputs in DIR:
config.json, metrics.csv, checkpoints/, agent.msgpack (the latest network,
for `load_agent`), snapshots/ (the network at each evaluation, for the
arena), plots/ and, with --tensorboard, tb/.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import sys
import textwrap
import threading
import time
import warnings

from mcgs_jax import config as search_config_lib
from mcgs_jax import envs
from mcgs_jax.learning import cli
from mcgs_jax.learning import names

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
checkpoint_lib = cli.lazy("mcgs_jax.learning.checkpoint")
config_lib = cli.lazy("mcgs_jax.learning.config")
distributed = cli.lazy("mcgs_jax.learning.distributed")
ground_truth = cli.lazy("mcgs_jax.learning.ground_truth")
loop = cli.lazy("mcgs_jax.learning.loop")
plots = cli.lazy("mcgs_jax.learning.plots")


def _saved_config(out: str, saved_path: str) -> config_lib.TrainConfig | None:
  """The run's saved config; a missing or damaged config.json is restored
  from the newest checkpoint (which stores it), with one line saying so."""
  try:
    return config_lib.TrainConfig.from_json(config_lib.load_json(saved_path))
  except (OSError, ValueError, TypeError) as error:
    recovered = checkpoint_lib.recover_config(out)
    if recovered is None:
      if isinstance(error, FileNotFoundError):
        return None
      raise
    fields, step = recovered
    config = config_lib.TrainConfig.from_json(fields)
    with open(saved_path + ".tmp", "w") as f:
      json.dump(config.to_json(), f, indent=2)
    os.replace(saved_path + ".tmp", saved_path)
    reason = "missing" if isinstance(error, FileNotFoundError) else "unreadable"
    print(f"warning: {saved_path} was {reason}; restored it from checkpoint {step}",
          file=sys.stderr)
    return config


def resolve_config(args) -> config_lib.TrainConfig:
  """Saved config (resume), else env defaults + config file + options."""
  saved_path = os.path.join(args.out, checkpoint_lib.CONFIG)
  options = {name: getattr(args, name)
             for name in ("env", "search", "simulations", "games", "root_policy")
             if getattr(args, name) is not None}
  file_values = config_lib.load_json(args.config) if args.config else {}
  # A field given both in the file and as a flag: the flag wins.
  asked = {**file_values, **options}
  if os.path.exists(saved_path) or os.path.isdir(os.path.join(args.out, "checkpoints")):
    saved = _saved_config(args.out, saved_path)
  else:
    saved = None
  if saved is not None:
    asked = config_lib.replace(saved, **asked)
    if asked != saved:
      changed = config_lib.differences(saved, asked)
      raise ValueError(f"{args.out} was started with other settings ({', '.join(changed)} "
                       f"differ from {saved_path}); rerun with the same ones, or use a new --out")
    return saved
  env_id = asked.get("env")
  if env_id is None:
    raise ValueError(f"--env is needed to start a new run ({saved_path} does not exist)")
  envs.make(env_id)   # an unknown env id: a ValueError naming the known ones
  return config_lib.replace(config_lib.default_config(env_id), **asked)


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--env", type=cli.env_id, help="env id (mcgs_jax.envs.make), e.g. tictactoe, connect4, nim:3,20")
  parser.add_argument("--out", required=True, help="run directory (created, or resumed)")
  parser.add_argument("--iterations", type=int, default=None,
                      help="train until this iteration (total, resumed ones included); "
                      "default: the env's (mcgs_jax.learning.config.default_iterations)")
  parser.add_argument("--search", choices=names.SEARCHES)
  parser.add_argument("--root-policy", choices=search_config_lib.ROOT_POLICIES,
                      help="puct (visit-count targets) or gumbel (Gumbel root search, "
                      "improved-policy targets)")
  parser.add_argument("--simulations", type=int)
  parser.add_argument("--games", type=int)
  parser.add_argument("--config", help="JSON file of TrainConfig fields")
  parser.add_argument("--wall-budget", type=float, default=None,
                      help="also stop once the run's wall_s (self-play and training "
                      "seconds, resumed ones included) reaches this")
  parser.add_argument("--cpu-budget", type=float, default=None,
                      help="also stop once the run's cpu_s (CPU seconds of self-play and "
                      "training, resumed ones included) reaches this")
  parser.add_argument("--tensorboard", action="store_true", help="also write TensorBoard events")
  parser.add_argument("--distributed", action="store_true",
                      help="join a multi-process job (jax.distributed.initialize) first; the "
                      "three flags below default to what jax reads from the cluster's "
                      "environment (SLURM, Cloud TPU, Kubernetes, ...)")
  parser.add_argument("--coordinator-address", metavar="HOST:PORT",
                      help="process 0's address and a free port (--distributed)")
  parser.add_argument("--num-processes", type=int, help="processes in the job (--distributed)")
  parser.add_argument("--process-id", type=int,
                      help="this process's index, 0 .. N-1 (--distributed)")
  args = parser.parse_args(argv)
  if not args.out.strip():
    parser.error("--out must name the run's folder")
  for name in ("iterations", "simulations", "games"):
    if getattr(args, name) is not None and getattr(args, name) < 1:
      parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
  given = [f"--{name.replace('_', '-')}" for name in
           ("coordinator_address", "num_processes", "process_id")
           if getattr(args, name) is not None]
  if given and not args.distributed:
    parser.error(f"{given[0]} needs --distributed")
  if args.num_processes is not None and args.num_processes < 1:
    parser.error(f"--num-processes must be >= 1, got {args.num_processes}")
  if args.process_id is not None and not (
      0 <= args.process_id < (args.num_processes or args.process_id + 1)):
    parser.error(f"--process-id must be in 0 .. --num-processes - 1, got {args.process_id}")
  for name in ("wall_budget", "cpu_budget"):
    if getattr(args, name) is not None and not getattr(args, name) > 0:
      parser.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
  return args


def run(argv) -> int:
  """The command: trains, or resumes, the run in `--out`."""
  args = parse_args(argv)
  if args.distributed and distributed.WORKER_VARIABLE not in os.environ:
    # The work runs in a child, whose end by a lost peer (a native abort)
    # becomes one line here.
    return distributed.supervise(list(argv), "mcgs_jax.experiments.train",
                                 os.path.join(args.out, "checkpoints"))
  try:
    with _terminate_as_interrupt():
      train(args)
  except KeyboardInterrupt:
    print(f"\nstopped at iteration {_last_iteration(args.out)}; run the same command to "
          "resume", file=sys.stderr)
    return cli.INTERRUPTED
  return 0


def main(argv=None):
  return cli.main(run, argv)


@contextlib.contextmanager
def _terminate_as_interrupt():
  """SIGTERM stops the run as Ctrl-C does: after its last finished iteration.

  A run started in the background (`nohup ... &`) ignores SIGINT, so `kill`
  (SIGTERM) is how it is stopped; without this it would die mid-iteration
  (still resumable, but without the closing line).
  """
  if threading.current_thread() is not threading.main_thread():
    yield
    return

  def interrupt(signum, frame):
    del signum, frame
    raise KeyboardInterrupt

  previous = signal.signal(signal.SIGTERM, interrupt)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)


def _last_iteration(directory: str) -> int:
  """The newest iteration in DIR/metrics.csv (0 without one)."""
  try:
    with open(os.path.join(directory, loop.METRICS), newline="") as f:
      return max((int(row["iteration"]) for row in csv.DictReader(f)), default=0)
  except (OSError, ValueError, KeyError):
    return 0


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
  """The evaluation in a few characters, for the bar ('' without one)."""
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
    """The time left at this process's pace ("" before it has one)."""
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
    """After an iteration: the bar, or the JSON line without a terminal."""
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
    if not self.quiet:
      self.bar.write(text)

  def close(self) -> None:
    self.bar.close()


def train(args) -> None:
  """Runs `mcgs_jax.experiments.train`'s command line (parsed `args`)."""
  if args.distributed:
    distributed.initialize(args.coordinator_address, args.num_processes, args.process_id)
  config = resolve_config(args)
  if args.iterations is None:
    args.iterations = config_lib.default_iterations(config.env)
  with warnings.catch_warnings():
    # Said once below, one line each, instead of a warning with its source.
    warnings.simplefilter("ignore", loop.CheckpointFallbackWarning)
    run = loop.Run(args.out, config, tensorboard=args.tensorboard)
  primary = distributed.is_primary()
  for note in run.notes if primary else ():
    print(f"warning: {note}; resuming from iteration {int(run.state['iteration'])}",
          file=sys.stderr)
  start = int(run.state["iteration"])
  budgets = {"wall_s": args.wall_budget, "cpu_s": args.cpu_budget}
  screen = Screen(config, run.state, args.iterations, budgets, quiet=not primary)
  if start >= args.iterations and primary:
    print(f"{args.out}: already at iteration {start} (>= --iterations {args.iterations})")
  failed = False
  try:
    for _ in range(start, args.iterations):
      spent = [(name, budget) for name, key, budget in (("wall", "wall_s", args.wall_budget),
                                                        ("CPU", "cpu_s", args.cpu_budget))
               if budget is not None and float(run.state[key]) >= budget]
      if spent:
        name, budget = spent[0]
        screen.write(f"{args.out}: {name} budget {budget:g} s reached at iteration "
                     f"{int(run.state['iteration'])}")
        break
      row = run.step()
      screen.update(run.state, row)
  except Exception:   # not Ctrl-C: the last finished iteration is saved below
    failed = True
    raise
  finally:
    screen.close()
    run.close(save=not failed)
    # The curves as the run stands, however it stopped.
    if primary:
      plots.plot_run(args.out)


if __name__ == "__main__":
  sys.exit(main())
