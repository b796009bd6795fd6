"""Checkpoints of a training run (orbax-checkpoint's `CheckpointManager`).

One checkpoint per saved iteration holds the whole training state as one
pytree (network variables, optimizer state, replay buffer, self-play games in
progress, rng, iteration) and a JSON item (the metrics rows written so far and
the run's config). Saves are synchronous and orbax finalises a step directory
only once every file is written (it writes under a temporary name and renames),
so a process killed at any moment leaves the previous complete step as the
latest; the half-written one is ignored and cleaned up.

A checkpoint that cannot be read, or whose arrays do not match the run's
(other shapes or dtypes: another config), raises `CheckpointError` naming the
directory; nothing falls back to a fresh start.
"""

import os
from typing import Any

import flax.serialization
import jax
import numpy as np
import orbax.checkpoint as ocp


class CheckpointError(RuntimeError):
  """A checkpoint that exists but cannot be used."""


def _describe(tree: Any) -> dict[str, str]:
  leaves = jax.tree_util.tree_leaves_with_path(tree)
  return {jax.tree_util.keystr(path): f"{np.dtype(x.dtype)}{list(np.shape(x))}"
          for path, x in leaves}


class Checkpointer:
  """Saves and restores training states under `directory`.

  Args:
    directory: the checkpoint folder (created if missing).
    max_to_keep: the newest this many steps are kept.
  """

  def __init__(self, directory: str, max_to_keep: int = 2):
    self.directory = os.path.abspath(directory)
    os.makedirs(self.directory, exist_ok=True)
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=options,
                                          item_names=("state", "meta"))

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
    self._manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)), force=True)
    self._manager.wait_until_finished()

  def restore(self, step: int, template: Any) -> tuple[Any, dict]:
    """Reads step `step` into the structure, shapes and dtypes of `template`.

    Args:
      step: the step number (e.g. `latest_step()`).
      template: a pytree of arrays like the saved state.

    Returns:
      (state, meta): the restored pytree, placed like freshly made arrays
      (on the default device, uncommitted), and the metadata dict.

    Raises:
      CheckpointError: unreadable files, or arrays unlike the template's.
    """
    path = os.path.join(self.directory, str(step))
    try:
      restored = self._manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(jax.tree.map(ocp.utils.to_shape_dtype_struct,
                                                      template)),
          meta=ocp.args.JsonRestore()))
    except Exception as error:  # orbax raises many kinds; all mean the same here.
      raise CheckpointError(
          f"cannot read checkpoint {path}: {type(error).__name__}: {error}. It is corrupt "
          "or was written by another version/config; move it away to start afresh, or "
          "delete this step to resume from an earlier one.") from error
    state, meta = restored["state"], restored["meta"]
    expected, found = _describe(template), _describe(state)
    if expected != found:
      diff = sorted(k for k in set(expected) | set(found) if expected.get(k) != found.get(k))
      raise CheckpointError(
          f"checkpoint {path} does not match this run's arrays (another config?): "
          + "; ".join(f"{k}: run {expected.get(k)}, checkpoint {found.get(k)}"
                      for k in diff[:5]))
    if not isinstance(meta, dict):
      raise CheckpointError(f"checkpoint {path}: metadata is not a JSON object")
    # orbax returns arrays committed to a device, which freshly made ones are
    # not: jitted functions would compile again for them (a run resumed in
    # the same process would recompile its self-play and update).
    return jax.device_put(jax.device_get(state)), meta

  def close(self) -> None:
    """Releases the checkpoint manager."""
    self._manager.close()


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
