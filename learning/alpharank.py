"""Alpha-rank (Omidshafiei et al. 2019, "alpha-Rank: Multi-Agent Evaluation
by Evolution") for one population of agents playing a symmetric game.

  stationary_distribution(payoffs [K, K], alpha=10.0, population=50) -> pi [K]

`payoffs[i, j]` is agent i's expected payoff against agent j (here the mean
score in [0, 1]: 1 win, 0.5 draw, 0 loss). The agents are the strategies of
a population of `population` individuals that evolves by the Moran process
with Fermi selection: in the limit of rare mutations the population is
monomorphic, a mutant r appears in a population of s with probability
1 / (K - 1) and takes it over with the fixation probability

  rho(s -> r) = 1 / (1 + sum_{l=1}^{m-1} prod_{k=1}^{l} exp(-alpha (f_r(k) - f_s(k)))),

f_r(k) and f_s(k) the fitnesses of a mutant and of a resident when there are
k mutants (each plays the m - 1 others):

  f_r(k) = ((k - 1) M[r, r] + (m - k) M[r, s]) / (m - 1),
  f_s(k) = (k M[s, r] + (m - k - 1) M[s, s]) / (m - 1).

The alpha-rank of the agents is the stationary distribution pi of this
Markov chain over the K monomorphic states (C[s, r] = rho(s -> r) / (K - 1),
C[s, s] = 1 - sum_r C[s, r]): its mass concentrates on the agents the
evolution keeps returning to as alpha grows. Same model as OpenSpiel's
`egt.alpharank` for one population of a two-player symmetric game.
"""

import numpy as np


def fixation_probability(payoffs: np.ndarray, resident: int, mutant: int, alpha: float,
                         population: int) -> float:
  """rho(resident -> mutant), the module docstring's formula.

  Args:
    payoffs: [K, K], payoffs[i, j] agent i's mean score against agent j.
    resident: s, the agent of the monomorphic population.
    mutant: r, the agent of the mutant.
    alpha: the selection intensity.
    population: m, the number of individuals.

  Returns:
    The probability that one mutant r takes over a population of s; 0.0
    where it is below about exp(-700) (the sum would overflow).
  """
  m = population
  s, r = resident, mutant
  k = np.arange(1, m, dtype=np.float64)
  f_r = ((k - 1) * payoffs[r, r] + (m - k) * payoffs[r, s]) / (m - 1)
  f_s = (k * payoffs[s, r] + (m - k - 1) * payoffs[s, s]) / (m - 1)
  # prod_{k<=l} exp(-alpha (f_r - f_s)) = exp(cumsum), summed in log space.
  log_terms = np.cumsum(-alpha * (f_r - f_s))
  top = np.max(log_terms)
  if top > 700:
    return 0.0
  return float(1.0 / (1.0 + np.sum(np.exp(log_terms))))


def transition_matrix(payoffs: np.ndarray, alpha: float = 10.0,
                      population: int = 50) -> np.ndarray:
  """The Markov chain over monomorphic populations.

  Args:
    payoffs: [K, K], payoffs[i, j] agent i's mean score against agent j.
    alpha: the selection intensity.
    population: m, the number of individuals.

  Returns:
    C f64[K, K], row-stochastic: C[s, r] = rho(s -> r) / (K - 1) for r != s,
    C[s, s] = 1 - sum_r C[s, r].

  Raises:
    ValueError: `payoffs` not a non-empty square matrix, or `population` < 2.
  """
  payoffs = np.asarray(payoffs, np.float64)
  num = payoffs.shape[0]
  if payoffs.shape != (num, num) or num < 1:
    raise ValueError(f"payoffs must be a square [K, K] matrix, got shape {payoffs.shape}")
  if population < 2:
    raise ValueError(f"population must be >= 2, got {population}")
  if num == 1:
    return np.ones((1, 1))
  chain = np.zeros((num, num))
  for s in range(num):
    for r in range(num):
      if r != s:
        chain[s, r] = fixation_probability(payoffs, s, r, alpha, population) / (num - 1)
    chain[s, s] = 1.0 - chain[s].sum()
  return chain


def stationary_distribution(payoffs: np.ndarray, alpha: float = 10.0,
                            population: int = 50) -> np.ndarray:
  """The alpha-rank masses of the K agents.

  Args:
    payoffs: [K, K], payoffs[i, j] agent i's mean score against agent j.
    alpha: the selection intensity.
    population: m, the number of individuals.

  Returns:
    pi f64[K], the stationary distribution of `transition_matrix` (>= 0,
    sum 1).

  Raises:
    ValueError: as `transition_matrix`.
  """
  chain = transition_matrix(payoffs, alpha, population)
  num = chain.shape[0]
  # pi (C - I) = 0 with sum(pi) = 1, solved by least squares (exact when
  # the chain is irreducible, which every finite alpha makes it).
  system = np.vstack([(chain - np.eye(num)).T, np.ones((1, num))])
  target = np.zeros(num + 1)
  target[-1] = 1.0
  pi, *_ = np.linalg.lstsq(system, target, rcond=None)
  pi = np.clip(pi, 0.0, None)
  return pi / pi.sum()


def payoff_matrix(records, num_agents: int) -> tuple[np.ndarray, np.ndarray]:
  """The payoff matrix of K agents from the results of their games.

  Args:
    records: iterable of (i, j, score): agents i and j in 0..K-1, score of i
      in [0, 1] (1 win, 0.5 draw, 0 loss); j scores 1 - score.
    num_agents: K.

  Returns:
    (payoffs, games): payoffs f64[K, K], the mean score of i against j (0.5
    where they never met, and on the diagonal); games f64[K, K], the number
    of games between i and j (symmetric).
  """
  total = np.zeros((num_agents, num_agents))
  games = np.zeros((num_agents, num_agents))
  for i, j, score in records:
    total[i, j] += score
    total[j, i] += 1.0 - score
    games[i, j] += 1
    games[j, i] += 1
  payoffs = np.where(games > 0, total / np.maximum(games, 1), 0.5)
  np.fill_diagonal(payoffs, 0.5)
  return payoffs, games


# A score at or above 0.5 - this counts as not losing (absorbs the noise of a
# few games between equal agents).
NOT_LOSING_MARGIN = 0.1


def not_losing_mass(payoffs: np.ndarray, ranks: np.ndarray,
                    margin: float = NOT_LOSING_MARGIN) -> np.ndarray:
  """The alpha-rank score of each agent: the alpha-rank mass of the agents it
  does not lose to (the Dual MCTS paper's convergence criterion).

  Args:
    payoffs: f64[K, K], mean score of row against column.
    ranks: f64[K], the alpha-rank stationary distribution.
    margin: a mean score >= 0.5 - margin counts as not losing.

  Returns:
    f64[K].
  """
  holds = payoffs >= 0.5 - margin
  return holds.astype(np.float64) @ ranks
