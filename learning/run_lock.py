"""One run owns its folder: an OS file lock held for the run's life.

`acquire(directory)` takes `DIR/run.lock` (`filelock`: an `flock` on Unix,
so the kernel releases it when the process ends, SIGKILL included: nothing
stale is left behind) and writes who holds it to `DIR/run.lock.owner`. A
second process on the same folder gets `RunBusyError` at once, whose one
line names the folder and the holder.
"""

import datetime
import errno
import os
import socket
import sys

import filelock

LOCK = "run.lock"
OWNER = LOCK + ".owner"


class RunBusyError(RuntimeError):
  """Another process holds the run folder."""


def _holder(directory: str) -> str:
  try:
    with open(os.path.join(directory, OWNER)) as f:
      return f.read().strip() or "another process"
  except OSError:
    return "another process"


def make_folder(path: str, file_in_the_way: str) -> None:
  """os.makedirs, with a dangling symlink or a file in the way named as such.

  Args:
    path: the folder (created with its parents where missing).
    file_in_the_way: the message where a file stands at `path`.

  Raises:
    FileExistsError: `path` is a symlink to nothing.
    NotADirectoryError: `path` is a file.
  """
  if os.path.islink(path) and not os.path.exists(path):
    raise FileExistsError(errno.EEXIST, f"a symlink to {os.readlink(path)}, which does not "
                          "exist", path)
  if os.path.exists(path) and not os.path.isdir(path):
    raise NotADirectoryError(errno.ENOTDIR, file_in_the_way, path)
  os.makedirs(path, exist_ok=True)


def acquire(directory: str) -> filelock.BaseFileLock:
  """Takes the run folder's lock for this process.

  Args:
    directory: the run folder (created if missing).

  Returns:
    The held lock; `release()` it when the run ends (the OS releases it
    when the process ends in any case).

  Raises:
    RunBusyError: another process holds it.
  """
  make_folder(directory, "a file, not a folder (a run needs a folder of its own)")
  lock = filelock.FileLock(os.path.join(directory, LOCK), timeout=0)
  try:
    lock.acquire()
  except filelock.Timeout:
    raise RunBusyError(f"{directory} is in use by {_holder(directory)}; wait for it to end "
                       "or use another folder") from None
  started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
  with open(os.path.join(directory, OWNER), "w") as f:
    f.write(f"pid {os.getpid()} on {socket.gethostname()} since {started} ({command})\n")
  return lock
