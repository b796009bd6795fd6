"""Self-play speed on Connect-4: `learning.selfplay.play` vs the same loop on mctx.

  python -m experiments.bench_selfplay                 # B=256, S=64, 8 moves per call
  python -m experiments.bench_selfplay --quick         # B=64, S=16, 4 moves per call
  python -m experiments.bench_selfplay --batch 256 --simulations 64 --moves 8 --profile
  python -m experiments.bench_selfplay --contestants mctx-gumbel mcgs-gumbel \
      --profile --profile-loop mcgs-gumbel

Every contestant plays B games of Connect-4 for `--moves` moves per jitted
call, S simulations per move, with the same MLP and the same parameters:
  mctx         a `lax.scan` over moves: root evaluation, `mctx.muzero_policy`
               (Dirichlet noise 0.25 / 0.3, mctx's defaults), pgx's
               `connect_four` as the model (`recurrent_fn` steps the pgx state
               and applies the MLP, as in pgx's AlphaZero example), the move
               `policy_output.action`, one `auto_reset(env.step)`, the
               observation, policy, reward and end flag of each move recorded.
  mctx-gumbel  the same loop with `mctx.gumbel_muzero_policy` (pgx's example:
               completed-by-mix-value Q transform, gumbel_scale 1, 16
               considered actions; no reuse between moves).
  mcgs         `selfplay.play` on `envs.make("connect4")`, backup "mcgs",
               PUCT with root Dirichlet noise 0.25 / 0.3, graph reuse
               between moves (`mcgs_jax.reroot`).
  tree         the same with backup "tree".
  mcgs-noreuse backup "mcgs", a fresh root every move.
  mcgs-gumbel  backup "mcgs" with the Gumbel root (`root_policy="gumbel"`,
               Gumbel noise of scale 1, 16 considered actions, no Dirichlet
               noise: `learning.config.TrainConfig.search_config`'s
               self-play settings), graph reuse; the move is the search's.
Only with `--contestants`: tree-noreuse, tree-gumbel, mcgs-gumbel-noreuse,
tree-gumbel-noreuse (the same, other backup or fresh roots).
Our loop searches with `max_nodes = 2 (S + 1)`.

Calls are chained: each call continues the games of the previous one
(steady-state self-play, finished games reset in place). The first call
compiles (its time less the median is the compile time), then
`BURN_IN_CALLS` calls spread the games over the opening and middle game.
The contestants are then timed in interleaved rounds (`--rounds`, each
`benchmarks.time_calls`: one untimed call, `--repeats` timed ones), so that
load from other processes falls on all of them alike; s/call is the median
of all timed calls. Positions/s = moves * B / s per call.

`--profile` also times the pieces of one move of one of our loops
(`--profile-loop`, default mcgs) at the same B and S on mid-game positions
(`profile_rows`): the network batch, the search, the fresh root
(`mcgs_jax.init`), `advance`, `reroot`, the move bookkeeping and the target
computation over the history window, and mctx's search of the same root
policy.
"""

import argparse
import dataclasses
import functools
import math
import statistics
import sys
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mctx
import pgx
import pgx.experimental

import envs
import mcgs_jax
import networks
from learning import benchmarks
from learning import selfplay
from learning import cli

CONTESTANTS = ("mctx", "mctx-gumbel", "mcgs", "tree", "mcgs-noreuse", "mcgs-gumbel")
EXTRA_CONTESTANTS = ("tree-noreuse", "tree-gumbel", "mcgs-gumbel-noreuse",
                     "tree-gumbel-noreuse")
NUM_ACTIONS = 7
HIDDEN_SIZES = (128, 128)
DIRICHLET_FRACTION = 0.25
DIRICHLET_ALPHA = 0.3
# Root actions a Gumbel search considers (mctx's default; all 7 columns).
GUMBEL_CONSIDERED = 16
FULL = dict(batch=256, simulations=64, moves=8)
QUICK = dict(batch=64, simulations=16, moves=4)
# Calls played before the timed ones start, so the games are spread over
# the opening and the middle game as in steady-state self-play.
BURN_IN_CALLS = 2
FIELDS = ("batch", "sims", "moves", "contestant", "status", "compile_s", "repeats",
          "s_per_call", "min_s_per_call", "positions_per_s", "ratio_vs_mctx",
          "ratio_vs_mctx_gumbel",
          "net_batches_per_move", "nn_evals_per_move", "transposition_hits_per_move",
          "nodes_kept_per_move")
