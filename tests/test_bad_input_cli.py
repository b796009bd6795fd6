"""Malformed input thrown at the command lines' work (hypothesis): configs,
agent folders and data files, through the error boundary every command line
runs in (`cli.main`). Each answer is an exit code, at most one line on
stderr and no traceback, and a refused run leaves nothing behind."""

import json
import os
import pathlib
import shutil

import hypothesis
from hypothesis import strategies as st
import pytest

from mcgs_jax.learning import arena
from mcgs_jax.learning import cli
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import terminal
from mcgs_jax.learning import training

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIELDS = sorted(config_lib.FIELDS)
SETTINGS = hypothesis.settings(max_examples=40, deadline=None, derandomize=True,
                               suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])

# Any JSON value, nested a little.
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8)
    | st.integers(min_value=2 ** 31, max_value=2 ** 200),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
# Entries no TrainConfig accepts: an unknown name, or a known count that is
# not a count in range.
BAD_ENTRY = st.one_of(
    st.tuples(st.text(min_size=1, max_size=12).map(lambda s: "zz_" + s), JUNK),
    st.tuples(st.sampled_from(["games", "batch_size", "replay_capacity", "seed"]),
              st.one_of(st.integers(max_value=-1), st.integers(min_value=2 ** 31),
                        st.text(max_size=4), st.floats(allow_nan=True), st.lists(JUNK))))


def _answer(run, capsys):
  code = cli.main(lambda argv: run(), [])
  err = capsys.readouterr().err
  assert "Traceback" not in err, err
  assert err.count("\n") <= 1, err
  return code, err


@SETTINGS
@hypothesis.given(fields=st.dictionaries(st.sampled_from(FIELDS), JUNK, max_size=4),
                  bad=BAD_ENTRY)
def test_a_malformed_config_is_one_line_and_nothing_is_written(tmp_path, capsys, fields, bad):
  config = tmp_path / "config.json"
  config.write_text(json.dumps({**fields, bad[0]: bad[1]}))
  out = tmp_path / "run"
  shutil.rmtree(out, ignore_errors=True)
  code, err = _answer(lambda: training.run(str(out), env="tictactoe", config_file=str(config)),
                      capsys)
  assert code == cli.USAGE and err.startswith("error: "), err
  assert not out.exists()


@SETTINGS
@hypothesis.given(data=st.binary(max_size=64) | JUNK.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_as_a_config_file_are_one_line(tmp_path, capsys, data):
  config = tmp_path / "config.json"
  config.write_bytes(data)
  out = tmp_path / "run"
  shutil.rmtree(out, ignore_errors=True)
  code, err = _answer(lambda: training.run(str(out), env="tictactoe", config_file=str(config),
                                           iterations=1), capsys)
  if code == 0:   # by chance a valid config: a real run of one iteration
    assert (out / "metrics.csv").exists()
  else:
    assert code == cli.USAGE and err.startswith("error: "), err
    assert not out.exists()


@pytest.fixture(scope="module")
def agent_folder(tmp_path_factory):
  folder = tmp_path_factory.mktemp("agent")
  shutil.copy(ROOT / "networks" / "pretrained" / "connect4" / "agent.msgpack", folder)
  return folder


def _no_input(prompt=""):
  del prompt
  raise EOFError


@SETTINGS
@hypothesis.given(config=JUNK)
def test_an_agent_folder_with_a_malformed_config_is_one_line(agent_folder, capsys, config):
  (agent_folder / "config.json").write_text(json.dumps(config))
  code, err = _answer(lambda: terminal.play(str(agent_folder), simulations=2, read=_no_input),
                      capsys)
  assert code in (0, cli.FAILURE, cli.USAGE), (code, err)
  assert code == 0 or err.startswith("error: "), err


@SETTINGS
@hypothesis.given(text=st.text(max_size=80) | st.lists(
    st.lists(st.text(max_size=5), min_size=1, max_size=5), max_size=4).map(
        lambda rows: "\n".join(",".join(r) for r in rows)))
def test_a_games_file_is_read_or_refused_naming_itself(tmp_path, text):
  path = tmp_path / "games.csv"
  path.write_text(text)
  try:
    games = arena.read_games(str(path))
  except ValueError as error:
    assert str(path) in str(error)
  else:
    assert all(set(arena.GAME_FIELDS) <= set(g) for g in games)


def test_a_broken_network_reaches_the_terminal_as_one_line(tmp_path):
  """A network whose outputs are NaN, played from the command line: the
  evaluator check stops it, and the terminal shows its one line, not jax's
  log of the failed host callback with its traceback."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  script = (
      "import jax, jax.numpy as jnp\n"
      "from mcgs_jax.learning import checkpoint\n"
      f"source = {str(ROOT / 'networks' / 'pretrained' / 'connect4')!r}\n"
      "env, eval_fn, params = checkpoint.load_agent(source)\n"
      "nan = jax.tree.map(lambda x: jnp.full_like(x, jnp.nan), params)\n"
      f"checkpoint.write_variables({str(tmp_path / 'agent.msgpack')!r}, nan)\n")
  shutil.copy(ROOT / "networks" / "pretrained" / "connect4" / "config.json", tmp_path)
  env = {**os.environ, "JAX_PLATFORMS": "cpu"}
  subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=300)
  result = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments", "play", "--agent",
                           str(tmp_path), "--simulations", "4"], input="4\n", env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == cli.FAILURE
  assert result.stderr.count("\n") == 1, result.stderr
  assert result.stderr.startswith("error: the network's output was refused: eval_fn returned "
                                  "value nan"), result.stderr


@pytest.mark.parametrize("name,code,shown", [
    ("a misspelt command (trian)", 2, "error: unknown command 'trian'; did you mean 'train'?"),
    ("a seed of 2^70", 2, "error: TrainConfig.seed must be an int in [0, 2147483647]"),
    ("a ragged batch", 1, "ValueError: the batch of states disagrees on its size"),
])
def test_the_bad_input_sweep_reads_what_the_terminal_shows(name, code, shown):
  from mcgs_jax.benchmarks import bad_inputs  # pylint: disable=g-import-not-at-top
  case, = [c for c in bad_inputs.CASES if c.name == name]
  row = bad_inputs.run_case(case)
  assert row["exit_code"] == code and row["first_line"].startswith(shown), row
  if case.kind != bad_inputs.LIBRARY:
    assert row["stderr_lines"] == 1 and row["traceback"] is False
  if case.run_folder:
    assert row["left_behind"] is False
