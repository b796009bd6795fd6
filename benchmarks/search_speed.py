"""Search contestants on Connect-4 (ours, `mctx.muzero_policy`, `mctx.gumbel_muzero_policy`)
and one timed cell of each: what `mcgs_jax.experiments.bench_search` and the accelerator report's
search section measure.
"""

import dataclasses
import functools
import math
import statistics
from typing import Any, Callable

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pgx

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import phases
from mcgs_jax import model as model_lib
from mcgs_jax import rules
from mcgs_jax import selection
from mcgs_jax.graph import NO_SIMULATION
from mcgs_jax.networks import MLP, MLPEval

from mcgs_jax.benchmarks.names import MAX_OPENING_PLIES

NUM_ACTIONS = 7
HIDDEN_SIZES = (128, 128)
FIELDS = ("batch", "sims", "contestant", "status", "warmup_s", "repeats", "median_ms", "sims_per_s",
          "ratio_vs_mctx", "nodes_per_game", "nn_evals_per_game", "bytes_per_game", "cpu_ms",
          "ratio_cpu_vs_mctx", "net_ms", "net_cpu_ms", "depth_mean", "depth_max",
          "depth_batch_max_mean", "descent_cpu_ms", "descent_steps")


@dataclasses.dataclass(frozen=True)
class Contestant:
  """A jitted search and what to read off its output.

  Attributes:
    search: `(params, rng, root) -> output`, jitted.
    root: the batch of initial states it searches from.
    metrics: `output -> (nodes, nn_evals, bytes)` per game, means over games.
    depths: `(params, rng, output) -> int[S, B]`, the descent depth of every
      simulation of the search `search(params, rng, root)` returned as
      `output` (0: no simulation); None: not known.
    descent: `output -> (CPU ms, steps)` of one batched descent on the
      searched graph (`time_descent`); None: not measured.
  """
  search: Callable[..., Any]
  root: Any
  metrics: Callable[[Any], tuple[float, float, float]]
  depths: Callable[[Any, Any, Any], np.ndarray] | None = None
  descent: Callable[[Any], tuple[float, float]] | None = None


def mcgs_depth_probe(env: Any, eval_fn: Any, config: mcgs_jax.SearchConfig) -> Callable:
  """The descent depths of `mcgs_jax.search`'s simulations, by replaying it.

  `mcgs_jax.search` keeps no per-simulation record; this runs the same search
  (`mcgs_jax.init`, then `mcgs_jax.simulate` with `fold_in(sim_rng, i)` for
  simulation i, as `mcgs_jax.run_simulations` does) in a `lax.scan` that
  keeps each simulation's `Selection.length`. Untimed: the benchmark times
  `mcgs_jax.search` itself.

  Args:
    env: the env.
    eval_fn: the search's eval_fn.
    config: the SearchConfig; one that stops early (`stops_early`) is refused,
      since its games do not all run every simulation step.

  Returns:
    jitted `(params, rng, root) -> (lengths int32[S, B], nodes_used int32[B])`,
    lengths 0 where a game ran no simulation.
  """
  if config.stops_early:
    raise ValueError("mcgs_depth_probe replays a search of exactly num_simulations steps")

  @jax.jit
  def probe(params, rng, root):
    init_rng, sim_rng = jax.random.split(rng)
    graph = mcgs_jax.init(params, init_rng, root, env, eval_fn, config)

    def step(graph, i):
      graph, sel = mcgs_jax.simulate(params, jax.random.fold_in(sim_rng, i), graph, env, eval_fn,
                                     config)
      return graph, jnp.where(sel.kind == NO_SIMULATION, 0, sel.length)

    graph, lengths = jax.lax.scan(step, graph, jnp.arange(config.num_simulations))
    return lengths, graph.stats.nodes_used

  return probe


