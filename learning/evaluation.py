"""Evaluation while training: exact ground truth and the arena.

Every `eval_every` iterations the training loop (`mcgs_jax.learning.loop`) calls
`evaluate_iteration`, which

* measures the raw policy (argmax of the prior over legal moves) and a
  fixed-budget search (`eval_simulations`, no root noise) against exact
  values (`mcgs_jax.learning.ground_truth`): Connect-4 error rates on Pons' sets,
  value-keeping move rates for tic-tac-toe, Nim and HSR; columns `policy_*`
  and `search_*`;
* saves the network as a snapshot (`DIR/snapshots/iteration_N.msgpack`);
* with `arena_games > 0`, plays the current agent (search, `arena_simulations`)
  against the previous snapshot and against the fixed baseline (MCGS with
  random rollouts, `baseline_simulations`), both colours, random openings,
  and fits Elo ratings (Bradley-Terry, bootstrap 95% interval) over all
  arena games so far with the baseline at 0: columns `arena_prev_score`,
  `arena_baseline_score` (mean score in [0, 1]), `elo`, `elo_low`,
  `elo_high`.
"""

import math
import os
import re
import statistics
from typing import Any

import jax

from mcgs_jax.envs import connect4
from mcgs_jax.learning import agents
from mcgs_jax.learning import arena
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import elo
from mcgs_jax.learning import ground_truth

BASELINE = "baseline"


def snapshot_path(directory: str, iteration: int) -> str:
  """Where the snapshot of `iteration` lives.

  Args:
    directory: the run directory.
    iteration: the training iteration.

  Returns:
    DIR/snapshots/iteration_NNNNNN.msgpack.
  """
  return os.path.join(directory, "snapshots", f"iteration_{iteration:06d}.msgpack")


def snapshot_iterations(directory: str) -> list[int]:
  """The iterations that have a snapshot in `directory`.

  Args:
    directory: the run directory.

  Returns:
    The iterations of DIR/snapshots/iteration_NNNNNN.msgpack, ascending ([]
    without any).
  """
  folder = os.path.join(directory, "snapshots")
  if not os.path.isdir(folder):
    return []
  found = [re.fullmatch(r"iteration_(\d+)\.msgpack", name) for name in os.listdir(folder)]
  return sorted(int(m.group(1)) for m in found if m)


def save_snapshot(directory: str, iteration: int, variables: Any) -> str:
  """Writes the network's variables as the snapshot of `iteration`.

  Args:
    directory: the run directory.
    iteration: the training iteration.
    variables: the network variables.

  Returns:
    The path written (`snapshot_path`).
  """
  path = snapshot_path(directory, iteration)
  checkpoint.write_variables(path, variables)
  return path


def ground_truth_figures(env, eval_fn, variables, rng, config) -> dict[str, float]:
  """Exact figures of the raw policy and of the fixed-budget search.

  Args:
    env: the env.
    eval_fn: the network's eval_fn (hashable).
    variables: the network variables.
    rng: a PRNG key.
    config: the TrainConfig (`eval_simulations`, `eval_positions`).

  Returns:
    {"policy_<figure>": value, "search_<figure>": value}, and for Connect-4
    the value head's `value_c4_error_<set>`
    (`ground_truth.connect4_value_errors`); {} for an env without ground
    truth.
  """
  policy = agents.PolicyAgent(eval_fn=eval_fn, params=variables, name="policy")
  search = agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables,
                              config=config.search_config(noise=False),
                              name="search")
  figures = {}
  limits = dict(positions_per_set=config.eval_positions)
  for prefix, agent in (("policy", policy), ("search", search)):
    try:
      values = ground_truth.evaluate(env, agent, rng, **limits)
    except ValueError:
      return {}   # No ground truth for this env.
    figures.update({f"{prefix}_{k}": v for k, v in values.items()})
  if isinstance(env, connect4.Connect4):
    values = ground_truth.connect4_value_errors(eval_fn, variables, rng, **limits)
    figures.update({f"value_{k}": v for k, v in values.items()})
  return figures


def connect4_error_summary(env, eval_fn, variables, rng, config) -> dict[str, float]:
  """Pons error rates of one Connect-4 network, per set and averaged.

  Args:
    env: the Connect-4 env.
    eval_fn: the network's eval_fn.
    variables: the network variables.
    rng: a PRNG key.
    config: the TrainConfig (`eval_simulations`, `eval_positions`).

  Returns:
    {"<kind>_<set>": error, "<kind>_mean": mean over the six sets} for the
    kinds `search` (the fixed-budget search), `policy` (the raw policy),
    `value` (the outcome read from the value head) and `value_sign` (the
    value's sign alone).
  """
  figures = ground_truth_figures(env, eval_fn, variables, rng, config)
  row = {}
  for kind, prefix in (("search", "search_c4_error"), ("policy", "policy_c4_error"),
                       ("value", "value_c4_error"), ("value_sign", "value_c4_sign_error")):
    errors = [figures[f"{prefix}_{s}"] for s in ground_truth.C4_SETS]
    row.update({f"{kind}_{s}": e for s, e in zip(ground_truth.C4_SETS, errors)})
    row[f"{kind}_mean"] = sum(errors) / len(errors)
  return row


