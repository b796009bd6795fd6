"""What several processes cost: the same training run on 1 process over 2
virtual CPU devices and on 2 processes of 1 device each (gloo collectives),
on this machine.

  python -m mcgs_jax.benchmarks.processes [--iterations 6] [--csv FILE]

Each setup is a real `mcgs-jax train` run (tic-tac-toe, MLP(64), 64 games,
16 simulations, 9 moves and 8 updates per iteration, no evaluation) into a
fresh folder; its positions per second are the run's positions over its
`wall_s` (process 0's self-play and training seconds, compilation left
out), after the first iteration. Prints a table and writes a CSV.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

from mcgs_jax.benchmarks import measure as measure_lib

FIELDS = ("setup", "processes", "devices", "iterations", "positions", "wall_s",
          "positions_per_s", "selfplay_s_per_iteration", "train_s_per_iteration")
CONFIG = {"network": "mlp", "network_kwargs": {"hidden_sizes": [64]}, "games": 64,
          "simulations": 16, "moves_per_iteration": 9, "batch_size": 64, "min_replay": 64,
          "updates_per_iteration": 8, "replay_capacity": 4096, "eval_every": 0}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _train(out, config_path, iterations, processes, logs):
  command = [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "tictactoe",
             "--config", config_path, "--out", out, "--iterations", str(iterations)]
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  if processes == 1:
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                        " --xla_force_host_platform_device_count=2").strip()
  else:
    command = ["bash", _launcher(), str(processes)] + command + ["--distributed"]
    env["MCGS_LOGS"] = logs
  done = subprocess.run(command, env=env, capture_output=True, text=True)
  if done.returncode:
    raise SystemExit(f"error: {' '.join(command[:8])} ... failed ({done.returncode}): "
                     f"{done.stderr.strip().splitlines()[-1:] or ''}")


def _launcher():
  # In the repository (an editable install or a checkout) beside the package.
  for root in (ROOT, os.path.dirname(ROOT), os.getcwd()):
    path = os.path.join(root, "scripts", "launch_local.sh")
    if os.path.exists(path):
      return path
  raise SystemExit("error: scripts/launch_local.sh not found: run from the repository")


def _row(setup, processes, out):
  with open(os.path.join(out, "metrics.csv"), newline="") as f:
    rows = list(csv.DictReader(f))[1:]   # the first iteration warms up
  positions = sum(int(r["positions"]) for r in rows)
  wall = sum(float(r["selfplay_s"]) + float(r["train_s"]) for r in rows)
  return dict(setup=setup, processes=processes, devices=int(rows[-1]["devices"]),
              iterations=len(rows), positions=positions, wall_s=round(wall, 3),
              positions_per_s=round(positions / wall, 1),
              selfplay_s_per_iteration=round(
                  sum(float(r["selfplay_s"]) for r in rows) / len(rows), 4),
              train_s_per_iteration=round(sum(float(r["train_s"]) for r in rows) / len(rows), 4))


def measure(iterations: int, rounds: int) -> list[dict]:
  """Both setups, alternating, `rounds` runs each.

  Args:
    iterations: training iterations per run (the first is left out).
    rounds: runs per setup.

  Returns:
    One row (`FIELDS`) per run.
  """
  rows = []
  with tempfile.TemporaryDirectory() as folder:
    config_path = os.path.join(folder, "config.json")
    with open(config_path, "w") as f:
      json.dump(CONFIG, f)
    for r in range(rounds):
      setups = [("1 process x 2 devices", 1), ("2 processes x 1 device", 2)]
      for setup, processes in setups if r % 2 == 0 else setups[::-1]:
        out = os.path.join(folder, f"run-{processes}-{r}")
        _train(out, config_path, iterations, processes, os.path.join(folder, f"logs-{r}"))
        rows.append(_row(setup, processes, out))
        print(f"  round {r + 1}/{rounds}: {setup}: {rows[-1]['positions_per_s']} positions/s",
              flush=True)
  return rows


def main(argv=None):
  """The command line: measures, prints the table, writes the CSV.

  Args:
    argv: the arguments (None: sys.argv[1:]).

  Returns:
    0.
  """
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--iterations", type=int, default=6)
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--csv", default="results/benchmarks/processes.csv")
  args = parser.parse_args(argv)
  if args.iterations < 2 or args.rounds < 1:
    parser.error("--iterations must be >= 2 and --rounds >= 1")
  rows = measure(args.iterations, args.rounds)
  print(measure_lib.markdown_table(rows, FIELDS))
  measure_lib.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
