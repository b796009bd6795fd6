"""The `mcgs-jax` command: every command line as a subcommand, its arguments
checked before jax loads, a mistake answered in one line."""

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

import mcgs_jax
from mcgs_jax.learning import names

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run(argv, cwd, timeout=120):
  env = {**os.environ, "JAX_PLATFORMS": "cpu"}
  return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_command_line_is_a_subcommand():
  modules = {p.stem for p in (ROOT / "experiments").glob("*.py") if not p.stem.startswith("_")}
  assert {name.replace("-", "_") for name in names.COMMANDS} == modules


def test_arguments_are_checked_before_jax_loads(tmp_path):
  """--help and a bad flag of every subcommand, in one process: exit 0 and 2,
  the mistake in one line, and neither jax nor numpy imported."""
  script = textwrap.dedent("""
      import contextlib, io, json, sys
      from mcgs_jax.experiments.__main__ import COMMANDS, main
      results = {}
      for name in COMMANDS:
        for flag in ("--help", "--no-such-flag"):
          err = io.StringIO()
          with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
              code = main([name, flag])
            except SystemExit as exit:
              code = exit.code
          results[name + " " + flag] = [code, err.getvalue()]
      loaded = [m for m in ("jax", "jaxlib", "numpy", "flax", "pgx") if m in sys.modules]
      print(json.dumps(dict(results=results, loaded=loaded)))
      """)
  result = _run([sys.executable, "-c", script], cwd=tmp_path)
  assert result.returncode == 0, result.stderr[-2000:]
  import json  # pylint: disable=g-import-not-at-top
  report = json.loads(result.stdout.strip().splitlines()[-1])
  assert report["loaded"] == []
  for name in names.COMMANDS:
    code, err = report["results"][f"{name} --help"]
    assert code == 0 and not err, (name, code, err)
    code, err = report["results"][f"{name} --no-such-flag"]
    assert code == 2, (name, code, err)
    assert err.count("\n") == 1 and err.startswith("error: "), (name, err)
    assert f"mcgs-jax {name} --help" in err, err


def test_a_typo_in_the_env_is_one_line_within_seconds(tmp_path):
  script = pathlib.Path(sys.executable).parent / "mcgs-jax"
  argv = [str(script)] if script.exists() else [sys.executable, "-m", "mcgs_jax.experiments"]
  start = time.monotonic()
  result = _run(argv + ["train", "--env", "conect4", "--out", "run"], cwd=tmp_path)
  elapsed = time.monotonic() - start
  assert result.returncode == 2
  assert result.stdout == ""
  assert result.stderr.count("\n") == 1, result.stderr
  assert "unknown env id 'conect4' (did you mean 'connect4'?)" in result.stderr
  assert elapsed < 5.0, elapsed
  assert not (tmp_path / "run").exists()


def test_unknown_command_help_and_version(tmp_path):
  command = [sys.executable, "-m", "mcgs_jax.experiments"]
  typo = _run(command + ["trian"], cwd=tmp_path)
  assert typo.returncode == 2
  assert "unknown command 'trian'; did you mean 'train'?" in typo.stderr
  listing = _run(command + ["--help"], cwd=tmp_path)
  assert listing.returncode == 0
  assert all(f"  {name}" in listing.stdout for name in names.COMMANDS)
  bare = _run(command, cwd=tmp_path)   # no command: the listing, and a usage error
  assert bare.returncode == 2 and "train" in bare.stdout
  version = _run(command + ["--version"], cwd=tmp_path)
  assert version.returncode == 0
  assert version.stdout.strip() == f"mcgs_jax {mcgs_jax.__version__}"
  assert mcgs_jax.__version__ == importlib.metadata.version("mcgs_jax")


@pytest.mark.parametrize("argv", [["-m", "mcgs_jax.experiments", "demo", "--help"],
                                  ["-m", "mcgs_jax.experiments.demo", "--help"]])
def test_python_dash_m_runs_the_same_commands(argv, tmp_path):
  result = _run([sys.executable] + argv, cwd=tmp_path)
  assert result.returncode == 0, result.stderr
  assert "usage:" in result.stdout and "--simulations" in result.stdout


def test_the_public_names_are_listed_once():
  assert sorted(mcgs_jax.__all__) == sorted(list(mcgs_jax._EXPORTS) + ["__version__", "modes"])
  for name in mcgs_jax.__all__:
    assert getattr(mcgs_jax, name) is not None, name
