"""Checkpoints of a training run (orbax-checkpoint's `CheckpointManager`).

One checkpoint per saved iteration holds the whole training state as one
pytree (network variables, optimizer state, replay buffer, self-play games in
progress, rng, iteration) and a JSON item (the metrics rows written so far and
the run's config). Saves are synchronous and orbax finalises a step directory
only once every file is written (it writes under a temporary name and renames),
so a process killed at any moment leaves the previous complete step as the
latest; the half-written one is ignored and cleaned up.

Every saved step gets a manifest (`manifest.json` in the step: each file's
size and CRC-32), checked before orbax reads the step: a truncated, deleted
or garbled file is found there, so orbax never starts the reads that a
failure would leave pending (they printed tracebacks of a closed event loop
later, at random). A step without a manifest (saved before it existed) is
read as it is. A step whose files cannot be read (`CorruptCheckpointError`)
is not fatal when resuming: `restore_latest` moves
it aside to `<directory>-corrupt/<step>` (never deleting it), says so in one
line, and restores the newest intact step before it. Arrays are matched to
the run's state by their names (`buffer/data/policy`), so a step saved
before an optional field existed (None in the newer state) restores. A
checkpoint whose arrays do not match the run's (other names, shapes or
dtypes: another config) raises `CheckpointError` naming the directory;
nothing falls back to a fresh start. Temporary directories of a save that
was killed are removed quietly when the checkpointer opens.

A save first checks the disk has room for the step (the previous step's
size, or the state's bytes for the first, with a margin): short of it, it
raises `OSError(ENOSPC)` before writing anything, since a write that runs out
of room part-way leaves the storage library's threads printing tracebacks
for seconds. A save that fails all the same (the disk filled meanwhile)
removes its half-written step and raises the first error, the threads'
reports silenced.
"""

import contextlib
import errno
import json
import logging
import os
import shutil
import sys
import zlib
from typing import Any

import flax.serialization
import jax
import numpy as np
import orbax.checkpoint as ocp

from mcgs_jax import envs
from mcgs_jax import networks
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import distributed
from mcgs_jax.learning import run_lock
from mcgs_jax import dual


class CheckpointError(RuntimeError):
  """A checkpoint that exists but cannot be used."""


class CorruptCheckpointError(CheckpointError):
  """A checkpoint step whose files cannot be read.

  Attributes:
    reason: the first line of the storage library's error.
  """

  def __init__(self, message: str, reason: str):
    super().__init__(message)
    self.reason = reason


# Orbax writes a step under a temporary name and renames it when complete.
_TMP_MARK = ".orbax-checkpoint-tmp"
# The list of a step's files with their sizes and CRC-32 (`_write_manifest`).
MANIFEST = "manifest.json"


def _step_files(step_dir: str) -> list[str]:
  """Every file under a step's folder but the manifest, relative, sorted."""
  found = []
  for root, _, files in os.walk(step_dir):
    for name in files:
      relative = os.path.relpath(os.path.join(root, name), step_dir)
      if relative != MANIFEST:
        found.append(relative)
  return sorted(found)


def _crc32(path: str) -> int:
  crc = 0
  with open(path, "rb") as f:
    while chunk := f.read(1 << 20):
      crc = zlib.crc32(chunk, crc)
  return crc


def _write_manifest(step_dir: str) -> None:
  """Records each file's size and CRC-32 (written atomically, last)."""
  files = {name: [os.path.getsize(os.path.join(step_dir, name)),
                  _crc32(os.path.join(step_dir, name))] for name in _step_files(step_dir)}
  path = os.path.join(step_dir, MANIFEST)
  with open(path + ".tmp", "w") as f:
    json.dump({"files": files}, f)
  os.replace(path + ".tmp", path)


