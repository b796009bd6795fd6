"""Search speed and memory on Connect-4: mcgs_jax ("mcgs", "tree") vs mctx.

  mcgs-jax bench-search             # batch {1, 64, 1024} x sims {64, 256, 800}
  mcgs-jax bench-search --quick     # batch {1, 64} x sims {64, 256}
  mcgs-jax bench-search --batch 1024 --sims 800 --max-seconds 300
  mcgs-jax bench-search --agent docs/learning/runs/connect4_v1 --batch 64 --sims 64 200 800

Every contestant searches from the initial position (or the openings of
`--opening-plies`) with the same MLP parameters:
  mctx   `mctx.muzero_policy` on pgx's `connect_four`; `recurrent_fn` steps
         the pgx state, then applies the MLP (pgx's AlphaZero example).
  mcgs   `mcgs_jax.search(backup="mcgs")` on `mcgs_jax.envs.make("connect4")`.
  tree   `mcgs_jax.search(backup="tree")`, same.
  mctx-ours  (only with `--contestants`) mctx on `mcgs_jax.envs.make("connect4")`:
         how much of mctx's time is pgx's env.

With `--agent DIR` every contestant searches with the trained agent of DIR
(`mcgs_jax.learning.checkpoint.load_agent`: its network and variables) instead of the
random MLP. mctx steps pgx's `connect_four` and evaluates its states with the
same eval_fn, which reads `state.observation` (the same planes in both envs;
checked at start, `pgx_fits`); where they differ, mctx runs on our env
("mctx-ours") and the output says so.

Depth figures per cell (`--no-depths` skips them): the descent depth of a
simulation is the number of edges from the root to its leaf. Reported: the
mean over simulations and games, the maximum, and the mean over simulations
of the batch's maximum; the batch's descent is one loop over all B games that
runs until the deepest game's descent ends (ours: `lax.while_loop`; mctx:
`vmap` of its `while_loop`), so the last figure is the number of descent steps
a simulation costs. Ours: `mcgs_depth_probe`, one untimed replay of the
search (`mcgs_jax.init` + `mcgs_jax.simulate` per simulation, the same rng)
that records each simulation's `Selection.length`. mctx: each simulation adds
one node, so its depth is that node's depth in `search_tree` (from `parents`).
"descent cpu ms (steps)" (ours): CPU ms of the selection phase alone, one
batched descent on the searched graph (`time_descent`), and its number of
steps (the deepest of its B descents).
"net+env cpu ms" is the floor any search of S simulations pays: S + 1
network calls and env steps on the B roots in one `lax.scan`
(`mcgs_jax.benchmarks.phases.network_only`), nothing else (CSV: `net_ms` wall,
`net_cpu_ms` CPU; `--no-net-floor` skips it); cpu ms - net+env cpu ms is
the search's own cost. "cpu ms" is the median process CPU time of a search
(all threads), steadier than wall time on a shared machine.

`--opening-plies K` (K <= 6, default 0: the empty board) searches from K
random legal plies, another opening in every game (the same openings for
every contestant, pgx's states stepped with the same moves): the B games then
differ, where from one root our B searches (no root noise, a deterministic
network) are B copies of one search.

Each cell is compiled by one untimed warm-up call, then timed over repeats
(median). A cell is skipped when its warm-up takes longer than
`--max-seconds`, or when the contestant's smaller cells predict that it would.
"""

from __future__ import annotations

import sys
import time

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
networks = cli.lazy("mcgs_jax.networks")
jax = cli.lazy("jax")
jnp = cli.lazy("jax.numpy")
mctx = cli.lazy("mctx")
pgx = cli.lazy("pgx")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
search_speed = cli.lazy("mcgs_jax.benchmarks.search_speed")

