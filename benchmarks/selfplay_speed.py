"""Self-play contestants on Connect-4 (our `mcgs_jax.learning.selfplay` loops, mctx's policies in the
loop of pgx's AlphaZero example) and their chained, interleaved timing: what
`mcgs_jax.experiments.bench_selfplay` and the accelerator report's self-play section measure.
"""

import dataclasses
import functools
import math
import statistics
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mctx
import pgx
import pgx.experimental

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import names
from mcgs_jax.learning import selfplay


NUM_ACTIONS = 7
HIDDEN_SIZES = (128, 128)
DIRICHLET_FRACTION = 0.25
DIRICHLET_ALPHA = 0.3
# Root actions a Gumbel search considers (mctx's default; all 7 columns).
GUMBEL_CONSIDERED = 16
# Calls played before the timed ones start, so the games are spread over
# the opening and the middle game as in steady-state self-play.
BURN_IN_CALLS = 2
FIELDS = ("batch", "sims", "moves", "contestant", "status", "compile_s", "repeats", "s_per_call",
          "min_s_per_call", "positions_per_s", "ratio_vs_mctx", "ratio_vs_mctx_gumbel",
          "net_batches_per_move", "nn_evals_per_move", "transposition_hits_per_move",
          "nodes_kept_per_move")
PROFILE_FIELDS = ("batch", "sims", "piece", "ms", "min_ms", "per_move_ms", "share_of_move")


@dataclasses.dataclass(frozen=True)
class Settings:
  """What a self-play measurement plays and how it times it.

  Attributes:
    batch: games B.
    simulations: simulations per move S.
    moves: moves per call.
    rounds: interleaved timing rounds over the contestants.
    repeats: timed calls per contestant and round (after one untimed call).
    max_seconds: a contestant's timed calls stop once they have used this
      long (split over the rounds); also bounds each profiled piece.
    profile_loop: our loop whose pieces `profile_rows` times.
    seed: the games' seed.
  """
  batch: int = names.SELFPLAY_FULL["batch"]
  simulations: int = names.SELFPLAY_FULL["simulations"]
  moves: int = names.SELFPLAY_FULL["moves"]
  rounds: int = 3
  repeats: int = 3
  max_seconds: float = 60.0
  profile_loop: str = "mcgs"
  seed: int = 0


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


def mctx_contestant(eval_fn: Any, batch_size: int, sims: int, num_moves: int, policy: str,
                    compiler_options: dict | None = None) -> Contestant:
  """The self-play loop of pgx's AlphaZero example on `mctx.<policy>_policy`.

  Args:
    eval_fn: the network as eval_fn.
    batch_size: games B.
    sims: simulations per move S.
    num_moves: moves per call.
    policy: "muzero" or "gumbel_muzero".
    compiler_options: XLA options of the compile (None: XLA's defaults).

  Returns:
    The Contestant.
  """
  env = pgx.make("connect_four")
  step = jax.vmap(pgx.experimental.auto_reset(env.step, env.init))

  recurrent_fn = measure.mctx_recurrent_fn(env, eval_fn)

  def move(params, state, rng):
    search_rng, step_rng = jax.random.split(rng)
    logits, value = eval_fn(params, None, state)  # the root evaluation
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    invalid = ~state.legal_action_mask
    if policy == "muzero":
      out = mctx.muzero_policy(params, search_rng, root, recurrent_fn, num_simulations=sims,
                               invalid_actions=invalid, dirichlet_fraction=DIRICHLET_FRACTION,
                               dirichlet_alpha=DIRICHLET_ALPHA)
    else:
      out = mctx.gumbel_muzero_policy(params, search_rng, root, recurrent_fn, num_simulations=sims,
                                      invalid_actions=invalid,
                                      qtransform=mctx.qtransform_completed_by_mix_value,
                                      gumbel_scale=1.0)
    mover = state.current_player
    next_state = step(state, out.action, jax.random.split(step_rng, batch_size))
    record = dict(observation=state.observation, policy=out.action_weights,
                  reward=next_state.rewards[jnp.arange(batch_size),
                                            mover], done=next_state.terminated)
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
  return Contestant(play=measure.with_compiler_options(play, compiler_options), state=state,
                    net_batches_per_move=sims + 1.0, metrics=metrics)


