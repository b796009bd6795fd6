"""Controlled Connect-4 training runs: one change at a time, a fixed budget.

  python -m experiments.diagnosis run base gumbel32 explore   # resumable
  python -m experiments.diagnosis run --all --budget 1200
  python -m experiments.diagnosis summarize                   # CSVs, table, plots
  python -m experiments.diagnosis final-eval                  # last snapshots, 1000 positions
  python -m experiments.diagnosis value-curve runs/connect4_recipe --positions 400    # value head per snapshot
  python -m experiments.diagnosis snapshot-curve runs/connect4_recipe --positions 400 # all errors per snapshot
  python -m experiments.diagnosis list

Every variant starts from `BASE` (the settings of the Connect-4 agent shipped
before this study: ResNet 4x32, MCGS with 64 PUCT simulations per move,
Dirichlet noise, temperature on the first 8 moves, outcome value targets,
100k replay window, Adam at a constant 1e-3) and changes one thing. Each is
an ordinary `experiments.train` run in `ROOT/<variant>` (a subprocess, so
rerunning the command resumes it) that stops once its `cpu_s` (CPU seconds of
self-play and training) reaches `--budget`, and is evaluated every 150 s of
`cpu_s` on the first 100 positions of each of Pons' six sets (raw policy and
a 200-simulation PUCT search), so all variants are measured by the same
search at the same compute. The budget is CPU time, not wall time, because
the runs share the machine (two at once, beside other work): one run's
process keeps about one core busy (XLA:CPU runs these small convolutions on
one thread), so its CPU seconds are close to the wall seconds it takes alone,
and they do not grow when other processes compete for the cores.

`summarize` copies each run's metrics to `docs/learning/diagnosis/<variant>.csv`,
writes `docs/learning/diagnosis/summary.csv` (per variant: the error rates
at the last evaluation and the mean of the last two, positions, network
evaluations, seconds) and plots the mean error over the six sets against
CPU time and against network evaluations (`diagnosis_cpu.png`,
`diagnosis_evals.png`).
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

import jax

from learning import checkpoint
from learning import config as config_lib
from learning import evaluation
from learning import ground_truth
from learning import loop
from learning import cli

ROOT = "runs/diagnosis"
DOCS = "docs/learning/diagnosis"
SETS = ("L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3")

# The shipped agent's run (docs/learning/runs/connect4_v1/config.json), with
# the evaluation of this study.
BASE = dict(
    env="connect4", network="resnet", network_kwargs={"num_blocks": 4, "channels": 32},
    search="mcgs", simulations=64, games=128, moves_per_iteration=14, reuse_graph=True,
    node_factor=3.0, solver=False, c_init=2.5, dirichlet_fraction=0.25, dirichlet_alpha=0.5,
    temperature_moves=8, opening_plies=0, outcome_weight=1.0, replay_capacity=100_000,
    batch_size=256, updates_per_iteration=32, min_replay=4096, learning_rate=1e-3,
    decay_updates=0, weight_decay=1e-4, optimizer="adam", loss="alphazero", augment=True,
    eval_every=0, eval_every_s=150.0, eval_simulations=200, eval_positions=100,
    eval_root_policy="puct", eval_solver=False, seed=0)

# name -> (what changes, TrainConfig changes from BASE), in the order run.
# The changes that helped at 1200 CPU seconds, together (combo_b).
_COMBO_B = dict(root_policy="gumbel", simulations=32, outcome_weight=0.5, opening_plies=8)
# combo_b with the lambda-return value targets in place of the mix.
_COMBO_B_TD = dict(_COMBO_B, outcome_weight=1.0, value_lambda=0.9)
# The ResMLP of 4 residual Dense layers of 256 units instead of the ResNet.
_RESMLP = dict(network="resmlp", network_kwargs={"num_layers": 4, "width": 256})

VARIANTS = {
    "base": ("the shipped run's settings", {}),
    "gumbel32": ("Gumbel root search, 32 simulations, improved-policy targets",
                 dict(root_policy="gumbel", simulations=32)),
    "explore": ("temperature on every move, games open with 0-4 random moves",
                dict(temperature_moves=42, opening_plies=4)),
    "value_mix": ("value target 0.5 outcome + 0.5 search root value",
                  dict(outcome_weight=0.5)),
    # 1700 updates: what base makes in its budget (53 iterations of 32).
    "lr_decay": ("cosine learning-rate decay to 1e-4 over the run (1700 updates)",
                 dict(decay_updates=1700)),
    "replay_2x": ("twice the updates per iteration (replay ratio x2)",
                  dict(updates_per_iteration=64)),
    "window_30k": ("replay window 30k examples instead of 100k",
                   dict(replay_capacity=30_000)),
    "net_6x64": ("ResNet 6 blocks x 64 channels",
                 dict(network_kwargs={"num_blocks": 6, "channels": 64})),
    # XLA:CPU runs the 4x32 ResNet at ~9k evaluations per CPU second (B=128),
    # this network at ~100k+: the search, not the network, then bounds self-play.
    "resmlp": ("ResMLP, 4 residual Dense layers of 256 units, instead of the ResNet",
               dict(_RESMLP)),
    "no_bn": ("ResNet without BatchNorm (biased convolutions)",
              dict(network_kwargs={"num_blocks": 4, "channels": 32, "batch_norm": False})),
    "sims_16": ("16 simulations per move (PUCT)", dict(simulations=16)),
    "sims_128": ("128 simulations per move (PUCT)", dict(simulations=128)),
    "no_reuse": ("no graph reuse between moves", dict(reuse_graph=False)),
    "nodes_6x": ("node capacity 6 x (simulations + 1) instead of 3x", dict(node_factor=6.0)),
    "pcr": ("playout cap randomization: 1/4 of moves 64 simulations (policy targets), "
            "the rest 16", dict(fast_simulations=16, full_search_prob=0.25)),
    "solver": ("terminal solver in the self-play search", dict(solver=True)),
    "openings_16": ("games open with 0-16 random moves", dict(opening_plies=16)),
    # Not single changes: the changes that helped, together.
    "combo_a": ("value_mix + openings_16 + solver",
                dict(outcome_weight=0.5, opening_plies=16, solver=True)),
    "combo_b": ("gumbel32 + value_mix + games open with 0-8 random moves", dict(_COMBO_B)),
    # combo_b with one more change each: do the Gumbel root and the solver
    # matter inside it (the solver's proven values enter the search-value
    # targets)?
    "combo_b_puct": ("value_mix + games open with 0-8 random moves (PUCT, 64 simulations)",
                     dict(outcome_weight=0.5, opening_plies=8)),
    "combo_b_solver": ("combo_b + terminal solver in self-play", dict(_COMBO_B, solver=True)),
    "combo_b_2x": ("combo_b + twice the updates per iteration (replay ratio x2)",
                   dict(_COMBO_B, updates_per_iteration=64)),
    # combo_b with its value target, 0.5 outcome + 0.5 search value, replaced
    # by the lambda-return of the search values (lambda 0.9: the outcome
    # weighs 0.35 ten moves before the end).
    "combo_b_td": ("combo_b with lambda-return value targets (TD(0.9)) instead of the mix",
                   dict(_COMBO_B_TD)),
    # The same with another seed: how much of its difference from combo_b is
    # the run's own noise.
    "combo_b_td_seed1": ("combo_b_td with seed 1",
                         dict(_COMBO_B_TD, seed=1)),
    # combo_b with KataGo's auxiliary policy target: a third ResNet head
    # predicts the opponent's reply (the next position's policy target).
    "combo_b_aux": ("combo_b + an auxiliary head predicting the opponent's reply (weight 0.15)",
                    dict(_COMBO_B, opponent_policy_weight=0.15)),
    # combo_b with self-play and evaluation on a moving average of the weights.
    "combo_b_ema": ("combo_b + self-play on the moving average of the weights (ema_decay 0.95)",
                    dict(_COMBO_B, ema_decay=0.95)),
    # The two changes that each lowered the value's sign error at this
    # budget (combo_b_td, combo_b_ema), together.
    "combo_b_td_ema": ("combo_b_td + self-play on the moving average of the weights (0.95)",
                       dict(_COMBO_B_TD, ema_decay=0.95)),
    # combo_b with a network ~9x cheaper per evaluation on this CPU: does
    # the recipe turn the extra positions into a better agent?
    "combo_b_resmlp": ("combo_b with the ResMLP (4 residual Dense layers of 256 units)",
                       dict(_COMBO_B, **_RESMLP)),
    # The same with 512 units (1.1M parameters, ~4x the 256-unit cost, still
    # ~3x cheaper than the ResNet 4x32 here), and with the lambda-return targets.
    "combo_b_resmlp512": ("combo_b with the ResMLP of 4 residual Dense layers of 512 units",
                          dict(_COMBO_B, network="resmlp",
                               network_kwargs={"num_layers": 4, "width": 512})),
    "combo_b_td_resmlp": ("combo_b_td with the ResMLP (4 residual Dense layers of 256 units)",
                          dict(_COMBO_B_TD, **_RESMLP)),
    # With the ResMLP the updates take under half of an overlapped iteration
    # (0.24 s against self-play's 0.52 s), so in the overlapped recipe twice
    # the updates cost little wall time; here, at equal CPU time, they cost
    # positions (combo_b_2x did not pay with the ResNet).
    "combo_b_resmlp_2x": ("combo_b_resmlp + twice the updates per iteration (replay ratio x2)",
                          dict(_COMBO_B, **_RESMLP, updates_per_iteration=64)),
}


def config_of(name: str) -> dict:
  """The TrainConfig fields of variant `name` (BASE with its changes)."""
  if name not in VARIANTS:
    raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
  return {**BASE, **VARIANTS[name][1]}


def run(names, budget: float, root: str) -> None:
  """Runs (or resumes) each variant until its cpu_s reaches `budget`."""
  for name in names:
    directory = os.path.join(root, name)
    os.makedirs(directory, exist_ok=True)
    config_path = os.path.join(directory, "variant.json")
    with open(config_path, "w") as f:
      json.dump(config_of(name), f, indent=2)
    print(f"== {name}: {VARIANTS[name][0]}", flush=True)
    command = [sys.executable, "-m", "experiments.train", "--out", directory,
               "--config", config_path, "--iterations", "1000000",
               "--cpu-budget", str(budget)]
    # The training prints its own closing line (stopped, or the error); a
    # stop leaves the run resumable, and the variants after it are not started.
    returncode = subprocess.run(command, check=False).returncode
    if returncode != 0:
      raise SystemExit(f"{name}: the training exited with code {returncode}; rerun "
                       f"`python -m experiments.diagnosis run {name} --budget {budget:g} "
                       f"--root {root}` to resume")


def _float(value):
  try:
    return float(value)
  except (TypeError, ValueError):
    return None


def read_rows(path: str) -> list[dict]:
  """The metrics rows of a run (strings converted to floats where numeric)."""
  with open(path) as f:
    return [{k: _float(v) if _float(v) is not None else v for k, v in row.items()}
            for row in csv.DictReader(f)]


def evaluations(rows: list[dict]) -> list[dict]:
  """The rows that carry Pons error rates, each with the six-set means."""
  out = []
  for row in rows:
    if row.get(f"search_c4_error_{SETS[-1]}") in (None, ""):
      continue
    row = dict(row)
    for kind in ("policy", "search"):
      row[f"{kind}_mean"] = sum(row[f"{kind}_c4_error_{s}"] for s in SETS) / len(SETS)
    out.append(row)
  return out


def summarize(root: str, docs: str) -> list[dict]:
  """Copies the metrics, writes summary.csv and the plots; returns the rows."""
  os.makedirs(docs, exist_ok=True)
  summary, curves = [], {}
  for name, (description, changes) in VARIANTS.items():
    # The committed copy stands in for a run whose folder is gone (another
    # machine, a fresh clone): the table and plots keep every variant.
    path, copy = os.path.join(root, name, "metrics.csv"), os.path.join(docs, f"{name}.csv")
    if os.path.exists(path):
      shutil.copyfile(path, copy)
    if not os.path.exists(copy):
      continue
    rows = read_rows(copy)
    evals = evaluations(rows)
    if not evals:
      continue
    curves[name] = evals
    last = evals[-1]
    tail = evals[-2:]
    entry = dict(variant=name, change=description, iterations=int(rows[-1]["iteration"]),
                 wall_s=rows[-1]["wall_s"], cpu_s=rows[-1].get("cpu_s"),
                 positions=int(rows[-1]["positions_total"]),
                 nn_evals=rows[-1]["nn_evals_total"], eval_cpu_s=last["cpu_s"])
    for kind in ("policy", "search"):
      for s in SETS:
        entry[f"{kind}_{s}"] = last[f"{kind}_c4_error_{s}"]
      entry[f"{kind}_mean"] = last[f"{kind}_mean"]
      entry[f"{kind}_mean_last2"] = sum(r[f"{kind}_mean"] for r in tail) / len(tail)
    summary.append(entry)
  if summary:
    with open(os.path.join(docs, "summary.csv"), "w", newline="") as f:
      writer = csv.DictWriter(f, fieldnames=list(summary[0]))
      writer.writeheader()
      writer.writerows(summary)
    _plot(curves, docs)
  return summary


def _plot(curves: dict, docs: str) -> None:
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  for x_key, x_label, file_name in (("cpu_s", "CPU time, s (self-play + training)",
                                     "diagnosis_cpu.png"),
                                    ("nn_evals_total", "network evaluations in self-play",
                                     "diagnosis_evals.png")):
    figure, axes = plt.subplots(1, 2, figsize=(13, 5), sharex=True)
    for name, evals in curves.items():
      xs = [r[x_key] for r in evals]
      style = dict(lw=2.5, color="black") if name == "base" else dict(lw=1.2)
      for axis, kind in zip(axes, ("search", "policy")):
        axis.plot(xs, [100 * r[f"{kind}_mean"] for r in evals], label=name, **style)
    for axis, kind in zip(axes, ("200-simulation search", "raw policy")):
      axis.set_title(f"Connect-4, {kind}: mean error over Pons' six sets")
      axis.set_xlabel(x_label)
      axis.set_ylabel("error rate, % (100 positions per set)")
      axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8, ncol=2)
    figure.tight_layout()
    figure.savefig(os.path.join(docs, file_name), dpi=90)
    plt.close(figure)


def final_evaluation(root: str, docs: str, positions: int, names=None) -> list[dict]:
  """Each finished variant's last snapshot on `positions` positions per set.

  The curves use 100 positions per set (about +-4 points per set); the
  table's last column rests on this larger evaluation, the same 200-
  simulation PUCT search and raw policy. Rows are appended to
  `docs/final_eval.csv` (a rerun skips the variants already there).
  """
  path = os.path.join(docs, "final_eval.csv")
  done = {}
  if os.path.exists(path):
    done = {r["variant"]: r for r in read_rows(path)}
  rows = list(done.values())
  for name in names or VARIANTS:
    directory = os.path.join(root, name)
    metrics = os.path.join(directory, "metrics.csv")
    if name in done or not os.path.exists(metrics):
      continue
    evals = evaluations(read_rows(metrics))
    if not evals:
      continue
    iteration = int(evals[-1]["iteration"])
    config = config_lib.replace(checkpoint.load_config(directory), eval_positions=positions)
    env, network, eval_fn = checkpoint.build_network(config)
    variables = checkpoint.read_variables(
        evaluation.snapshot_path(directory, iteration),
        checkpoint.init_variables(network, env, jax.random.PRNGKey(0)))
    row = dict(variant=name, iteration=iteration, cpu_s=evals[-1]["cpu_s"], positions=positions)
    # The value head alone (outcome read from the value): what the search
    # leans on once the policy is good.
    row.update(evaluation.connect4_error_summary(env, eval_fn, variables, jax.random.PRNGKey(0),
                                                 config))
    rows.append(row)
    print(f"{name}: search mean {100 * row['search_mean']:.1f}%, policy mean "
          f"{100 * row['policy_mean']:.1f}%, value mean {100 * row['value_mean']:.1f}% "
          f"(sign {100 * row['value_sign_mean']:.1f}%) "
          f"({positions} positions per set)", flush=True)
    os.makedirs(docs, exist_ok=True)
    loop.write_metrics(path, rows)
  return rows


def _snapshots(directory: str):
  """Yields (iteration, config, env, eval_fn, variables) for every snapshot of a run."""
  config = checkpoint.load_config(directory)
  env, network, eval_fn = checkpoint.build_network(config)
  template = checkpoint.init_variables(network, env, jax.random.PRNGKey(0))
  for iteration in evaluation.snapshot_iterations(directory):
    yield (iteration, config, env, eval_fn,
           checkpoint.read_variables(evaluation.snapshot_path(directory, iteration), template))


def value_curve(directory: str, out: str, positions: int) -> list[dict]:
  """The value head's error at every snapshot of a Connect-4 run.

  Writes `out` (CSV: iteration, the six `value_c4_error_<set>` and their
  mean, the six `value_c4_sign_error_<set>` and their mean) and returns the
  rows.
  """
  rows = []
  for iteration, _, _, eval_fn, variables in _snapshots(directory):
    figures = ground_truth.connect4_value_errors(eval_fn, variables, jax.random.PRNGKey(0),
                                                 positions_per_set=positions)
    row = dict(iteration=iteration, **{f"value_c4_error_{s}": figures[f"c4_error_{s}"]
                                       for s in SETS})
    row["value_mean"] = sum(figures[f"c4_error_{s}"] for s in SETS) / len(SETS)
    row.update({f"value_c4_sign_error_{s}": figures[f"c4_sign_error_{s}"] for s in SETS})
    row["value_sign_mean"] = sum(figures[f"c4_sign_error_{s}"] for s in SETS) / len(SETS)
    rows.append(row)
    print(f"iteration {iteration}: value errors % "
          + "/".join(f"{100 * figures[f'c4_error_{s}']:.0f}" for s in SETS) + ", sign errors % "
          + "/".join(f"{100 * figures[f'c4_sign_error_{s}']:.0f}" for s in SETS), flush=True)
  os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
  loop.write_metrics(out, rows)
  return rows


def snapshot_curve(directory: str, out: str, positions: int) -> list[dict]:
  """The search, policy and value errors at every snapshot of a Connect-4 run.

  The run's own curve uses 100 positions per set (about +-2 points on the
  mean); this one re-evaluates its snapshots on `positions` per set with the
  run's evaluation search.

  Args:
    directory: the run directory (config.json, snapshots/).
    out: the CSV written (iteration, then `evaluation.connect4_error_summary`'s
      columns).
    positions: positions per Pons set.

  Returns:
    The rows.
  """
  rows = []
  for iteration, config, env, eval_fn, variables in _snapshots(directory):
    config = config_lib.replace(config, eval_positions=positions)
    row = dict(iteration=iteration)
    row.update(evaluation.connect4_error_summary(env, eval_fn, variables, jax.random.PRNGKey(0),
                                                 config))
    rows.append(row)
    print(f"iteration {iteration}: search {100 * row['search_mean']:.2f}%, policy "
          f"{100 * row['policy_mean']:.2f}%, value sign {100 * row['value_sign_mean']:.2f}%",
          flush=True)
  os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
  loop.write_metrics(out, rows)
  return rows


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("command", choices=("run", "summarize", "list", "final-eval",
                                          "value-curve", "snapshot-curve"))
  parser.add_argument("variants", nargs="*",
                      help="variant names (run, final-eval); value-curve, snapshot-curve: "
                      "run directories")
  parser.add_argument("--all", action="store_true", help="run every variant, in order")
  parser.add_argument("--budget", type=float, default=1200.0,
                      help="cpu_s per run, seconds (default 1200)")
  parser.add_argument("--root", default=ROOT, help=f"run directories (default {ROOT})")
  parser.add_argument("--docs", default=DOCS, help=f"summary output (default {DOCS})")
  parser.add_argument("--positions", type=int, default=1000,
                      help="final-eval: positions per Pons set (default all 1000)")
  args = parser.parse_args(argv)
  if args.command == "list":
    for name, (description, changes) in VARIANTS.items():
      print(f"{name:12s} {description}: {json.dumps(changes)}")
  elif args.command == "value-curve":
    for directory in args.variants:
      name = os.path.basename(os.path.normpath(directory))
      value_curve(directory, os.path.join(args.docs, f"value_curve_{name}.csv"), args.positions)
  elif args.command == "snapshot-curve":
    for directory in args.variants:
      name = os.path.basename(os.path.normpath(directory))
      snapshot_curve(directory, os.path.join(args.docs, f"snapshot_curve_{name}.csv"),
                     args.positions)
  elif args.command == "final-eval":
    final_evaluation(args.root, args.docs, args.positions, args.variants or None)
  elif args.command == "run":
    names = list(VARIANTS) if args.all else args.variants
    if not names:
      raise SystemExit("name the variants to run, or --all")
    for name in names:
      config_of(name)
    run(names, args.budget, args.root)
  else:
    final_path = os.path.join(args.docs, "final_eval.csv")
    final = read_rows(final_path) if os.path.exists(final_path) else None
    print(markdown_table(summarize(args.root, args.docs), final))


def markdown_table(summary: list[dict], final: list[dict] | None = None) -> str:
  """The summary as a Markdown table.

  Per variant: positions and network evaluations in the budget; from
  `final` (`final_evaluation`'s rows, 1000 positions per set) the search's
  error rates on the six sets, their mean and its change from base, and the
  raw policy's mean; the mean of the last two 100-position evaluations of
  the curve beside them.
  """
  final = {r["variant"]: r for r in final or []}
  base = final.get("base")
  lines = ["| variant | change | positions | network evals | search error % (6 sets, "
           "1000 each) | mean | vs base | policy mean | curve: last two |",
           "|---|---|---|---|---|---|---|---|---|"]
  for e in summary:
    f = final.get(e["variant"])
    if f is None:
      errors = mean = delta = policy = "-"
    else:
      errors = "/".join(f"{100 * f[f'search_{s}']:.1f}" for s in SETS)
      mean, policy = f"{100 * f['search_mean']:.1f}", f"{100 * f['policy_mean']:.1f}"
      delta = ("" if base is None or f is base else
               f"{100 * (f['search_mean'] - base['search_mean']):+.1f}")
    lines.append(f"| {e['variant']} | {e['change']} | {e['positions'] / 1000:.0f}k | "
                 f"{e['nn_evals'] / 1e6:.1f}M | {errors} | {mean} | {delta} | {policy} | "
                 f"{100 * e['search_mean_last2']:.1f} |")
  return "\n".join(lines)


if __name__ == "__main__":
  sys.exit(cli.main(main))