PROFILE_FIELDS = ("batch", "sims", "piece", "ms", "min_ms", "per_move_ms", "share_of_move")


@dataclasses.dataclass
class Contestant:
  """A chained self-play loop.

  Attributes:
    play: `(params, rng, state) -> (state, records, stats)`, jitted.
    state: the games before the first call.
    net_batches_per_move: batched network calls (B rows each) per move,
      counted from the loop's structure.
    metrics: `stats -> dict` of per-move, per-game means (nn evals, ...).
  """
  play: Callable[..., Any]
  state: Any
  net_batches_per_move: float
  metrics: Callable[[Any], dict]


def mctx_contestant(eval_fn: Any, batch_size: int, sims: int, num_moves: int,
                    policy: str, compiler_options: dict | None = None) -> Contestant:
  """The self-play loop of pgx's AlphaZero example on `mctx.<policy>_policy`
  (compiled with `compiler_options`, XLA's defaults for None)."""
  env = pgx.make("connect_four")
  step = jax.vmap(pgx.experimental.auto_reset(env.step, env.init))

  recurrent_fn = benchmarks.mctx_recurrent_fn(env, eval_fn)

  def move(params, state, rng):
    search_rng, step_rng = jax.random.split(rng)
    logits, value = eval_fn(params, None, state)   # the root evaluation
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    invalid = ~state.legal_action_mask
    if policy == "muzero":
      out = mctx.muzero_policy(params, search_rng, root, recurrent_fn, num_simulations=sims,
                               invalid_actions=invalid, dirichlet_fraction=DIRICHLET_FRACTION,
                               dirichlet_alpha=DIRICHLET_ALPHA)
    else:
      out = mctx.gumbel_muzero_policy(params, search_rng, root, recurrent_fn,
                                      num_simulations=sims, invalid_actions=invalid,
                                      qtransform=mctx.qtransform_completed_by_mix_value,
                                      gumbel_scale=1.0)
    mover = state.current_player
    next_state = step(state, out.action, jax.random.split(step_rng, batch_size))
    record = dict(observation=state.observation, policy=out.action_weights,
                  reward=next_state.rewards[jnp.arange(batch_size), mover],
                  done=next_state.terminated)
    return next_state, record

  @jax.jit
  def play(params, rng, state):
    state, records = jax.lax.scan(functools.partial(move, params), state,
                                  jax.random.split(rng, num_moves))
    return state, records, records["done"].sum()

  def metrics(stats):
    del stats
    # Every simulation evaluates its leaf, plus the root each move.
    return dict(nn_evals_per_move=float(sims + 1), transposition_hits_per_move=0.0,
                nodes_kept_per_move=0.0)

  state = jax.vmap(env.init)(jax.random.split(jax.random.key(0), batch_size))
  return Contestant(play=benchmarks.with_compiler_options(play, compiler_options), state=state,
                    net_batches_per_move=sims + 1.0, metrics=metrics)


def selfplay_config(backup: str, reuse: bool, sims: int,
                    gumbel: bool = False) -> selfplay.SelfPlayConfig:
  """Our loop's settings: root Dirichlet noise with PUCT, or the Gumbel root
  (`learning.config.TrainConfig.search_config`'s settings: Gumbel noise of
  scale 1, no Dirichlet noise, `GUMBEL_CONSIDERED` actions considered)."""
  if gumbel:
    search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1),
                                   backup=backup, root_policy="gumbel",
                                   max_considered_actions=GUMBEL_CONSIDERED, gumbel_scale=1.0)
  else:
    search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1),
                                   dirichlet_fraction=DIRICHLET_FRACTION,
                                   dirichlet_alpha=DIRICHLET_ALPHA, backup=backup)
  return selfplay.SelfPlayConfig(search=search, reuse_graph=reuse)


def ours_contestant(eval_fn: Any, batch_size: int, sims: int, num_moves: int, backup: str,
                    reuse: bool, gumbel: bool = False,
                    compiler_options: dict | None = None) -> Contestant:
  """`selfplay.play` on our Connect-4 (compiled with `compiler_options`)."""
  env = envs.make("connect4")
  config = selfplay_config(backup, reuse, sims, gumbel)
  jitted = benchmarks.with_compiler_options(
      jax.jit(functools.partial(selfplay.play, env=env, eval_fn=eval_fn, config=config,
                                num_moves=num_moves)), compiler_options)

  def play(params, rng, state):
    state, examples, valid, stats = jitted(params, rng, state)
    return state, (examples, valid), stats

  def metrics(stats):
    positions = float(stats.moves)
    return dict(nn_evals_per_move=float(stats.nn_evals) / positions,
                transposition_hits_per_move=float(stats.transposition_hits) / positions,
                nodes_kept_per_move=float(stats.nodes_kept) / positions)

  # S simulations and one root (reroot's or init's fresh root) per move, plus
  # the roots of the call's first search.
  return Contestant(play=play, state=selfplay.init(jax.random.key(0), env, batch_size),
                    net_batches_per_move=sims + 1.0 + 1.0 / num_moves, metrics=metrics)


