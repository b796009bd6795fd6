"""Can a network learn the value from a run's self-play data? A supervised check.

  python -m experiments.value_fit runs/diagnosis/base --updates 3000 \
      --network resnet '{"num_blocks": 4, "channels": 32}'

Restores the replay buffer of a Connect-4 run's newest checkpoint, plays new
games with the run's own network for a held-out set (the same distribution,
other games), then trains a fresh network on the buffer alone (Adam 1e-3,
the run's loss and batch size, a random symmetry per example) and prints,
every sixth of the updates, the training value loss beside the held-out
value MSE, overall and on late positions (>= 24 stones), and the held-out
policy cross-entropy, and how often the value of a late held-out position
reads its exact outcome (the solver; win > 1/3, loss < -1/3, draw between)
next to how often the targets' sign is that outcome. A value head that
memorises its targets shows a falling training loss and a flat held-out
error. Rows go to `--csv`.
"""

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import networks
from envs import connect4
from envs import connect4_solver
from learning import checkpoint
from learning import loop
from learning import selfplay
from learning import trainer
from learning import cli
from networks import losses

LATE_STONES = 24


def exact_outcomes(observations: np.ndarray) -> np.ndarray:
  """The exact outcome (+1 win, 0 draw, -1 loss, mover's view) of Connect-4
  positions given as observations [M, 6, 7, 2] (the project's solver)."""
  solver = connect4_solver.default_solver()
  outcomes = []
  for planes in observations.astype(bool):
    own = mask = 0
    for row in range(connect4.NUM_ROWS):
      for column in range(connect4.NUM_COLS):
        # Pons' bit layout: column * 7 + height; observation row 0 is the top.
        bit = 1 << (column * (connect4.NUM_ROWS + 1) + connect4.NUM_ROWS - 1 - row)
        own |= bit if planes[row, column, 0] else 0
        mask |= bit if planes[row, column, 0] or planes[row, column, 1] else 0
    outcomes.append(np.sign(solver.solve_bits(own, mask, int(planes.sum()))))
  return np.array(outcomes)


def held_out(run: loop.Run, calls: int, seed: int):
  """Examples of new self-play games of the run's network (finished games only)."""
  config = run.config
  play = jax.jit(selfplay.play, static_argnames=("env", "eval_fn", "config", "num_moves"))
  state = selfplay.init(jax.random.PRNGKey(seed), run.env, config.games, config.opening_plies)
  parts = []
  for call in range(calls):
    state, examples, valid, _ = play(run.playing_variables, jax.random.PRNGKey(seed + 1 + call),
                                     state, env=run.env, eval_fn=run.eval_fn,
                                     config=config.selfplay_config(),
                                     num_moves=config.moves_per_iteration)
    valid = np.asarray(valid)
    parts.append(jax.tree.map(lambda x, valid=valid: np.asarray(x)[valid], examples))
  return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("run", help="a Connect-4 run directory (its newest checkpoint)")
  parser.add_argument("--network", nargs=2, default=["resnet", '{"num_blocks": 4, "channels": 32}'],
                      metavar=("NAME", "JSON"), help="the network to train (networks.make)")
  parser.add_argument("--updates", type=int, default=3000)
  parser.add_argument("--learning-rate", type=float, default=1e-3)
  parser.add_argument("--weight-decay", type=float, default=None,
                      help="AdamW's decoupled decay (default: the run's)")
  parser.add_argument("--held-out-calls", type=int, default=4,
                      help="self-play calls for the held-out set")
  parser.add_argument("--csv", default=None, help="rows to this CSV")
  args = parser.parse_args(argv)
  config = checkpoint.load_config(args.run)
  run = loop.Run(args.run, config)
  try:
    buffer, env = run.state["buffer"], run.env
    hold = held_out(run, args.held_out_calls, seed=7)
  finally:
    run.close()
  late = hold.observation.reshape(len(hold.value), -1).sum(axis=-1) >= LATE_STONES
  exact = exact_outcomes(hold.observation[late])
  target_agrees = float(np.mean(np.sign(np.round(hold.value[late], 3)) == exact))
  print(f"buffer {int(buffer.size)} examples; held-out {len(hold.value)} ({int(late.sum())} late), "
        f"target variance {np.var(hold.value):.3f}; the targets' sign is the exact outcome in "
        f"{100 * target_agrees:.0f}% of the late positions", flush=True)
  name, kwargs = args.network[0], json.loads(args.network[1])
  network = networks.make(name, env, **kwargs)
  apply = jax.jit(lambda v, o: network.apply(v, o))
  variables = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
  weight_decay = config.weight_decay if args.weight_decay is None else args.weight_decay
  optimizer = losses.make_optimizer(args.learning_rate, weight_decay, kind="adam")
  opt_state = optimizer.init(variables["params"])
  rows, start, done = [], time.process_time(), 0
  for block in range(6):
    count = args.updates // 6
    variables, opt_state, metrics = trainer.train(
        variables, opt_state, buffer, jax.random.PRNGKey(block), network=network,
        optimizer=optimizer, loss_config=trainer.LossConfig(kind=config.loss), env=env,
        batch_size=config.batch_size, num_updates=count)
    done += count
    logits, value = apply(variables, jnp.asarray(hold.observation))
    value, log_probs = np.asarray(value), np.asarray(jax.nn.log_softmax(logits))
    read = np.where(value > 1 / 3, 1, np.where(value < -1 / 3, -1, 0))
    row = dict(network=name, network_kwargs=json.dumps(kwargs), weight_decay=weight_decay,
               updates=done,
               cpu_s=time.process_time() - start, train_value=float(metrics["value"]),
               held_out_value_mse=float(np.mean((value - hold.value) ** 2)),
               held_out_late_value_mse=float(np.mean((value[late] - hold.value[late]) ** 2)),
               late_value_reads_exact=float(np.mean(read[late] == exact)),
               late_targets_exact=target_agrees,
               held_out_policy_ce=float(-np.mean(np.sum(
                   np.where(hold.policy > 0, hold.policy * log_probs, 0.0), axis=-1))))
    rows.append(row)
    print(f"{done} updates ({row['cpu_s']:.0f} CPU s): training value loss "
          f"{row['train_value']:.3f}, held-out value MSE {row['held_out_value_mse']:.3f} "
          f"(late {row['held_out_late_value_mse']:.3f}; the late value reads the exact outcome in "
          f"{100 * row['late_value_reads_exact']:.0f}%), held-out policy cross-entropy "
          f"{row['held_out_policy_ce']:.3f}", flush=True)
  if args.csv:
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    loop.write_metrics(args.csv, rows)


if __name__ == "__main__":
  sys.exit(cli.main(main))
