"""Search speed and memory on Connect-4: mcgs_jax ("mcgs", "tree") vs mctx.

  python -m experiments.bench_search             # batch {1, 64, 1024} x sims {64, 256, 800}
  python -m experiments.bench_search --quick     # batch {1, 64} x sims {64, 256}
  python -m experiments.bench_search --batch 1024 --sims 800 --max-seconds 300

Every contestant searches from the initial position with the same MLP
parameters:
  mctx   `mctx.muzero_policy` on pgx's `connect_four`; `recurrent_fn` steps
         the pgx state, then applies the MLP (pgx's AlphaZero example).
  mcgs   `mcgs_jax.search(backup="mcgs")` on `envs.make("connect4")`.
  tree   `mcgs_jax.search(backup="tree")`, same.
  mctx-ours  (only with `--contestants`) mctx on `envs.make("connect4")`:
         how much of mctx's time is pgx's env.

Each cell is compiled by one untimed warm-up call, then timed over repeats
(median). A cell is skipped when its warm-up takes longer than
`--max-seconds`, or when the contestant's smaller cells predict that it would.
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

import envs
import mcgs_jax
from experiments import benchlib
from networks import MLP, MLPEval, init_params

CONTESTANTS = ("mctx", "mcgs", "tree")
# mctx on our env instead of pgx's: separates the cost of the env from the
# cost of the search. Not run unless asked for.
EXTRA_CONTESTANTS = ("mctx-ours",)
NUM_ACTIONS = 7
HIDDEN_SIZES = (128, 128)
FULL_BATCH = (1, 64, 1024)
FULL_SIMS = (64, 256, 800)
QUICK_BATCH = (1, 64)
QUICK_SIMS = (64, 256)
FIELDS = ("batch", "sims", "contestant", "status", "warmup_s", "repeats", "median_ms",
          "sims_per_s", "ratio_vs_mctx", "nodes_per_game", "nn_evals_per_game",
          "bytes_per_game")

NOTE = """\
Settings: each library's own defaults. mctx.muzero_policy: pb_c_init=1.25,
pb_c_base=19652, Dirichlet noise at the root (fraction 0.25, alpha 0.3),
qtransform_by_parent_and_siblings (min-max normalised Q). mcgs_jax:
c_init=2.5, c_base=19652, q_init=-1, no root noise. MLP hidden sizes
{hidden}, shared parameters. ratio = time / mctx time in the same cell.
mctx nodes = nn evals = sims + 1 (one per simulation plus the root).
nn evals (ours) = SearchStats.nn_evals, leaves that needed the network; the
network still runs on all B rows every step (SearchStats.eval_rows = sims +
1), so the time saved by transpositions is in storage, not in network calls."""


@dataclasses.dataclass(frozen=True)
class Contestant:
  """A jitted search and what to read off its output.

  Attributes:
    search: `(params, rng, root) -> output`, jitted.
    root: the batch of initial states it searches from.
    metrics: `output -> (nodes, nn_evals, bytes)` per game, means over games.
  """
  search: Callable[..., Any]
  root: Any
  metrics: Callable[[Any], tuple[float, float, float]]


def mcgs_contestant(network: MLP, backup: str, batch_size: int, num_simulations: int,
                    root_policy: str = "puct", eval_fn: Any = None) -> Contestant:
  """`mcgs_jax.search` on our Connect-4 with the MLP as eval_fn.

  Args:
    network: the MLP (used when `eval_fn` is None).
    backup: `SearchConfig.backup` ("mcgs", "tree", ...).
    batch_size: B, games searched together.
    num_simulations: S.
    root_policy: `SearchConfig.root_policy`: "puct" or "gumbel" (with
      `SearchConfig`'s Gumbel defaults, those of `mctx.gumbel_muzero_policy`).
    eval_fn: the search's eval_fn; None: `MLPEval(network)`.

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

  root = env.init(jax.random.key(0), batch_size=batch_size)
  return Contestant(search=search, root=root, metrics=metrics)


def mctx_contestant(network: MLP, batch_size: int, num_simulations: int, env: Any,
                    policy: str = "muzero", eval_fn: Any = None) -> Contestant:
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

  Returns:
    The Contestant.
  """
  if policy not in ("muzero", "gumbel_muzero"):
    raise ValueError(f"policy must be 'muzero' or 'gumbel_muzero', got {policy!r}")
  eval_fn = MLPEval(network) if eval_fn is None else eval_fn
  policy_fn = mctx.muzero_policy if policy == "muzero" else mctx.gumbel_muzero_policy

  recurrent_fn = benchlib.mctx_recurrent_fn(env, eval_fn)

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

  root = jax.vmap(env.init)(jax.random.split(jax.random.key(0), batch_size))
  return Contestant(search=search, root=root, metrics=metrics)


def make_contestant(name: str, network: MLP, batch_size: int,
                    num_simulations: int) -> Contestant:
  if name == "mctx":
    return mctx_contestant(network, batch_size, num_simulations, pgx.make("connect_four"))
  if name == "mctx-ours":
    return mctx_contestant(network, batch_size, num_simulations, envs.make("connect4"))
  return mcgs_contestant(network, name, batch_size, num_simulations)


def predict_warmup(rows: list[dict], name: str, batch_size: int, sims: int) -> float | None:
  """Expected warm-up seconds of a cell from the contestant's largest timed
  cell: the run time scaled linearly in batch * sims (an overestimate when
  the batch grows, since small batches are overhead-bound) plus that cell's
  compile time."""
  done = [r for r in rows if r["contestant"] == name and r["status"] == "ok"
          and r["batch"] * r["sims"] <= batch_size * sims]
  if not done:
    return None
  # Same batch first: run time is linear in the number of simulations.
  ref = max(done, key=lambda r: (r["batch"] == batch_size, r["batch"] * r["sims"]))
  run_s = ref["median_ms"] / 1e3
  compile_s = max(ref["warmup_s"] - run_s, 0.0)
  return compile_s + run_s * (batch_size * sims) / (ref["batch"] * ref["sims"])


def bench_cell(name, network, params, batch_size, sims, args, rows):
  """Runs one contestant in one cell; returns its CSV row."""
  row = dict(batch=batch_size, sims=sims, contestant=name, status="ok", warmup_s=math.nan,
             repeats=0, median_ms=math.nan, sims_per_s=math.nan, ratio_vs_mctx=math.nan,
             nodes_per_game=math.nan, nn_evals_per_game=math.nan,
             bytes_per_game=math.nan)
  predicted = predict_warmup(rows, name, batch_size, sims)
  if predicted is not None and predicted > args.max_seconds:
    row["status"] = f"skipped (predicted {predicted:.0f} s)"
    return row
  contestant = make_contestant(name, network, batch_size, sims)
  rng = jax.random.key(args.seed)
  call = lambda: contestant.search(params, rng, contestant.root)
  warmup, output, times = benchlib.time_calls(call, args.repeats, args.max_seconds)
  row["warmup_s"] = warmup
  if not times:
    row["status"] = f"skipped (warm-up {warmup:.0f} s)"
    return row
  seconds = statistics.median(times)
  nodes, evals, num_bytes = contestant.metrics(output)
  row.update(repeats=len(times), median_ms=seconds * 1e3,
             sims_per_s=batch_size * sims / seconds, nodes_per_game=nodes,
             nn_evals_per_game=evals, bytes_per_game=num_bytes)
  reference = [r for r in rows + [row] if r["contestant"] == "mctx"
               and r["batch"] == batch_size and r["sims"] == sims and r["status"] == "ok"]
  if reference:
    row["ratio_vs_mctx"] = row["median_ms"] / reference[0]["median_ms"]
  return row


def _fmt(value, spec):
  return "-" if isinstance(value, float) and math.isnan(value) else format(value, spec)


def format_table(rows: list[dict]) -> str:
  """A markdown table of the measured rows."""
  header = ("| B | S | search | ms/search | sims/s | vs mctx | nodes/game | "
            "nn evals/game | KiB/game | warm-up s | status |")
  lines = [header, "|" + "---|" * (header.count("|") - 1)]
  for r in rows:
    lines.append(
        f"| {r['batch']} | {r['sims']} | {r['contestant']} | {_fmt(r['median_ms'], '.1f')} | "
        f"{_fmt(r['sims_per_s'], ',.0f')} | {_fmt(r['ratio_vs_mctx'], '.2f')} | "
        f"{_fmt(r['nodes_per_game'], '.1f')} | {_fmt(r['nn_evals_per_game'], '.1f')} | "
        f"{_fmt(r['bytes_per_game'] / 1024, '.1f')} | {_fmt(r['warmup_s'], '.1f')} | "
        f"{r['status']} |")
  return "\n".join(lines)


def format_savings(rows: list[dict]) -> str:
  """% fewer nodes and network evaluations of mcgs vs tree at the largest S."""
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
    lines.append(
        f"  B={batch_size}: {fewer('nodes_per_game'):.1f}% fewer nodes "
        f"({mcgs['nodes_per_game']:.1f} vs {tree['nodes_per_game']:.1f}), "
        f"{fewer('nn_evals_per_game'):.1f}% fewer network evaluations "
        f"({mcgs['nn_evals_per_game']:.1f} vs {tree['nn_evals_per_game']:.1f}), "
        f"time mcgs/tree {mcgs['median_ms'] / tree['median_ms']:.2f}")
  return "\n".join(lines)


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help=f"batch {QUICK_BATCH} x sims {QUICK_SIMS}")
  parser.add_argument("--batch", type=int, nargs="+", help="batch sizes (overrides the grid)")
  parser.add_argument("--sims", type=int, nargs="+", help="simulation counts (overrides)")
  parser.add_argument("--contestants", nargs="+",
                      choices=CONTESTANTS + EXTRA_CONTESTANTS, default=CONTESTANTS)
  parser.add_argument("--repeats", type=int, default=5, help="timed calls per cell")
  parser.add_argument("--max-seconds", type=float, default=120.0,
                      help="skip a cell whose warm-up (compile + one search) takes longer; "
                      "also bounds the timed repeats of a cell")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default="results/bench_search.csv")
  args = parser.parse_args(argv)
  if args.batch is None:
    args.batch = QUICK_BATCH if args.quick else FULL_BATCH
  if args.sims is None:
    args.sims = QUICK_SIMS if args.quick else FULL_SIMS
  return args


def main(argv=None):
  args = parse_args(argv)
  network = MLP(num_actions=NUM_ACTIONS, hidden_sizes=HIDDEN_SIZES)
  params = init_params(network, jax.random.key(args.seed), jnp.zeros((1, 6, 7, 2)))
  print(f"jax {jax.__version__} on {jax.devices()[0].platform}, mctx {mctx.__version__}, "
        f"pgx {pgx.__version__}; batch {args.batch} x sims {args.sims}, "
        f"max {args.max_seconds:.0f} s per cell", flush=True)
  start = time.perf_counter()
  rows = []
  # mctx first in every cell: the others report their time relative to it.
  order = [c for c in CONTESTANTS + EXTRA_CONTESTANTS if c in args.contestants]
  for batch_size in args.batch:
    for sims in args.sims:
      for name in order:
        row = bench_cell(name, network, params, batch_size, sims, args, rows)
        rows.append(row)
        print(f"  B={batch_size:<5} S={sims:<4} {name:<9} "
              f"{_fmt(row['median_ms'], '10.1f')} ms  {row['status']}", flush=True)
  print()
  print(format_table(rows))
  print()
  print(format_savings(rows))
  print()
  print(NOTE.format(hidden=HIDDEN_SIZES))
  print(f"\nTotal {time.perf_counter() - start:.0f} s. CSV: {args.csv}")
  benchlib.write_csv(args.csv, rows, FIELDS)


if __name__ == "__main__":
  sys.exit(main())