def time_descent(env: Any, config: mcgs_jax.SearchConfig, graph: Any,
                 repeats: int = 20) -> tuple[float, float]:
  """The selection phase alone: one batched PUCT descent
  (`selection.select_batch`, the loop that steps all B games until the
  deepest one's descent ends) on a searched graph, jitted on its own.

  Args:
    env: the env.
    config: the search's SearchConfig.
    graph: Graph [B, N, A], e.g. `SearchOutput.graph`.
    repeats: timed calls (median).

  Returns:
    (median process CPU ms of one descent, its steps: the longest of the B
    descents).
  """
  model = model_lib.as_model(env)
  plugins = rules.of(config)
  select = jax.jit(lambda graph, rng: selection.select_batch(graph, rng, model, config,
                                                             plugins).length)
  rng = jax.random.key(0)
  _, lengths, _, cpus = measure.time_calls(lambda: select(graph, rng), repeats, 10.0, with_cpu=True)
  return statistics.median(cpus) * 1e3, float(np.max(lengths))


def mctx_tree_depths(tree: mctx.Tree) -> np.ndarray:
  """The depth of the node each simulation added in an mctx search tree, from
  `tree.parents` (a node's index is larger than its parent's).

  Args:
    tree: the mctx tree of a search of S simulations, B games.

  Returns:
    int[S, B]: the depth of node i + 1 in each game.
  """
  parents = np.asarray(tree.parents)
  depth = np.zeros(parents.shape, np.int64)
  games = np.arange(parents.shape[0])
  for node in range(1, parents.shape[1]):
    depth[:, node] = depth[games, parents[:, node]] + 1
  return depth[:, 1:].T


def depth_figures(lengths: np.ndarray) -> tuple[float, float, float]:
  """Summary of descent depths.

  Args:
    lengths: int[S, B] descent depths (0: no simulation, left out of the mean).

  Returns:
    (mean, max, mean over simulations of the batch's max).
  """
  lengths = np.asarray(lengths)
  ran = lengths > 0
  if not ran.any():
    return math.nan, math.nan, math.nan
  return (float(lengths[ran].mean()), float(lengths.max()),
          float(lengths.max(axis=1)[ran.any(axis=1)].mean()))




def opening_moves(batch_size: int, plies: int, seed: int = 0) -> jax.Array:
  """Random legal Connect-4 moves per game, drawn on our env from the empty
  board (no game ends within `MAX_OPENING_PLIES`).

  Args:
    batch_size: games B.
    plies: moves K per game.
    seed: the draw's seed.

  Returns:
    int32[K, B].
  """
  if not 0 <= plies <= MAX_OPENING_PLIES:
    raise ValueError(f"opening plies must be in [0, {MAX_OPENING_PLIES}], got {plies}")
  env = envs.make("connect4")
  state = env.init(jax.random.key(0), batch_size=batch_size)
  rng, moves = jax.random.key(seed + 1000), []
  for _ in range(plies):
    rng, key = jax.random.split(rng)
    move = jax.random.categorical(key, jnp.where(state.legal_action_mask, 0.0, -jnp.inf))
    moves.append(move.astype(jnp.int32))
    state = env.step(state, moves[-1])
  return jnp.stack(moves) if moves else jnp.zeros((0, batch_size), jnp.int32)


def play_opening(env: Any, state: Any, moves: jax.Array | None) -> Any:
  """A batch of states after an opening, one game's state at a time
  (`jax.vmap(env.step)`: pgx's envs and ours).

  Args:
    env: the env.
    state: the batch [B].
    moves: int32[K, B] (None: the state as it is).

  Returns:
    The states [B].
  """
  if moves is None:
    return state
  step = jax.jit(jax.vmap(env.step))
  for move in moves:
    state = step(state, move)
  return state