def ours_options(name: str) -> dict:
  """`backup`, `reuse` and `gumbel` of one of our contestants, e.g.
  "mcgs-gumbel-noreuse"."""
  backup, *options = name.split("-")
  return dict(backup=backup, reuse="noreuse" not in options, gumbel="gumbel" in options)


def make_contestant(name: str, eval_fn: Any, batch_size: int, sims: int,
                    num_moves: int, compiler_options: dict | None = None) -> Contestant:
  if name == "mctx":
    return mctx_contestant(eval_fn, batch_size, sims, num_moves, "muzero", compiler_options)
  if name == "mctx-gumbel":
    return mctx_contestant(eval_fn, batch_size, sims, num_moves, "gumbel_muzero",
                           compiler_options)
  return ours_contestant(eval_fn, batch_size, sims, num_moves, **ours_options(name),
                         compiler_options=compiler_options)


class Runner:
  """Chained calls of one contestant: each call continues the games of the
  previous one and keeps its stats."""

  def __init__(self, name, eval_fn, params, args, compiler_options=None):
    self.name = name
    self.params = params
    self.seed = args.seed
    self.contestant = make_contestant(name, eval_fn, args.batch, args.simulations, args.moves,
                                      compiler_options)
    self.state = self.contestant.state
    self.calls = 0
    self.stats = []
    self.times = []
    self.compile_s = math.nan

  def __call__(self):
    self.calls += 1
    rng = jax.random.fold_in(jax.random.key(self.seed), self.calls)
    state, records, stats = self.contestant.play(self.params, rng, self.state)
    self.state = state
    self.stats.append(stats)
    return state, records, stats

  def compile(self):
    """The first call (compile + run), then the burn-in calls."""
    self.compile_s, _, _ = benchmarks.time_calls(self, 0, math.inf)
    for _ in range(BURN_IN_CALLS):
      jax.block_until_ready(self())
    self.stats.clear()

  def time_round(self, repeats, budget_s):
    """One round: an untimed call (benchmarks's warm-up), then `repeats` timed."""
    _, _, times = benchmarks.time_calls(self, repeats, budget_s)
    self.times += times


def runner_row(runner: "Runner", args) -> dict:
  """One contestant's CSV row (`FIELDS`) from its timed calls: medians,
  positions per second and the loop's per-move metrics; the ratio fields
  are NaN (the caller divides by its mctx rows). A runner without timed
  calls gets status "no timed call"."""
  row = dict(batch=args.batch, sims=args.simulations, moves=args.moves,
             contestant=runner.name, status="ok", compile_s=math.nan, repeats=0,
             s_per_call=math.nan, min_s_per_call=math.nan, positions_per_s=math.nan,
             ratio_vs_mctx=math.nan, ratio_vs_mctx_gumbel=math.nan,
             net_batches_per_move=runner.contestant.net_batches_per_move,
             nn_evals_per_move=math.nan, transposition_hits_per_move=math.nan,
             nodes_kept_per_move=math.nan)
  if not runner.times:
    row["status"] = "no timed call"
    return row
  seconds = statistics.median(runner.times)
  row.update(repeats=len(runner.times), s_per_call=seconds, min_s_per_call=min(runner.times),
             compile_s=max(runner.compile_s - seconds, 0.0),
             positions_per_s=args.moves * args.batch / seconds)
  per_call = [runner.contestant.metrics(stats) for stats in runner.stats]
  if per_call:
    row.update({k: statistics.mean(m[k] for m in per_call) for k in per_call[0]})
  return row