def _manifest_problem(step_dir: str) -> str | None:
  """What is wrong with a step's files by its manifest (None: all there and
  intact, or no manifest to go by)."""
  path = os.path.join(step_dir, MANIFEST)
  if not os.path.exists(path):
    return None
  try:
    with open(path) as f:
      files = json.load(f)["files"]
  except (OSError, ValueError, KeyError, TypeError):
    return f"{MANIFEST} is unreadable"
  for name, (size, crc) in sorted(files.items()):
    file = os.path.join(step_dir, name)
    if not os.path.exists(file):
      return f"{name} is missing"
    if os.path.getsize(file) != size:
      return f"{name} has {os.path.getsize(file)} bytes, {size} were written"
    if _crc32(file) != crc:
      return f"{name} does not hold the bytes written (CRC-32)"
  return None


def _first_line(error: Exception, limit: int = 160) -> str:
  text = str(error).strip().splitlines()[0] if str(error).strip() else ""
  text = text.split(" See full ")[0]   # TensorStore appends its whole spec
  text = f"{type(error).__name__}: {text}"
  return text if len(text) <= limit else text[:limit - 3] + "..."


def _leaves_by_name(tree: Any) -> dict[str, Any]:
  """The leaves of `tree` by path name (`_path_name`)."""
  return {_path_name(path): x for path, x in jax.tree_util.tree_leaves_with_path(tree)}


def _describe(tree: Any) -> dict[str, str]:
  """'dtype[shape]' per leaf path, for arrays and orbax's array metadata."""
  return {name: f"{np.dtype(x.dtype)}{list(getattr(x, 'shape', ()))}"
          for name, x in _leaves_by_name(tree).items()}


def _path_name(path) -> str:
  """'buffer/data/observation' for dict keys and dataclass fields alike (the
  saved metadata is a tree of dicts where the state has dataclasses)."""
  names = []
  for entry in path:
    for attribute in ("key", "name", "idx"):
      if hasattr(entry, attribute):
        names.append(str(getattr(entry, attribute)))
        break
    else:
      names.append(str(entry))
  return "/".join(names)


def _check_arrays(path: str, template: Any, found: Any) -> None:
  """Raises CheckpointError when `found` has other arrays than `template`."""
  expected, found = _describe(template), _describe(found)
  if expected != found:
    diff = sorted(k for k in set(expected) | set(found) if expected.get(k) != found.get(k))
    raise CheckpointError(
        f"checkpoint {path} does not match this run's arrays (another config or version?): "
        + "; ".join(f"{k}: run {expected.get(k)}, checkpoint {found.get(k)}" for k in diff[:5]))


class _QuietStorageLogs:
  """Silences orbax's and absl's loggers: the storage library logs a long
  report of a failed read before raising, which the caller says in one line.

  Args:
    hooks: also silences the reports of the storage library's threads (the
      asyncio logger and `sys.excepthook`, which tensorstore's callbacks
      into a closed event loop print through) while inside.
  """

  def __init__(self, hooks: bool = False):
    self._names = ("absl", "orbax") + (("asyncio", "concurrent.futures") if hooks else ())
    self._hooks = hooks

  def __enter__(self):
    self._loggers = [logging.getLogger(name) for name in self._names]
    self._levels = [logger.level for logger in self._loggers]
    for logger in self._loggers:
      logger.setLevel(logging.CRITICAL)
    if self._hooks:
      self._excepthook = sys.excepthook
      sys.excepthook = lambda *unused_info: None

  def __exit__(self, *exc_info):
    for logger, level in zip(self._loggers, self._levels):
      logger.setLevel(level)
    if self._hooks:
      sys.excepthook = self._excepthook


# A save needs the previous step's size times this, plus `_ROOM_SLACK` bytes.
_ROOM_FACTOR = 1.25
_ROOM_SLACK = 64 * 1024


def _size(count: int) -> str:
  return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count / 1024:.0f} KiB"


def _remove_unfinished(directory: str) -> None:
  """Removes the temporary folders of saves that did not finish."""
  for name in os.listdir(directory):
    if _TMP_MARK in name:
      shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


