"""Command lines: every user mistake is one line and exit code 2, the
traceback only with --debug; one run owns its folder (a second process is
refused in one line naming the holder, and a killed holder leaves nothing
stale); `mcgs-jax play` ends cleanly at the end of its input. The command
lines run as processes; their work (`learning.training`, `learning.terminal`)
is called in this one where a test reaches inside it."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mcgs_jax.learning import cli
from mcgs_jax.learning import run_lock
from mcgs_jax.learning import terminal
from mcgs_jax.learning import training
from tests import commands

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = dict(eval_every=0, games=8, simulations=4, moves_per_iteration=5, batch_size=16,
            min_replay=16, updates_per_iteration=2, replay_capacity=256,
            network_kwargs={"hidden_sizes": [16]})


def _one_error_line(capsys) -> str:
  return _the_error_line(capsys.readouterr().err)


def _the_error_line(err: str) -> str:
  lines = [line for line in err.splitlines() if line.strip()]
  assert len(lines) == 1, err
  assert lines[0].startswith("error: ") and "Traceback" not in err, err
  return lines[0]


def _config_file(tmp_path, name="config", **fields):
  path = tmp_path / f"{name}.json"
  path.write_text(json.dumps(fields))
  return str(path)


@pytest.mark.parametrize("case", ["unknown env", "typo in a field", "a field's wrong type",
                                  "a value out of range", "a bad flag", "a missing file",
                                  "an out-of-range flag", "invalid JSON"])
def test_a_train_mistake_is_one_line_and_exit_2(case, tmp_path, capsys):
  out = str(tmp_path / "run")
  argv = {
      "unknown env": ["--env", "tictactoe_x", "--out", out],
      "typo in a field": ["--env", "tictactoe", "--out", out,
                          "--config", _config_file(tmp_path, "typo", simulatons=4)],
      "a field's wrong type": ["--env", "tictactoe", "--out", out,
                               "--config", _config_file(tmp_path, "type", simulations="many")],
      "a value out of range": ["--env", "tictactoe", "--out", out,
                               "--config", _config_file(tmp_path, "range", learning_rate=-1.0)],
      "a bad flag": ["--env", "tictactoe", "--out", out, "--simulatons", "4"],
      "a missing file": ["--env", "tictactoe", "--out", out,
                         "--config", str(tmp_path / "missing.json")],
      "an out-of-range flag": ["--env", "tictactoe", "--out", out, "--games", "0"],
      "invalid JSON": ["--env", "tictactoe", "--out", out, "--config",
                       str(tmp_path / "bad.json")],
  }[case]
  (tmp_path / "bad.json").write_text("{simulations: 4")
  if case in ("unknown env", "a bad flag", "an out-of-range flag"):
    # The parser's answers, before the library loads: the command itself.
    done = commands.run("train", argv, check=False, timeout=300)
    code, err = done.returncode, done.stderr
  else:
    # The config's answers come from the training's work: called here, behind
    # the same error boundary (a process each would load jax eight times).
    config = argv[argv.index("--config") + 1]
    code = cli.main(lambda unused: training.run(out, env="tictactoe", config_file=config), [])
    err = capsys.readouterr().err
  assert code == cli.USAGE, err
  line = _the_error_line(err)
  expected = {"unknown env": "unknown env id 'tictactoe_x'",
              "typo in a field": "did you mean 'simulations'",
              "a field's wrong type": "TrainConfig.simulations must be an int in [1, 2147483647], got 'many'",
              "a value out of range": "TrainConfig.learning_rate must be a number > 0",
              "a bad flag": "unrecognized arguments: --simulatons",
              "a missing file": "missing.json: No such file or directory",
              "an out-of-range flag": "--games must be >= 1, got 0",
              "invalid JSON": "is not valid JSON"}[case]
  assert expected in line, line
  # Nothing was created for a refused run.
  assert not os.path.exists(out)


@pytest.mark.parametrize("command,argv,expected", [
    ("play", ["--agent", "/nonexistent/run"], "holds no trained agent"),
    ("arena", ["--run", "/nonexistent/run"], "holds no trained agent"),
    # --out away from the default docs/learning: a failing run must not touch the shipped files.
    ("race", ["--ours", "/nonexistent/a", "--peer", "/nonexistent/b",
              "--out", "/nonexistent/out"], "No such file or directory"),
])
def test_a_missing_run_is_one_line_in_every_command(command, argv, expected):
  done = commands.run(command, argv, check=False, timeout=300)
  assert done.returncode == cli.USAGE, done.stderr
  assert expected in _the_error_line(done.stderr)


@pytest.mark.slow
def test_a_full_disk_stops_the_run_in_one_line_and_the_rerun_resumes(tmp_path, capsys,
                                                                    monkeypatch):
  out = tmp_path / "run"
  config = _config_file(tmp_path, **TINY)

  def train(iterations):   # the training command's work, in this process
    return cli.main(lambda argv: training.run(str(out), env="tictactoe", config_file=config,
                                              iterations=iterations), [])

  assert train(1) == 0
  capsys.readouterr()
  real = shutil.disk_usage
  monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=10_000))
  assert train(3) == cli.FAILURE
  line = _one_error_line(capsys)
  assert "no space left on the device" in line and "a checkpoint needs about" in line, line
  # Nothing half-written: the first iteration's step is the newest, alone.
  assert sorted(os.listdir(out / "checkpoints")) == ["1"]
  monkeypatch.setattr(shutil, "disk_usage", real)
  assert train(3) == 0
  assert len((out / "metrics.csv").read_text().strip().splitlines()) == 1 + 3


def test_debug_shows_the_traceback(tmp_path):
  done = commands.run("train", ["--env", "tictactoe", "--out", tmp_path / "run", "--debug",
                                "--config", _config_file(tmp_path, "typo", simulatons=4)],
                      check=False, timeout=300)
  assert done.returncode != 0
  assert "Traceback" in done.stderr and "did you mean 'simulations'" in done.stderr


def test_a_bug_keeps_its_traceback():
  def broken(argv):
    del argv
    return {}["missing"]
  with pytest.raises(KeyError):
    cli.main(broken, [])


def test_play_ends_cleanly_at_the_end_of_its_input(capsys):
  def end_of_input(prompt):
    del prompt
    raise EOFError
  assert cli.main(lambda argv: terminal.play(simulations=2, read=end_of_input), []) == 0
  captured = capsys.readouterr()
  assert captured.out.rstrip().endswith("bye") and "Traceback" not in captured.err


def _python(*args, **kwargs):
  env = dict(os.environ, PYTHONPATH=str(ROOT))
  return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.mark.slow
def test_a_second_run_on_a_busy_folder_is_refused_and_the_first_finishes(tmp_path):
  out = tmp_path / "run"
  config = _config_file(tmp_path, **TINY)
  argv = ["-m", "mcgs_jax.experiments.train", "--env", "tictactoe", "--out", str(out), "--config",
          config, "--iterations", "6"]
  first = _python(*argv)
  owner = out / run_lock.OWNER
  deadline = time.monotonic() + 240
  while not owner.exists() and first.poll() is None and time.monotonic() < deadline:
    time.sleep(0.2)
  assert owner.exists(), first.communicate()
  second = _python(*argv)
  _, err = second.communicate(timeout=240)
  assert first.poll() is None, "the first run ended before the second was refused"
  assert second.returncode == cli.USAGE
  lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("W0", "I0"))]
  assert len(lines) == 1, err
  assert lines[0].startswith(f"error: {out} is in use by pid {first.pid} on "), lines[0]
  first.communicate(timeout=600)
  assert first.returncode == 0
  rows = (out / "metrics.csv").read_text().splitlines()[1:]
  assert [int(row.split(",")[0]) for row in rows] == [1, 2, 3, 4, 5, 6]


def test_a_killed_holder_leaves_no_stale_lock(tmp_path, capsys):
  holder = _python("-c", "import sys, time; from learning import run_lock; "
                   f"lock = run_lock.acquire({str(tmp_path)!r}); print('held', flush=True); "
                   "time.sleep(120)")
  assert holder.stdout.readline().strip() == "held"
  with pytest.raises(run_lock.RunBusyError, match=f"pid {holder.pid}"):
    run_lock.acquire(str(tmp_path))
  # What a second command on the folder says: one line, exit 2 (the whole
  # commands racing: the slow test above and the fault sweep's second-process).
  assert cli.main(lambda argv: run_lock.acquire(str(tmp_path)), []) == cli.USAGE
  lines = capsys.readouterr().err.splitlines()
  assert len(lines) == 1 and lines[0].startswith(
      f"error: {tmp_path} is in use by pid {holder.pid} on "), lines
  holder.send_signal(signal.SIGKILL)
  holder.wait(timeout=30)
  lock = run_lock.acquire(str(tmp_path))   # the kernel released it
  lock.release()


def test_a_closed_pipe_ends_the_command_quietly():
  """`command | head`: the reader leaves early; the command stops with the
  shell's code for it and no traceback."""
  code = ("import sys\nfrom learning import cli\n"
          "def run(argv):\n  for i in range(10 ** 6):\n    print('row', i)\n"
          "sys.exit(cli.main(run, []))\n")
  process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=pathlib.Path(__file__).parents[1])
  assert process.stdout.readline() == b"row 0\n"
  process.stdout.close()
  assert process.wait(timeout=60) == cli.PIPE_CLOSED
  assert process.stderr.read() == b""


