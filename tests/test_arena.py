"""Arena: batched matches with swapped colours, openings, round robins."""

import os

import jax
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import exhaustive
from mcgs_jax.learning import agents
from mcgs_jax.learning import arena
from mcgs_jax.learning import elo
from mcgs_jax.learning import evaluation

RNG = jax.random.PRNGKey(0)
TTT = envs.make("tictactoe")
# One match size and opening length for the tic-tac-toe tests: shared compiles.
GAMES = 16
NIM_3_20 = envs.make("nim:3,20")


class _CheckingRandomAgent(agents.Agent):
  """A uniformly random host agent that records every batch it is shown."""

  def __init__(self, name):
    self.name = name
    self.batches = []

  def act(self, rng, states):
    self.batches.append(jax.tree.map(np.asarray, states))
    return agents.RandomAgent().act(rng, states)


def test_perfect_tictactoe_player_never_loses_to_random():
  # After one random move tic-tac-toe is still a draw for either side, so a
  # perfect player cannot lose from any of these openings.
  result = arena.play_games(TTT, agents.ExactAgent(TTT), agents.RandomAgent(), RNG,
                            num_games=GAMES, opening_plies=1)
  assert result.losses == 0 and result.unfinished == 0
  assert result.wins > GAMES // 2
  assert result.wins + result.draws + result.losses == GAMES
  assert result.mean_score == pytest.approx(result.wins / GAMES)


def test_each_opening_is_played_with_both_colours():
  result = arena.play_games(TTT, agents.RandomAgent(), agents.RandomAgent(), RNG,
                            num_games=GAMES, opening_plies=1)
  np.testing.assert_array_equal(result.a_player, [0] * 8 + [1] * 8)
  np.testing.assert_array_equal(result.opening, list(range(8)) * 2)
  # Subtraction Nim(3, 20) after one move: the player to move (player 1) wins
  # with best play. Between two perfect players the seat decides every game.
  perfect = agents.ExactAgent(NIM_3_20)
  result = arena.play_games(NIM_3_20, perfect, perfect, RNG, num_games=10, opening_plies=1)
  np.testing.assert_array_equal(result.scores, np.where(result.a_player == 1, 1, -1))
  assert result.mean_score == 0.0
  # Against random play the perfect player still wins every game from the winning seat.
  result = arena.play_games(NIM_3_20, perfect, agents.RandomAgent(), RNG, num_games=10,
                            opening_plies=1)
  assert np.all(result.scores[result.a_player == 1] == 1)


@pytest.mark.parametrize("agent", [agents.ExactAgent(TTT, randomize=False),
                                   agents.PolicyAgent(envs.uniform_eval(TTT))],
                         ids=["exact", "policy"])
def test_deterministic_agent_against_itself_scores_exactly_zero_per_opening(agent):
  # Both games of an opening repeat the same moves, with the colours swapped.
  result = arena.play_games(TTT, agent, agent, RNG, num_games=GAMES, opening_plies=1)
  np.testing.assert_array_equal(result.scores[:8], -result.scores[8:])
  np.testing.assert_array_equal(result.plies[:8], result.plies[8:])
  assert result.mean_score == 0.0


def test_agents_see_only_their_own_running_games():
  a, b = _CheckingRandomAgent("a"), _CheckingRandomAgent("b")
  result = arena.play_games(TTT, a, b, RNG, num_games=GAMES, opening_plies=1)
  for agent in (a, b):
    assert agent.batches
    for states in agent.batches:
      assert not states.terminated.any()
      # All games are at the same ply, so an agent moves in one seat's half
      # (padded to that size: one shape).
      assert len(states.ply) == GAMES // 2
      assert len(set(states.current_player.tolist())) == 1
  # Each agent is asked at most once per ply, none after the longest game.
  assert max(len(a.batches), len(b.batches)) == result.plies.max()
  # Every game ends on a full board or a line: 4 to 8 moves after the first.
  assert result.unfinished == 0 and result.plies.max() <= 8 and result.plies.min() >= 4


