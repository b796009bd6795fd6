"""Elo ratings from game records: a Bradley-Terry fit with bootstrap intervals.

Model: P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j))). A draw counts as
half a win each way. The strengths are fitted by choix's iterative Luce
spectral ranking on the matrix of (half-)wins, whose fixed point is the
maximum-likelihood estimate; `alpha` > 0 adds a small uniform rate between
every pair, which keeps a player who won (or lost) everything finite and
gives a player without games an average strength (1/N of the total). Elo = theta * 400 / ln 10,
shifted so that the reference player is 0 (then 100 Elo means a 64% expected
score). 95% intervals come from a bootstrap over games: resample the games
with replacement, refit, take percentiles (the reference's interval is 0).
"""

import dataclasses
import math

import choix
import numpy as np

ELO_PER_NAT = 400.0 / math.log(10.0)


@dataclasses.dataclass(frozen=True, eq=False)
class Ratings:
  """Elo ratings of N players (compared by identity: the fields are arrays).

  Attributes:
    elo: f64[N], ratings with `elo[reference] == 0`.
    lower: f64[N], the lower end of each rating's bootstrap confidence
      interval.
    upper: f64[N], the upper end.
    reference: the player anchored at 0.
    num_games: games the fit used.
  """
  elo: np.ndarray
  lower: np.ndarray
  upper: np.ndarray
  reference: int
  num_games: int

  def table(self, names: list[str] | None = None) -> str:
    """A Markdown table of the ratings, best first.

    Args:
      names: N player names; None: their indices.

    Returns:
      The table, one line per player.

    Raises:
      ValueError: not N names.
    """
    names = names or [str(i) for i in range(len(self.elo))]
    if len(names) != len(self.elo):
      raise ValueError(f"{len(names)} names for {len(self.elo)} players")
    lines = ["| player | Elo | 95% interval |", "|---|---|---|"]
    for i in np.argsort(-self.elo):
      lines.append(f"| {names[i]} | {self.elo[i]:.0f} | [{self.lower[i]:.0f}, "
                   f"{self.upper[i]:.0f}] |")
    return "\n".join(lines)


def _as_arrays(records, num_players: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Checked (i int[G], j int[G], score f64[G]) from (i, j, score) records."""
  if num_players < 2:
    raise ValueError(f"ratings need at least 2 players, got {num_players}")
  if len(records) == 0:
    raise ValueError("no game records")
  try:
    table = np.asarray(records, np.float64).reshape(len(records), 3)
  except ValueError:
    raise ValueError("game records must be (i, j, score) triples") from None
  first, second, score = table[:, 0], table[:, 1], table[:, 2]
  for players in (first, second):
    if np.any(players != np.round(players)) or np.any((players < 0) | (players >= num_players)):
      raise ValueError(f"player indices must be integers in [0, {num_players})")
  if np.any(first == second):
    raise ValueError("a game record pairs a player with itself")
  if np.any((score < 0) | (score > 1)) or np.any(np.isnan(score)):
    raise ValueError("scores must be in [0, 1] (1 win, 0.5 draw, 0 loss for the first player)")
  return first.astype(np.int64), second.astype(np.int64), score


def win_matrix(first: np.ndarray, second: np.ndarray, score: np.ndarray,
               num_players: int) -> np.ndarray:
  """The wins of each player over each other, a draw half a win each way.

  Args:
    first: int[G], the first player of each game.
    second: int[G], the second player.
    score: f64[G], the first player's result (1 win, 0.5 draw, 0 loss).
    num_players: N.

  Returns:
    f64[N, N], entry [i, j] the wins of i over j.
  """
  wins = np.zeros((num_players, num_players))
  np.add.at(wins, (first, second), score)
  np.add.at(wins, (second, first), 1.0 - score)
  return wins


def bradley_terry(wins: np.ndarray, alpha: float = 0.01) -> np.ndarray:
  """Bradley-Terry log-strengths from a win matrix.

  Args:
    wins: f64[N, N], `win_matrix`.
    alpha: regularisation (> 0), keeps unbeaten players finite.

  Returns:
    f64[N] log-strengths (natural-log units, mean 0).

  Raises:
    ValueError: `alpha` <= 0.
  """
  if alpha <= 0:
    raise ValueError(f"alpha must be > 0 (it keeps unbeaten players finite), got {alpha}")
  return np.asarray(choix.ilsr_pairwise_dense(wins, alpha=alpha, max_iter=10_000), np.float64)


def fit(records, num_players: int, reference: int = 0, alpha: float = 0.01,
        num_bootstrap: int = 200, confidence: float = 0.95, seed: int = 0) -> Ratings:
  """Elo ratings with bootstrap intervals from game records.

  Args:
    records: (i, j, score) per game, score player i's result (1 win, 0.5
      draw, 0 loss), as `mcgs_jax.learning.arena.round_robin` returns.
    num_players: N; players are 0..N-1.
    reference: the player rated 0.
    alpha: regularisation of the fit (see the module docstring).
    num_bootstrap: refits on resampled games (0: intervals equal the fit).
    confidence: coverage of the percentile interval.
    seed: seed of the resampling.

  Returns:
    Ratings.

  Raises:
    ValueError: on malformed records or arguments.
  """
  first, second, score = _as_arrays(records, num_players)
  if not 0 <= reference < num_players:
    raise ValueError(f"reference must be a player in [0, {num_players}), got {reference}")
  if not 0 < confidence < 1:
    raise ValueError(f"confidence must be in (0, 1), got {confidence}")
  if num_bootstrap < 0:
    raise ValueError(f"num_bootstrap must be >= 0, got {num_bootstrap}")

  def elo_of(games):
    theta = bradley_terry(win_matrix(first[games], second[games], score[games], num_players),
                          alpha)
    return (theta - theta[reference]) * ELO_PER_NAT

  num_games = len(score)
  elo = elo_of(np.arange(num_games))
  if num_bootstrap == 0:
    return Ratings(elo=elo, lower=elo.copy(), upper=elo.copy(), reference=reference,
                   num_games=num_games)
  rng = np.random.default_rng(seed)
  samples = np.stack([elo_of(rng.integers(0, num_games, num_games))
                      for _ in range(num_bootstrap)])
  tail = 100 * (1 - confidence) / 2
  lower, upper = np.percentile(samples, [tail, 100 - tail], axis=0)
  return Ratings(elo=elo, lower=lower, upper=upper, reference=reference, num_games=num_games)
