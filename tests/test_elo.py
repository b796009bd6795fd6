"""Elo: Bradley-Terry fits, anchoring, bootstrap intervals."""

import numpy as np
import pytest

from mcgs_jax.learning import elo


def _tournament(true_elo, games_per_pair, seed):
  """Decisive games between every pair, won with the Elo model's probability."""
  rng = np.random.default_rng(seed)
  records = []
  for i in range(len(true_elo)):
    for j in range(i + 1, len(true_elo)):
      p_win = 1.0 / (1.0 + 10.0 ** (-(true_elo[i] - true_elo[j]) / 400.0))
      records += [(i, j, float(rng.random() < p_win)) for _ in range(games_per_pair)]
  return records


def test_synthetic_tournament_recovers_known_elo_gaps():
  true_elo = np.array([0.0, 150.0, 400.0])
  covered = 0
  for seed in range(10):
    ratings = elo.fit(_tournament(true_elo, 300, seed), 3, reference=0, num_bootstrap=100,
                      seed=seed)
    assert ratings.num_games == 900
    np.testing.assert_allclose(ratings.elo, true_elo, atol=80)
    assert np.all(ratings.lower <= ratings.elo) and np.all(ratings.elo <= ratings.upper)
    covered += np.all((ratings.lower <= true_elo) & (true_elo <= ratings.upper))
  # Two 95% intervals hold together in about 90% of tournaments.
  assert covered >= 7


def test_symmetric_results_give_zero():
  draws = [(0, 1, 0.5)] * 10 + [(1, 2, 0.5)] * 10 + [(0, 2, 0.5)] * 10
  np.testing.assert_allclose(elo.fit(draws, 3).elo, 0.0, atol=1e-6)
  split = [(0, 1, 1.0)] * 7 + [(0, 1, 0.0)] * 7 + [(1, 0, 1.0)] * 3 + [(1, 0, 0.0)] * 3
  ratings = elo.fit(split, 2)
  np.testing.assert_allclose(ratings.elo, 0.0, atol=1e-6)
  assert ratings.lower[1] < 0.0 < ratings.upper[1]


def test_draws_count_half_a_win_each_way():
  wins = elo.win_matrix(np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1.0, 0.5, 0.0]), 3)
  np.testing.assert_array_equal(wins, [[0, 1, 0.5], [0, 0, 0], [0.5, 1, 0]])
  # Three wins and one loss score as well as two wins and two draws.
  mixed = [(0, 1, 1.0)] * 3 + [(0, 1, 0.0)]
  drawn = [(0, 1, 1.0)] * 2 + [(0, 1, 0.5)] * 2
  assert elo.fit(mixed, 2).elo[1] == pytest.approx(elo.fit(drawn, 2).elo[1], abs=1e-6)
  # A 3:1 score is log(3) natural-log units, 191 Elo (alpha shrinks it a little).
  assert elo.fit(mixed, 2, alpha=1e-6).elo[1] == pytest.approx(-191, abs=1)


def test_anchoring_moves_every_rating_by_the_same_amount():
  records = _tournament(np.array([0.0, 100.0, 300.0]), 50, seed=1)
  at_zero = elo.fit(records, 3, reference=0, num_bootstrap=20)
  at_two = elo.fit(records, 3, reference=2, num_bootstrap=20)
  assert at_two.elo[2] == 0.0 and at_two.lower[2] == 0.0 and at_two.upper[2] == 0.0
  np.testing.assert_allclose(at_two.elo, at_zero.elo - at_zero.elo[2], atol=1e-6)
  assert "| 2 | 0 |" in at_two.table()


def test_unbeaten_player_gets_a_large_finite_rating():
  records = [(0, 1, 1.0)] * 20 + [(1, 2, 0.5)] * 10 + [(0, 2, 1.0)] * 20
  ratings = elo.fit(records, 3, reference=1)
  assert np.all(np.isfinite(ratings.elo))
  assert np.all(np.isfinite(ratings.lower)) and np.all(np.isfinite(ratings.upper))
  assert 400.0 < ratings.elo[0] < 3000.0
  assert abs(ratings.elo[2]) < 50.0


@pytest.mark.parametrize("records,message", [
    ([], "no game records"),
    ([(0, 0, 1.0)], "itself"),
    ([(0, 3, 1.0)], "indices"),
    ([(0, 1.5, 1.0)], "indices"),
    ([(0, 1, 2.0)], "scores"),
    ([(0, 1)], "triples"),
])
def test_bad_records_are_refused(records, message):
  with pytest.raises(ValueError, match=message):
    elo.fit(records, 3)


def test_bad_arguments_are_refused():
  records = [(0, 1, 1.0)]
  with pytest.raises(ValueError, match="reference"):
    elo.fit(records, 2, reference=2)
  with pytest.raises(ValueError, match="alpha"):
    elo.fit(records, 2, alpha=0.0)
  with pytest.raises(ValueError, match="at least 2 players"):
    elo.fit(records, 1)
  with pytest.raises(ValueError, match="names"):
    elo.fit(records, 2, num_bootstrap=0).table(["only one"])