class Checkpointer:
  """Saves and restores training states under `directory`.

  Args:
    directory: the checkpoint folder (created if missing).
    max_to_keep: the newest this many steps are kept.
  """

  def __init__(self, directory: str, max_to_keep: int = 2):
    self.directory = os.path.abspath(directory)
    run_lock.make_folder(self.directory, "a file where the run's folder of checkpoints belongs")
    # A save killed half-way: orbax ignores it, but warns about it.
    if distributed.is_primary():
      _remove_unfinished(self.directory)
    distributed.barrier("checkpoints-open")
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=False)
    # orbax reads every step's own metadata file when it opens and logs one
    # that is missing; a step whose manifest shows the damage is reported in
    # one line by whoever reads it (`restore_latest`), so orbax's log of the
    # same damage is held back, and only then.
    damaged = any(_manifest_problem(os.path.join(self.directory, name)) is not None
                  for name in os.listdir(self.directory) if name.isdigit())
    # Handlers named up front, so a step's metadata (shapes, dtypes) can be
    # read without its arrays.
    with _QuietStorageLogs() if damaged else contextlib.nullcontext():
      self._manager = ocp.CheckpointManager(
          self.directory, options=options,
          item_handlers={"state": ocp.StandardCheckpointHandler(),
                         "meta": ocp.JsonCheckpointHandler()})

  def latest_step(self) -> int | None:
    """The newest complete step.

    Returns:
      The step number, or None when there is none.
    """
    return self._manager.latest_step()

  def save(self, step: int, state: Any, meta: dict) -> None:
    """Writes `state` and `meta` as `step` (synchronously).

    Args:
      step: the step number.
      state: a pytree of arrays.
      meta: a JSON-serialisable dict.
    """
    self._check_room(state, meta)
    try:
      with _QuietStorageLogs(hooks=True):
        self._manager.save(step, args=ocp.args.Composite(
            state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)), force=True)
        self._manager.wait_until_finished()
    except Exception:
      if distributed.is_primary():
        _remove_unfinished(self.directory)
      raise
    # Process 0 lists the files once every process's shards are written
    # (orbax's save ends with every process done).
    if distributed.is_primary():
      _write_manifest(os.path.join(self.directory, str(step)))
    distributed.barrier(f"checkpoint-{step}-manifest")

  def _check_room(self, state: Any, meta: dict) -> None:
    """Raises OSError(ENOSPC) if the disk lacks room for a step."""
    latest = self.latest_step()
    step_dir = os.path.join(self.directory, str(latest))
    if latest is not None and os.path.isdir(step_dir):
      size = sum(os.path.getsize(os.path.join(step_dir, name)) for name in _step_files(step_dir))
    else:
      # By shape and dtype: a global array's values may lie on other processes.
      size = sum(int(np.prod(np.shape(leaf))) * np.dtype(leaf.dtype).itemsize
                 for leaf in jax.tree_util.tree_leaves(state))
      size += len(json.dumps(meta, default=str))
    needed = int(size * _ROOM_FACTOR) + _ROOM_SLACK
    free = shutil.disk_usage(self.directory).free
    if free < needed:
      raise OSError(errno.ENOSPC, f"No space left on device: a checkpoint needs about "
                    f"{_size(needed)}, {_size(free)} free", self.directory)

  def restore(self, step: int, template: Any) -> tuple[Any, dict]:
    """Reads step `step` into the structure, shapes and dtypes of `template`.

    Args:
      step: the step number (e.g. `latest_step()`).
      template: a pytree of arrays like the saved state.

    Returns:
      (state, meta): the restored pytree, placed like freshly made arrays
      (on the default device, uncommitted), or in a multi-process job like
      the template's (global) arrays, and the metadata dict.

    Raises:
      CorruptCheckpointError: unreadable files.
      CheckpointError: arrays unlike the template's.
    """
    path = os.path.join(self.directory, str(step))
    problem = _manifest_problem(path)
    if problem is not None:
      raise CorruptCheckpointError(f"cannot read checkpoint {path} ({problem}): its files are "
                                   "truncated, missing or garbled", problem)
    with _QuietStorageLogs():
      try:
        metadata = self._manager.item_metadata(step)["state"]
        if metadata is None:
          raise ValueError("no metadata of the state")
      except Exception as error:  # orbax raises many kinds; all mean the same here.
        raise self._corrupt(path, error) from error
    _check_arrays(path, template, metadata)
    # Read the tree as saved, then place its arrays into the template by
    # name: a field that is None in this version's template (an optional
    # target it does not use) and absent from an older checkpoint matches.
    saved = getattr(metadata, "tree", metadata)
    # One process reads whole arrays onto its device; a multi-process job
    # reads each leaf into the template's global sharding.
    device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    shardings = ({_path_name(p): leaf.sharding
                  for p, leaf in jax.tree_util.tree_flatten_with_path(template)[0]}
                 if distributed.is_multiprocess() else {})
    target = jax.tree_util.tree_map_with_path(lambda p, m: jax.ShapeDtypeStruct(
        m.shape, m.dtype, sharding=shardings.get(_path_name(p), device)), saved)
    with _QuietStorageLogs():
      try:
        restored = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()))
      except Exception as error:  # orbax raises many kinds; all mean the same here.
        raise self._corrupt(path, error) from error
    arrays = _leaves_by_name(restored["state"])
    template_paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    state = jax.tree_util.tree_unflatten(
        treedef, [arrays[_path_name(p)] for p, _ in template_paths])
    meta = restored["meta"]
    _check_arrays(path, template, state)
    if not isinstance(meta, dict):
      raise CheckpointError(f"checkpoint {path}: metadata is not a JSON object")
    if distributed.is_multiprocess():
      return state, meta
    # orbax returns arrays committed to a device, which freshly made ones are
    # not: jitted functions would compile again for them (a run resumed in
    # the same process would recompile its self-play and update).
    return jax.device_put(jax.device_get(state)), meta

  @staticmethod
  def _corrupt(path: str, error: Exception) -> CorruptCheckpointError:
    reason = _first_line(error)
    return CorruptCheckpointError(f"cannot read checkpoint {path} ({reason}): its files are "
                                  "truncated, missing or garbled", reason)

  def restore_latest(self, template: Any) -> tuple[int | None, Any, dict, list[str]]:
    """The newest readable step; unreadable newer steps are moved aside.

    Args:
      template: a pytree of arrays like the saved state.

    Returns:
      (step, state, meta, notes): the step restored (None, None, {} when no
      step is readable or none exists) and one line per step moved aside.

    Raises:
      CheckpointError: a readable step whose arrays are unlike the
        template's (another config: nothing is moved).
    """
    notes = []
    for step in sorted(self._manager.all_steps(), reverse=True):
      try:
        state, meta = self.restore(step, template)
        return step, state, meta, notes
      except CorruptCheckpointError as error:
        moved = self._move_aside(step)
        notes.append(f"checkpoint {os.path.join(self.directory, str(step))} is unreadable "
                     f"({error.reason}); moved it to {moved}")
    return None, None, {}, notes

  def _move_aside(self, step: int) -> str:
    """Moves step `step` to `<directory>-corrupt/<step>[.n]`; returns where."""
    aside = self.directory + "-corrupt"
    target = None
    if distributed.is_primary():
      os.makedirs(aside, exist_ok=True)
      target, count = os.path.join(aside, str(step)), 0
      while os.path.exists(target):
        count += 1
        target = os.path.join(aside, f"{step}.{count}")
      os.replace(os.path.join(self.directory, str(step)), target)
    target = distributed.agree(target)
    self._manager.reload()
    return target

  def newest_meta(self) -> tuple[int, dict] | None:
    """The metadata (metrics rows, config) of the newest step whose files
    are intact, without its arrays.

    Returns:
      (step, meta), or None when no step can be read.
    """
    for step in sorted(self._manager.all_steps(), reverse=True):
      if _manifest_problem(os.path.join(self.directory, str(step))) is not None:
        continue
      with _QuietStorageLogs():
        try:
          meta = self._manager.restore(step, args=ocp.args.Composite(
              meta=ocp.args.JsonRestore()))["meta"]
        except Exception:  # pylint: disable=broad-except
          continue
      if isinstance(meta, dict):
        return step, meta
    return None

  def close(self) -> None:
    """Releases the checkpoint manager."""
    self._manager.close()


