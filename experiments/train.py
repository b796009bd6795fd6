"""AlphaZero training with the graph search: self-play, replay, optax updates.

  mcgs-jax train --env tictactoe --out runs/ttt
  mcgs-jax train --env connect4 --out runs/c4 --iterations 200
  mcgs-jax train --out runs/c4            # resume with the saved config

Each iteration plays `moves_per_iteration` moves in each of `games` games
(one search per move), adds the positions of finished games to the replay
buffer and makes `updates_per_iteration` optimizer steps. Every iteration
appends one row to `DIR/metrics.csv` and is checkpointed (orbax; with the
config's `checkpoint_every` N, the first, every N-th and the last one before
the run stops); running the same command again on the same `DIR` resumes
from the last complete checkpoint, whenever the previous run was stopped
(SIGKILL included): no iteration is lost (a SIGKILL repeats at most N - 1),
and the result equals an uninterrupted run.

Options not on the command line come from `--config FILE.json` (fields of
`mcgs_jax.learning.config.TrainConfig`) over the env's defaults. Outputs in DIR:
config.json, metrics.csv, checkpoints/, agent.msgpack (the latest network,
for `load_agent`), snapshots/ (the network at each evaluation, for the
arena), plots/ and, with --tensorboard, tb/.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcgs_jax import config as search_config_lib
from mcgs_jax.learning import cli
from mcgs_jax.learning import names

# The library, loaded on first use: after the arguments are checked.
distributed = cli.lazy("mcgs_jax.learning.distributed")
training = cli.lazy("mcgs_jax.learning.training")


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--env", type=cli.env_id, help="env id (mcgs_jax.envs.make), e.g. tictactoe, connect4, nim:3,20")
  parser.add_argument("--out", required=True, help="run directory (created, or resumed)")
  parser.add_argument("--iterations", type=int, default=None,
                      help="train until this iteration (total, resumed ones included); "
                      "default: the env's (mcgs_jax.learning.config.default_iterations)")
  parser.add_argument("--search", choices=names.SEARCHES)
  parser.add_argument("--root-policy", choices=search_config_lib.ROOT_POLICIES,
                      help="puct (visit-count targets) or gumbel (Gumbel root search, "
                      "improved-policy targets)")
  parser.add_argument("--simulations", type=int)
  parser.add_argument("--games", type=int)
  parser.add_argument("--config", help="JSON file of TrainConfig fields")
  parser.add_argument("--wall-budget", type=float, default=None,
                      help="also stop once the run's wall_s (self-play and training "
                      "seconds, resumed ones included) reaches this")
  parser.add_argument("--cpu-budget", type=float, default=None,
                      help="also stop once the run's cpu_s (CPU seconds of self-play and "
                      "training, resumed ones included) reaches this")
  parser.add_argument("--tensorboard", action="store_true", help="also write TensorBoard events")
  parser.add_argument("--distributed", action="store_true",
                      help="join a multi-process job (jax.distributed.initialize) first; the "
                      "three flags below default to what jax reads from the cluster's "
                      "environment (SLURM, Cloud TPU, Kubernetes, ...)")
  parser.add_argument("--coordinator-address", metavar="HOST:PORT",
                      help="process 0's address and a free port (--distributed)")
  parser.add_argument("--num-processes", type=int, help="processes in the job (--distributed)")
  parser.add_argument("--process-id", type=int,
                      help="this process's index, 0 .. N-1 (--distributed)")
  args = parser.parse_args(argv)
  if not args.out.strip():
    parser.error("--out must name the run's folder")
  for name in ("iterations", "simulations", "games"):
    if getattr(args, name) is not None and getattr(args, name) < 1:
      parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
  given = [f"--{name.replace('_', '-')}" for name in
           ("coordinator_address", "num_processes", "process_id")
           if getattr(args, name) is not None]
  if given and not args.distributed:
    parser.error(f"{given[0]} needs --distributed")
  if args.num_processes is not None and args.num_processes < 1:
    parser.error(f"--num-processes must be >= 1, got {args.num_processes}")
  if args.process_id is not None and not (
      0 <= args.process_id < (args.num_processes or args.process_id + 1)):
    parser.error(f"--process-id must be in 0 .. --num-processes - 1, got {args.process_id}")
  for name in ("wall_budget", "cpu_budget"):
    if getattr(args, name) is not None and not getattr(args, name) > 0:
      parser.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
  return args


def run(argv) -> int:
  """The command: trains, or resumes, the run in `--out`."""
  args = parse_args(argv)
  if args.distributed and distributed.WORKER_VARIABLE not in os.environ:
    # The work runs in a child, whose end by a lost peer (a native abort)
    # becomes one line here.
    return distributed.supervise(list(argv), "mcgs_jax.experiments.train",
                                 os.path.join(args.out, "checkpoints"))
  return training.run(
      args.out, iterations=args.iterations, config_file=args.config,
      wall_budget=args.wall_budget, cpu_budget=args.cpu_budget, tensorboard=args.tensorboard,
      distributed_job=args.distributed, coordinator_address=args.coordinator_address,
      num_processes=args.num_processes, process_id=args.process_id, env=args.env,
      search=args.search, simulations=args.simulations, games=args.games,
      root_policy=args.root_policy)


def main(argv=None):
  return cli.main(run, argv)


if __name__ == "__main__":
  sys.exit(main())