def mcgs_contestant(network: MLP, backup: str, batch_size: int, num_simulations: int,
                    root_policy: str = "puct", eval_fn: Any = None,
                    opening: jax.Array | None = None) -> Contestant:
  """`mcgs_jax.search` on our Connect-4 with the MLP as eval_fn.

  Args:
    network: the MLP (used when `eval_fn` is None).
    backup: `SearchConfig.backup` ("mcgs", "tree", ...).
    batch_size: B, games searched together.
    num_simulations: S.
    root_policy: `SearchConfig.root_policy`: "puct" or "gumbel" (with
      `SearchConfig`'s Gumbel defaults, those of `mctx.gumbel_muzero_policy`).
    eval_fn: the search's eval_fn; None: `MLPEval(network)`.
    opening: int32[K, B] moves played from the empty board before the search
      (`opening_moves`); None: the empty board.

  Returns:
    The Contestant.
  """
  env = envs.make("connect4")
  config = mcgs_jax.SearchConfig(num_simulations=num_simulations, backup=backup,
                                 root_policy=root_policy)
  eval_fn = MLPEval(network) if eval_fn is None else eval_fn
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))

  def metrics(out):
    return (float(jnp.mean(out.stats.nodes_used)), float(jnp.mean(out.stats.nn_evals)),
            float(mcgs_jax.bytes_per_game(out.graph)))

  root = play_opening(env, env.init(jax.random.key(0), batch_size=batch_size), opening)
  probe = mcgs_depth_probe(env, eval_fn, config)

  def depths(params, rng, out):
    lengths, nodes_used = probe(params, rng, root)
    if not np.array_equal(np.asarray(nodes_used), np.asarray(out.stats.nodes_used)):
      raise RuntimeError("mcgs_depth_probe did not replay the search (other nodes_used)")
    return np.asarray(lengths)

  return Contestant(search=search, root=root, metrics=metrics, depths=depths,
                    descent=lambda out: time_descent(env, config, out.graph))


def mctx_contestant(network: MLP, batch_size: int, num_simulations: int, env: Any,
                    policy: str = "muzero", eval_fn: Any = None,
                    opening: jax.Array | None = None) -> Contestant:
  """`mctx.muzero_policy` with `env` (pgx's `connect_four`, or ours: the
  fields it reads are the same) as the model.

  Args:
    network: the MLP (used when `eval_fn` is None).
    batch_size: B, games searched together.
    num_simulations: S.
    env: the model's env.
    policy: "muzero" (`mctx.muzero_policy`) or "gumbel_muzero"
      (`mctx.gumbel_muzero_policy`), each with mctx's defaults.
    eval_fn: the network call; None: `MLPEval(network)`, the same call as
      the mcgs_jax contestants.
    opening: int32[K, B] moves played before the search (`opening_moves`);
      None: the empty board.

  Returns:
    The Contestant.
  """
  if policy not in ("muzero", "gumbel_muzero"):
    raise ValueError(f"policy must be 'muzero' or 'gumbel_muzero', got {policy!r}")
  eval_fn = MLPEval(network) if eval_fn is None else eval_fn
  policy_fn = mctx.muzero_policy if policy == "muzero" else mctx.gumbel_muzero_policy

  recurrent_fn = measure.mctx_recurrent_fn(env, eval_fn)

  @jax.jit
  def search(params, rng, state):
    logits, value = eval_fn(params, None, state)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    return policy_fn(params, rng, root, recurrent_fn, num_simulations=num_simulations,
                     invalid_actions=~state.legal_action_mask)

  def metrics(out):
    tree = out.search_tree
    num_bytes = sum(x.nbytes for x in jax.tree.leaves(tree))
    return (float(num_simulations + 1), float(num_simulations + 1),
            num_bytes / tree.node_visits.shape[0])

  root = play_opening(env,
                      jax.vmap(env.init)(jax.random.split(jax.random.key(0), batch_size)), opening)
  return Contestant(search=search, root=root, metrics=metrics,
                    depths=lambda params, rng, out: mctx_tree_depths(out.search_tree))