def test_random_openings_are_distinct_running_positions():
  openings = arena.random_openings(TTT, RNG, count=GAMES // 2, plies=1)
  keys = exhaustive.key_ints(openings.key).tolist()
  assert len(set(keys)) == GAMES // 2
  assert not np.asarray(openings.terminated).any()
  np.testing.assert_array_equal(openings.ply, 1)
  # Fewer distinct positions than asked for: the ones there are, cycled.
  few = arena.random_openings(NIM_3_20, RNG, count=7, plies=1)
  piles = np.asarray(few.piles)[:, 0]
  assert set(piles.tolist()) == {17, 18, 19}
  np.testing.assert_array_equal(piles[3:6], piles[:3])


def test_given_openings_and_bad_arguments():
  # Every first move of tic-tac-toe leaves a draw: perfect play draws them all.
  openings = envs.stack([envs.tictactoe.from_moves([cell]) for cell in range(GAMES // 2)])
  result = arena.play_games(TTT, agents.ExactAgent(TTT), agents.ExactAgent(TTT), RNG,
                            openings=openings)
  assert len(result.scores) == GAMES
  np.testing.assert_array_equal(result.scores, 0)
  with pytest.raises(ValueError, match="even"):
    arena.play_games(TTT, agents.RandomAgent(), agents.RandomAgent(), RNG, num_games=7)
  with pytest.raises(ValueError, match="does not match"):
    arena.play_games(TTT, agents.RandomAgent(), agents.RandomAgent(), RNG, num_games=6,
                     openings=openings)
  with pytest.raises(ValueError, match="batch"):
    arena.play_games(TTT, agents.RandomAgent(), agents.RandomAgent(), RNG,
                     openings=envs.tictactoe.from_moves([4]))
  finished = envs.stack([envs.tictactoe.from_moves([0, 3, 1, 4, 2])])
  with pytest.raises(ValueError, match="already finished"):
    arena.play_games(TTT, agents.RandomAgent(), agents.RandomAgent(), RNG, openings=finished)
  with pytest.raises(ValueError, match="at least 2 agents"):
    arena.round_robin(TTT, [agents.RandomAgent()], RNG, games_per_pair=4)


def test_search_baseline_beats_random_play():
  baseline = agents.rollout_baseline(TTT, num_simulations=32)
  assert baseline.name == "mcgs-rollout-32" and baseline.params is None
  result = arena.play_games(TTT, baseline, agents.RandomAgent(), RNG, num_games=GAMES,
                            opening_plies=1)
  assert result.wins > 2 * result.losses


def test_round_robin_records_feed_the_elo_fit():
  players = [agents.RandomAgent(), agents.ExactAgent(TTT)]
  records = arena.round_robin(TTT, players, RNG, games_per_pair=GAMES, opening_plies=1)
  assert len(records) == GAMES
  assert all(i == 0 and j == 1 and score in (0.0, 0.5, 1.0) for i, j, score in records)
  # The random player (index 0) never beats the perfect one from a drawn opening.
  assert all(score < 1.0 for _, _, score in records)
  ratings = elo.fit(records, num_players=2, reference=0, num_bootstrap=50)
  assert ratings.elo[0] == 0.0
  assert ratings.lower[1] > 0.0


def test_missing_pairs_resume_and_feed_the_elo_table(tmp_path, capsys):
  path = str(tmp_path / "games.csv")
  players = {"random": agents.RandomAgent(), "exact": agents.ExactAgent(TTT)}
  pairs = [("exact", "random"), ("exact", "absent")]   # a pair with an unknown name is skipped
  games = arena.play_missing_pairs(TTT, players, pairs, RNG, GAMES, path, opening_plies=1)
  assert len(games) == GAMES and {(g["a"], g["b"]) for g in games} == {("exact", "random")}
  assert all(g["score"] > 0.0 for g in games)   # exact never loses from a drawn opening
  assert capsys.readouterr().out.startswith("exact vs random: ")
  # A second call finds the pair recorded and plays nothing.
  assert arena.play_missing_pairs(TTT, players, pairs, RNG, GAMES, path) == games
  assert capsys.readouterr().out == ""
  rows, ratings, names = evaluation.elo_table([(g["a"], g["b"], g["score"]) for g in games],
                                              baseline="random")
  assert names == ["random", "exact"] and tuple(rows[0]) == evaluation.ELO_FIELDS
  assert rows[0] == dict(player="random", elo=0.0, elo_low=0.0, elo_high=0.0, games=GAMES)
  assert rows[1]["elo"] == round(float(ratings.elo[1]), 1) and rows[1]["elo_low"] > 0.0


def test_a_game_is_recorded_once_and_a_foreign_file_is_refused(tmp_path):
  path = str(tmp_path / "games.csv")
  rows = [dict(a="x", b="y", game=g, score=1.0) for g in range(3)]
  arena.append_games(path, rows)
  arena.append_games(path, rows[1:] + [dict(a="x", b="y", game=3, score=0.5)])
  games = arena.read_games(path)
  assert [(g["game"], g["score"]) for g in games] == [(0, 1.0), (1, 1.0), (2, 1.0), (3, 0.5)]
  assert not os.path.exists(path + ".tmp")
  other = tmp_path / "other.csv"
  other.write_text("player,elo\nx,3\n")
  with pytest.raises(ValueError, match=r"other.csv is not a games file: its header lacks a, b, "
                                       r"game, score"):
    arena.read_games(str(other))
  broken = tmp_path / "broken.csv"
  broken.write_text("a,b,game,score\nx,y,zero,1\n")
  with pytest.raises(ValueError, match=r"broken.csv, line 2: game 'zero' and score '1'"):
    arena.read_games(str(broken))


def test_two_arenas_on_one_run_are_refused(tmp_path):
  from mcgs_jax.learning import run_lock  # pylint: disable=g-import-not-at-top
  import shutil  # pylint: disable=g-import-not-at-top
  from tests import commands  # pylint: disable=g-import-not-at-top
  run = tmp_path / "run"
  shutil.copytree(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "networks", "pretrained", "connect4"), run)
  held = run_lock.acquire(str(run))   # a training run, or the first arena
  try:
    done = commands.run("arena", ["--run", run], check=False, timeout=300)
  finally:
    held.release()
  assert done.returncode == 2, done.stderr
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1 and "is in use by" in lines[0], done.stderr
  assert not (run / "arena").exists()
