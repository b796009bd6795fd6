"""The `mcgs-jax` command: the project's command lines as subcommands.

  mcgs-jax demo                                   # one search, graph next to tree
  mcgs-jax train --env connect4 --out runs/c4     # train, or resume, a run
  mcgs-jax play                                   # a game against the shipped agent
  mcgs-jax <command> --help                       # a command's options

Each subcommand is the module `mcgs_jax.experiments.<command>` (hyphens for
underscores), which `python -m mcgs_jax.experiments.<command>` runs the same
way. Arguments are checked before the library and jax load, so a mistake is
answered at once, in one line, with exit code 2.
"""

import difflib
import importlib
import sys
from typing import Sequence

import mcgs_jax
from mcgs_jax.learning import cli
from mcgs_jax.learning import names

COMMANDS = names.COMMANDS


def usage() -> str:
  """The command's help: its subcommands, one line each.

  Returns:
    The text.
  """
  width = max(map(len, COMMANDS))
  lines = [f"usage: mcgs-jax <command> [options]   (mcgs_jax {mcgs_jax.__version__})", "",
           "Batched Monte-Carlo Graph Search in JAX. Commands:"]
  lines += [f"  {name:<{width}}  {summary}" for name, summary in COMMANDS.items()]
  lines += ["", "`mcgs-jax <command> --help` lists a command's options."]
  return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
  """Runs `mcgs-jax <command> [options]`.

  Args:
    argv: the arguments after `mcgs-jax` (None: `sys.argv[1:]`).

  Returns:
    The exit code: the command's, 0 for --help and --version, 2 for an
    unknown command.
  """
  argv = sys.argv[1:] if argv is None else list(argv)
  if not argv or argv[0] in ("-h", "--help", "help"):
    print(usage())
    return 0 if argv else cli.USAGE
  if argv[0] == "--version":
    print(f"mcgs_jax {mcgs_jax.__version__}")
    return 0
  name, rest = argv[0], argv[1:]
  if name not in COMMANDS:
    close = difflib.get_close_matches(name, COMMANDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    sys.stderr.write(f"error: unknown command {name!r}{hint} (`mcgs-jax --help` lists them)\n")
    return cli.USAGE
  cli.PROG = f"mcgs-jax {name}"
  module = importlib.import_module(f"mcgs_jax.experiments.{name.replace('-', '_')}")
  return cli.main(module.main, rest)


if __name__ == "__main__":
  sys.exit(main())