def make_contestant(name: str, network: MLP | None, batch_size: int, num_simulations: int,
                    eval_fn: Any = None, opening: jax.Array | None = None) -> Contestant:
  """The contestant `name` of a cell.

  Args:
    name: one of `CONTESTANTS` or `EXTRA_CONTESTANTS`.
    network: the MLP.
    batch_size: games B.
    num_simulations: simulations S.
    eval_fn: the network as eval_fn (None: `MLPEval(network)`).
    opening: int32[K, B] moves played before the search (None: the empty board).

  Returns:
    The Contestant.
  """
  if name == "mctx":
    return mctx_contestant(network, batch_size, num_simulations, pgx.make("connect_four"),
                           eval_fn=eval_fn, opening=opening)
  if name == "mctx-ours":
    return mctx_contestant(network, batch_size, num_simulations, envs.make("connect4"),
                           eval_fn=eval_fn, opening=opening)
  return mcgs_contestant(network, name, batch_size, num_simulations, eval_fn=eval_fn,
                         opening=opening)


def pgx_fits(eval_fn: Any, params: Any, plies: int = 12, batch_size: int = 8,
             seed: int = 0) -> bool:
  """Whether `eval_fn` gives the same outputs on pgx's `connect_four` states
  as on ours along the same random games (the same observation planes).

  Args:
    eval_fn: the network call.
    params: its parameters.
    plies: random plies played in both envs (legal moves, the same ones).
    batch_size: games.
    seed: the games' seed.

  Returns:
    True when observations and outputs agree at every ply.
  """
  ours, theirs = envs.make("connect4"), pgx.make("connect_four")
  state = ours.init(jax.random.key(seed), batch_size=batch_size)
  pgx_state = jax.vmap(theirs.init)(jax.random.split(jax.random.key(seed), batch_size))
  evaluate, pgx_step = jax.jit(eval_fn), jax.jit(jax.vmap(theirs.step))
  rng = jax.random.key(seed + 1)
  for _ in range(plies + 1):
    try:
      same_input = bool(jnp.all(ours.observe(state) == pgx_state.observation))
      outputs = evaluate(params, None, state), evaluate(params, None, pgx_state)
    except (AttributeError, TypeError, ValueError):
      return False
    if not same_input or not all(
        np.allclose(a, b, atol=1e-5) for a, b in zip(outputs[0], outputs[1])):
      return False
    rng, key = jax.random.split(rng)
    legal = state.legal_action_mask & ~state.terminated[:, None]
    # A finished game steps with any action: pgx and ours both leave it as it is.
    action = jax.random.categorical(key,
                                    jnp.where(legal | ~legal.any(-1, keepdims=True), 0.0, -jnp.inf))
    state, pgx_state = ours.step(state, action), pgx_step(pgx_state, action)
  return True


@functools.lru_cache(maxsize=None)
def _network_floor(eval_fn):
  return jax.jit(phases.network_only, static_argnames=("env", "eval_fn", "num_steps"))


def network_floor_ms(eval_fn: Any, params: Any, root: Any, num_steps: int, repeats: int = 3,
                     budget_s: float = 60.0) -> tuple[float, float]:
  """Median time of `num_steps` network calls and env steps on a batch of our
  env in one `lax.scan` (`phases.network_only`).

  Args:
    eval_fn: the network as eval_fn.
    params: its parameters.
    root: the batch of states.
    num_steps: network calls and env steps.
    repeats: timed calls at most.
    budget_s: the timed calls stop once they have used this long.

  Returns:
    (wall ms, process CPU ms).
  """
  floor = _network_floor(eval_fn)
  call = lambda: floor(params, root, env=envs.make("connect4"), eval_fn=eval_fn, num_steps=num_steps
                      )
  _, _, walls, cpus = measure.time_calls(call, repeats, budget_s, with_cpu=True)
  if not walls:
    return math.nan, math.nan
  return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3


