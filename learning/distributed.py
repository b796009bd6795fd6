"""One training run over several processes: JAX's multi-controller runtime.

  initialize(coordinator_address, num_processes, process_id)   # before any jax work
  is_primary()          # process 0: the one that writes the run folder's files
  agree(value)          # process 0's JSON-able value, on every process
  place(tree, sharding) # host values (equal on every process) as global arrays

Every process runs the same program on its own devices; `jax.devices()`
spans all of them, so the loop's one-axis mesh (`trainer.make_mesh`) splits
games and batches over every process's devices and the compiler's
collectives (gloo on CPU, NCCL on GPU, ICI on TPU) join them. What is not
an array program is decided once, by process 0, and agreed on through the
coordination service's key-value store: the run folder's lock, the timings in a metrics row
(each process measures its own), the evaluation figures. Only process 0
writes metrics.csv, plots, snapshots, agent.msgpack and config.json; the
checkpoints are written by all, as orbax's multi-process saving does (each
process its shards, process 0 the metadata).

A process that dies stops the others: the coordination service misses its
heartbeats for `heartbeat_timeout_s` and ends every process's collectives
with an error, which the command line reports in one line.
"""

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
from typing import Any

import jax
import numpy as np

# The seconds without a heartbeat after which the coordination service
# declares a process lost (jax's default is 100).
HEARTBEAT_TIMEOUT_S = 30


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               heartbeat_timeout_s: int = HEARTBEAT_TIMEOUT_S) -> None:
  """Joins this process to the job (`jax.distributed.initialize`).

  Each argument left None is read by jax from the cluster's environment
  (SLURM, Cloud TPU, Kubernetes, MPI: see docs/guide/distributed.md). On CPU
  the collectives go through gloo.

  Args:
    coordinator_address: "HOST:PORT" of process 0's coordination service.
    num_processes: the job's processes.
    process_id: this process's index, 0 .. num_processes - 1.
    heartbeat_timeout_s: seconds without a process's heartbeat before the
      job is ended as failed.
  """
  if _cpu_only():
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
  jax.distributed.initialize(coordinator_address=coordinator_address,
                             num_processes=num_processes, process_id=process_id,
                             heartbeat_timeout_seconds=heartbeat_timeout_s)


def _cpu_only() -> bool:
  platforms = os.environ.get("JAX_PLATFORMS", jax.config.jax_platforms or "")
  return platforms.strip().lower() == "cpu"


def is_multiprocess() -> bool:
  """Whether the job has more than one process.

  Returns:
    bool (False before `initialize` and in a one-process job).
  """
  return jax.process_count() > 1


def is_primary() -> bool:
  """Whether this is process 0, which writes the run folder's files.

  Returns:
    bool (True in a one-process job).
  """
  return jax.process_index() == 0


# How long the others wait for process 0's word or at a barrier: process 0
# may be evaluating or writing a checkpoint meanwhile; a dead process ends
# the job sooner, through the heartbeats.
WAIT_S = 6 * 3600
_agreements = [0]


def _client():
  """The coordination service's client of this process (jax's own): its
  key-value store and barriers wait without a device collective, whose
  transport (gloo) gives up after seconds."""
  from jax._src import distributed as jax_distributed  # pylint: disable=g-import-not-at-top
  return jax_distributed.global_state.client


def agree(value: Any) -> Any:
  """Process 0's `value` on every process (itself in a one-process job).

  Every process must call it at the same point of the program; the others
  wait (up to `WAIT_S`) for process 0 to get there.

  Args:
    value: JSON-serialisable (the others' values are ignored).

  Returns:
    Process 0's value, decoded from JSON on every process.
  """
  if not is_multiprocess():
    return value
  _agreements[0] += 1
  key = f"mcgs_jax/agree/{_agreements[0]}"
  if is_primary():
    text = json.dumps(value)
    _client().key_value_set(key, text)
  else:
    text = _client().blocking_key_value_get(key, WAIT_S * 1000)
  return json.loads(text)


def place(tree: Any, shardings: Any) -> Any:
  """Host values as global arrays of the given shardings.

  Each process holds the whole value (equal on every process: the same
  seed made it, or it was read from the same checkpoint) and gives the
  runtime the slices its own devices hold.

  Args:
    tree: a pytree of arrays (numpy or local jax arrays).
    shardings: a pytree of `jax.sharding.Sharding`s, one per leaf of `tree`.

  Returns:
    The pytree of global jax arrays.
  """

  def one(leaf, sharding):
    host = np.asarray(jax.device_get(leaf))
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])

  return jax.tree.map(one, tree, shardings)


