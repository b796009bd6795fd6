"""The training loop: self-play, replay, update, checkpoint, evaluation.

  run = Run(directory, config)       # builds a fresh state or resumes the newest checkpoint
  row = run.step()                   # one iteration; returns its metrics row
  run.close()

`Run` holds the run's state (a dict of arrays, checkpointed as one pytree:
`initial_state` lists its fields) and sequences the pure, jitted stages of
`mcgs_jax.learning.selfplay`, `mcgs_jax.learning.replay` and `mcgs_jax.learning.trainer`; the
evaluation is `mcgs_jax.learning.evaluation.evaluate_iteration`, which takes the
network and the arena records and returns the figures and the new records.
Every iteration appends one row to `DIR/metrics.csv` and is checkpointed
(orbax; with `checkpoint_every` N, the first, every N-th and the last before
`close`); a new `Run` on the same directory resumes from the last complete
checkpoint (an unreadable newest step is moved aside and the one before is
used), so a run killed at any moment loses no iteration (it repeats at most
N - 1 of them, to the same results), and the result equals an
uninterrupted run. `mcgs_jax.experiments.train`
is the command line around it.

Outputs in DIR: config.json, metrics.csv, checkpoints/, agent.msgpack (the
latest network, or its average with `ema_decay`, for `checkpoint.load_agent`), snapshots/ (the network at
each evaluation, for the arena), plots/ and, with tensorboard, tb/.
"""

import concurrent.futures
import contextlib
import csv
import functools
import gzip
import json
import os
import shutil
import signal
import threading
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mcgs_jax.learning import checkpoint as checkpoint_lib
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import distributed
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import plots
from mcgs_jax.learning import replay
from mcgs_jax.learning import run_lock
from mcgs_jax.learning import selfplay
from mcgs_jax.learning import trainer
from mcgs_jax.learning import warm_start
from mcgs_jax import expansion
from mcgs_jax.learning.checkpoint import AGENT, CONFIG, build_network, init_variables
from mcgs_jax.networks import losses

METRICS = "metrics.csv"

_play = jax.jit(selfplay.play, static_argnames=("env", "eval_fn", "config", "num_moves"))
_add = jax.jit(replay.add)
_train = trainer.train   # a loop over jitted steps (see its docstring)


@jax.jit
def _average(average, variables, decay):
  """decay * average + (1 - decay) * variables, leaf by leaf."""
  return jax.tree.map(lambda a, v: (decay * a + (1 - decay) * v).astype(a.dtype),
                      average, variables)


def ema_decay_at(ema_decay: float, iteration: int) -> float:
  """The averaging weight of the `iteration`-th update (`TrainConfig.ema_decay`).

  Args:
    ema_decay: the configured decay.
    iteration: the iteration being averaged in (1, 2, ...).

  Returns:
    float: min(ema_decay, (1 + iteration) / (10 + iteration)).
  """
  return min(ema_decay, (1 + iteration) / (10 + iteration))

@functools.lru_cache(maxsize=None)
def _optimizer(learning_rate, weight_decay, kind, decay_updates=0):
  # Cached: equal settings give the same (hashable) optimizer, so the jitted
  # update is compiled once per process.
  if decay_updates > 0:
    learning_rate = optax.cosine_decay_schedule(learning_rate, decay_updates, alpha=0.1)
  return losses.make_optimizer(learning_rate, weight_decay, kind=kind)


# jax reports the seconds of every tracing, lowering and compilation.
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                   "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")
_compile_seconds = [0.0]


def _count_compile_time(event: str, duration: float, **unused_kwargs) -> None:
  if event in _COMPILE_EVENTS:
    _compile_seconds[0] += duration


jax.monitoring.register_event_duration_secs_listener(_count_compile_time)


def compile_seconds() -> float:
  """Seconds this process has spent tracing and compiling jax programs.

  Returns:
    float, from jax's monitoring events since the module was imported.
  """
  return _compile_seconds[0]