def recover_config(directory: str) -> tuple[dict, int] | None:
  """A run's config as its newest readable checkpoint stored it, for a run
  whose config.json was lost or damaged.

  Args:
    directory: the run folder.

  Returns:
    (config fields, the step read), or None without a readable checkpoint
    holding one.
  """
  if not os.path.isdir(os.path.join(directory, "checkpoints")):
    return None
  checkpointer = Checkpointer(os.path.join(directory, "checkpoints"))
  try:
    found = checkpointer.newest_meta()
  finally:
    checkpointer.close()
  if found is None or not isinstance(found[1].get("config"), dict):
    return None
  return found[1]["config"], found[0]


def write_variables(path: str, variables: Any) -> None:
  """Writes network variables to `path` (msgpack) atomically.

  A reader sees the old file or the new one, never half of one.

  Args:
    path: the file to write (its folder is created).
    variables: the network variables (a pytree of arrays).
  """
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  with open(path + ".tmp", "wb") as f:
    f.write(flax.serialization.to_bytes(jax.device_get(variables)))
  os.replace(path + ".tmp", path)


def read_variables(path: str, template: Any) -> Any:
  """Network variables from `path`, in the structure of `template`.

  Args:
    path: a msgpack file from `write_variables`.
    template: variables of the network they are loaded into (e.g. `init`).

  Returns:
    The variables.

  Raises:
    CheckpointError: unreadable bytes, or arrays unlike the template's
      (another network).
  """
  with open(path, "rb") as f:
    try:
      variables = flax.serialization.from_bytes(template, f.read())
    except Exception as error:  # msgpack raises several kinds.
      raise CheckpointError(f"cannot read {path}: {type(error).__name__}: {error}") from error
  if _describe(variables) != _describe(template):
    raise CheckpointError(f"{path} does not match the network it is loaded into")
  return variables