def test_a_missing_optional_package_names_its_extra(capsys):
  def needs_openspiel(argv):
    del argv
    raise ModuleNotFoundError("No module named 'pyspiel'", name="pyspiel")
  assert cli.main(needs_openspiel, []) == cli.USAGE
  line = _one_error_line(capsys)
  assert "pip install 'mcgs_jax[bench]'" in line, line


def test_a_flag_wins_over_the_same_field_in_the_config_file(tmp_path):
  config = training.resolve_config(str(tmp_path / "run"), _config_file(tmp_path, "games", games=8),
                                   env="tictactoe", games=4)
  assert config.games == 4


def test_a_deeply_nested_config_is_one_line(tmp_path):
  deep = tmp_path / "deep.json"
  deep.write_text("[" * 100_000 + "]" * 100_000)
  done = commands.run("train", ["--env", "tictactoe", "--out", tmp_path / "run", "--config", deep],
                      check=False, timeout=300)
  assert done.returncode == cli.USAGE
  assert "nested too deeply" in _the_error_line(done.stderr)
  assert not (tmp_path / "run").exists()


def test_an_empty_out_is_refused_by_the_parser():
  done = commands.run("train", ["--env", "tictactoe", "--out", " "], check=False, timeout=120)
  assert done.returncode == cli.USAGE
  assert "--out must name the run's folder" in _the_error_line(done.stderr)