def host_value(array: Any) -> np.ndarray:
  """The whole value of a global array on this process's host.

  Args:
    array: a jax array, maybe split over other processes' devices.

  Returns:
    numpy array.
  """
  if getattr(array, "is_fully_addressable", True) or array.is_fully_replicated:
    return np.asarray(array)
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  return np.asarray(multihost_utils.process_allgather(array, tiled=True))


def barrier(name: str) -> None:
  """Waits (up to `WAIT_S`) until every process of the job has reached
  `barrier(name)`.

  Args:
    name: the same string on every process, for this point of the program.
  """
  if is_multiprocess():
    _agreements[0] += 1
    _client().wait_at_barrier(f"mcgs_jax/{name}/{_agreements[0]}", WAIT_S * 1000)


# The first line of the runtime's error log (absl/glog "E1202 02:18:18.868
# ... file.cc:12]", or "F..." for the fatal one) or of its check failure.
_RUNTIME_ERROR = re.compile(r"^([EF]\d{4} \d\d:\d\d:\d\d|\*\*\* )")
_LOST_TASK = re.compile(r"Task (\d+) heartbeat timeout|stopped sending heartbeats\):\s*(\d+)")
WORKER_VARIABLE = "MCGS_JAX_WORKER"


def lost_process_line(log: str, checkpoints: str) -> str | None:
  """One line for a job the coordination service ended (None otherwise).

  Args:
    log: what the process wrote to stderr.
    checkpoints: the run's checkpoint folder (its newest step is named).

  Returns:
    The line, or None when `log` shows no lost process.
  """
  if not any(sign in log for sign in ("heartbeat", "Connection closed by peer",
                                       "Connection reset by peer", "coordination service",
                                       "CoordinationService")):
    return None
  found = _LOST_TASK.search(log)
  who = (f"process {found.group(1) or found.group(2)} of the job" if found
         else "another process of the job (or process 0, the coordinator)")
  steps = sorted(int(n) for n in (os.listdir(checkpoints) if os.path.isdir(checkpoints) else ())
                 if n.isdigit())
  resume = (f"the newest checkpoint is iteration {steps[-1]} in {checkpoints}" if steps
            else f"no checkpoint is in {checkpoints} yet")
  return (f"{who} stopped answering (killed, crashed or cut off), so this one stopped too; "
          f"{resume}: start every process again with the same command to resume")


def _die_with_parent() -> None:
  """In the worker, before it starts: the kernel kills it when the command
  that started it dies (SIGKILL included), as if the two were one process;
  on Linux (prctl PR_SET_PDEATHSIG), elsewhere nothing."""
  try:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)   # 1: PR_SET_PDEATHSIG
  except (OSError, AttributeError):
    pass


def supervise(argv: list[str], module: str, checkpoints: str) -> int:
  """Runs `python -m module argv` as a worker process of a multi-process
  job and condenses the runtime's fatal log into one line.

  When a peer dies, jax's coordination client ends the survivors with a
  fatal log and a native stack trace (an abort Python cannot catch), so
  the command runs its work in a child and reads the child's stderr: its
  lines pass through, and where the child ended because a process was
  lost, the runtime's log and the error from that point on become one line.

  Args:
    argv: the command's arguments.
    module: the command's module (run with `WORKER_VARIABLE` set).
    checkpoints: the run's checkpoint folder, for the line.

  Returns:
    The exit status: the child's, 1 where a lost process ended it.
  """
  env = dict(os.environ, **{WORKER_VARIABLE: "1"})
  child = subprocess.Popen([sys.executable, "-m", module, *argv], env=env,
                           stderr=subprocess.PIPE, text=True, errors="replace",
                           preexec_fn=_die_with_parent)
  forward = lambda signum, frame: child.send_signal(signum)
  previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
  # From the first line of the runtime's error log, of a traceback or of
  # the command's error on, the rest is held (the lines that follow continue
  # it) until the child's end says what it was.
  held = []
  try:
    for line in child.stderr:
      if held or _RUNTIME_ERROR.match(line) or line.startswith(("error: ", "Traceback ")):
        held.append(line)
      else:
        sys.stderr.write(line)
        sys.stderr.flush()
    status = child.wait()
  finally:
    for s, handler in previous.items():
      signal.signal(s, handler)
  line = None if status == 0 else lost_process_line("".join(held), checkpoints)
  if line is not None:
    print(f"error: {line}", file=sys.stderr)
    return 1
  sys.stderr.write("".join(held))
  return status if status >= 0 else 128 - status