def bench_rows(names, eval_fn, params, args) -> list[dict]:
  """Compiles every contestant, then times them in interleaved rounds (so
  that load from other processes on the machine falls on all of them
  alike); one CSV row per contestant."""
  runners = []
  for name in names:
    runner = Runner(name, eval_fn, params, args)
    runner.compile()
    print(f"  {name:<13} compiled and burnt in ({runner.compile_s:.1f} s first call)",
          flush=True)
    runners.append(runner)
  for round_index in range(args.rounds):
    for runner in runners:
      runner.time_round(args.repeats, args.max_seconds / args.rounds)
    print(f"  round {round_index + 1}/{args.rounds}: " + ", ".join(
        f"{r.name} {statistics.median(r.times):.3f}" for r in runners if r.times)
        + " s/call (medians so far)", flush=True)
  rows = [runner_row(runner, args) for runner in runners]
  for field, name in (("ratio_vs_mctx", "mctx"), ("ratio_vs_mctx_gumbel", "mctx-gumbel")):
    reference = [r for r in rows if r["contestant"] == name and r["status"] == "ok"]
    for row in rows:
      if reference and row["status"] == "ok":
        row[field] = row["positions_per_s"] / reference[0]["positions_per_s"]
  return rows


def profile_rows(eval_fn, params, args) -> list[dict]:
  """Times the pieces of one move of `selfplay.play` (`--profile-loop`:
  backup "mcgs" with reuse by default) at B, S on mid-game positions, and
  mctx's search (`gumbel_muzero_policy` for a Gumbel loop, else
  `muzero_policy`) and env step.

  The pieces overlap (reroot = advance + init + a select over the graph);
  `share_of_move` is each piece's time over the measured time of one move of
  the loop (its row of the main table, per move)."""
  batch, sims, num_moves = args.batch, args.simulations, args.moves
  env = envs.make("connect4")
  options = ours_options(args.profile_loop)
  config = selfplay_config(options["backup"], True, sims, options["gumbel"])
  search_config = config.search
  # Mid-game positions: a few calls of self-play from the empty board.
  sp_state = selfplay.init(jax.random.key(1), env, batch)
  play = jax.jit(functools.partial(selfplay.play, env=env, eval_fn=eval_fn, config=config,
                                   num_moves=num_moves))
  for call in range(3):
    sp_state, _, _, _ = play(params, jax.random.key(100 + call), sp_state)
  state = sp_state.env_state
  rng = jax.random.key(7)

  net = jax.jit(lambda p, s: eval_fn(p, None, s))
  init = jax.jit(functools.partial(mcgs_jax.init, env=env, eval_fn=eval_fn,
                                   config=search_config))
  run = jax.jit(functools.partial(mcgs_jax.run_simulations, env=env, eval_fn=eval_fn,
                                  config=search_config))
  summarize = jax.jit(functools.partial(mcgs_jax.summarize, config=search_config))
  advance = jax.jit(functools.partial(mcgs_jax.advance, config=search_config))
  reroot = jax.jit(functools.partial(mcgs_jax.reroot, env=env, eval_fn=eval_fn,
                                     config=search_config))
  step = jax.jit(env.step)

  graph0 = init(params, rng, state)
  graph = run(params, rng, graph0)
  out = summarize(graph)
  next_state = step(state, out.action)
  rerooted = reroot(params, rng, graph, out.action, next_state)

  @jax.jit
  def bookkeeping(rng, graph, env_state, move_number):
    # The move's work around the search and the reroot (selfplay.play's body).
    # pylint: disable=protected-access
    out = mcgs_jax.summarize(graph, search_config)
    policy = out.action_weights
    if config.gumbel:
      action = out.action
    else:
      action = selfplay._draw_action(rng, policy, config.temperature_at(move_number))
    next_state = env.step(env_state, action)
    record = selfplay._record(env, env_state, policy, out.root_value, next_state,
                              jnp.ones((batch,), bool))
    done = next_state.terminated
    fresh = env.init(rng, batch_size=batch)
    env_state = jax.tree.map(
        lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b),
        fresh, next_state)
    return env_state, record

  @jax.jit
  def targets(history, records):
    # The window work after the scan (selfplay.play's tail).
    window = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), history, records)
    values, known = selfplay._outcomes(window)  # pylint: disable=protected-access
    valid = window.filled & known & ~window.emitted
    window = window.replace(emitted=window.emitted | (window.filled & known))
    return values, valid, jax.tree.map(lambda x: x[-history.done.shape[0]:], window)

  records = jax.tree.map(lambda x: x[:num_moves], sp_state.history)

  pgx_env = pgx.make("connect_four")
  pgx_state = jax.vmap(pgx_env.init)(jax.random.split(jax.random.key(0), batch))

  def recurrent_fn(params, rng, action, state):
    del rng
    mover = state.current_player
    state = jax.vmap(pgx_env.step)(state, action)
    logits, value = eval_fn(params, None, state)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(jnp.float32).min)
    reward = state.rewards[jnp.arange(batch), mover]
    return mctx.RecurrentFnOutput(
        reward=reward, discount=jnp.where(state.terminated, 0.0, -1.0), prior_logits=logits,
        value=jnp.where(state.terminated, 0.0, value)), state

  @jax.jit
  def mctx_search(params, rng, state):
    logits, value = eval_fn(params, None, state)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    if options["gumbel"]:
      return mctx.gumbel_muzero_policy(params, rng, root, recurrent_fn, num_simulations=sims,
                                       invalid_actions=~state.legal_action_mask,
                                       qtransform=mctx.qtransform_completed_by_mix_value,
                                       gumbel_scale=1.0).action
    return mctx.muzero_policy(params, rng, root, recurrent_fn, num_simulations=sims,
                              invalid_actions=~state.legal_action_mask).action
  mctx_name = "gumbel_muzero_policy" if options["gumbel"] else "muzero_policy"

  pgx_step = jax.jit(jax.vmap(pgx_env.step))
  zeros = jnp.zeros((batch,), jnp.int32)
  # A mid-game pgx batch for mctx: 10 moves chosen by its own search.
  for _ in range(10):
    pgx_state = pgx_step(pgx_state, mctx_search(params, rng, pgx_state))

  pieces = [
      ("network batch (B rows)", 1, lambda: net(params, state)),
      ("search: run_simulations (S sims, fresh root)", 1, lambda: run(params, rng, graph0)),
      ("search: run_simulations (S sims, rerooted graph)", 1,
       lambda: run(params, rng, rerooted)),
      ("fresh roots: mcgs_jax.init", 1, lambda: init(params, rng, next_state)),
      ("advance (reuse only)", 1, lambda: advance(graph, out.action)),
      ("reroot (advance + init + select)", 1,
       lambda: reroot(params, rng, graph, out.action, next_state)),
      ("bookkeeping: summarize, draw, step, reset, record", 1,
       lambda: bookkeeping(rng, graph, state, zeros)),
      (f"targets over the history window (per call of {num_moves} moves)", num_moves,
       lambda: targets(sp_state.history, records)),
      (f"mctx: root eval + {mctx_name} (S sims)", 1,
       lambda: mctx_search(params, rng, pgx_state)),
      ("mctx: pgx step (B games)", 1, lambda: pgx_step(pgx_state, zeros)),
  ]
  # Interleaved rounds, as for the contestants.
  times = {name: [] for name, _, _ in pieces}
  for _ in range(args.rounds):
    for name, _, fn in pieces:
      times[name] += benchmarks.time_calls(fn, args.repeats, args.max_seconds / args.rounds)[2]
  rows = []
  for name, moves_per_piece, _ in pieces:
    ms = 1e3 * statistics.median(times[name]) if times[name] else math.nan
    min_ms = 1e3 * min(times[name]) if times[name] else math.nan
    rows.append(dict(batch=batch, sims=sims, piece=name, ms=ms, min_ms=min_ms,
                     per_move_ms=ms / moves_per_piece, share_of_move=math.nan))
    print(f"  {name:<62} {ms:9.2f} ms (min {min_ms:.2f})", flush=True)
  return rows


