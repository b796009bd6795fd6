"""The training command's work (`mcgs-jax train`): the config a run starts or
resumes with, the loop until its stop, and the stop by Ctrl-C or SIGTERM.

The command line (`mcgs_jax.experiments.train`) parses its flags and calls
`run`; a program can call `run` or `train` the same way.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import sys
import threading
import warnings

from mcgs_jax import envs
from mcgs_jax.learning import cli
from mcgs_jax.learning import distributed

# Loaded on first use: a multi-process job joins (`distributed.initialize`)
# before anything starts jax's backend, which these modules' imports do.
checkpoint_lib = cli.lazy("mcgs_jax.learning.checkpoint")
config_lib = cli.lazy("mcgs_jax.learning.config")
loop = cli.lazy("mcgs_jax.learning.loop")
plots = cli.lazy("mcgs_jax.learning.plots")
screen_lib = cli.lazy("mcgs_jax.learning.screen")


def saved_config(out: str, saved_path: str) -> config_lib.TrainConfig | None:
  """The run's saved config; a missing or damaged config.json is restored
  from the newest checkpoint (which stores it), with one line saying so.

  Args:
    out: the run's folder.
    saved_path: its config.json.

  Returns:
    The TrainConfig, or None for a run that has none (a new run).
  """
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


def resolve_config(out: str, config_file: str | None = None,
                   **options: object) -> config_lib.TrainConfig:
  """The config a run starts or resumes with.

  The saved config (a resume), else the env's defaults, the config file's
  fields over them, and the options over those.

  Args:
    out: the run's folder.
    config_file: a JSON file of TrainConfig fields, or None.
    **options: `env`, `search`, `simulations`, `games`, `root_policy` as
      given (None: not given).

  Returns:
    The TrainConfig.

  Raises:
    ValueError: a resumed run asked for other settings, a new run without
      an env, an unknown env id, a bad field (`config_lib`'s errors).
  """
  saved_path = os.path.join(out, checkpoint_lib.CONFIG)
  options = {name: value for name, value in options.items() if value is not None}
  file_values = config_lib.load_json(config_file) if config_file else {}
  # A field given both in the file and as a flag: the flag wins.
  asked = {**file_values, **options}
  if os.path.exists(saved_path) or os.path.isdir(os.path.join(out, "checkpoints")):
    saved = saved_config(out, saved_path)
  else:
    saved = None
  if saved is not None:
    asked = config_lib.replace(saved, **asked)
    if asked != saved:
      changed = config_lib.differences(saved, asked)
      raise ValueError(f"{out} was started with other settings ({', '.join(changed)} "
                       f"differ from {saved_path}); rerun with the same ones, or use a new --out")
    return saved
  env_id = asked.get("env")
  if env_id is None:
    raise ValueError(f"--env is needed to start a new run ({saved_path} does not exist)")
  envs.make(env_id)   # an unknown env id: a ValueError naming the known ones
  return config_lib.replace(config_lib.default_config(env_id), **asked)


def run(out: str, **settings: object) -> int:
  """The training command's work: `train`, Ctrl-C or SIGTERM turned into
  one line (the last finished iteration is saved) and exit code 130.

  Args:
    out: the run's folder.
    **settings: `train`'s settings.

  Returns:
    The exit code: 0, or `cli.INTERRUPTED`.
  """
  try:
    with terminate_as_interrupt():
      train(out, **settings)
  except KeyboardInterrupt:
    print(f"\nstopped at iteration {last_iteration(out)}; run the same command to "
          "resume", file=sys.stderr)
    return cli.INTERRUPTED
  return 0


@contextlib.contextmanager
def terminate_as_interrupt():
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


def last_iteration(directory: str) -> int:
  """The newest iteration in DIR/metrics.csv.

  Args:
    directory: the run's folder.

  Returns:
    int, 0 without one.
  """
  try:
    with open(os.path.join(directory, loop.METRICS), newline="") as f:
      return max((int(row["iteration"]) for row in csv.DictReader(f)), default=0)
  except (OSError, ValueError, KeyError):
    return 0


def train(out: str, *, iterations: int | None = None, config_file: str | None = None,
          wall_budget: float | None = None, cpu_budget: float | None = None,
          tensorboard: bool = False, distributed_job: bool = False,
          coordinator_address: str | None = None, num_processes: int | None = None,
          process_id: int | None = None, **options: object) -> None:
  """Trains, or resumes, the run in `out` until `iterations` or a budget.

  Args:
    out: the run's folder.
    iterations: train until this iteration (None: the env's default).
    config_file: a JSON file of TrainConfig fields (`resolve_config`).
    wall_budget: also stop once the run's wall_s reaches this.
    cpu_budget: also stop once the run's cpu_s reaches this.
    tensorboard: also write TensorBoard events.
    distributed_job: join a multi-process job first (`distributed.initialize`
      with the three settings below).
    coordinator_address: process 0's HOST:PORT.
    num_processes: the job's processes.
    process_id: this process's index.
    **options: `resolve_config`'s options.
  """
  if distributed_job:
    distributed.initialize(coordinator_address, num_processes, process_id)
  config = resolve_config(out, config_file, **options)
  if iterations is None:
    iterations = config_lib.default_iterations(config.env)
  with warnings.catch_warnings():
    # Said once below, one line each, instead of a warning with its source.
    warnings.simplefilter("ignore", loop.CheckpointFallbackWarning)
    run = loop.Run(out, config, tensorboard=tensorboard)
  primary = distributed.is_primary()
  for note in run.notes if primary else ():
    print(f"warning: {note}; resuming from iteration {int(run.state['iteration'])}",
          file=sys.stderr)
  start = int(run.state["iteration"])
  budgets = {"wall_s": wall_budget, "cpu_s": cpu_budget}
  screen = screen_lib.Screen(config, run.state, iterations, budgets, quiet=not primary)
  if start >= iterations and primary:
    print(f"{out}: already at iteration {start} (>= --iterations {iterations})")
  failed = False
  try:
    for _ in range(start, iterations):
      spent = [(name, budget) for name, key, budget in (("wall", "wall_s", wall_budget),
                                                        ("CPU", "cpu_s", cpu_budget))
               if budget is not None and float(run.state[key]) >= budget]
      if spent:
        name, budget = spent[0]
        screen.write(f"{out}: {name} budget {budget:g} s reached at iteration "
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
      plots.plot_run(out)