class CheckpointFallbackWarning(UserWarning):
  """An unreadable checkpoint step was moved aside, or snapshots written
  after the checkpoint resumed from were removed."""


def stored_csv(path: str) -> str | None:
  """The file that holds the CSV `path`: `path` itself, else its compressed
  copy `path.gz` (as the runs kept in the docs are), else None.

  Args:
    path: the CSV's path.

  Returns:
    `path`, `path + ".gz"` or None.
  """
  for candidate in (path, path + ".gz"):
    if os.path.exists(candidate):
      return candidate
  return None


def read_metrics(path: str) -> list[dict]:
  """The rows of a CSV that `write_metrics` (or any header-first CSV) wrote,
  from `path` or its compressed copy (`stored_csv`).

  Args:
    path: the CSV file.

  Returns:
    Its rows as dicts of strings ([] when neither file exists).
  """
  stored = stored_csv(path)
  if stored is None:
    return []
  opener = open if stored == path else gzip.open
  with opener(stored, "rt", newline="") as f:
    return list(csv.DictReader(f))


def metric_fields(rows: list[dict]) -> list[str]:
  """The CSV's columns: every key of `rows`, in order of first appearance.

  Args:
    rows: the metrics rows (dicts).

  Returns:
    The column names.
  """
  return list(dict.fromkeys(key for row in rows for key in row))


def write_metrics(path: str, rows: list[dict]) -> list[str]:
  """Rewrites the CSV from all rows (atomic), columns in order of appearance.

  Args:
    path: the CSV file.
    rows: the metrics rows (dicts).

  Returns:
    The file's columns (`metric_fields(rows)`).
  """
  fields = metric_fields(rows)
  tmp = path + ".tmp"
  with open(tmp, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
  os.replace(tmp, path)
  return fields


def append_metrics(path: str, row: dict, fields: list[str]) -> None:
  """Appends `row` to a CSV that `write_metrics` wrote with columns `fields`.

  The file ends as `write_metrics` would write it with the row added, as
  long as the row brings no new column (the caller rewrites then). Long
  runs make tens of thousands of rows: rewriting them all every iteration
  would cost more than a short iteration.

  Args:
    path: the CSV file.
    row: the new row; its keys are among `fields`.
    fields: the file's columns.
  """
  with open(path, "a", newline="") as f:
    csv.DictWriter(f, fieldnames=fields).writerow(row)


def _round(value):
  if isinstance(value, float):
    return float(f"{value:.6g}")
  return value


# A run evaluated by CPU seconds (`eval_every_s`) is also evaluated once
# early, at the first iteration past this many CPU seconds, so its first
# figures come within about a minute rather than after the first interval.
FIRST_EVAL_S = 60.0


@contextlib.contextmanager
def interrupts_deferred():
  """Holds Ctrl-C (SIGINT) and SIGTERM back until the block is done, then
  raises KeyboardInterrupt: an iteration's save (checkpoint, metrics row,
  agent) is never cut in half, and what the stop message reports is on disk.

  Outside the main thread (where Python takes no signals) it does nothing.

  Yields:
    None.

  Raises:
    KeyboardInterrupt: after the block, where a signal arrived during it.
  """
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  held = []
  signals = (signal.SIGINT, signal.SIGTERM)
  previous = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in signals}
  try:
    yield
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
  if held:
    raise KeyboardInterrupt


def _undo_start(directory: str, before: set[str] | None) -> None:
  """Removes what a failed start of a new run added to `directory` (the
  folder itself where it did not exist), leaving what was there before."""
  for name in sorted(set(os.listdir(directory)) - (before or set())):
    path = os.path.join(directory, name)
    try:
      if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
      else:
        os.remove(path)
    except OSError:
      pass   # best effort: the error that stopped the start is the one to show
  if before is None:
    try:
      os.rmdir(directory)
    except OSError:
      pass