def selfplay_config(backup: str, reuse: bool, sims: int,
                    gumbel: bool = False) -> selfplay.SelfPlayConfig:
  """Our loop's settings: root Dirichlet noise with PUCT, or the Gumbel root
  (`mcgs_jax.learning.config.TrainConfig.search_config`'s settings: Gumbel noise of
  scale 1, no Dirichlet noise, `GUMBEL_CONSIDERED` actions considered).

  Args:
    backup: the backup mode.
    reuse: keep the graph between moves.
    sims: simulations per move.
    gumbel: the Gumbel root.

  Returns:
    The SelfPlayConfig.
  """
  if gumbel:
    search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1), backup=backup,
                                   root_policy="gumbel", max_considered_actions=GUMBEL_CONSIDERED,
                                   gumbel_scale=1.0)
  else:
    search = mcgs_jax.SearchConfig(num_simulations=sims, max_nodes=2 * (sims + 1),
                                   dirichlet_fraction=DIRICHLET_FRACTION,
                                   dirichlet_alpha=DIRICHLET_ALPHA, backup=backup)
  return selfplay.SelfPlayConfig(search=search, reuse_graph=reuse)


def ours_contestant(eval_fn: Any, batch_size: int, sims: int, num_moves: int, backup: str,
                    reuse: bool, gumbel: bool = False,
                    compiler_options: dict | None = None) -> Contestant:
  """`selfplay.play` on our Connect-4.

  Args:
    eval_fn: the network as eval_fn.
    batch_size: games B.
    sims: simulations per move S.
    num_moves: moves per call.
    backup: the backup mode.
    reuse: keep the graph between moves.
    gumbel: the Gumbel root.
    compiler_options: XLA options of the compile (None: XLA's defaults).

  Returns:
    The Contestant.
  """
  env = envs.make("connect4")
  config = selfplay_config(backup, reuse, sims, gumbel)
  jitted = measure.with_compiler_options(
      jax.jit(
          functools.partial(selfplay.play, env=env, eval_fn=eval_fn, config=config,
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
  """The settings a name of one of our contestants stands for.

  Args:
    name: e.g. "mcgs-gumbel-noreuse".

  Returns:
    A dict of `backup`, `reuse` and `gumbel`.
  """
  backup, *options = name.split("-")
  return dict(backup=backup, reuse="noreuse" not in options, gumbel="gumbel" in options)


def make_contestant(name: str, eval_fn: Any, batch_size: int, sims: int, num_moves: int,
                    compiler_options: dict | None = None) -> Contestant:
  """The contestant `name` (mctx's loops or ours).

  Args:
    name: one of `CONTESTANTS` or `EXTRA_CONTESTANTS`.
    eval_fn: the network as eval_fn.
    batch_size: games B.
    sims: simulations per move S.
    num_moves: moves per call.
    compiler_options: XLA options of the compile (None: XLA's defaults).

  Returns:
    The Contestant.
  """
  if name == "mctx":
    return mctx_contestant(eval_fn, batch_size, sims, num_moves, "muzero", compiler_options)
  if name == "mctx-gumbel":
    return mctx_contestant(eval_fn, batch_size, sims, num_moves, "gumbel_muzero", compiler_options)
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
    """One call: continues the games of the previous call.

    Returns:
      (state, records, stats) of the call.
    """
    self.calls += 1
    rng = jax.random.fold_in(jax.random.key(self.seed), self.calls)
    state, records, stats = self.contestant.play(self.params, rng, self.state)
    self.state = state
    self.stats.append(stats)
    return state, records, stats

  def compile(self):
    """The first call (compile + run), then the burn-in calls."""
    self.compile_s, _, _ = measure.time_calls(self, 0, math.inf)
    for _ in range(BURN_IN_CALLS):
      jax.block_until_ready(self())
    self.stats.clear()

  def time_round(self, repeats, budget_s):
    """One round: an untimed call (`measure.time_calls`' warm-up), then up to
    `repeats` timed ones.

    Args:
      repeats: timed calls at most.
      budget_s: the round's timed calls stop once they have used this long.
    """
    _, _, times = measure.time_calls(self, repeats, budget_s)
    self.times += times


def runner_row(runner: "Runner", args: Settings) -> dict:
  """One contestant's CSV row from its timed calls: medians, positions per
  second and the loop's per-move metrics; the ratio fields are NaN (the
  caller divides by its mctx rows).

  Args:
    runner: the contestant's Runner.
    args: the measurement's settings.

  Returns:
    The row (`FIELDS`); status "no timed call" without timed calls.
  """
  row = dict(batch=args.batch, sims=args.simulations, moves=args.moves, contestant=runner.name,
             status="ok", compile_s=math.nan, repeats=0, s_per_call=math.nan,
             min_s_per_call=math.nan, positions_per_s=math.nan, ratio_vs_mctx=math.nan,
             ratio_vs_mctx_gumbel=math.nan,
             net_batches_per_move=runner.contestant.net_batches_per_move,
             nn_evals_per_move=math.nan, transposition_hits_per_move=math.nan,
             nodes_kept_per_move=math.nan)
  if not runner.times:
    row["status"] = "no timed call"
    return row
  seconds = statistics.median(runner.times)
  row.update(repeats=len(runner.times), s_per_call=seconds, min_s_per_call=min(runner.times),
             compile_s=max(runner.compile_s - seconds,
                           0.0), positions_per_s=args.moves * args.batch / seconds)
  per_call = [runner.contestant.metrics(stats) for stats in runner.stats]
  if per_call:
    row.update({k: statistics.mean(m[k] for m in per_call) for k in per_call[0]})
  return row


def bench_rows(names, eval_fn, params, args: Settings) -> list[dict]:
  """Compiles every contestant, then times them in interleaved rounds (so that
  load from other processes on the machine falls on all of them alike).

  Args:
    names: the contestants.
    eval_fn: the network as eval_fn.
    params: its parameters.
    args: the measurement's settings.

  Returns:
    One row (`FIELDS`) per contestant, ratios to the mctx loops filled in.
  """
  runners = []
  for name in names:
    runner = Runner(name, eval_fn, params, args)
    runner.compile()
    print(f"  {name:<13} compiled and burnt in ({runner.compile_s:.1f} s first call)", flush=True)
    runners.append(runner)
  for round_index in range(args.rounds):
    for runner in runners:
      runner.time_round(args.repeats, args.max_seconds / args.rounds)
    print(
        f"  round {round_index + 1}/{args.rounds}: " +
        ", ".join(f"{r.name} {statistics.median(r.times):.3f}" for r in runners if r.times) +
        " s/call (medians so far)", flush=True)
  rows = [runner_row(runner, args) for runner in runners]
  for field, name in (("ratio_vs_mctx", "mctx"), ("ratio_vs_mctx_gumbel", "mctx-gumbel")):
    reference = [r for r in rows if r["contestant"] == name and r["status"] == "ok"]
    for row in rows:
      if reference and row["status"] == "ok":
        row[field] = row["positions_per_s"] / reference[0]["positions_per_s"]
  return rows


def profile_rows(eval_fn, params, args: Settings) -> list[dict]:
  """Times the pieces of one move of `selfplay.play` (`args.profile_loop`:
  backup "mcgs" with reuse by default) at B, S on mid-game positions, and
  mctx's search (`gumbel_muzero_policy` for a Gumbel loop, else
  `muzero_policy`) and env step.

  The pieces overlap (reroot = advance + init + a select over the graph);
  `share_of_move` is each piece's time over the measured time of one move of
  the loop (its row of the main table, per move; the caller fills it in).

  Args:
    eval_fn: the network as eval_fn.
    params: its parameters.
    args: the measurement's settings (`profile_loop` is the loop profiled).

  Returns:
    One row of `PROFILE_FIELDS` per piece.
  """
  batch, sims, num_moves = args.batch, args.simulations, args.moves
  env = envs.make("connect4")
  options = ours_options(args.profile_loop)
  config = selfplay_config(options["backup"], True, sims, options["gumbel"])
  search_config = config.search
  # Mid-game positions: a few calls of self-play from the empty board.
  sp_state = selfplay.init(jax.random.key(1), env, batch)
  play = jax.jit(
      functools.partial(selfplay.play, env=env, eval_fn=eval_fn, config=config,
                        num_moves=num_moves))
  for call in range(3):
    sp_state, _, _, _ = play(params, jax.random.key(100 + call), sp_state)
  state = sp_state.env_state
  rng = jax.random.key(7)

  net = jax.jit(lambda p, s: eval_fn(p, None, s))
  init = jax.jit(functools.partial(mcgs_jax.init, env=env, eval_fn=eval_fn, config=search_config))
  run = jax.jit(
      functools.partial(mcgs_jax.run_simulations, env=env, eval_fn=eval_fn, config=search_config))
  summarize = jax.jit(functools.partial(mcgs_jax.summarize, config=search_config))
  advance = jax.jit(functools.partial(mcgs_jax.advance, config=search_config))
  reroot = jax.jit(
      functools.partial(mcgs_jax.reroot, env=env, eval_fn=eval_fn, config=search_config))
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
        lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b), fresh,
        next_state)
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
    return mctx.RecurrentFnOutput(reward=reward, discount=jnp.where(state.terminated, 0.0,
                                                                    -1.0), prior_logits=logits,
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
      ("search: run_simulations (S sims, rerooted graph)", 1, lambda: run(params, rng, rerooted)),
      ("fresh roots: mcgs_jax.init", 1, lambda: init(params, rng, next_state)),
      ("advance (reuse only)", 1, lambda: advance(graph, out.action)),
      ("reroot (advance + init + select)", 1,
       lambda: reroot(params, rng, graph, out.action, next_state)),
      ("bookkeeping: summarize, draw, step, reset, record", 1,
       lambda: bookkeeping(rng, graph, state, zeros)),
      (f"targets over the history window (per call of {num_moves} moves)", num_moves,
       lambda: targets(sp_state.history, records)),
      (f"mctx: root eval + {mctx_name} (S sims)", 1, lambda: mctx_search(params, rng, pgx_state)),
      ("mctx: pgx step (B games)", 1, lambda: pgx_step(pgx_state, zeros)),
  ]
  # Interleaved rounds, as for the contestants.
  times = {name: [] for name, _, _ in pieces}
  for _ in range(args.rounds):
    for name, _, fn in pieces:
      times[name] += measure.time_calls(fn, args.repeats, args.max_seconds / args.rounds)[2]
  rows = []
  for name, moves_per_piece, _ in pieces:
    ms = 1e3 * statistics.median(times[name]) if times[name] else math.nan
    min_ms = 1e3 * min(times[name]) if times[name] else math.nan
    rows.append(
        dict(batch=batch, sims=sims, piece=name, ms=ms, min_ms=min_ms,
             per_move_ms=ms / moves_per_piece, share_of_move=math.nan))
    print(f"  {name:<62} {ms:9.2f} ms (min {min_ms:.2f})", flush=True)
  return rows


def format_table(rows: list[dict]) -> str:
  """A markdown table of the measured rows.

  Args:
    rows: rows of `FIELDS`.

  Returns:
    The table.
  """
  table = [{
      "B": r["batch"],
      "S": r["sims"],
      "moves/call": r["moves"],
      "loop": r["contestant"],
      "compile s": measure.format_number(r["compile_s"], ".1f"),
      "s/call": measure.format_number(r["s_per_call"], ".3f"),
      "min s/call": measure.format_number(r["min_s_per_call"], ".3f"),
      "positions/s": measure.format_number(r["positions_per_s"], ",.0f"),
      "vs mctx": measure.format_number(r["ratio_vs_mctx"], ".2f"),
      "vs mctx-gumbel": measure.format_number(r["ratio_vs_mctx_gumbel"], ".2f"),
      "net batches/move": measure.format_number(r["net_batches_per_move"], ".2f"),
      "nn evals/move": measure.format_number(r["nn_evals_per_move"], ".1f"),
      "TT hits/move": measure.format_number(r["transposition_hits_per_move"], ".1f"),
      "nodes kept/move": measure.format_number(r["nodes_kept_per_move"], ".1f"),
      "repeats": r["repeats"],
      "status": r["status"]
  } for r in rows]
  return measure.markdown_table(table, list(table[0]))


def format_profile(rows: list[dict]) -> str:
  """A markdown table of the profiled pieces.

  Args:
    rows: rows of `PROFILE_FIELDS`.

  Returns:
    The table.
  """
  table = [{
      "piece": r["piece"],
      "ms": measure.format_number(r["ms"], ".2f"),
      "min ms": measure.format_number(r["min_ms"], ".2f"),
      "ms per move": measure.format_number(r["per_move_ms"], ".2f"),
      "share of a move": measure.format_number(r["share_of_move"], ".0%")
  } for r in rows]
  return measure.markdown_table(table, list(table[0]))