NOTE = """\
Settings: each library's own defaults. mctx.muzero_policy: pb_c_init=1.25,
pb_c_base=19652, Dirichlet noise at the root (fraction 0.25, alpha 0.3),
qtransform_by_parent_and_siblings (min-max normalised Q). mcgs_jax:
c_init=2.5, c_base=19652, q_init=-1, no root noise. Network: {network},
shared parameters. ratio = time / mctx time in the same cell.
mctx nodes = nn evals = sims + 1 (one per simulation plus the root).
nn evals (ours) = SearchStats.nn_evals, leaves that needed the network; the
network still runs on all B rows every step (SearchStats.eval_rows = sims +
1), so the time saved by transpositions is in storage, not in network calls.
net+env cpu ms = S + 1 network calls and env steps on the B roots in one
lax.scan, nothing else: the floor of any search (CPU ms; wall ms in the CSV).
cpu ms: process CPU time of a search, all threads. descent cpu ms (steps):
ours only, one batched descent (selection alone) on the searched graph, and
its steps (its deepest game's depth). depth: edges from the root to a
simulation's leaf (mean, max over simulations and games); batch-max depth: the
mean over simulations of the deepest game's depth, the descent loop's steps."""


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help=f"batch {names.SEARCH_QUICK_BATCH} x sims {names.SEARCH_QUICK_SIMS}")
  parser.add_argument("--batch", type=int, nargs="+", help="batch sizes (overrides the grid)")
  parser.add_argument("--sims", type=int, nargs="+", help="simulation counts (overrides)")
  parser.add_argument("--contestants", nargs="+",
                      choices=names.SEARCH_CONTESTANTS + names.SEARCH_EXTRA_CONTESTANTS,
                      default=names.SEARCH_CONTESTANTS)
  parser.add_argument("--repeats", type=int, default=5, help="timed calls per cell")
  parser.add_argument(
      "--max-seconds", type=float, default=120.0,
      help="skip a cell whose warm-up (compile + one search) takes longer; "
      "also bounds the timed repeats of a cell")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument(
      "--agent", metavar="DIR",
      help="search with the trained agent in DIR (config.json, agent.msgpack; "
      "mcgs_jax.learning.checkpoint.load_agent) instead of the random MLP")
  parser.add_argument("--no-depths", dest="depths", action="store_false",
                      help="skip the depth figures (our searches' untimed replay)")
  parser.add_argument("--no-net-floor", dest="net_floor", action="store_false",
                      help="skip the network+env floor (net ms) of each cell")
  parser.add_argument(
      "--opening-plies", type=int, default=0,
      help=f"search from this many random legal plies (<= {names.MAX_OPENING_PLIES}), "
      "another opening per game; 0: the empty board")
  parser.add_argument("--csv", default="results/bench_search.csv")
  args = parser.parse_args(argv)
  if args.batch is None:
    args.batch = names.SEARCH_QUICK_BATCH if args.quick else names.SEARCH_FULL_BATCH
  if args.sims is None:
    args.sims = names.SEARCH_QUICK_SIMS if args.quick else names.SEARCH_FULL_SIMS
  return args


def load_agent(directory: str):
  """(network description, eval_fn, params) of the trained Connect-4 agent in
  `directory` (`mcgs_jax.learning.checkpoint.load_agent`)."""
  from mcgs_jax.learning import checkpoint  # imports orbax: only with --agent
  config = checkpoint.load_config(directory)
  if config.env != "connect4":
    raise ValueError(f"{directory} holds a {config.env!r} agent; this benchmark is Connect-4")
  _, eval_fn, params = checkpoint.load_agent(directory)
  kwargs = ", ".join(f"{k}={v}" for k, v in sorted(config.network_options().items()))
  return f"the trained agent of {directory} ({config.network}: {kwargs})", eval_fn, params


def main(argv=None):
  args = parse_args(argv)
  if args.agent:
    network = None
    described, eval_fn, params = load_agent(args.agent)
  else:
    network = networks.MLP(num_actions=search_speed.NUM_ACTIONS, hidden_sizes=search_speed.HIDDEN_SIZES)
    params = networks.init_params(network, jax.random.key(args.seed), jnp.zeros((1, 6, 7, 2)))
    described, eval_fn = f"random MLP {search_speed.HIDDEN_SIZES}", None
  print(
      f"jax {jax.__version__} on {jax.devices()[0].platform}, mctx {mctx.__version__}, "
      f"pgx {pgx.__version__}; batch {args.batch} x sims {args.sims}, "
      f"max {args.max_seconds:.0f} s per cell; network: {described}", flush=True)
  contestants = list(args.contestants)
  args.reference = "mctx"
  if args.agent and "mctx" in contestants:
    if search_speed.pgx_fits(eval_fn, params):
      print("mctx steps pgx's connect_four: the agent's eval_fn gives the same outputs on "
            "pgx's states as on ours (same observation planes, checked along random games)")
    else:
      print("the agent's eval_fn does not fit pgx's connect_four states: mctx runs on our "
            "Connect-4 env instead (mctx-ours), and ratios are to it")
      contestants = ["mctx-ours" if c == "mctx" else c for c in contestants]
      args.reference = "mctx-ours"
  args.opening = None
  if args.opening_plies:
    print(f"roots: {args.opening_plies} random legal plies, another opening in every game")
  start = time.perf_counter()
  rows = []
  # The reference (mctx) first in every cell: the others report their time
  # relative to it.
  order = [c for c in names.SEARCH_CONTESTANTS + names.SEARCH_EXTRA_CONTESTANTS if c in contestants]
  order.sort(key=lambda c: c != args.reference)
  for batch_size in args.batch:
    if args.opening_plies:
      args.opening = search_speed.opening_moves(batch_size, args.opening_plies, args.seed)
    for sims in args.sims:
      for name in order:
        row = search_speed.bench_cell(name, network, params, batch_size, sims, args, rows, eval_fn)
        rows.append(row)
        print(
            f"  B={batch_size:<5} S={sims:<4} {name:<9} "
            f"{measure.format_number(row['median_ms'], '10.1f')} ms  {row['status']}", flush=True)
  print()
  print(search_speed.format_table(rows))
  print()
  print(search_speed.format_savings(rows))
  print()
  print(NOTE.format(network=described))
  print(f"\nTotal {time.perf_counter() - start:.0f} s. CSV: {args.csv}")
  measure.write_csv(args.csv, rows, search_speed.FIELDS)


if __name__ == "__main__":
  sys.exit(cli.main(main))
