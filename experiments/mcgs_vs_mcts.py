"""MCGS against MCTS with trained evaluators: Elo at equal network
evaluations and at equal time, memory, move accuracy and an ablation.

  mcgs-jax mcgs-vs-mcts --part evals     # Elo vs evaluations per move
  mcgs-jax mcgs-vs-mcts --part time      # Elo at equal time per move
  mcgs-jax mcgs-vs-mcts --part time --game nim   # the same on Nim
  mcgs-jax mcgs-vs-mcts --part memory    # nodes and bytes per search
  mcgs-jax mcgs-vs-mcts --part accuracy  # Pons sets, move accuracy
  mcgs-jax mcgs-vs-mcts --part ablation  # each enhancement vs plain mcgs
  mcgs-jax mcgs-vs-mcts --part nim       # Nim, a deliberately noisy evaluator
  mcgs-jax mcgs-vs-mcts --part plots     # plots and summaries from the CSVs
  common flags: --network shipped|v3|v2|v1|weak --budgets 32 64 128 256 --openings 128
                --nim-envs nim nim-piles:3,5,7,9 --nim-plies 2
                --out results/mcgs_vs_mcts --docs docs/mcgs_vs_mcts

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

import argparse
import csv
import dataclasses
import math
import os
import sys
import time
from typing import Any

import mcgs_jax
from mcgs_jax import envs
from mcgs_jax.learning import cli
from mcgs_jax.learning import run_lock

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
jnp = cli.lazy("jax.numpy")
np = cli.lazy("numpy")
plots = cli.lazy("mcgs_jax.learning.plots")   # matplotlib with the Agg backend
connect4 = cli.lazy("mcgs_jax.envs.connect4")
evaluators = cli.lazy("mcgs_jax.envs.evaluators")
exhaustive = cli.lazy("mcgs_jax.envs.exhaustive")
nim = cli.lazy("mcgs_jax.envs.nim")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
accuracy_lib = cli.lazy("mcgs_jax.benchmarks.accuracy")
pons = cli.lazy("mcgs_jax.envs.pons")
agents = cli.lazy("mcgs_jax.learning.agents")
arena = cli.lazy("mcgs_jax.learning.arena")
checkpoint = cli.lazy("mcgs_jax.learning.checkpoint")
elo = cli.lazy("mcgs_jax.learning.elo")
evaluation = cli.lazy("mcgs_jax.learning.evaluation")
loop = cli.lazy("mcgs_jax.learning.loop")

MODES = mcgs_jax.modes.names()
REFERENCE = "mcgs"
RUN = "docs/learning/runs/connect4_v1"
WEAK_ITERATION = 10
# --network name -> the directory of its agent (`weak`: a snapshot of RUN).
NETWORKS = {"shipped": "networks/pretrained/connect4", "v3": "docs/learning/runs/connect4_v3",
            "v2": "docs/learning/runs/connect4", "v1": RUN, "weak": RUN}
SIMULATIONS_PER_EVAL = 4
NIM_SIMULATIONS_PER_EVAL = 16
# The paper's switches at its settings (docs/search_options.md, "The paper's build").
ABLATIONS = {
    "solver": dict(solver=True),
    "epsgreedy": dict(eps_greedy=0.05),
    "qvalue": dict(q_value_weight=2.0),
    "constraint": dict(eps_constraint=0.01),
    "temperature": dict(node_temperature=1.7),
}
ABLATIONS["all"] = {k: v for switches in ABLATIONS.values() for k, v in switches.items()}
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
  on the wrong side of 0 (a tie counts as wrong)."""
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
  or `weak` (that run's snapshot at WEAK_ITERATION)."""
  if name not in NETWORKS:
    raise ValueError(f"network must be one of {sorted(NETWORKS)}, got {name!r}")
  env, eval_fn, params = checkpoint.load_agent(NETWORKS[name])
  if name == "weak":
    params = checkpoint.read_variables(evaluation.snapshot_path(RUN, WEAK_ITERATION), params)
  return env, eval_fn, params


def connect4_openings(count: int, max_score: int = 2, set_name: str = "L1_R3") -> list[str]:
  """Move strings of the first `count` positions of a Pons set whose exact
  score (Pons' scale, for the side to move) is within +-max_score."""
  chosen = []
  for moves, scores in pons.read_columns(set_name):
    if abs(-min(v for v in scores if v is not None)) <= max_score:
      chosen.append(moves)
    if len(chosen) == count:
      break
  return chosen


def connect4_setting(network: str, count: int, max_score: int = 2) -> Setting:
  env, eval_fn, params = load_network(network)
  openings = envs.stack([connect4.from_moves(m) for m in connect4_openings(count, max_score)])
  return Setting(env=env, eval_fn=eval_fn, params=params, network=network, openings=openings)


def nim_openings(env: Any, count: int, plies: int = 2, seed: int = 0) -> Any:
  """At most `count` distinct running positions after `plies` random moves."""
  states = jax.tree.map(np.asarray, arena.random_openings(env, jax.random.PRNGKey(seed),
                                                          count, plies))
  _, first = np.unique(exhaustive.key_ints(states.key), return_index=True)
  return jax.tree.map(lambda x: jnp.asarray(x[np.sort(first)]), states)


def nim_setting(env_id: str, count: int, noise: float = 0.8, plies: int = 2) -> Setting:
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
  """
  simulations = simulations_per_eval * evals
  max_nodes = None if mcgs_jax.modes.get(backup).caches_evaluations else evals + 1
  return mcgs_jax.SearchConfig(num_simulations=simulations, backup=backup, max_nn_evals=evals,
                               max_nodes=max_nodes, **switches)


def make_agent(setting: Setting, config: mcgs_jax.SearchConfig, name: str) -> agents.MeasuredAgent:
  return agents.MeasuredAgent(env=setting.env, eval_fn=setting.eval_fn, params=setting.params,
                       config=config, name=name)


# -------------------------------------------------------------------- matches


def append_csv(path: str, rows: list[dict], fields) -> None:
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  new = not os.path.exists(path)
  with open(path, "a", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(fields))
    if new:
      writer.writeheader()
    writer.writerows(rows)
    f.flush()
    os.fsync(f.fileno())


def match_elo(scores: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
  """A's Elo relative to B (at 0) and its bootstrap 95% interval, from A's
  per-game results (+1, 0, -1)."""
  records = [(0, 1, (float(s) + 1.0) / 2.0) for s in scores]
  ratings = elo.fit(records, 2, reference=1, seed=seed)
  return float(ratings.elo[0]), float(ratings.lower[0]), float(ratings.upper[0])


def play_match(setting: Setting, part: str, a: agents.MeasuredAgent, b: agents.MeasuredAgent,
               budget_a: Any, budget_b: Any, seed: int = 0, out: str | None = None) -> dict:
  """Plays a (every opening, both colours) against b; returns the match row
  and, with `out`, appends it and its games to OUT/matches.csv, games.csv."""
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
    append_csv(os.path.join(out, "games.csv"),
               [dict(part=part, env=setting.env.id, network=setting.network, a=a.name, b=b.name,
                     game=g, score=(float(s) + 1) / 2) for g, s in enumerate(result.scores)],
               GAME_FIELDS)
    append_csv(os.path.join(out, "matches.csv"), [row], MATCH_FIELDS)
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
  other openings sets differently)."""
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
  """Each mode against mcgs at the same evaluation budget, per budget."""
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
  ends extrapolated) linearly in log-log from measured (budget, ms) pairs."""
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
  (the latest of each), or None when any is missing."""
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
  mcgs@E, per E in `budgets`."""
  grid = sorted(set(budgets) | {grid_factor * max(budgets)} | {max(1, min(budgets) // 2)})
  configs = {(mode, b): budget_config(mode, b, setting.simulations_per_eval)
             for mode in modes for b in grid}
  ms = measured_times(out, setting, configs)
  if ms is None:
    ms = time_per_move(setting, configs, seed=seed)
    if out:
      append_csv(os.path.join(out, "timing.csv"),
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
  `budget` evaluations per move."""
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
  means over the openings."""
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
  with the network as evaluator, each mode at each evaluation budget."""
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
  of the match rows (one line per mode)."""
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
  """Plots (and, with `docs`, CSV summaries beside them) from OUT/matches.csv."""
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
  """Match rows as a Markdown table (the docs' format)."""
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


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--part", required=True, choices=("evals", "time", "memory", "accuracy",
                                                        "ablation", "nim", "plots"))
  parser.add_argument("--network", default="shipped", choices=tuple(NETWORKS))
  parser.add_argument("--game", default="connect4", choices=("connect4", "nim"),
                      help="--part time: Connect-4 (--network) or the Nim settings "
                           "(--nim-envs, --noise, --nim-plies)")
  parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
  parser.add_argument("--budgets", type=int, nargs="+", default=[32, 64, 128, 256],
                      help="network evaluations per move (mcgs's, for --part time)")
  parser.add_argument("--openings", type=int, default=128,
                      help="openings (each played twice, colours swapped)")
  parser.add_argument("--max-score", type=int, default=2,
                      help="Connect-4 openings: |exact Pons score| at most this")
  parser.add_argument("--ablations", nargs="+", default=list(ABLATIONS),
                      choices=list(ABLATIONS))
  parser.add_argument("--nim-envs", nargs="+", default=["nim", "nim-piles:3,5,7,9"])
  parser.add_argument("--noise", type=float, default=0.8, help="NoisyNimEval's noise")
  parser.add_argument("--nim-plies", type=int, default=2,
                      help="Nim openings: distinct positions after this many random moves")
  parser.add_argument("--sets", nargs="+", default=["L2_R1", "L1_R2"])
  parser.add_argument("--limit", type=int, default=200, help="accuracy: positions per set")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--out", default="results/mcgs_vs_mcts")
  parser.add_argument("--docs", help="also write plots and CSV summaries here")
  return parser.parse_args(argv)


