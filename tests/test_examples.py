"""The examples run as a user runs them: no arguments, from another folder,
within two minutes each, and print what their docstrings promise."""

import os
import pathlib
import re
import subprocess
import sys


EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _run(name, tmp_path):
  env = {**os.environ, "JAX_PLATFORMS": "cpu"}
  result = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def test_there_are_four_examples_with_docstrings():
  scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
  assert scripts == ["from_mctx.py", "gumbel_selfplay.py", "own_training_loop.py",
                     "pgx_graph_reuse.py"]
  for name in scripts:
    text = (EXAMPLES / name).read_text()
    assert text.startswith('"""') and f"python examples/{name}" in text, name


def test_own_training_loop_learns(tmp_path):
  out = _run("own_training_loop.py", tmp_path)
  losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", out)]
  assert len(losses) == 30
  assert losses[-1] < losses[0] - 0.5, losses
  policy = [float(x) for x in out.split("policy on the empty board:")[1].split("\n")[0].split()]
  assert len(policy) == 9 and abs(sum(policy) - 1) < 0.05   # printed to 2 decimals


def test_from_mctx_searches_the_same_positions(tmp_path):
  out = _run("from_mctx.py", tmp_path)
  theirs = re.search(r"mctx.muzero_policy moves: \[(.*)\]", out).group(1).split(", ")
  ours = re.search(r"mcgs_jax.search moves: +\[(.*)\]", out).group(1).split(", ")
  assert len(theirs) == len(ours) == 16
  assert all(0 <= int(a) < 7 for a in theirs + ours)
  assert "transpositions merged per search" in out


def test_pgx_graph_reuse_plays_whole_games(tmp_path):
  out = _run("pgx_graph_reuse.py", tmp_path)
  kept = [float(x) for x in re.findall(r"kept +(\d+\.\d+) nodes", out)]
  assert kept and max(kept) > 1   # the roots kept more than themselves
  assert "all 4 games over" in out


def test_gumbel_selfplay_beats_a_random_player(tmp_path):
  out = _run("gumbel_selfplay.py", tmp_path)
  errors = dict(re.findall(r"(\w+) errs on (\d+\.\d)%", out))
  assert set(errors) == {"policy", "random"}, out
  assert float(errors["policy"]) < float(errors["random"]), errors
