"""Self-play speed on Connect-4: `mcgs_jax.learning.selfplay.play` vs the same loop on mctx.

  mcgs-jax bench-selfplay                 # B=256, S=64, 8 moves per call
  mcgs-jax bench-selfplay --quick         # B=64, S=16, 4 moves per call
  mcgs-jax bench-selfplay --batch 256 --simulations 64 --moves 8 --profile
  mcgs-jax bench-selfplay --contestants mctx-gumbel mcgs-gumbel \
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
  mcgs         `selfplay.play` on `mcgs_jax.envs.make("connect4")`, backup "mcgs",
               PUCT with root Dirichlet noise 0.25 / 0.3, graph reuse
               between moves (`mcgs_jax.reroot`).
  tree         the same with backup "tree".
  mcgs-noreuse backup "mcgs", a fresh root every move.
  mcgs-gumbel  backup "mcgs" with the Gumbel root (`root_policy="gumbel"`,
               Gumbel noise of scale 1, 16 considered actions, no Dirichlet
               noise: `mcgs_jax.learning.config.TrainConfig.search_config`'s
               self-play settings), graph reuse; the move is the search's.
Only with `--contestants`: tree-noreuse, tree-gumbel, mcgs-gumbel-noreuse,
tree-gumbel-noreuse (the same, other backup or fresh roots).
Our loop searches with `max_nodes = 2 (S + 1)`.

Calls are chained: each call continues the games of the previous one
(steady-state self-play, finished games reset in place). The first call
compiles (its time less the median is the compile time), then
`BURN_IN_CALLS` calls spread the games over the opening and middle game.
The contestants are then timed in interleaved rounds (`--rounds`, each
`measure.time_calls`: one untimed call, `--repeats` timed ones), so that
load from other processes falls on all of them alike; s/call is the median
of all timed calls. Positions/s = moves * B / s per call.

`--profile` also times the pieces of one move of one of our loops
(`--profile-loop`, default mcgs) at the same B and S on mid-game positions
(`profile_rows`): the network batch, the search, the fresh root
(`mcgs_jax.init`), `advance`, `reroot`, the move bookkeeping and the target
computation over the history window, and mctx's search of the same root
policy.
"""

from __future__ import annotations

import dataclasses
import sys
import time

from mcgs_jax.benchmarks import names
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
jnp = cli.lazy("jax.numpy")
mctx = cli.lazy("mctx")
pgx = cli.lazy("pgx")
networks = cli.lazy("mcgs_jax.networks")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
selfplay_speed = cli.lazy("mcgs_jax.benchmarks.selfplay_speed")

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
  parser.add_argument(
      "--quick", action="store_true",
      help="B={batch}, S={simulations}, {moves} moves".format(**names.SELFPLAY_QUICK))
  parser.add_argument("--batch", type=int, help=f"games B (default {names.SELFPLAY_FULL['batch']})")
  parser.add_argument("--simulations", type=int,
                      help=f"simulations per move S (default {names.SELFPLAY_FULL['simulations']})")
  parser.add_argument("--moves", type=int,
                      help=f"moves per call (default {names.SELFPLAY_FULL['moves']})")
  parser.add_argument("--contestants", nargs="+",
                      choices=names.SELFPLAY_CONTESTANTS + names.SELFPLAY_EXTRA_CONTESTANTS,
                      default=names.SELFPLAY_CONTESTANTS)
  parser.add_argument("--rounds", type=int, default=3,
                      help="interleaved timing rounds over the contestants")
  parser.add_argument("--repeats", type=int, default=3,
                      help="timed calls per contestant and round (after one untimed call)")
  parser.add_argument(
      "--max-seconds", type=float, default=60.0,
      help="a contestant's timed calls stop once they have used this long "
      "(split over the rounds); also bounds each --profile piece")
  parser.add_argument("--profile", action="store_true",
                      help="also time the pieces of one move of our loop")
  parser.add_argument(
      "--profile-loop", default="mcgs", choices=[
          c for c in names.SELFPLAY_CONTESTANTS + names.SELFPLAY_EXTRA_CONTESTANTS
          if not c.startswith("mctx") and not c.endswith("noreuse")
      ], help="our loop whose pieces --profile times (default mcgs)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--csv", default="results/bench_selfplay.csv")
  args = parser.parse_args(argv)
  sizes = names.selfplay_sizes(args.quick, **{name: getattr(args, name)
                                              for name in names.SELFPLAY_FULL})
  for name, value in sizes.items():
    setattr(args, name, value)
  return args


def main(argv=None):
  args = parse_args(argv)
  eval_fn = networks.mlp_eval(selfplay_speed.NUM_ACTIONS, selfplay_speed.HIDDEN_SIZES)
  params = networks.init(eval_fn.network, jax.random.key(args.seed),
                         jnp.zeros((1, 6, 7, 2), jnp.bool_))
  print(
      f"jax {jax.__version__} on {jax.devices()[0].platform}, mctx {mctx.__version__}, "
      f"pgx {pgx.__version__}; B={args.batch}, S={args.simulations}, "
      f"{args.moves} moves per call", flush=True)
  start = time.perf_counter()
  order = [
      c for c in names.SELFPLAY_CONTESTANTS + names.SELFPLAY_EXTRA_CONTESTANTS
      if c in args.contestants
  ]
  settings = selfplay_speed.Settings(**{
      field.name: getattr(args, field.name) for field in dataclasses.fields(selfplay_speed.Settings)
  })
  rows = selfplay_speed.bench_rows(order, eval_fn, params, settings)
  print()
  print(selfplay_speed.format_table(rows))
  print()
  print(NOTE)
  measure.write_csv(args.csv, rows, selfplay_speed.FIELDS)
  if args.profile:
    print(f"\nPieces of one move of our loop ({args.profile_loop}), medians:", flush=True)
    pieces = selfplay_speed.profile_rows(eval_fn, params, settings)
    move_ms = [
        1e3 * r["s_per_call"] / r["moves"]
        for r in rows
        if r["contestant"] == args.profile_loop and r["status"] == "ok"
    ]
    for piece in pieces:
      if move_ms:
        piece["share_of_move"] = piece["per_move_ms"] / move_ms[0]
    print()
    if move_ms:
      print(f"One move of the {args.profile_loop} loop: {move_ms[0]:.1f} ms")
    print(selfplay_speed.format_profile(pieces))
    profile_csv = args.csv.replace(".csv", "_profile.csv")
    measure.write_csv(profile_csv, pieces, selfplay_speed.PROFILE_FIELDS)
    print(f"Profile CSV: {profile_csv}")
  print(f"\nTotal {time.perf_counter() - start:.0f} s. CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