def predict_warmup(rows: list[dict], name: str, batch_size: int, sims: int) -> float | None:
  """Expected warm-up seconds of a cell from the contestant's largest timed
  cell: the run time scaled linearly in batch * sims (an overestimate when
  the batch grows, since small batches are overhead-bound) plus that cell's
  compile time.

  Args:
    rows: the rows measured so far.
    name: the contestant.
    batch_size: B of the cell.
    sims: S of the cell.

  Returns:
    Seconds, or None without a timed cell of the contestant.
  """
  done = [
      r for r in rows if r["contestant"] == name and r["status"] == "ok" and r["batch"] *
      r["sims"] <= batch_size * sims
  ]
  if not done:
    return None
  # Same batch first: run time is linear in the number of simulations.
  ref = max(done, key=lambda r: (r["batch"] == batch_size, r["batch"] * r["sims"]))
  run_s = ref["median_ms"] / 1e3
  compile_s = max(ref["warmup_s"] - run_s, 0.0)
  return compile_s + run_s * (batch_size * sims) / (ref["batch"] * ref["sims"])


def bench_cell(name, network, params, batch_size, sims, args, rows, eval_fn=None):
  """Runs one contestant in one cell.

  Args:
    name: the contestant.
    network: the MLP.
    params: its parameters.
    batch_size: games B.
    sims: simulations S.
    args: the command's settings: `repeats`, `max_seconds`, `seed`, and
      where present `reference` (default "mctx", the contestant the ratio
      divides by), `opening`, `depths` and `net_floor` (default True).
    rows: the rows measured so far (for the ratio and warm-up predictions).
    eval_fn: the network as eval_fn (None: `MLPEval(network)`).

  Returns:
    The cell's CSV row (`FIELDS`).
  """
  row = dict(batch=batch_size, sims=sims, contestant=name, status="ok", warmup_s=math.nan,
             repeats=0, median_ms=math.nan, sims_per_s=math.nan, ratio_vs_mctx=math.nan,
             nodes_per_game=math.nan, nn_evals_per_game=math.nan, bytes_per_game=math.nan,
             cpu_ms=math.nan, ratio_cpu_vs_mctx=math.nan, net_ms=math.nan, net_cpu_ms=math.nan,
             depth_mean=math.nan, depth_max=math.nan, depth_batch_max_mean=math.nan,
             descent_cpu_ms=math.nan, descent_steps=math.nan)
  reference_name = getattr(args, "reference", "mctx")
  predicted = predict_warmup(rows, name, batch_size, sims)
  if predicted is not None and predicted > args.max_seconds:
    row["status"] = f"skipped (predicted {predicted:.0f} s)"
    return row
  opening = getattr(args, "opening", None)
  contestant = make_contestant(name, network, batch_size, sims, eval_fn, opening)
  rng = jax.random.key(args.seed)
  call = lambda: contestant.search(params, rng, contestant.root)
  warmup, output, times, cpu_times = measure.time_calls(call, args.repeats, args.max_seconds,
                                                        with_cpu=True)
  row["warmup_s"] = warmup
  if not times:
    row["status"] = f"skipped (warm-up {warmup:.0f} s)"
    return row
  seconds = statistics.median(times)
  nodes, evals, num_bytes = contestant.metrics(output)
  row.update(repeats=len(times), median_ms=seconds * 1e3, cpu_ms=statistics.median(cpu_times) * 1e3,
             sims_per_s=batch_size * sims / seconds, nodes_per_game=nodes, nn_evals_per_game=evals,
             bytes_per_game=num_bytes)
  if getattr(args, "depths", True) and contestant.depths is not None:
    depth_mean, depth_max, batch_max = depth_figures(contestant.depths(params, rng, output))
    row.update(depth_mean=depth_mean, depth_max=depth_max, depth_batch_max_mean=batch_max)
  if getattr(args, "depths", True) and contestant.descent is not None:
    row["descent_cpu_ms"], row["descent_steps"] = contestant.descent(output)
  # The floor is the same for every contestant of a cell: measured once.
  floor = [
      r for r in rows
      if r["batch"] == batch_size and r["sims"] == sims and not math.isnan(r["net_ms"])
  ]
  if floor:
    row.update(net_ms=floor[0]["net_ms"], net_cpu_ms=floor[0]["net_cpu_ms"])
  elif getattr(args, "net_floor", True):
    root = play_opening(envs.make("connect4"),
                        envs.make("connect4").init(jax.random.key(0), batch_size=batch_size),
                        opening)
    row["net_ms"], row["net_cpu_ms"] = network_floor_ms(
        MLPEval(network) if eval_fn is None else eval_fn, params, root, sims + 1,
        budget_s=args.max_seconds)
  reference = [
      r for r in rows + [row] if r["contestant"] == reference_name and r["batch"] == batch_size and
      r["sims"] == sims and r["status"] == "ok"
  ]
  if reference:
    row["ratio_vs_mctx"] = row["median_ms"] / reference[0]["median_ms"]
    row["ratio_cpu_vs_mctx"] = row["cpu_ms"] / reference[0]["cpu_ms"]
  return row