def _fmt(value, spec):
  return "-" if isinstance(value, float) and math.isnan(value) else format(value, spec)


def format_table(rows: list[dict]) -> str:
  """A markdown table of the measured rows."""
  table = [{
      "B": r["batch"], "S": r["sims"], "moves/call": r["moves"], "loop": r["contestant"],
      "compile s": _fmt(r["compile_s"], ".1f"), "s/call": _fmt(r["s_per_call"], ".3f"),
      "min s/call": _fmt(r["min_s_per_call"], ".3f"),
      "positions/s": _fmt(r["positions_per_s"], ",.0f"),
      "vs mctx": _fmt(r["ratio_vs_mctx"], ".2f"),
      "vs mctx-gumbel": _fmt(r["ratio_vs_mctx_gumbel"], ".2f"),
      "net batches/move": _fmt(r["net_batches_per_move"], ".2f"),
      "nn evals/move": _fmt(r["nn_evals_per_move"], ".1f"),
      "TT hits/move": _fmt(r["transposition_hits_per_move"], ".1f"),
      "nodes kept/move": _fmt(r["nodes_kept_per_move"], ".1f"),
      "repeats": r["repeats"], "status": r["status"]} for r in rows]
  return benchmarks.markdown_table(table, list(table[0]))


def format_profile(rows: list[dict]) -> str:
  table = [{"piece": r["piece"], "ms": _fmt(r["ms"], ".2f"),
            "min ms": _fmt(r["min_ms"], ".2f"),
            "ms per move": _fmt(r["per_move_ms"], ".2f"),
            "share of a move": _fmt(r["share_of_move"], ".0%")} for r in rows]
  return benchmarks.markdown_table(table, list(table[0]))