def nim_settings(args) -> list[Setting]:
  """The Nim settings of the command line (--nim-envs), printing each one's
  openings and the evaluator's wrong-sign share."""
  settings = []
  for env_id in args.nim_envs:
    setting = nim_setting(env_id, args.openings, args.noise, args.nim_plies)
    print(f"{env_id}: {setting.num_openings} openings; evaluator wrong on "
          f"{100 * wrong_sign_fraction(setting.env, setting.eval_fn):.1f}% of positions",
          flush=True)
    settings.append(setting)
  return settings


def main(argv=None):
  args = parse_args(argv)
  if args.game == "nim" and args.part != "time":
    raise ValueError("--game nim is for --part time (--part nim is Nim at equal evaluations)")
  # OUT's lock for the command's life: a second process appending the same
  # matches to OUT is refused (the rows are skipped by key on a rerun, not
  # between two writers).
  lock = run_lock.acquire(args.out)
  try:
    run_part(args)
  finally:
    lock.release()


def run_part(args) -> None:
  """Runs the `--part` `main` parsed."""
  out = args.out
  if args.part == "time" and args.game == "nim":
    for setting in nim_settings(args):
      equal_time(setting, args.modes, args.budgets, out=out, seed=args.seed)
  elif args.part in ("evals", "time", "ablation"):
    setting = connect4_setting(args.network, args.openings, args.max_score)
    print(f"{setting.num_openings} openings, {2 * setting.num_openings} games per match",
          flush=True)
    if args.part == "evals":
      equal_evals(setting, args.modes, args.budgets, out=out, seed=args.seed)
    elif args.part == "time":
      equal_time(setting, args.modes, args.budgets, out=out, seed=args.seed)
    else:
      for budget in args.budgets:
        ablation(setting, budget, args.ablations, out=out, seed=args.seed)
  elif args.part == "nim":
    for setting in nim_settings(args):
      equal_evals(setting, args.modes, args.budgets, part="nim", out=out, seed=args.seed)
  elif args.part == "memory":
    rows = memory(connect4_setting(args.network, args.openings, args.max_score), args.modes,
                  args.budgets, args.seed)
    for env_id in args.nim_envs:
      rows += memory(nim_setting(env_id, args.openings, args.noise, args.nim_plies), args.modes,
                     args.budgets, args.seed)
    for path in [os.path.join(out, "memory.csv")] + (
        [os.path.join(args.docs, "memory.csv")] if args.docs else []):
      measure.write_csv(path, rows, MEMORY_FIELDS)
    print(measure.markdown_table(rows, MEMORY_FIELDS))
  elif args.part == "accuracy":
    rows = accuracy(args.network, args.modes, args.budgets, args.sets, args.limit,
                    seed=args.seed)
    name = f"accuracy_{args.network}.csv"
    for path in [os.path.join(out, name)] + (
        [os.path.join(args.docs, name)] if args.docs else []):
      measure.write_csv(path, rows, ACCURACY_FIELDS)
    print(measure.markdown_table(rows, ACCURACY_FIELDS))
  if args.part in ("evals", "time", "ablation", "nim", "plots"):
    for path in write_plots(out, args.docs):
      print(path)
  if args.part == "plots":
    rows = largest_matches(loop.read_metrics(os.path.join(out, "matches.csv")))
    for part in ("evals", "time", "ablation", "nim"):
      mine = [r for r in rows if r["part"] == part]
      if mine:
        print(f"\n{part}:\n{match_table(mine)}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