def _acquire_for_job(directory: str):
  """`run_lock.acquire` by process 0; the others raise what it raised.

  Returns:
    The held lock on process 0, None on the others.
  """
  if not distributed.is_multiprocess():
    return run_lock.acquire(directory)
  lock, failure, refusal = None, None, None
  if distributed.is_primary():
    try:
      lock = run_lock.acquire(directory)
    except (run_lock.RunBusyError, OSError) as error:
      failure, refusal = error, [type(error).__name__, str(error)]
  refusal = distributed.agree(refusal)
  if failure is not None:
    raise failure
  if refusal is not None:
    raise (run_lock.RunBusyError if refusal[0] == "RunBusyError" else OSError)(refusal[1])
  return lock


class Run:
  """A training run in `directory`: builds or restores its state, then steps."""

  def __init__(self, directory: str, config: config_lib.TrainConfig, tensorboard: bool = False):
    self.directory = directory
    self.config = config
    # A new run that fails to start (sizes the device cannot allocate, a
    # refused setting) leaves the folder as it found it, so the corrected
    # command starts afresh instead of meeting "other settings".
    before = set(os.listdir(directory)) if os.path.isdir(directory) else None
    fresh = before is None or CONFIG not in before
    # Held until `close` (or the process's end): a second process on the
    # folder is refused before it reads or writes anything there. In a
    # multi-process job process 0 holds it for all, and every process
    # follows its answer.
    self._lock = _acquire_for_job(directory)
    try:
      self._open(directory, config, tensorboard)
    except BaseException:
      if self._lock is not None:
        self._lock.release()
      if fresh and distributed.is_primary():
        _undo_start(directory, before)
      raise

  def _open(self, directory, config, tensorboard):
    self.env, self.network, self.eval_fn = build_network(config)
    devices = jax.device_count()
    for name in ("games", "batch_size"):
      if getattr(config, name) % devices:
        raise ValueError(f"{name}={getattr(config, name)} must be a multiple of the "
                         f"{devices} devices")
    self.mesh = trainer.make_mesh() if devices > 1 else None
    self.optimizer = _optimizer(config.learning_rate, config.weight_decay, config.optimizer,
                                config.decay_updates)
    self.tensorboard = tensorboard
    self._bind_steps()
    self._check_config()
    self.checkpoints = checkpoint_lib.Checkpointer(os.path.join(directory, "checkpoints"),
                                                   max_to_keep=config.keep_checkpoints)
    # metrics.csv's columns once this process has written it (`_write_row`).
    self._metric_fields = None
    try:
      self.state, self.rows = self._start()
      self.checkpointed = int(self.state["iteration"])
      # Written once the state is built (the device allocated it), so a
      # start that fails leaves no config.json behind, even when killed.
      self._write_config()
    except BaseException:
      # An open checkpoint manager left to the interpreter's exit prints
      # tracebacks of its closed event loop after the real error.
      self.checkpoints.close()
      raise

  # -- the jitted steps, bound to this run (module-level jits: runs in one
  # process share their compilations) ------------------------------------
  def _bind_steps(self):
    config = self.config
    self._play = functools.partial(
        _play, env=self.env, eval_fn=self.eval_fn, config=config.selfplay_config(),
        num_moves=config.moves_per_iteration)
    self._add = _add
    self._train = functools.partial(
        _train, network=self.network, optimizer=self.optimizer,
        loss_config=trainer.LossConfig(kind=config.loss,
                                       opponent_policy_weight=config.opponent_policy_weight),
        env=self.env,
        batch_size=config.batch_size, num_updates=config.updates_per_iteration,
        augment=config.augment, mesh=self.mesh)

  def _check_config(self):
    """Refuses a folder whose config.json holds another run's config."""
    path = os.path.join(self.directory, CONFIG)
    if os.path.exists(path):
      if config_lib.TrainConfig.from_json(config_lib.load_json(path)) != self.config:
        raise checkpoint_lib.CheckpointError(
            f"{path} holds another config than this run's: use a new directory")

  def _write_config(self):
    path = os.path.join(self.directory, CONFIG)
    if not distributed.is_primary() or os.path.exists(path):
      return   # the same config (`_check_config`)
    with open(path + ".tmp", "w") as f:
      json.dump(self.config.to_json(), f, indent=2)
    os.replace(path + ".tmp", path)

  def initial_state(self) -> dict:
    """A fresh run's state (also the template checkpoints restore into).

    Returns:
      dict: iteration, rng, variables, opt_state, buffer, games, wall_s,
      cpu_s, positions, nn_evals.
    """
    config = self.config
    rng = jax.random.PRNGKey(config.seed)
    net_rng, games_rng = jax.random.split(jax.random.fold_in(rng, 0))
    variables = init_variables(self.network, self.env, net_rng)
    games = selfplay.init(games_rng, self.env, config.games, config.opening_plies)
    example = selfplay.example_like(self.env,
                                    opponent_policy=config.opponent_policy_weight > 0)
    state = dict(
        iteration=jnp.int32(0), rng=rng, variables=variables,
        opt_state=self.optimizer.init(variables["params"]),
        buffer=replay.init(example, config.replay_capacity), games=games,
        wall_s=jnp.float32(0.0), cpu_s=jnp.float32(0.0), positions=jnp.int32(0),
        nn_evals=jnp.float32(0.0))
    if config.ema_decay > 0:
      state["ema_variables"] = variables
    return state

  @staticmethod
  def _playing(state: dict):
    """The variables self-play, evaluation and the agent use (the average
    with `ema_decay`, else the trained ones)."""
    return state.get("ema_variables", state["variables"])

  @property
  def playing_variables(self):
    """The network variables self-play plays with and the agent file holds."""
    return self._playing(self.state)

  def _start(self):
    template = self.initial_state()
    if distributed.is_multiprocess():
      # Restored straight into the run's global arrays: no process could
      # read the others' shards back to place them.
      template = self._place(template)
    step, state, meta, self.notes = self.checkpoints.restore_latest(template)
    if step is not None:
      self.notes += self._drop_snapshots_after(step)
    for note in self.notes:
      warnings.warn(note, CheckpointFallbackWarning, stacklevel=3)
    metrics_path = os.path.join(self.directory, METRICS)
    if step is None:
      if os.path.exists(metrics_path):
        raise checkpoint_lib.CheckpointError(
            f"{metrics_path} exists but {self.checkpoints.directory} holds no complete "
            "checkpoint: refusing to start afresh over an earlier run (use a new --out)")
      state, rows, self.arena_records = template, [], []
      if self.config.warm_start_steps > 0:
        state = self._warm_start(state)
    else:
      saved = meta.get("config")
      # Compared as configs: a field added since (with its default) still matches.
      if not isinstance(saved, dict) or config_lib.TrainConfig.from_json(saved) != self.config:
        raise checkpoint_lib.CheckpointError(
            f"checkpoint {self.checkpoints.directory}/{step} was written with another config")
      rows = meta.get("rows", [])
      self.arena_records = [tuple(r) for r in meta.get("arena", [])]
      if int(state["iteration"]) != step or len(rows) != step:
        raise checkpoint_lib.CheckpointError(
            f"checkpoint {self.checkpoints.directory}/{step} is inconsistent: iteration "
            f"{int(state['iteration'])}, {len(rows)} metrics rows")
      # The CSV may hold rows of iterations whose checkpoint never completed
      # or was moved aside: the checkpoint's rows are the truth.
      self._metric_fields = metric_fields(rows)
      if distributed.is_primary():
        write_metrics(metrics_path, rows)
    if not distributed.is_multiprocess():
      state = self._place(state)
    return state, rows

  def _drop_snapshots_after(self, step: int) -> list[str]:
    """Removes the snapshots of iterations after checkpoint `step`: they come
    from iterations the resumed run repeats, whose evaluations (scheduled by
    CPU seconds) may fall elsewhere, and would sit beside the repeated
    run's as evaluations no metrics row holds. One note, or none."""
    stale = [i for i in evaluation.snapshot_iterations(self.directory) if i > step]
    for iteration in stale if distributed.is_primary() else ():
      os.remove(evaluation.snapshot_path(self.directory, iteration))
    if not stale:
      return []
    return [f"removed the snapshots of iterations {stale} in {self.directory}/snapshots: "
            f"written after checkpoint {step}, which the run resumes from"]

  def _warm_start(self, state):
    """Supervised steps on exactly labelled positions before self-play."""
    config = self.config
    start = time.perf_counter()
    rng = jax.random.fold_in(state["rng"], -1 % 2**31)
    labelled = warm_start.labelled_examples(self.env, rng, config.warm_start_positions)
    count = int(labelled.value.shape[0])
    buffer = replay.add(replay.init(selfplay.example_like(self.env), count), labelled,
                        jnp.ones((count,), jnp.bool_))
    variables, opt_state, metrics = self._train(
        state["variables"], state["opt_state"], buffer, jax.random.fold_in(rng, 1),
        num_updates=config.warm_start_steps)
    seconds = time.perf_counter() - start
    self.warm_start_row = dict(warm_start_s=seconds, warm_start_positions=count,
                               warm_start_loss=float(metrics["loss"]))
    state = dict(state, variables=variables, opt_state=opt_state, wall_s=jnp.float32(seconds))
    if "ema_variables" in state:
      state["ema_variables"] = variables
    return state

  def _place(self, state):
    if self.mesh is None:
      return state
    shardings = self._sharding_tree(state)
    if distributed.is_multiprocess():
      return distributed.place(state, shardings)
    return jax.device_put(state, shardings)

  def _sharding_tree(self, state):
    """Each leaf of the state's sharding: the games' batch axis split, the
    rest replicated. The games' counters stay replicated: placed as
    self-play returns them, so its second call finds the first call's
    compiled code."""
    replicated = trainer.replicated(self.mesh)
    split = lambda axis: lambda x: (trainer.batch_sharding(self.mesh, axis) if jnp.ndim(x) > axis
                                    else replicated)
    shardings = jax.tree.map(lambda _: replicated, state)
    games = state["games"]
    shardings["games"] = jax.tree.map(lambda _: replicated, games).replace(
        env_state=jax.tree.map(split(0), games.env_state),
        move_number=jax.tree.map(split(0), games.move_number),
        history=jax.tree.map(split(1), games.history))
    return shardings

  # -- one iteration ------------------------------------------------------------
  def step(self) -> dict:
    """One iteration: self-play, replay, update, evaluation when due, save.

    Returns:
      The iteration's metrics row (also appended to `metrics.csv`).

    Raises:
      FloatingPointError: NaN from the network or non-finite training
        metrics (the last checkpoint stays the last good state).
      mcgs_jax.expansion.EvaluatorError: a network output the search
        refused (`check_evaluator`), unwrapped from jax's runtime error.
    """
    try:
      return self._step()
    except Exception as error:  # pylint: disable=broad-except
      refused = expansion.as_input_error(error)
      if refused is None or refused is error:
        raise
      raise refused from None

  def _step(self) -> dict:
    config, state = self.config, self.state
    iteration = int(state["iteration"]) + 1
    rng = jax.random.fold_in(state["rng"], iteration)
    play_rng, train_rng, eval_rng = jax.random.split(rng, 3)
    start, cpu_start = time.perf_counter(), time.process_time()
    compile_start = compile_seconds()

    def play():
      begin = time.perf_counter()
      games, examples, valid, stats = self._play(self._playing(state), play_rng,
                                                        state["games"])
      buffer = self._add(state["buffer"], examples, valid)
      jax.block_until_ready(buffer)
      return games, buffer, valid, stats, time.perf_counter() - begin

    def train(buffer):
      begin = time.perf_counter()
      variables, opt_state, metrics = state["variables"], state["opt_state"], {}
      if int(buffer.size) >= config.min_replay:
        variables, opt_state, metrics = self._train(variables, opt_state, buffer, train_rng)
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
      return variables, opt_state, metrics, time.perf_counter() - begin

    if config.overlap:
      # Neither half reads what the other writes (jax arrays are immutable),
      # and XLA runs the two programs on two threads at once.
      with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        playing = pool.submit(play)
        trained = train(state["buffer"])
        games, buffer, valid, stats, selfplay_s = playing.result()
    else:
      games, buffer, valid, stats, selfplay_s = play()
    if int(stats.nan_evals):
      # Only without SearchConfig.check_evaluator (which stops the search).
      raise FloatingPointError(
          f"the network returned NaN in {int(stats.nan_evals)} self-play evaluations at "
          f"iteration {iteration}; the checkpoint of iteration {iteration - 1} in "
          f"{self.checkpoints.directory} is intact (lower learning_rate, or check the network)")
    if not config.overlap:
      trained = train(buffer)
    variables, opt_state, metrics, train_s = trained
    if not all(np.isfinite(v) for v in metrics.values()):
      # Stop before the checkpoint: the last one stays the last good state.
      raise FloatingPointError(
          f"non-finite training metrics at iteration {iteration}: {metrics}; the "
          f"checkpoint of iteration {iteration - 1} in {self.checkpoints.directory} is "
          "intact (lower learning_rate, or check the network)")
    elapsed = time.perf_counter() - start
    # The first iteration of a process compiles self-play and the update:
    # wall_s and cpu_s count the work, not the compilation. Each process
    # measures its own; the job keeps process 0's.
    compile_s = compile_seconds() - compile_start
    cpu_s = float(state["cpu_s"]) + max(time.process_time() - cpu_start - compile_s, 0.0)
    wall_s = float(state["wall_s"]) + max(elapsed - compile_s, 0.0)
    cpu_s, wall_s, compile_s, selfplay_s, train_s = distributed.agree(
        [cpu_s, wall_s, compile_s, selfplay_s, train_s])
    positions = int(valid.sum())
    nn_evals = float(stats.nn_evals)
    self.state = dict(
        iteration=self._scalar(jnp.int32(iteration)), rng=state["rng"], variables=variables,
        opt_state=opt_state, buffer=buffer, games=games,
        wall_s=self._scalar(jnp.float32(wall_s)), cpu_s=self._scalar(jnp.float32(cpu_s)),
        positions=state["positions"] + positions, nn_evals=state["nn_evals"] + nn_evals)
    if "ema_variables" in state:
      self.state["ema_variables"] = _average(
          state["ema_variables"], variables,
          jnp.float32(ema_decay_at(config.ema_decay, iteration)))
    row = dict(
        iteration=iteration, wall_s=wall_s, cpu_s=cpu_s, positions=positions,
        positions_total=int(self.state["positions"]), nn_evals=nn_evals,
        nn_evals_total=float(self.state["nn_evals"]),
        games=int(stats.games_finished), loss=metrics.get("loss"),
        policy_loss=metrics.get("policy", metrics.get("large_policy")),
        value_loss=metrics.get("value", metrics.get("large_value")),
        **({"opponent_policy_loss": metrics.get("opponent_policy")}
           if config.opponent_policy_weight > 0 else {}),
        devices=jax.device_count(), replay_size=int(buffer.size),
        transposition_hits=int(stats.transposition_hits),
        capacity_overflows=int(stats.capacity_overflows), nan_evals=int(stats.nan_evals),
        selfplay_s=selfplay_s, train_s=train_s, compile_s=compile_s)
    if iteration == 1 and getattr(self, "warm_start_row", None):
      row.update(self.warm_start_row)
    every_s, before = config.eval_every_s, float(state["cpu_s"])
    if ((config.eval_every and iteration % config.eval_every == 0)
        or (every_s and cpu_s // every_s > before // every_s)
        or (every_s > FIRST_EVAL_S and before < FIRST_EVAL_S <= cpu_s)):
      start = time.perf_counter()
      # Process 0 evaluates (its own devices, its files); the others wait
      # for its figures.
      figures = self.evaluate(eval_rng, iteration) if distributed.is_primary() else None
      figures, records, eval_s = distributed.agree(
          [figures, [list(r) for r in self.arena_records], time.perf_counter() - start])
      self.arena_records = [tuple(r) for r in records]
      row.update(figures)
      row["eval_s"] = eval_s
    row = {k: _round(v) for k, v in row.items()}
    with interrupts_deferred():
      self.rows = self.rows + [row]
      self._save(iteration)
    return row

  def evaluate(self, rng, iteration: int) -> dict:
    """The evaluation figures of the current network (and the arena records).

    Args:
      rng: a PRNG key.
      iteration: the iteration being evaluated.

    Returns:
      The figures (`evaluation.evaluate_iteration`); `arena_records` is
      updated.
    """
    row, self.arena_records = evaluation.evaluate_iteration(
        self.config, self.env, self.eval_fn,
        jax.tree.map(distributed.host_value, self.playing_variables), distributed.host_value(rng),
        iteration, directory=self.directory, rows=self.rows, arena_records=self.arena_records)
    return row

  def _scalar(self, value):
    """A new scalar of the state, placed as the restored ones are."""
    if not distributed.is_multiprocess() or self.mesh is None:
      return value
    return distributed.place(value, trainer.replicated(self.mesh))

  def _save(self, iteration: int):
    if iteration == 1 or iteration % self.config.checkpoint_every == 0:
      self._checkpoint(iteration)
    if not distributed.is_primary():
      return
    self._write_row(os.path.join(self.directory, METRICS))
    checkpoint_lib.write_variables(os.path.join(self.directory, AGENT), self.playing_variables)
    if "snapshot" in self.rows[-1]:
      plots.plot_run(self.directory)
    if self.tensorboard:
      self._tensorboard(self.rows[-1])

  def _write_row(self, path: str):
    """Appends the last row to metrics.csv, or rewrites the file when the row
    brings a new column (the first evaluation's figures) or this process has
    not written it yet."""
    row = self.rows[-1]
    if self._metric_fields is not None and row.keys() <= set(self._metric_fields):
      append_metrics(path, row, self._metric_fields)
    else:
      self._metric_fields = write_metrics(path, self.rows)

  def _tensorboard(self, row):
    try:
      from tensorboardX import SummaryWriter  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise SystemExit("--tensorboard needs tensorboardX: pip install 'mcgs_jax[tensorboard]'")
    if not hasattr(self, "_writer"):
      self._writer = SummaryWriter(os.path.join(self.directory, "tb"))
    for key, value in row.items():
      if (key != "iteration" and isinstance(value, (int, float)) and not isinstance(value, bool)
          and np.isfinite(value)):
        self._writer.add_scalar(key, value, row["iteration"])
    self._writer.flush()

  def _checkpoint(self, iteration: int):
    self.checkpoints.save(iteration, self.state, dict(
        config=self.config.to_json(), rows=self.rows,
        arena=[list(r) for r in self.arena_records]))
    self.checkpointed = iteration

  def close(self, save: bool = True):
    """Checkpoints the last finished iteration if `checkpoint_every` left it
    out, waits for the checkpoint writes and closes the run's files.

    Args:
      save: False after a failure (a full disk, a refused network): the
        files are closed without another write, which would fail again and
        hide the first error; the rerun repeats what was not saved.
    """
    try:
      iteration = int(self.state["iteration"])
      # An iteration stopped between its state and its row is not finished.
      if save and self.checkpointed < iteration and len(self.rows) == iteration:
        with interrupts_deferred():
          self._checkpoint(iteration)
      self.checkpoints.close()
      if hasattr(self, "_writer"):
        self._writer.close()
    finally:
      if self._lock is not None:
        self._lock.release()
