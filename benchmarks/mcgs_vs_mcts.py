"""MCGS against MCTS with trained evaluators: the matches, timings, memory
and accuracy figures of `mcgs-jax mcgs-vs-mcts` (its command line is
`mcgs_jax.experiments.mcgs_vs_mcts`).

Searches are `SearchConfig` backup modes: `mcgs` (the graph with corrected
backpropagation, the reference of every match), `tree` (AlphaZero MCTS),
`tt_cache` (a tree reusing network results of transpositions) and `katago`.
Every agent plays deterministically (most visited move, no root noise).

* Equal evaluations: budget `max_nn_evals = E` per move (the root's
  evaluation included), `num_simulations = 4 E` as the cap on simulations.
* Equal time: each mode's time per move is measured at several budgets on the
  match's openings and batch size (interleaved, after compiling), and each
  mode plays mcgs@E with the budget whose interpolated time per move equals
  mcgs@E's (log-log interpolation); the realised times are recorded too.
  Batched search on a shared CPU: a per-move time limit cannot be enforced
  inside a jitted batched search, so "equal time" is equal mean time.
* Connect-4 openings: positions of Pons' set L1_R3 whose exact score is
  within +-`--max-score` (drawn, or won only with one of the last stones),
  each played twice with colours swapped. Networks: `shipped` is
  networks/pretrained/connect4 (the end of the v7 run, a ResMLP), `v3` the
  agent shipped before it (iteration 1788 of docs/learning/runs/connect4_v3),
  `v2` the one before that (iteration 1005 of docs/learning/runs/connect4),
  `v1` the one before that (iteration 440 of docs/learning/runs/connect4_v1),
  `weak` that run's snapshot at iteration 10.
* Nim: a deliberately imperfect evaluator (`NoisyNimEval`): the exact value
  (+-1 from the nim-sum) halved plus a fixed pseudo-random offset per position
  in [-noise, noise], and pseudo-random prior logits; about (1 - 0.5/noise)/2
  of the positions get a value of the wrong sign. Openings: distinct
  positions after `--nim-plies` random moves (2 by default; Nim (1,3,5,7)
  has only 98 of them, 265 after 3 moves).

Elo: `mcgs_jax.learning.elo.fit` of each match (two players, the mcgs side at 0) with
a bootstrap 95% interval. Stats per search (means over the agent's searches):
network evaluations, simulations, nodes stored, bytes in use (nodes times
the bytes of a node with its edges, plus the hash table) and ms per move
(batch wall time divided by the batch, the agent's first call, which may
compile, left out).

Resumable: every finished match appends its games to OUT/games.csv and its
summary to OUT/matches.csv; a match already there with the same number of
games is skipped when the command runs again. The equal-time part also reuses
the times per move of OUT/timing.csv measured on the same openings, so a rerun
plays the same budgets. Where a pairing was played more than once (other
openings), the plots and summaries take its match of the most games.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax.benchmarks import accuracy as accuracy_lib
from mcgs_jax.benchmarks import measure
from mcgs_jax.envs import connect4
from mcgs_jax.envs import evaluators
from mcgs_jax.envs import exhaustive
from mcgs_jax.envs import nim
from mcgs_jax.envs import pons
from mcgs_jax.learning import agents
from mcgs_jax.learning import arena
from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import elo
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import loop
from mcgs_jax.learning import plots
from mcgs_jax.benchmarks.names import ABLATIONS, NETWORKS, RUN

MODES = mcgs_jax.modes.names()
REFERENCE = "mcgs"
WEAK_ITERATION = 10
SIMULATIONS_PER_EVAL = 4
NIM_SIMULATIONS_PER_EVAL = 16
STATS = ("nn_evals", "simulations", "nodes", "bytes", "ms_per_move", "max_nn_evals",
         "overflows")
MATCH_FIELDS = (("part", "env", "network", "a", "b", "budget_a", "budget_b", "games",
                 "wins", "draws", "losses", "score", "elo", "elo_low", "elo_high")
                + tuple(f"{side}_{s}" for side in ("a", "b") for s in STATS))
GAME_FIELDS = ("part", "env", "network", "a", "b", "game", "score")
MEMORY_FIELDS = ("env", "network", "mode", "simulations", "nn_evals", "nodes", "bytes_in_use",
                 "bytes_allocated", "transposition_hits", "tt_cache_hits")
TIMING_FIELDS = ("env", "network", "openings", "mode", "budget", "ms_per_move")
ACCURACY_FIELDS = ("set", "network", "search", "budget", "positions", "preserving",
                   "preserving_lo", "preserving_hi", "optimal", "optimal_lo", "optimal_hi",
                   "ms_per_move", "nodes")


# ----------------------------------------------------------------- evaluators


# The Nim evaluator of these matches lives with the other evaluators.


def wrong_sign_fraction(env: nim.Nim, eval_fn: Any) -> float:
  """Share of the non-terminal positions of `env` whose value `eval_fn` gets
  on the wrong side of 0 (a tie counts as wrong).

  Args:
    env: a `mcgs_jax.envs.nim.Nim` env.
    eval_fn: an evaluator `(params, rng, states) -> (logits, value)`.

  Returns:
    float in [0, 1].
  """
  positions = [p for p in nim.all_positions(env) if sum(p) > 0]
  states = envs.stack([nim.state_from_piles(env, p) for p in positions])
  _, value = eval_fn(None, None, states)
  exact = np.array([-1.0 if nim.lost_for_mover(env, p) else 1.0 for p in positions])
  return float(np.mean(np.sign(np.asarray(value)) != exact))


# ---------------------------------------------------------------- the context


@dataclasses.dataclass(frozen=True, eq=False)
class Setting:
  """A game, its evaluator and the openings of its matches."""
  env: Any
  eval_fn: Any
  params: Any
  network: str
  openings: Any   # a batch of states [N]
  simulations_per_eval: int = SIMULATIONS_PER_EVAL

  @property
  def num_openings(self) -> int:
    """N, the number of openings (each played twice per match)."""
    return len(np.asarray(self.openings.ply))


def load_network(name: str):
  """(env, eval_fn, params) of a Connect-4 network: `shipped`
  (networks/pretrained/connect4), `v3` (the agent shipped before it, the end
  of docs/learning/runs/connect4_v3), `v2` (the one before that, the end of
  docs/learning/runs/connect4), `v1` (the end of docs/learning/runs/connect4_v1)
  or `weak` (that run's snapshot at WEAK_ITERATION).

  Args:
    name: one of `names.NETWORKS`.

  Returns:
    (env, eval_fn, params).
  """
  if name not in NETWORKS:
    raise ValueError(f"network must be one of {sorted(NETWORKS)}, got {name!r}")
  env, eval_fn, params = checkpoint.load_agent(NETWORKS[name])
  if name == "weak":
    params = checkpoint.read_variables(evaluation.snapshot_path(RUN, WEAK_ITERATION), params)
  return env, eval_fn, params


def connect4_openings(count: int, max_score: int = 2, set_name: str = "L1_R3") -> list[str]:
  """Move strings of the first `count` positions of a Pons set whose exact
  score (Pons' scale, for the side to move) is within +-max_score.

  Args:
    count: the most positions returned.
    max_score: the largest |score| kept.
    set_name: the Pons set (`mcgs_jax.envs.pons`).

  Returns:
    list of move strings (columns 1-7).
  """
  chosen = []
  for moves, scores in pons.read_columns(set_name):
    if abs(-min(v for v in scores if v is not None)) <= max_score:
      chosen.append(moves)
    if len(chosen) == count:
      break
  return chosen


def connect4_setting(network: str, count: int, max_score: int = 2) -> Setting:
  """The Connect-4 setting of a network: its evaluator and the openings of
  `connect4_openings`.

  Args:
    network: one of `names.NETWORKS`.
    count: the most openings.
    max_score: the openings' largest |score|.

  Returns:
    the Setting.
  """
  env, eval_fn, params = load_network(network)
  openings = envs.stack([connect4.from_moves(m) for m in connect4_openings(count, max_score)])
  return Setting(env=env, eval_fn=eval_fn, params=params, network=network, openings=openings)


def nim_openings(env: Any, count: int, plies: int = 2, seed: int = 0) -> Any:
  """At most `count` distinct running positions after `plies` random moves.

  Args:
    env: a Nim env.
    count: the most positions drawn.
    plies: random moves from the start.
    seed: the draw's seed.

  Returns:
    a batch of states [M], M <= count.
  """
  states = jax.tree.map(np.asarray, arena.random_openings(env, jax.random.PRNGKey(seed),
                                                          count, plies))
  _, first = np.unique(exhaustive.key_ints(states.key), return_index=True)
  return jax.tree.map(lambda x: jnp.asarray(x[np.sort(first)]), states)


def nim_setting(env_id: str, count: int, noise: float = 0.8, plies: int = 2) -> Setting:
  """A Nim setting: `NoisyNimEval` as the evaluator and `nim_openings`.

  Args:
    env_id: a Nim env id (`mcgs_jax.envs.make`).
    count: the most openings.
    noise: the evaluator's noise.
    plies: random moves before each opening.

  Returns:
    the Setting.
  """
  env = envs.make(env_id)
  # Transpositions make many simulations free in Nim: a higher cap lets
  # mcgs spend its evaluations.
  return Setting(env=env, eval_fn=evaluators.NoisyNimEval(env, noise=noise), params=None,
                 network=f"noisy{noise:g}", openings=nim_openings(env, count, plies),
                 simulations_per_eval=NIM_SIMULATIONS_PER_EVAL)


# ------------------------------------------------------------------- searches


def budget_config(backup: str, evals: int, simulations_per_eval: int = SIMULATIONS_PER_EVAL,
                  **switches) -> mcgs_jax.SearchConfig:
  """A search of `evals` network evaluations per move, at most
  `simulations_per_eval * evals` simulations (the cap a search that cannot
  spend its evaluations, near a game's end, stops at).

  The node capacity is `evals + 1` where every stored node costs an
  evaluation (mcgs, tree, katago), so no mode pays for memory it cannot use;
  a mode that caches evaluations (tt_cache) also stores cached copies, so it
  keeps the default capacity.

  Args:
    backup: the backup mode (`mcgs_jax.modes`).
    evals: network evaluations per move.
    simulations_per_eval: the simulation cap per evaluation.
    **switches: further `SearchConfig` fields (the enhancements).

  Returns:
    the SearchConfig.
  """
  simulations = simulations_per_eval * evals
  max_nodes = None if mcgs_jax.modes.get(backup).caches_evaluations else evals + 1
  return mcgs_jax.SearchConfig(num_simulations=simulations, backup=backup, max_nn_evals=evals,
                               max_nodes=max_nodes, **switches)


def make_agent(setting: Setting, config: mcgs_jax.SearchConfig, name: str) -> agents.MeasuredAgent:
  """An agent that plays `config`'s search with the setting's evaluator and
  records its statistics.

  Args:
    setting: the game and evaluator.
    config: its SearchConfig.
    name: the agent's name (`mode@budget`).

  Returns:
    the MeasuredAgent.
  """
  return agents.MeasuredAgent(env=setting.env, eval_fn=setting.eval_fn, params=setting.params,
                       config=config, name=name)


# -------------------------------------------------------------------- matches


def match_elo(scores: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
  """A's Elo relative to B (at 0) and its bootstrap 95% interval, from A's
  per-game results (+1, 0, -1).

  Args:
    scores: f32[G], A's result per game.
    seed: the bootstrap's seed.

  Returns:
    (elo, low, high).
  """
  records = [(0, 1, (float(s) + 1.0) / 2.0) for s in scores]
  ratings = elo.fit(records, 2, reference=1, seed=seed)
  return float(ratings.elo[0]), float(ratings.lower[0]), float(ratings.upper[0])


def play_match(setting: Setting, part: str, a: agents.MeasuredAgent, b: agents.MeasuredAgent,
               budget_a: Any, budget_b: Any, seed: int = 0, out: str | None = None) -> dict:
  """Plays a (every opening, both colours) against b; returns the match row
  and, with `out`, appends it and its games to OUT/matches.csv, games.csv.

  Args:
    setting: the game, evaluator and openings.
    part: the experiment part the row is filed under.
    a: the first agent.
    b: the second agent.
    budget_a: a's budget (the row's `budget_a`).
    budget_b: b's budget.
    seed: the match's seed.
    out: the output folder, or None (nothing written).

  Returns:
    the match row (`MATCH_FIELDS`).
  """
  result = arena.play_games(setting.env, a, b, jax.random.PRNGKey(seed),
                            openings=setting.openings)
  rating, low, high = match_elo(result.scores, seed)
  row = dict(part=part, env=setting.env.id, network=setting.network, a=a.name, b=b.name,
             budget_a=budget_a, budget_b=budget_b, games=len(result.scores), wins=result.wins,
             draws=result.draws, losses=result.losses,
             score=round((result.mean_score + 1) / 2, 4), elo=round(rating, 1),
             elo_low=round(low, 1), elo_high=round(high, 1))
  for side, agent in (("a", a), ("b", b)):
    row.update({f"{side}_{k}": v for k, v in agent.summary().items()})
  if out:
    measure.append_csv(os.path.join(out, "games.csv"),
               [dict(part=part, env=setting.env.id, network=setting.network, a=a.name, b=b.name,
                     game=g, score=(float(s) + 1) / 2) for g, s in enumerate(result.scores)],
               GAME_FIELDS)
    measure.append_csv(os.path.join(out, "matches.csv"), [row], MATCH_FIELDS)
  return row


def _done(out: str | None) -> set:
  """Keys (`_match_key`) of the matches in OUT/matches.csv."""
  if not out:
    return set()
  return {(r["part"], r["env"], r["network"], r["a"], r["b"], int(r["games"]))
          for r in loop.read_metrics(os.path.join(out, "matches.csv"))}


def _match_key(part: str, setting: Setting, a_name: str, b_name: str) -> tuple:
  """A match's key in `_done`: the pairing and its number of games (each
  opening twice)."""
  return (part, setting.env.id, setting.network, a_name, b_name,
          2 * setting.num_openings)


def _mode_of(agent_name: str) -> str:
  """The search mode of an agent named `mode@budget`."""
  return agent_name.split("@")[0]


def largest_matches(rows: list[dict]) -> list[dict]:
  """One row per pairing (part, env, network, a, b): the one of the most
  games, the later on a tie; sorted by part, env, network and b's budget,
  pairings of equal ones in the order of their first rows. At equal time a
  is its mode (its budget comes from a calibration, which another run on
  other openings sets differently).

  Args:
    rows: rows of OUT/matches.csv.

  Returns:
    the chosen rows.
  """
  best, order = {}, []
  for r in rows:
    a = _mode_of(r["a"]) if r["part"] == "time" else r["a"]
    key = (r["part"], r["env"], r["network"], a, r["b"])
    if key not in best:
      order.append(key)
      best[key] = r
    elif int(r["games"]) >= int(best[key]["games"]):
      best[key] = r
  first = {k: i for i, k in enumerate(order)}
  order.sort(key=lambda k: (k[:3], _num(best[k]["budget_b"]), first[k]))
  return [best[k] for k in order]


def _print_row(row: dict) -> None:
  print(f"{row['part']:>9} {row['env']} {row['network']}: {row['a']} vs {row['b']}: "
        f"{row['wins']}-{row['draws']}-{row['losses']} Elo {row['elo']:+.0f} "
        f"[{row['elo_low']:+.0f}, {row['elo_high']:+.0f}]  evals {row['a_nn_evals']}/"
        f"{row['b_nn_evals']} nodes {row['a_nodes']}/{row['b_nodes']} ms "
        f"{row['a_ms_per_move']}/{row['b_ms_per_move']}", flush=True)


def equal_evals(setting: Setting, modes, budgets, part: str = "evals", out: str | None = None,
                seed: int = 0) -> list[dict]:
  """Each mode against mcgs at the same evaluation budget, per budget.

  Args:
    setting: the game, evaluator and openings.
    modes: the modes played against mcgs.
    budgets: evaluations per move.
    part: the part the rows are filed under.
    out: the output folder (resumable), or None.
    seed: the matches' seed.

  Returns:
    the match rows (those already in OUT skipped).
  """
  rows, done = [], _done(out)
  for budget in budgets:
    for mode in modes:
      if mode == REFERENCE:
        continue
      a_name, b_name = f"{mode}@{budget}", f"{REFERENCE}@{budget}"
      if _match_key(part, setting, a_name, b_name) in done:
        continue
      a = make_agent(setting, budget_config(mode, budget, setting.simulations_per_eval), a_name)
      b = make_agent(setting, budget_config(REFERENCE, budget, setting.simulations_per_eval),
                     b_name)
      rows.append(play_match(setting, part, a, b, budget, budget, seed, out))
      _print_row(rows[-1])
  return rows


def time_per_move(setting: Setting, configs: dict, repeats: int = 3, seed: int = 0) -> dict:
  """Median ms per move of each config on the openings (batch = their
  number, as in a match), the configs interleaved in every repeat.

  Args:
    configs: name -> SearchConfig.

  Returns:
    name -> ms per move.
  """
  states = setting.openings
  batch = len(np.asarray(states.ply))
  rng = jax.random.PRNGKey(seed)

  def call(config):
    out = agents.measured_search(setting.params, rng, states, setting.env, setting.eval_fn, config)
    jax.block_until_ready(out)

  for config in configs.values():
    call(config)   # compile
  times = {name: [] for name in configs}
  for _ in range(repeats):
    for name, config in configs.items():
      start = time.perf_counter()
      call(config)
      times[name].append(time.perf_counter() - start)
  return {name: 1e3 * float(np.median(t)) / batch for name, t in times.items()}


def budget_for_time(budgets, ms, target_ms: float) -> int:
  """The budget whose time per move is `target_ms`, interpolated (and at the
  ends extrapolated) linearly in log-log from measured (budget, ms) pairs.

  Args:
    budgets: the measured budgets, increasing.
    ms: their times per move.
    target_ms: the time to match.

  Returns:
    int, the budget (at least 1).
  """
  order = np.argsort(budgets)
  log_b = np.log(np.asarray(budgets, np.float64)[order])
  log_t = np.log(np.maximum(np.asarray(ms, np.float64)[order], 1e-9))
  # Time is monotone in the budget up to noise: keep it so for interpolation.
  log_t = np.maximum.accumulate(log_t)
  target = math.log(target_ms)
  if target <= log_t[0] or target >= log_t[-1]:
    i = 0 if target <= log_t[0] else len(log_t) - 2
    slope = (log_t[i + 1] - log_t[i]) / max(log_b[i + 1] - log_b[i], 1e-9)
    slope = max(slope, 0.1)
    estimate = log_b[i] + (target - log_t[i]) / slope
  else:
    estimate = np.interp(target, log_t, log_b)
  return max(1, int(round(math.exp(estimate))))


def measured_times(out: str | None, setting: Setting, configs: dict) -> dict | None:
  """The times per move of OUT/timing.csv for every (mode, budget) of
  `configs` measured on this setting's game, network and number of openings
  (the latest of each), or None when any is missing.

  Args:
    out: the output folder, or None.
    setting: the game, evaluator and openings.
    configs: (mode, budget) -> SearchConfig.

  Returns:
    (mode, budget) -> ms per move, or None.
  """
  if not out:
    return None
  count = str(setting.num_openings)
  found = {}
  for r in loop.read_metrics(os.path.join(out, "timing.csv")):
    if (r["env"], r["network"], r.get("openings")) == (setting.env.id, setting.network, count):
      found[(r["mode"], int(r["budget"]))] = float(r["ms_per_move"])
  if not all(key in found for key in configs):
    return None
  return {key: found[key] for key in configs}


def equal_time(setting: Setting, modes, budgets, out: str | None = None, seed: int = 0,
               grid_factor: int = 2) -> list[dict]:
  """Each mode at the budget that takes mcgs@E's time per move, against
  mcgs@E, per E in `budgets`.

  Args:
    setting: the game, evaluator and openings.
    modes: the modes played against mcgs.
    budgets: mcgs's evaluations per move, E.
    out: the output folder (resumable), or None.
    seed: the matches' seed.
    grid_factor: how far beyond E the timing grid reaches.

  Returns:
    the match rows.
  """
  grid = sorted(set(budgets) | {grid_factor * max(budgets)} | {max(1, min(budgets) // 2)})
  configs = {(mode, b): budget_config(mode, b, setting.simulations_per_eval)
             for mode in modes for b in grid}
  ms = measured_times(out, setting, configs)
  if ms is None:
    ms = time_per_move(setting, configs, seed=seed)
    if out:
      measure.append_csv(os.path.join(out, "timing.csv"),
                 [dict(env=setting.env.id, network=setting.network,
                       openings=setting.num_openings, mode=m, budget=b,
                       ms_per_move=round(t, 3)) for (m, b), t in ms.items()], TIMING_FIELDS)
  rows, done = [], _done(out)
  for budget in budgets:
    target = ms[(REFERENCE, budget)]
    for mode in modes:
      if mode == REFERENCE:
        continue
      mode_budget = budget_for_time(grid, [ms[(mode, b)] for b in grid], target)
      a_name, b_name = f"{mode}@{mode_budget}", f"{REFERENCE}@{budget}"
      if _match_key("time", setting, a_name, b_name) in done:
        continue
      a = make_agent(setting, budget_config(mode, mode_budget, setting.simulations_per_eval),
                     a_name)
      b = make_agent(setting, budget_config(REFERENCE, budget, setting.simulations_per_eval),
                     b_name)
      rows.append(play_match(setting, "time", a, b, mode_budget, budget, seed, out))
      _print_row(rows[-1])
  return rows


def ablation(setting: Setting, budget: int, names=tuple(ABLATIONS), out: str | None = None,
             seed: int = 0) -> list[dict]:
  """mcgs with each enhancement (ABLATIONS) against plain mcgs, both at
  `budget` evaluations per move.

  Args:
    setting: the game, evaluator and openings.
    budget: evaluations per move.
    names: the `names.ABLATIONS` to play.
    out: the output folder (resumable), or None.
    seed: the matches' seed.

  Returns:
    the match rows.
  """
  rows, done = [], _done(out)
  b_name = f"{REFERENCE}@{budget}"
  for name in names:
    a_name = f"{REFERENCE}+{name}@{budget}"
    if _match_key("ablation", setting, a_name, b_name) in done:
      continue
    a = make_agent(setting, budget_config(REFERENCE, budget, setting.simulations_per_eval,
                                          **ABLATIONS[name]), a_name)
    b = make_agent(setting, budget_config(REFERENCE, budget, setting.simulations_per_eval), b_name)
    rows.append(play_match(setting, "ablation", a, b, budget, budget, seed, out))
    _print_row(rows[-1])
  return rows


# --------------------------------------------------------- memory and accuracy


def memory(setting: Setting, modes, simulations_list, seed: int = 0) -> list[dict]:
  """Nodes and bytes per search at equal simulations (no evaluation budget),
  means over the openings.

  Args:
    setting: the game, evaluator and openings.
    modes: the modes measured.
    simulations_list: the simulation counts.
    seed: the searches' seed.

  Returns:
    rows of `MEMORY_FIELDS`.
  """
  rows = []
  for simulations in simulations_list:
    for mode in modes:
      config = mcgs_jax.SearchConfig(num_simulations=simulations, backup=mode)
      _, stats = agents.measured_search(setting.params, jax.random.PRNGKey(seed), setting.openings,
                                  setting.env, setting.eval_fn, config)
      stats = {k: float(np.asarray(v).mean()) for k, v in stats.items()}
      per_node, table, allocated = agents.graph_bytes(setting.env, setting.eval_fn, config,
                                               setting.params)
      rows.append(dict(env=setting.env.id, network=setting.network, mode=mode,
                       simulations=simulations, nn_evals=round(stats["nn_evals"], 1),
                       nodes=round(stats["nodes"], 1),
                       bytes_in_use=round(stats["nodes"] * per_node + table),
                       bytes_allocated=allocated,
                       transposition_hits=round(stats["transposition_hits"], 1),
                       tt_cache_hits=round(stats["tt_cache_hits"], 1)))
      print(measure.markdown_table([rows[-1]], MEMORY_FIELDS).splitlines()[-1], flush=True)
  return rows


def accuracy(network: str, modes, budgets, sets=("L2_R1", "L1_R2"), limit: int = 200,
             batch: int = 100, seed: int = 0) -> list[dict]:
  """Move accuracy on Pons' sets (`mcgs_jax.benchmarks.accuracy`'s scoring)
  with the network as evaluator, each mode at each evaluation budget.

  Args:
    network: one of `names.NETWORKS`.
    modes: the modes measured.
    budgets: evaluations per move.
    sets: the Pons sets.
    limit: positions per set.
    batch: positions per search call.
    seed: the searches' seed.

  Returns:
    rows of `ACCURACY_FIELDS`.
  """
  env, eval_fn, params = load_network(network)
  rows = []
  for set_name in sets:
    positions = accuracy_lib.load_set(set_name, limit)
    for budget in budgets:
      for mode in modes:
        config = budget_config(mode, budget)

        def run(rng, states, config=config):
          actions, stats = agents.measured_search(params, rng, states, env, eval_fn, config)
          return actions, stats["nodes"]

        moves, seconds, nodes = accuracy_lib.run_batched(
            run, positions, min(batch, len(positions)), seed)
        rows.append(dict(set=set_name, network=network, search=mode, budget=budget,
                         ms_per_move=round(seconds * 1e3, 3), nodes=round(nodes, 1),
                         **accuracy_lib.score_moves(positions, moves)))
        print(measure.markdown_table([rows[-1]], ACCURACY_FIELDS).splitlines()[-1], flush=True)
  return rows


# ---------------------------------------------------------------------- plots


def _num(text):
  try:
    return float(text)
  except (TypeError, ValueError):
    return math.nan


def plot_elo(rows: list[dict], x_field: str, x_label: str, path: str, title: str) -> str:
  """Elo of each mode against mcgs (0) with 95% intervals, against `x_field`
  of the match rows (one line per mode).

  Args:
    rows: the match rows of one part.
    x_field: the row field on the x axis.
    x_label: its label.
    path: the PNG written.
    title: the plot's title.

  Returns:
    `path`.
  """
  fig, ax = plots.plt.subplots(figsize=(6, 4))
  modes = sorted({_mode_of(r["a"]) for r in rows})
  for mode in modes:
    mine = sorted((r for r in rows if _mode_of(r["a"]) == mode),
                  key=lambda r: _num(r[x_field]))
    xs = [_num(r[x_field]) for r in mine]
    ys = [_num(r["elo"]) for r in mine]
    ax.errorbar(xs, ys, yerr=[[y - _num(r["elo_low"]) for y, r in zip(ys, mine)],
                              [_num(r["elo_high"]) - y for y, r in zip(ys, mine)]],
                marker="o", capsize=3, label=f"{mode} vs {REFERENCE}")
  ax.axhline(0, linestyle="--", color="gray")
  ax.set_xscale("log", base=2)
  ax.set_xlabel(x_label)
  ax.set_ylabel(f"Elo ({REFERENCE} = 0)")
  ax.set_title(title, fontsize="small")
  ax.grid(alpha=0.3)
  ax.legend(fontsize="small")
  fig.tight_layout()
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fig.savefig(path, dpi=100)
  plots.plt.close(fig)
  return path


def write_plots(out: str, docs: str | None) -> list[str]:
  """Plots (and, with `docs`, CSV summaries beside them) from OUT/matches.csv.

  Args:
    out: the output folder (its matches.csv).
    docs: a folder for copies of the plots and summaries, or None.

  Returns:
    the paths written.
  """
  rows = largest_matches(loop.read_metrics(os.path.join(out, "matches.csv")))
  target = docs or os.path.join(out, "plots")
  written = []
  groups = sorted({(r["part"], r["env"], r["network"]) for r in rows})
  for part, env_id, network in groups:
    mine = [r for r in rows if (r["part"], r["env"], r["network"]) == (part, env_id, network)]
    stem = f"{part}_{env_id.replace(':', '_').replace(',', '-')}_{network}"
    if part in ("evals", "nim"):
      written.append(plot_elo(mine, "budget_b", "network evaluations per move",
                              os.path.join(target, stem + ".png"),
                              f"{env_id}, {network}: equal evaluations"))
    elif part == "time":
      written.append(plot_elo(mine, "b_ms_per_move", f"ms per move ({REFERENCE}'s, measured)",
                              os.path.join(target, stem + ".png"),
                              f"{env_id}, {network}: equal time"))
    measure.write_csv(os.path.join(target, stem + ".csv"), mine, MATCH_FIELDS)
    written.append(os.path.join(target, stem + ".csv"))
  return written


def match_table(rows: list[dict]) -> str:
  """Match rows as a Markdown table (the docs' format).

  Args:
    rows: match rows.

  Returns:
    str, the table.
  """
  lines = ["| env | network | a | b | games | W-D-L (a) | Elo of a [95%] | evals a / b | "
           "nodes a / b | KiB a / b | ms/move a / b |", "|" + "---|" * 11]
  for r in rows:
    lines.append(
        f"| {r['env']} | {r['network']} | {r['a']} | {r['b']} | {r['games']} | "
        f"{r['wins']}-{r['draws']}-{r['losses']} | {_num(r['elo']):+.0f} "
        f"[{_num(r['elo_low']):+.0f}, {_num(r['elo_high']):+.0f}] | "
        f"{_num(r['a_nn_evals']):.1f} / {_num(r['b_nn_evals']):.1f} | "
        f"{_num(r['a_nodes']):.1f} / {_num(r['b_nodes']):.1f} | "
        f"{_num(r['a_bytes']) / 1024:.1f} / {_num(r['b_bytes']) / 1024:.1f} | "
        f"{_num(r['a_ms_per_move']):.1f} / {_num(r['b_ms_per_move']):.1f} |")
  return "\n".join(lines)


# ----------------------------------------------------------------------- main
