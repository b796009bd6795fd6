"""mcgs_jax.experiments.play: a human game against an agent through scripted input."""

import json
import os

import jax

from mcgs_jax.experiments import play
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


def test_game_to_the_end_with_bad_input(tmp_path, capsys):
  directory = _agent_dir(tmp_path, "tictactoe")
  # Junk, an out-of-range cell and an occupied cell are refused and asked again;
  # the human then plays every free cell in order until the game ends.
  typed = iter(["x", "0", "10"] + [str(c) for c in range(1, 10)] * 2)
  asked = []

  def read(prompt):
    asked.append(prompt)
    return next(typed)

  play.main(["--agent", directory, "--simulations", "4"], read=read)
  out = capsys.readouterr().out
  assert out.count("is not a legal move") >= 3
  assert any(end in out for end in ("you win", "the agent wins", "draw"))
  assert "agent plays" in out


def test_quit_and_missing_agent(tmp_path, capsys):
  directory = _agent_dir(tmp_path, "tictactoe")
  play.main(["--agent", directory, "--simulations", "4", "--first", "agent"],
            read=lambda prompt: "q")
  out = capsys.readouterr().out
  assert "agent plays" in out and out.rstrip().endswith("bye")
  try:
    play.main(["--agent", str(tmp_path / "nowhere")])
  except FileNotFoundError as error:
    assert "holds no trained agent" in str(error)
  else:
    raise AssertionError("a missing agent must raise")
