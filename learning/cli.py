"""Command lines: one clear line for every mistake.

Every command of `experiments` builds its parser with `ArgumentParser` and
runs through `main`:

  loop = cli.lazy("mcgs_jax.learning.loop")      # loaded on first use
  parser = cli.ArgumentParser(description=...)   # adds --debug
  ...
  if __name__ == "__main__":
    sys.exit(cli.main(run))                      # run(argv) -> exit code

A command imports the library (and with it jax, a few seconds) through
`lazy`, so that its arguments are checked first: a typo is answered at once.
This module itself imports nothing heavy.

A user's mistake (a bad flag, an unknown env or config field, a value out
of range, a missing file, a run folder another process holds) prints
`error: <what, in one line>` and exits with 2; a failed run (an unusable
checkpoint, diverging training, a network output the search refused) with 1.
`--debug` shows the full traceback instead. Anything else is a bug and keeps
its traceback.
"""

import argparse
import errno
import importlib
import logging
import os
import sys
import types
from typing import Callable, Sequence

from mcgs_jax import envs
from mcgs_jax.learning import run_lock

USAGE = 2
FAILURE = 1
INTERRUPTED = 130
# The shell's code for a command whose reader closed the pipe (`| head`).
PIPE_CLOSED = 141
# How the running command is called in its messages ("mcgs-jax train"); set
# by the `mcgs-jax` dispatcher, else `python -m <module>`.
PROG = ""
# The user's mistakes: what they typed or pointed at (a folder that cannot be
# written, a file where a folder belongs, ...), and numbers past what a field
# holds.
USAGE_ERRORS = (ValueError, TypeError, OSError, OverflowError, run_lock.RunBusyError)
# What to do about an OSError, by errno.
_OS_HINTS = {errno.EROFS: "choose a folder on a writable file system",
             errno.EACCES: "choose a folder you may write to",
             errno.EEXIST: "remove it, or choose another name",
             errno.ENOTDIR: "a folder is needed there",
             errno.ENOENT: "check the path"}
# A run that started and could not go on (with the checkpoints' errors,
# `_run_failures`).
RUN_FAILURES = (FloatingPointError,)


class _LazyModule(types.ModuleType):
  """Stands for a module until an attribute is read, then imports it."""

  def __getattr__(self, attr):
    return getattr(importlib.import_module(self.__name__), attr)


def lazy(name: str) -> types.ModuleType:
  """The module `name`, imported when one of its attributes is first read.

  A command binds the library modules it uses at its top, as with `import`,
  but their code (and jax's) runs only once the command uses them: after its
  arguments were checked.

  Args:
    name: the module's full name, e.g. "jax.numpy" or "mcgs_jax.learning.loop".

  Returns:
    The module where it is imported already, else its stand-in.
  """
  return sys.modules.get(name) or _LazyModule(name)


# Optional dependencies: the module a feature imports -> the extra that installs it.
OPTIONAL = {"pyspiel": "bench", "tensorboardX": "tensorboard"}


def _run_failures() -> tuple[type[BaseException], ...]:
  checkpoint = sys.modules.get("mcgs_jax.learning.checkpoint")   # not loaded: not raised
  return RUN_FAILURES + ((checkpoint.CheckpointError,) if checkpoint else ())


class ArgumentParser(argparse.ArgumentParser):
  """argparse's parser with `--debug`, whose errors are one line (exit 2)."""

  def __init__(self, *args, **kwargs):
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if "prog" not in kwargs and PROG:
      kwargs["prog"] = PROG
    elif "prog" not in kwargs and spec is not None and spec.name.startswith("mcgs_jax.experiments."):
      kwargs["prog"] = f"python -m {spec.name}"   # not "train.py"
    super().__init__(*args, **kwargs)
    self.add_argument("--debug", action="store_true",
                      help="show the full traceback of an error instead of one line")

  def error(self, message):
    """Prints `message` in one line and exits with 2.

    Args:
      message: argparse's description of the mistake.
    """
    sys.stderr.write(f"error: {message} (`{self.prog} --help` lists the options)\n")
    sys.exit(USAGE)


def env_id(text: str) -> str:
  """An argparse `type` for env ids: checked at once, without building the env.

  Args:
    text: the id given, e.g. "connect4" or "nim:3,20".

  Returns:
    The id, unchanged.

  Raises:
    argparse.ArgumentTypeError: an unknown id or bad numbers in it.
  """
  try:
    envs.check(text)
  except ValueError as error:
    raise argparse.ArgumentTypeError(str(error)) from None
  return text