NOTE = """\
net batches/move: batched network calls of B rows per move (mctx: S
simulations + the root; ours: S simulations + reroot's or init's fresh root
of every game, + the call's first roots / moves). nn evals/move: leaves per
game and move that needed the network (ours: SearchStats.nn_evals, without
the fresh roots that reroot computes and then discards for kept games).
TT hits/move: edges linked to an existing node. nodes kept/move: nodes
carried into the next search by reuse. vs mctx, vs mctx-gumbel: positions/s
over those of mctx (muzero_policy) and of mctx-gumbel."""


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="B={batch}, S={simulations}, {moves} moves".format(**QUICK))
  parser.add_argument("--batch", type=int, help=f"games B (default {FULL['batch']})")
  parser.add_argument("--simulations", type=int,
                      help=f"simulations per move S (default {FULL['simulations']})")
  parser.add_argument("--moves", type=int, help=f"moves per call (default {FULL['moves']})")
  parser.add_argument("--contestants", nargs="+", choices=CONTESTANTS + EXTRA_CONTESTANTS,
                      default=CONTESTANTS)
  parser.add_argument("--rounds", type=int, default=3,
                      help="interleaved timing rounds over the contestants")
  parser.add_argument("--repeats", type=int, default=3,
                      help="timed calls per contestant and round (after one untimed call)")
  parser.add_argument("--max-seconds", type=float, default=60.0,
                      help="a contestant's timed calls stop once they have used this long "
                      "(split over the rounds); also bounds each --profile piece")
  parser.add_argument("--profile", action="store_true",
                      help="also time the pieces of one move of our loop")
  parser.add_argument("--profile-loop", default="mcgs",
                      choices=[c for c in CONTESTANTS + EXTRA_CONTESTANTS
                               if not c.startswith("mctx") and not c.endswith("noreuse")],
                      help="our loop whose pieces --profile times (default mcgs)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default="results/bench_selfplay.csv")
  args = parser.parse_args(argv)
  defaults = QUICK if args.quick else FULL
  for name, value in defaults.items():
    if getattr(args, name) is None:
      setattr(args, name, value)
  return args


def main(argv=None):
  args = parse_args(argv)
  eval_fn = networks.mlp_eval(NUM_ACTIONS, HIDDEN_SIZES)
  params = networks.init(eval_fn.network, jax.random.key(args.seed),
                         jnp.zeros((1, 6, 7, 2), jnp.bool_))
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}, mctx {mctx.__version__}, "
        f"pgx {pgx.__version__}; B={args.batch}, S={args.simulations}, "
        f"{args.moves} moves per call", flush=True)
  start = time.perf_counter()
  order = [c for c in CONTESTANTS + EXTRA_CONTESTANTS if c in args.contestants]
  rows = bench_rows(order, eval_fn, params, args)
  print()
  print(format_table(rows))
  print()
  print(NOTE)
  benchmarks.write_csv(args.csv, rows, FIELDS)
  if args.profile:
    print(f"\nPieces of one move of our loop ({args.profile_loop}), medians:", flush=True)
    pieces = profile_rows(eval_fn, params, args)
    move_ms = [1e3 * r["s_per_call"] / r["moves"] for r in rows
               if r["contestant"] == args.profile_loop and r["status"] == "ok"]
    for piece in pieces:
      if move_ms:
        piece["share_of_move"] = piece["per_move_ms"] / move_ms[0]
    print()
    if move_ms:
      print(f"One move of the {args.profile_loop} loop: {move_ms[0]:.1f} ms")
    print(format_profile(pieces))
    profile_csv = args.csv.replace(".csv", "_profile.csv")
    benchmarks.write_csv(profile_csv, pieces, PROFILE_FIELDS)
    print(f"Profile CSV: {profile_csv}")
  print(f"\nTotal {time.perf_counter() - start:.0f} s. CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
