"""The peer: pgx's AlphaZero example recipe, written in this project's code.

  mcgs-jax peer-recipe --out runs/peer --cpu-budget 10800   # resumable
  mcgs-jax peer-recipe --out runs/peer_tiny --quick --iterations 2

The recipe of pgx's `examples/alphazero/train.py` (pgx 2.x) on pgx's
`connect_four`, one iteration at a time:

* self-play: `selfplay_batch_size` games start from `env.init` (fresh every
  iteration) and play `max_num_steps` moves in one `lax.scan`, finished games
  restarting in place (`pgx.experimental.auto_reset`); every move is
  `mctx.gumbel_muzero_policy` with `num_simulations`, the completed-by-mix-
  value Q transform and gumbel_scale 1, the network evaluated at the root and
  inside `recurrent_fn` (which steps the pgx state); the move played is
  `policy_output.action`;
* targets: the policy target is `action_weights`; the value target is the
  discounted return computed backwards over the scan, masked where the game
  was cut off by the end of the scan;
* training: the samples of this iteration alone (no replay buffer), shuffled,
  one pass in minibatches of `training_batch_size`, Adam at a constant
  `learning_rate`, loss = softmax cross-entropy + `optax.l2_loss` of the value
  (0.5 (v - z)^2) times the mask; no weight decay.

What differs from pgx's file: the network is this project's ResNet (the same
as the run it is compared with: `--network-kwargs`), BatchNorm included; the
batch sizes default to a quarter of pgx's (256 games, minibatches of 1024;
pgx: 1024 and 4096), so one iteration fits a few minutes of one CPU core
while keeping pgx's 64 updates per iteration and one pass over the data; pmap
over devices is left out (one device). Checkpoints (orbax) and metrics follow
`mcgs_jax.experiments.train`: rerunning the command resumes, `DIR/metrics.csv` has one
row per iteration with `agent` = "peer", `wall_s`, `cpu_s` (self-play and
training only) and, every `--eval-every` iterations, the same Pons error rates
as our runs (`mcgs_jax.learning.evaluation.ground_truth_figures`: raw policy and a
200-simulation PUCT search of this package on the first `--eval-positions`
positions of each set). `DIR/config.json` and `DIR/agent.msgpack` make the
directory loadable by `mcgs_jax.learning.checkpoint.load_agent` (arena, play).
"""

from __future__ import annotations

import argparse
import json
import sys

from mcgs_jax.learning import cli
from mcgs_jax.learning import names

# The library and jax, loaded on first use: after the arguments are checked.
peer = cli.lazy("mcgs_jax.learning.peer")

# PeerConfig's fields (mcgs_jax.learning.peer) other than network_kwargs, as flags.
def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--out", required=True, help="run directory (created, or resumed)")
  parser.add_argument("--iterations", type=int, default=1_000_000)
  parser.add_argument("--cpu-budget", type=float, default=None,
                      help="stop once cpu_s (self-play and training) reaches this")
  parser.add_argument("--wall-budget", type=float, default=None,
                      help="stop once wall_s (self-play and training) reaches this")
  parser.add_argument("--network-kwargs", default=None,
                      help='JSON object of ResNet attributes, e.g. \'{"num_blocks": 4, '
                      '"channels": 32}\' (the network of the run compared with)')
  parser.add_argument("--quick", action="store_true", help="tiny shapes (a smoke test)")
  for name, (kind, text) in names.PEER_FLAGS.items():
    parser.add_argument("--" + name.replace("_", "-"), type=kind, help=text)
  args = parser.parse_args(argv)
  values = dict(peer.QUICK) if args.quick else {}
  values.update({name: getattr(args, name) for name in names.PEER_FLAGS if getattr(args, name) is not None})
  if args.network_kwargs:
    values["network_kwargs"] = tuple(sorted(json.loads(args.network_kwargs).items()))
  config = peer.PeerConfig(**values)
  run = peer.PeerRun(args.out, config)
  try:
    while int(run.state["iteration"]) < args.iterations:
      if ((args.cpu_budget is not None and float(run.state["cpu_s"]) >= args.cpu_budget) or
          (args.wall_budget is not None and float(run.state["wall_s"]) >= args.wall_budget)):
        print(f"{args.out}: budget reached at iteration {int(run.state['iteration'])}")
        break
      print(json.dumps(run.step()), flush=True)
  finally:
    run.close()


if __name__ == "__main__":
  sys.exit(cli.main(main))
