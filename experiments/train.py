"""AlphaZero training with the graph search: self-play, replay, optax updates.

  python -m experiments.train --env tictactoe --out runs/ttt
  python -m experiments.train --env connect4 --out runs/c4 --iterations 200
  python -m experiments.train --out runs/c4            # resume with the saved config

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
`learning.config.TrainConfig`) over the env's defaults. Outputs in DIR:
config.json, metrics.csv, checkpoints/, agent.msgpack (the latest network,
for `load_agent`), snapshots/ (the network at each evaluation, for the
arena), plots/ and, with --tensorboard, tb/.
"""

import argparse
import contextlib
import csv
import json
import os
import signal
import sys
import threading
import warnings

import jax

from learning import checkpoint as checkpoint_lib
from learning import config as config_lib
from learning import plots
from mcgs_jax import config as search_config_lib
# The loop lives in `learning.loop`, agents beside the checkpoints; these
# names stay here for scripts written against them.
from learning.checkpoint import AGENT, CONFIG, build_network, init_variables, load_agent  # noqa: F401
from learning.loop import METRICS, CheckpointFallbackWarning, Run, compile_seconds  # noqa: F401
from learning.loop import write_metrics  # noqa: F401


def resolve_config(args) -> config_lib.TrainConfig:
  """Saved config (resume), else env defaults + config file + options."""
  saved_path = os.path.join(args.out, CONFIG)
  options = {name: getattr(args, name)
             for name in ("env", "search", "simulations", "games", "root_policy")
             if getattr(args, name) is not None}
  file_values = config_lib.load_json(args.config) if args.config else {}
  if os.path.exists(saved_path):
    saved = config_lib.TrainConfig.from_json(config_lib.load_json(saved_path))
    asked = config_lib.replace(saved, **file_values, **options)
    if asked != saved:
      changed = sorted(k for k, v in asked.to_json().items() if saved.to_json()[k] != v)
      raise SystemExit(f"{args.out} was started with other settings ({', '.join(changed)} "
                       f"differ from {saved_path}); rerun with the same ones, or use a new --out")
    return saved
  env_id = options.get("env", file_values.get("env"))
  if env_id is None:
    raise SystemExit(f"--env is needed to start a new run ({saved_path} does not exist)")
  return config_lib.replace(config_lib.default_config(env_id), **file_values, **options)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--env", help="env id (envs.make), e.g. tictactoe, connect4, nim:3,20")
  parser.add_argument("--out", required=True, help="run directory (created, or resumed)")
  parser.add_argument("--iterations", type=int, default=None,
                      help="train until this iteration (total, resumed ones included); "
                      "default: the env's (learning.config.default_iterations)")
  parser.add_argument("--search", choices=config_lib.SEARCHES)
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
                      help="call jax.distributed.initialize() first (multi-host)")
  parser.add_argument("--debug", action="store_true",
                      help="show the full traceback of an error instead of one line")
  args = parser.parse_args(argv)
  try:
    with _terminate_as_interrupt():
      train(args)
  except KeyboardInterrupt:
    print(f"\nstopped at iteration {_last_iteration(args.out)}; run the same command to "
          "resume", file=sys.stderr)
    raise SystemExit(130) from None
  except Exception as error:  # pylint: disable=broad-except
    message = one_line_error(error)
    if args.debug or message is None:
      raise
    print(f"error: {message}\n(--debug shows the full traceback)", file=sys.stderr)
    raise SystemExit(1) from None


@contextlib.contextmanager
def _terminate_as_interrupt():
  """SIGTERM stops the run as Ctrl-C does: after its last finished iteration.

  A run started in the background (`nohup ... &`) ignores SIGINT, so `kill`
  (SIGTERM) is how it is stopped; without this it would die mid-iteration
  (still resumable, but without the closing line).
  """
  if threading.current_thread() is not threading.main_thread():
    yield
    return

  def interrupt(signum, frame):
    del signum, frame
    raise KeyboardInterrupt

  previous = signal.signal(signal.SIGTERM, interrupt)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)


