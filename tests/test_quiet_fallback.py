"""The corrupt-checkpoint fallback is quiet every time: train tic-tac-toe 3
iterations, truncate the largest file of the newest step to half, rerun to 4
iterations, in a fresh process as a user would, 10 times. Each rerun prints
exactly its one warning line (nothing left pending by the failed read prints
later, at exit or at random) and ends with iterations 1..4 once each. Fresh
processes take about 30 s a try: `make test-slow` (the normal suite checks
the fallback in-process, tests/test_train.py)."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = dict(eval_every=0, games=8, simulations=4, moves_per_iteration=5, batch_size=16,
            min_replay=16, updates_per_iteration=2, replay_capacity=256,
            network_kwargs={"hidden_sizes": [16]})


def _train(out, config, iterations):
  env = dict(os.environ, PYTHONPATH=str(ROOT))
  return subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "tictactoe",
                         "--out", str(out), "--config", str(config),
                         "--iterations", str(iterations)],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _largest_file(step_dir):
  files = [p for p in step_dir.rglob("*") if p.is_file()]
  return max(files, key=lambda p: p.stat().st_size)


def _messages(stderr):
  """stderr without XLA's own log lines (W0000 ..., I0000 ...)."""
  return [line for line in stderr.splitlines()
          if line.strip() and not re.match(r"^[WIE]\d{4} ", line)]


def _tries(tmp_path, tries):
  config = tmp_path / "tiny.json"
  config.write_text(json.dumps(TINY))
  original = tmp_path / "original"
  first = _train(original, config, 3)
  assert first.returncode == 0, first.stderr[-2000:]
  for attempt in range(tries):
    run = tmp_path / f"run{attempt}"
    shutil.copytree(original, run)
    step = run / "checkpoints" / "3"
    largest = _largest_file(step)
    size = largest.stat().st_size
    with open(largest, "r+b") as f:
      f.truncate(size // 2)
    rerun = _train(run, config, 4)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert _messages(rerun.stderr) == [
        f"warning: checkpoint {step} is unreadable ({largest.relative_to(step)} has "
        f"{size // 2} bytes, {size} were written); moved it to {run}/checkpoints-corrupt/3; "
        "resuming from iteration 2"], f"try {attempt + 1}:\n{rerun.stderr}"
    rows = (run / "metrics.csv").read_text().splitlines()[1:]
    assert [int(row.split(",")[0]) for row in rows] == [1, 2, 3, 4]


@pytest.mark.slow
def test_the_truncated_step_rerun_prints_its_one_line_10_times_of_10(tmp_path):
  _tries(tmp_path, 10)
