"""Command lines run as a user runs them: a process of their own."""

import os
import subprocess
import sys


def run(command: str, argv, check: bool = True, timeout: float = 1800, **kwargs):
  """`mcgs-jax COMMAND ARGV` (`python -m mcgs_jax.experiments.<command>`) as a process.

  Args:
    command: the subcommand, hyphens or underscores.
    argv: its arguments.
    check: raise if it exits non-zero (its stderr in the message).
    timeout: seconds.
    **kwargs: passed to `subprocess.run` (`input`, `env`, `cwd`...).

  Returns:
    subprocess.CompletedProcess, text stdout and stderr captured.
  """
  module = "mcgs_jax.experiments." + command.replace("-", "_")
  env = kwargs.pop("env", None) or {**os.environ, "JAX_PLATFORMS": "cpu"}
  done = subprocess.run([sys.executable, "-m", module, *map(str, argv)], capture_output=True,
                        text=True, timeout=timeout, env=env, **kwargs)
  if check and done.returncode != 0:
    raise AssertionError(f"{command} exited {done.returncode}:\n{done.stderr[-3000:]}")
  return done