def evaluate_iteration(config, env, eval_fn, variables, rng, iteration: int, *, directory: str,
                       rows: list[dict], arena_records: list[tuple]
                       ) -> tuple[dict[str, float], list[tuple]]:
  """The evaluation figures of a training run's network at `iteration`.

  Also saves the network as the snapshot of `iteration`.

  Args:
    config: the run's TrainConfig.
    env: the env.
    eval_fn: the network's eval_fn.
    variables: the network variables (on the host).
    rng: a PRNG key.
    iteration: the training iteration.
    directory: the run directory (snapshots).
    rows: the metrics rows so far (the previous snapshot is the last row
      with "snapshot").
    arena_records: the arena games so far, (a, b, score of a in [0, 1]).

  Returns:
    (row, arena_records): the figures (module docstring: ground truth,
    `snapshot`, and with arena games the arena scores and Elo columns) and
    the arena records with this evaluation's games added.
  """
  truth_rng, arena_rng = jax.random.split(rng)
  row = ground_truth_figures(env, eval_fn, variables, truth_rng, config)
  previous = [r["iteration"] for r in rows if "snapshot" in r]
  save_snapshot(directory, iteration, variables)
  row["snapshot"] = 1
  if config.arena_games <= 0:
    return row, list(arena_records)
  search_config = config.search_config(config.arena_simulations, noise=False)
  current = agents.SearchAgent(env=env, eval_fn=eval_fn, params=variables,
                               config=search_config, name=f"iteration {iteration}")
  baseline = agents.rollout_baseline(env, config.baseline_simulations)
  records = list(arena_records)
  result = arena.play_games(env, current, baseline, jax.random.fold_in(arena_rng, 0),
                            config.arena_games)
  row["arena_baseline_score"] = (result.mean_score + 1) / 2
  records += [(iteration, BASELINE, (float(s) + 1) / 2) for s in result.scores]
  if previous:
    prev_variables = checkpoint.read_variables(snapshot_path(directory, previous[-1]),
                                              variables)
    prev = agents.SearchAgent(env=env, eval_fn=eval_fn, params=prev_variables,
                              config=search_config, name=f"iteration {previous[-1]}")
    result = arena.play_games(env, current, prev, jax.random.fold_in(arena_rng, 1),
                              config.arena_games)
    row["arena_prev_score"] = (result.mean_score + 1) / 2
    records += [(iteration, previous[-1], (float(s) + 1) / 2) for s in result.scores]
  ratings, names = ladder(records)
  index = names.index(iteration)
  row.update(elo=float(ratings.elo[index]), elo_low=float(ratings.lower[index]),
             elo_high=float(ratings.upper[index]))
  return row, records


def ladder(records, baseline: Any = BASELINE) -> tuple[elo.Ratings, list]:
  """Elo of every player of `records`, `baseline` at 0.

  The other players follow it in order, iterations (ints or digit strings)
  by number.

  Args:
    records: [(a, b, score of a in [0, 1])] game records, players by name.
    baseline: the reference player's name.

  Returns:
    (ratings, names): Ratings of the N players and their names in rating
    order (baseline first).
  """
  def order(name):
    text = str(name)
    return (not text.isdigit(), int(text) if text.isdigit() else 0, text)

  names = [baseline] + sorted({p for a, b, _ in records for p in (a, b)} - {baseline}, key=order)
  index = {name: i for i, name in enumerate(names)}
  games = [(index[a], index[b], s) for a, b, s in records]
  return elo.fit(games, len(names), reference=0, num_bootstrap=200), names


ELO_FIELDS = ("player", "elo", "elo_low", "elo_high", "games")


def elo_table(records, baseline: Any = BASELINE) -> tuple[list[dict], elo.Ratings, list]:
  """The `ladder` of `records` as rows of `ELO_FIELDS` (one per player).

  Args:
    records: [(a, b, score of a in [0, 1])] game records, players by name.
    baseline: the reference player's name (Elo 0).

  Returns:
    (rows, ratings, names): the rows in rating order, elo rounded to 0.1,
    `games` each player's number of games; and `ladder`'s ratings and names.
  """
  ratings, names = ladder(records, baseline=baseline)
  rows = [dict(player=name, elo=round(float(ratings.elo[i]), 1),
               elo_low=round(float(ratings.lower[i]), 1),
               elo_high=round(float(ratings.upper[i]), 1),
               games=sum(1 for a, b, _ in records if name in (a, b)))
          for i, name in enumerate(names)]
  return rows, ratings, names


def mean_c4_error(row: dict, column: str = "search_c4_error") -> float:
  """One metrics row's error averaged over Pons' six sets.

  Args:
    row: a metrics row (numbers, or text as read from metrics.csv).
    column: the columns' prefix: `search_c4_error`, `policy_c4_error`,
      `value_c4_error` or `value_c4_sign_error`.

  Returns:
    The mean of the six `{column}_{set}` values; NaN where the row holds no
    Connect-4 evaluation.
  """
  values = [row.get(f"{column}_{name}") for name in ground_truth.C4_SETS]
  if any(value in ("", None) for value in values):
    return math.nan
  return sum(float(value) for value in values) / len(values)


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
  """The Wilson score interval of a binomial proportion.

  Args:
    successes: k of the n trials.
    n: the trials; 0 gives the whole range.
    z: the normal quantile (1.96: 95%).

  Returns:
    (low, high) within [0, 1].
  """
  if n == 0:
    return 0.0, 1.0
  p = successes / n
  centre = (p + z * z / (2 * n)) / (1 + z * z / n)
  half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
  return max(0.0, centre - half), min(1.0, centre + half)


# Two-sided 95% Student-t quantiles by degrees of freedom (a normal's 1.96 beyond).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def seed_interval(values: list[float]) -> tuple[float, float, float]:
  """Mean and 95% Student-t interval of a figure over runs (seeds).

  Args:
    values: one value per run; NaN values are left out.

  Returns:
    (mean, low, high); NaN bounds with fewer than 2 values, all NaN with none.
  """
  values = [v for v in values if not math.isnan(v)]
  if not values:
    return math.nan, math.nan, math.nan
  mean = statistics.mean(values)
  if len(values) < 2:
    return mean, math.nan, math.nan
  half = _T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
  return mean, mean - half, mean + half