def format_table(rows: list[dict]) -> str:
  """A markdown table of the measured rows.

  Args:
    rows: rows of `FIELDS`.

  Returns:
    The table.
  """
  header = ("| B | S | search | ms/search | sims/s | vs mctx | cpu ms | cpu vs mctx | "
            "net+env cpu ms | depth mean | "
            "depth max | batch-max depth | descent cpu ms (steps) | nodes/game | "
            "nn evals/game | KiB/game | "
            "warm-up s | status |")
  fmt = measure.format_number
  lines = [header, "|" + "---|" * (header.count("|") - 1)]
  for r in rows:
    lines.append(
        f"| {r['batch']} | {r['sims']} | {r['contestant']} | {fmt(r['median_ms'], '.1f')} | "
        f"{fmt(r['sims_per_s'], ',.0f')} | {fmt(r['ratio_vs_mctx'], '.2f')} | "
        f"{fmt(r['cpu_ms'], '.1f')} | {fmt(r['ratio_cpu_vs_mctx'], '.2f')} | "
        f"{fmt(r['net_cpu_ms'], '.1f')} | {fmt(r['depth_mean'], '.1f')} | "
        f"{fmt(r['depth_max'], '.0f')} | {fmt(r['depth_batch_max_mean'], '.1f')} | "
        f"{fmt(r['descent_cpu_ms'], '.2f')} ({fmt(r['descent_steps'], '.0f')}) | "
        f"{fmt(r['nodes_per_game'], '.1f')} | {fmt(r['nn_evals_per_game'], '.1f')} | "
        f"{fmt(r['bytes_per_game'] / 1024, '.1f')} | {fmt(r['warmup_s'], '.1f')} | "
        f"{r['status']} |")
  return "\n".join(lines)


def format_savings(rows: list[dict]) -> str:
  """% fewer nodes and network evaluations of mcgs vs tree at the largest S.

  Args:
    rows: rows of `FIELDS`.

  Returns:
    The lines ("no cell measured" without a cell of either).
  """
  ok = [r for r in rows if r["status"] == "ok" and r["contestant"] in ("mcgs", "tree")]
  if not ok:
    return "mcgs vs tree: no cell measured."
  sims = max(r["sims"] for r in ok)
  lines = [f"mcgs vs tree at S={sims}:"]
  for batch_size in sorted({r["batch"] for r in ok if r["sims"] == sims}):
    cell = {r["contestant"]: r for r in ok if r["sims"] == sims and r["batch"] == batch_size}
    if len(cell) < 2:
      continue
    mcgs, tree = cell["mcgs"], cell["tree"]
    fewer = lambda key: 100.0 * (1.0 - mcgs[key] / tree[key])
    lines.append(f"  B={batch_size}: {fewer('nodes_per_game'):.1f}% fewer nodes "
                 f"({mcgs['nodes_per_game']:.1f} vs {tree['nodes_per_game']:.1f}), "
                 f"{fewer('nn_evals_per_game'):.1f}% fewer network evaluations "
                 f"({mcgs['nn_evals_per_game']:.1f} vs {tree['nn_evals_per_game']:.1f}), "
                 f"time mcgs/tree {mcgs['median_ms'] / tree['median_ms']:.2f}")
  return "\n".join(lines)
