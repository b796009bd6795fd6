"""`mcgs-jax play` (mcgs_jax.experiments.play): a human game against an agent
through scripted input, run as a process."""

import json
import os
import subprocess
import sys

import jax

from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import config as config_lib


def _agent_dir(tmp_path, env_id, **changes):
  config = config_lib.replace(config_lib.default_config(env_id),
                              network_kwargs={"hidden_sizes": [8]}, **changes)
  (tmp_path / checkpoint.CONFIG).write_text(json.dumps(config.to_json()))
  env, network, _ = checkpoint.build_network(config)
  checkpoint.write_variables(os.path.join(tmp_path, checkpoint.AGENT),
                             checkpoint.init_variables(network, env, jax.random.PRNGKey(0)))
  return str(tmp_path)


def _play(argv, typed):
  """`mcgs-jax play ARGV` as a process, `typed` its input lines."""
  return subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.play", *argv],
                        input="".join(line + "\n" for line in typed), capture_output=True,
                        text=True, timeout=600)


def test_game_to_the_end_with_bad_input(tmp_path):
  directory = _agent_dir(tmp_path, "tictactoe")
  # Junk, an out-of-range cell and an occupied cell are refused and asked again;
  # the human then plays every free cell in order until the game ends.
  done = _play(["--agent", directory, "--simulations", "4"],
               ["x", "0", "10"] + [str(c) for c in range(1, 10)] * 2)
  assert done.returncode == 0, done.stderr
  out = done.stdout
  assert out.count("is not a legal move") >= 3
  assert any(end in out for end in ("you win", "the agent wins", "draw"))
  assert "agent plays" in out


def test_quit_and_missing_agent(tmp_path):
  directory = _agent_dir(tmp_path, "tictactoe")
  done = _play(["--agent", directory, "--simulations", "4", "--first", "agent"], ["q"])
  assert done.returncode == 0, done.stderr
  assert "agent plays" in done.stdout and done.stdout.rstrip().endswith("bye")
  missing = _play(["--agent", str(tmp_path / "nowhere")], [])
  assert missing.returncode != 0
  lines = missing.stderr.strip().splitlines()
  assert len(lines) == 1 and "holds no trained agent" in lines[0], missing.stderr
