"""Alpha-rank against hand-checked examples."""

import math

import numpy as np
import pytest

from mcgs_jax.learning import alpharank


def test_two_agents_by_hand():
  # Agent 0 always beats agent 1. With m = 2 each fixation has one term:
  # rho(1 -> 0) = 1 / (1 + exp(-alpha (M[0,1] - M[1,0]))) = sigmoid(alpha),
  # rho(0 -> 1) = sigmoid(-alpha); balance pi_0 rho(0->1) = pi_1 rho(1->0)
  # gives pi_0 = sigmoid(alpha).
  payoffs = np.array([[0.5, 1.0], [0.0, 0.5]])
  for alpha in (0.5, 1.0, 3.0):
    pi = alpharank.stationary_distribution(payoffs, alpha=alpha, population=2)
    expected = 1.0 / (1.0 + math.exp(-alpha))
    np.testing.assert_allclose(pi, [expected, 1 - expected], atol=1e-9)


def test_fixation_probability_neutral_is_one_over_m():
  payoffs = np.full((2, 2), 0.5)
  for m in (2, 5, 50):
    assert alpharank.fixation_probability(payoffs, 0, 1, alpha=7.0, population=m) == (
        pytest.approx(1.0 / m))


def test_rock_paper_scissors_is_uniform_and_dominance_wins():
  rps = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])
  np.testing.assert_allclose(alpharank.stationary_distribution(rps), [1 / 3] * 3, atol=1e-9)
  # A third agent beating both others takes nearly all the mass.
  dominant = np.array([[0.5, 0.6, 0.0], [0.4, 0.5, 0.0], [1.0, 1.0, 0.5]])
  pi = alpharank.stationary_distribution(dominant, alpha=10.0, population=50)
  assert pi[2] > 0.99 and pi.sum() == pytest.approx(1.0)


def test_payoff_matrix_from_records():
  payoffs, games = alpharank.payoff_matrix([(0, 1, 1.0), (0, 1, 0.5), (1, 2, 0.0)], 3)
  assert payoffs[0, 1] == 0.75 and payoffs[1, 0] == 0.25
  assert payoffs[2, 1] == 1.0 and payoffs[0, 2] == 0.5
  assert games[0, 1] == 2 and games[0, 2] == 0


def test_alpharank_score_counts_the_mass_an_agent_holds_against():
  # Agents 1 and 2 tie and both beat agent 0.
  payoffs = np.array([[0.5, 0.0, 0.0], [1.0, 0.5, 0.5], [1.0, 0.5, 0.5]])
  ranks = alpharank.stationary_distribution(payoffs)
  scores = alpharank.not_losing_mass(payoffs, ranks)
  assert scores[0] == pytest.approx(ranks[0]) and scores[0] < 0.01
  np.testing.assert_allclose(scores[1:], [1.0, 1.0], atol=1e-9)