# -- trained agents: a run directory's (or a shipped agent's) network -------

AGENT = "agent.msgpack"
CONFIG = "config.json"


def build_network(config: config_lib.TrainConfig):
  """The env, network and evaluator of a training config.

  Args:
    config: the TrainConfig.

  Returns:
    (env, network, eval_fn): a `dual.DualEval` of the two heads for the
    'dual' / 'mpv' searches, a `networks.NetworkEval` otherwise.
  """
  env = envs.make(config.env)
  network = networks.make(config.network, env, **config.network_options())
  if config.two_searches:
    eval_fn = dual.DualEval(small=networks.NetworkEval(network, env, head="small"),
                            large=networks.NetworkEval(network, env, head="large"))
  else:
    eval_fn = networks.NetworkEval(network, env)
  return env, network, eval_fn


def init_variables(network, env, rng):
  """Fresh variables of `network` for `env`'s observations.

  Args:
    network: the flax module.
    env: the env.
    rng: a PRNG key.

  Returns:
    The variables dict ('params', and 'batch_stats' where the network has
    BatchNorm).
  """
  observation = env.observe(env.init(jax.random.PRNGKey(0), batch_size=1))
  return networks.init(network, rng, observation)


def load_config(directory: str) -> config_lib.TrainConfig:
  """The TrainConfig saved with a run (or shipped agent).

  Args:
    directory: holds `config.json`.

  Returns:
    The run's TrainConfig.
  """
  return config_lib.TrainConfig.from_json(config_lib.load_json(os.path.join(directory, CONFIG)))


def load_agent(directory: str):
  """The trained agent of the run (or shipped agent) in `directory`.

  Args:
    directory: holds `config.json` and `agent.msgpack`.

  Returns:
    (env, eval_fn, params), ready for
    `mcgs_jax.search(params, rng, state, env, eval_fn, config)`.

  Raises:
    FileNotFoundError: either file is missing.
    CheckpointError: the weights do not fit the config's network.
  """
  config_path = os.path.join(directory, CONFIG)
  agent_path = os.path.join(directory, AGENT)
  for path in (config_path, agent_path):
    if not os.path.exists(path):
      raise FileNotFoundError(f"{path} not found: {directory} holds no trained agent")
  config = load_config(directory)
  env, network, eval_fn = build_network(config)
  params = read_variables(
      agent_path, init_variables(network, env, jax.random.PRNGKey(0)))
  return env, eval_fn, params
