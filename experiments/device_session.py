"""One lent accelerator, one command: the accelerator report, then the
Connect-4 recipe trained for the rest of the time.

  mcgs-jax device-session                  # 9.5 min on an H100-class GPU
  mcgs-jax device-session --quick          # CPU smoke run, < 3 min
  mcgs-jax device-session --seconds 570 --out docs

What the steps run, and how the plan is predicted, is
`mcgs_jax.benchmarks.device_session`'s (its docstring); this command runs
the steps and writes the summary.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time

from mcgs_jax.learning import cli

# The library, loaded on first use: after the arguments are checked.
study = cli.lazy("mcgs_jax.benchmarks.device_session")


def parse_args(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="the CPU smoke run: the report's smoke plan, 4 tiny iterations")
  parser.add_argument("--out", default="results",
                      help="where device/ and learning/gpu/<name>/ are written "
                      "(docs: the shipped pages)")
  parser.add_argument("--runs", default="runs", help="folder of the training run (not in git)")
  parser.add_argument("--name", default=None,
                      help="the training run's name (default: gpu_session, quick_session)")
  parser.add_argument("--seconds", type=float, default=570.0,
                      help="the command's wall budget (default 570: 9.5 minutes)")
  return parser.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  start = time.monotonic()
  deadline = start + args.seconds
  plan = study.report_plan.QUICK_PLAN if args.quick else study.report_plan.FULL_PLAN
  prediction = study.predict(plan, args.seconds, args.quick)
  fits = prediction.total_s <= args.seconds and prediction.device_s <= 60 * study.DEVICE_MINUTES
  print(f"plan: report {prediction.report_s:.0f} s, training {prediction.training_s:.0f} s, "
        f"closing {prediction.closing_s:.0f} s: {prediction.total_s:.0f} s of {args.seconds:.0f}"
        f" s; about {prediction.device_s:.0f} s of device time with the machine's start-up "
        f"({'fits' if fits else 'does NOT fit'} {study.DEVICE_MINUTES:.0f} minutes)", flush=True)
  env = dict(os.environ, PYTHONUNBUFFERED="1")
  if args.quick:
    # Timings of the smoke run mean nothing; XLA:CPU's fastest compiles.
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0"
                        " --xla_cpu_use_fusion_emitters=false").strip()
  label = args.name or ("quick_session" if args.quick else "gpu_session")
  steps = []
  device_dir = os.path.join(args.out, "device")
  started = time.time()

  report = [sys.executable, "-m", "mcgs_jax.experiments.device_report", "--out", device_dir]
  outcome, seconds = study.run_step(report + (["--quick"] if args.quick else []),
                              start + prediction.report_s + 60.0, env)
  steps.append(dict(step="report", outcome=outcome, seconds=seconds))

  run_dir = os.path.join(args.runs, label)
  config_path = os.path.join(args.runs, f"{label}.json")
  os.makedirs(args.runs, exist_ok=True)
  with open(config_path, "w") as f:
    json.dump(study.gpu_config(args.quick), f, indent=1)
  train = [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "connect4", "--out", run_dir,
           "--config", config_path, "--iterations", "4" if args.quick else "1000000"]
  left = deadline - time.monotonic() - prediction.closing_s
  if args.quick or left >= study.MIN_TRAINING_S:
    outcome, seconds = study.run_step(train, time.monotonic() + (600.0 if args.quick else left),
                                      env)
  else:
    outcome, seconds = f"not started: {max(left, 0):.0f} s left", 0.0
  steps.append(dict(step="training", outcome=outcome, seconds=seconds))

  begin = time.monotonic()
  curve = study.collect_run(run_dir, os.path.join(args.out, "learning", "gpu", label), label)
  steps.append(dict(step="results", outcome=f"{len(curve)} curve rows",
                    seconds=time.monotonic() - begin))
  reports = [path for path in glob.glob(os.path.join(device_dir, "*.md"))
             if not path.endswith("-session.md") and os.path.getmtime(path) >= started]
  stem = (os.path.splitext(os.path.basename(reports[0]))[0] if reports
          else "quick" if args.quick else "device")
  steps.append(dict(step="total", outcome="", seconds=time.monotonic() - start))
  os.makedirs(device_dir, exist_ok=True)
  summary = os.path.join(device_dir, f"{stem}-session.md")
  with open(summary, "w") as f:
    f.write(study.summary_text(args.quick, args.seconds,
                               "mcgs-jax device-session " + " ".join(sys.argv[1:]),
                               prediction, steps, curve, label))
  print(f"\nsession: {summary}")
  for step in steps:
    print(f"  {step['step']:<9} {step['outcome']:<28} {step['seconds']:6.0f} s")
  return 0


if __name__ == "__main__":
  sys.exit(cli.main(main))