def explain(error: BaseException) -> tuple[str, int] | None:
  """The one line and exit code of an error the user can act on.

  Args:
    error: the exception.

  Returns:
    (message, exit code), or None for a bug (shown with its traceback).
  """
  text = str(error)
  # A network output refused inside a jitted search arrives wrapped in
  # jax's runtime error, the check's message at its end.
  expansion = sys.modules.get("mcgs_jax.expansion")   # not loaded: no search ran
  refused = expansion.as_input_error(error) if expansion else None
  if refused is not None:
    what = "network's output" if isinstance(refused, expansion.EvaluatorError) else "root state"
    return f"the {what} was refused: " + _first_line(str(refused)), FAILURE
  if _no_space(error):
    where = ""
    if isinstance(error, OSError) and error.filename:
      detail = str(error.strerror or "").partition(": ")[2]
      where = f" ({error.filename}{': ' + detail if detail else ''})"
    return (f"no space left on the device{where}: free some and rerun the same command to "
            "resume (the last complete checkpoint is kept)"), FAILURE
  if isinstance(error, ModuleNotFoundError) and error.name in OPTIONAL:
    return (f"this needs the optional package {error.name}: pip install "
            f"'mcgs_jax[{OPTIONAL[error.name]}]'"), USAGE
  if isinstance(error, _run_failures()):
    return _first_line(text), FAILURE
  allocation = _allocation_refused(error)
  if allocation is not None:
    return (f"the device could not allocate what these settings need ({allocation}): lower "
            "the sizes (games, replay_capacity, batch_size, simulations, node_factor)"), USAGE
  if isinstance(error, USAGE_ERRORS):
    if isinstance(error, OSError) and error.filename and error.strerror:
      text = f"{error.filename}: {error.strerror}"   # not "[Errno 2] ..."
      if error.errno in _OS_HINTS and error.strerror == os.strerror(error.errno):
        text += f" ({_OS_HINTS[error.errno]})"   # the system's words: say what to do
    return _first_line(text), USAGE
  return None


def _allocation_refused(error: BaseException) -> str | None:
  """XLA's words for an allocation the device refused, or None."""
  text = str(error)
  if "RESOURCE_EXHAUSTED" not in text:
    return None
  line = next((l for l in text.splitlines() if "RESOURCE_EXHAUSTED" in l), text)
  return line.split("RESOURCE_EXHAUSTED:", 1)[-1].strip().rstrip(".") or "out of memory"


def _no_space(error: BaseException) -> bool:
  """A write that found the disk full (or over the file-size limit),
  however the storage library wrapped it."""
  seen = set()
  while error is not None and id(error) not in seen:
    seen.add(id(error))
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
      return True
    if "No space left on device" in str(error) or "File too large" in str(error):
      return True
    error = error.__cause__ or error.__context__
  return False


def _first_line(text: str) -> str:
  lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
  return lines[0] if lines else "(no message)"


class _ExplainedCallbackErrors(logging.Filter):
  """Drops jax's log of a host callback that raised an error `main` will show
  in one line (the evaluator check inside a jitted search): jax logs the
  traceback, then raises the same error at the caller."""

  def filter(self, record: logging.LogRecord) -> bool:
    error = record.exc_info[1] if record.exc_info else None
    return error is None or explain(error) is None


def _settle_failed_callbacks() -> None:
  """Takes the error of a host callback that failed inside jit off jax's
  books, so that jax's exit handler does not raise it again (with its
  traceback) after the one line. Nothing when jax was not loaded."""
  dispatch = sys.modules.get("jax._src.dispatch")
  tokens = getattr(dispatch, "runtime_tokens", None)
  if tokens is None:
    return
  try:
    tokens.block_until_ready()
  except Exception:  # pylint: disable=broad-except
    tokens.clear()   # the same error, already explained


# The loggers jax reports a failed host callback on (debug and pure callbacks).
_CALLBACK_LOGGERS = ("jax._src.debugging", "jax._src.callback")


def main(run: Callable[[Sequence[str]], int | None],
         argv: Sequence[str] | None = None) -> int:
  """Runs a command, turning the user's mistakes into one line.

  Args:
    run: the command, `run(argv)` -> exit code (None: 0).
    argv: its arguments (None: `sys.argv[1:]`).

  Returns:
    The exit code: `run`'s, 2 for a mistake (`USAGE_ERRORS`), 1 for a failed
    run (`RUN_FAILURES`, a refused network output), 130 for Ctrl-C, 141
    when stdout's reader closed it.
  """
  argv = sys.argv[1:] if argv is None else list(argv)
  quiet = _ExplainedCallbackErrors()
  loggers = [] if "--debug" in argv else [logging.getLogger(n) for n in _CALLBACK_LOGGERS]
  for logger in loggers:
    logger.addFilter(quiet)
  try:
    return int(run(argv) or 0)
  except KeyboardInterrupt:
    sys.stderr.write("interrupted\n")
    return INTERRUPTED
  except BrokenPipeError:
    # What was read is all the reader wanted; stdout is pointed at /dev/null
    # so the interpreter's final flush does not raise again.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return PIPE_CLOSED
  except Exception as error:  # pylint: disable=broad-except
    explained = explain(error)
    if "--debug" in argv or explained is None:
      raise
    message, code = explained
    _settle_failed_callbacks()
    sys.stderr.write(f"error: {message} (--debug shows the traceback)\n")
    return code
  finally:
    for logger in loggers:
      logger.removeFilter(quiet)