def one_line_error(error: Exception) -> str | None:
  """The message of an error the user can act on, or None for a bug.

  Covers unusable checkpoints, diverging training and a network whose
  outputs the search refused (`SearchConfig.check_evaluator`: jax raises its
  runtime error, whose message ends with the evaluator check's).
  """
  if isinstance(error, (checkpoint_lib.CheckpointError, FloatingPointError)):
    return str(error)
  marker = "EvaluatorError: "
  text = str(error)
  if marker in text:
    return "the network's output was refused: " + text[text.rindex(marker) + len(marker):].strip()
  return None


def _last_iteration(directory: str) -> int:
  """The newest iteration in DIR/metrics.csv (0 without one)."""
  try:
    with open(os.path.join(directory, METRICS), newline="") as f:
      return max((int(row["iteration"]) for row in csv.DictReader(f)), default=0)
  except (OSError, ValueError, KeyError):
    return 0


def evaluation_summary(row: dict) -> str:
  """The evaluation figures of a metrics row in one short line ('' without).

  Connect-4: the error rates of the search and the raw policy on Pons' six
  sets (percent); small games: the share of positions whose value the move
  keeps; the arena's Elo when computed.
  """
  parts = []
  for kind in ("search", "policy"):
    errors = [row[k] for k in row if k.startswith(f"{kind}_c4_error_")]
    if errors:
      parts.append(f"{kind} errors % " + "/".join(f"{100 * e:.0f}" for e in errors))
    elif f"{kind}_keeps_value" in row:
      parts.append(f"{kind} keeps value {row[f'{kind}_keeps_value']:.4f}")
  if "elo" in row:
    parts.append(f"Elo {row['elo']:+.0f} [{row['elo_low']:+.0f}, {row['elo_high']:+.0f}]")
  return ", ".join(parts)


def train(args) -> None:
  """Runs `experiments.train`'s command line (parsed `args`)."""
  if args.distributed:
    jax.distributed.initialize()
  config = resolve_config(args)
  if args.iterations is None:
    args.iterations = config_lib.default_iterations(config.env)
  with warnings.catch_warnings():
    # Said once below, one line each, instead of a warning with its source.
    warnings.simplefilter("ignore", CheckpointFallbackWarning)
    run = Run(args.out, config, tensorboard=args.tensorboard)
  for note in run.notes:
    print(f"warning: {note}; resuming from iteration {int(run.state['iteration'])}",
          file=sys.stderr)
  start = int(run.state["iteration"])
  from tqdm import tqdm  # pylint: disable=g-import-not-at-top
  bar = tqdm(total=args.iterations, initial=min(start, args.iterations), unit="it",
             disable=None, desc=f"train {config.env}")
  if start >= args.iterations:
    print(f"{args.out}: already at iteration {start} (>= --iterations {args.iterations})")
  last_summary = ""
  try:
    for _ in range(start, args.iterations):
      spent = [(name, float(run.state[key]), budget)
               for name, key, budget in (("wall", "wall_s", args.wall_budget),
                                         ("CPU", "cpu_s", args.cpu_budget))
               if budget is not None and float(run.state[key]) >= budget]
      if spent:
        name, _, budget = spent[0]
        bar.write(f"{args.out}: {name} budget {budget:g} s reached at iteration "
                  f"{int(run.state['iteration'])}")
        break
      row = run.step()
      bar.update(1)
      if evaluation_summary(row):
        last_summary = evaluation_summary(row)
        if not bar.disable:
          bar.write(f"iteration {row['iteration']}: {last_summary}")
      loss = "-" if row["loss"] is None else f"{row['loss']:.3f}"
      bar.set_postfix_str(f"loss {loss}, positions {row['positions_total']}"
                          + (f", {last_summary}" if last_summary else ""), refresh=False)
      if not bar.disable:
        continue
      print(json.dumps(row), flush=True)
  finally:
    bar.close()
    run.close()
  plots.plot_run(args.out)


if __name__ == "__main__":
  main(sys.argv[1:])
