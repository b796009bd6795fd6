"""Faults survived, in figures: training runs hit by faults at random points.

  mcgs-jax fault-sweep                    # 20 trials per fault, ~5 CPU hours
  mcgs-jax fault-sweep --quick            # 1 trial per fault, ~15 minutes
  mcgs-jax fault-sweep --trials 5 --faults kill truncate-step
  mcgs-jax fault-sweep --log sweep.jsonl  # resumable: done trials are kept

Every trial trains a tiny tic-tac-toe run (`TINY`, `--iterations` 6) in its
own process, exactly as a user runs `mcgs-jax train`, hits it
with one fault, then reruns the same command to the end, and checks:
  survived       the rerun exits 0 and `metrics.csv` holds every iteration
                 once;
  nothing lost   and its final network (`agent.msgpack`) is the one an
                 uninterrupted run of the same seed ends with, byte for byte;
  one line       the rerun says at most one line about the fault (XLA's own
                 log lines aside).
The faults (`FAULTS`):
  kill             SIGKILL at a random moment of the run (self-play, the
                   update, the checkpoint write or the metrics rewrite,
                   wherever it falls);
  truncate-step    the newest checkpoint step's largest file cut to half;
  delete-step-file a random file of the newest step deleted;
  truncate-metrics / delete-metrics   `metrics.csv` cut to half / deleted;
  truncate-config / delete-config     `config.json` cut to half / deleted;
  truncate-agent / delete-agent       `agent.msgpack` cut to half / deleted;
  disk-full        the run on a file system too small for it (a tmpfs;
                   `ulimit -f` where none can be mounted): it must stop in
                   one line, and once there is room the rerun must end as if
                   nothing had happened;
  second-process   a second run started on the same folder while the first
                   runs: it must refuse in one line (exit 2), and the first
                   must end as if alone.
The table (fault, trials, survived, nothing lost, one line) is printed and
written as CSV (`--csv`) and markdown (`--md`, docs/reliability.md's
table). With `--log`, each trial's outcome is appended to a JSON-lines file
as it ends, and a rerun with the same log skips the trials it holds (each
trial draws its random points from its own seed, so a resumed sweep is the
one an uninterrupted sweep would have been). The trials' processes share a
compilation cache in the sweep's temporary folder.

`mcgs-jax fault-sweep` is the command line (`mcgs_jax.experiments.fault_sweep`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from mcgs_jax.benchmarks.names import FAULTS
from mcgs_jax.learning import cli

TINY = dict(eval_every=0, games=8, search={"num_simulations": 4}, moves_per_iteration=5,
            batch_size=16, min_replay=16, updates_per_iteration=2, replay_capacity=256,
            network_kwargs={"hidden_sizes": [16]})
ITERATIONS = 6
FIELDS = ("fault", "trials", "survived", "nothing_lost", "one_line", "messages")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class Outcome:
  """One trial's checks."""
  survived: bool
  nothing_lost: bool
  one_line: bool
  message: str


def _command(out: str, config: str, iterations: int) -> list[str]:
  return [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "tictactoe", "--out", out,
          "--config", config, "--iterations", str(iterations)]


def _env(config: str) -> dict:
  """The trial's environment: the trials compile the same functions hundreds
  of times, so they share a compilation cache beside the sweep's `config`."""
  return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
              PYTHONUNBUFFERED="1",
              JAX_COMPILATION_CACHE_DIR=os.path.join(os.path.dirname(config), "jax-cache"),
              JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
              JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")


def _messages(stderr: str) -> list[str]:
  """The lines a user reads: stderr without XLA's logs and progress bars."""
  return [line for line in stderr.splitlines()
          if line.strip() and not re.match(r"^[WIE]\d{4} ", line)
          and not line.startswith("train tictactoe")]


def _train(out: str, config: str, iterations: int = ITERATIONS,
           limit_blocks: int | None = None) -> subprocess.CompletedProcess:
  command = _command(out, config, iterations)
  if limit_blocks is not None:
    # The shell sets the file-size limit (KiB) and ignores SIGXFSZ, so a
    # write past it fails (EFBIG) rather than killing the run; no Python code
    # runs between this multithreaded process's fork and the exec.
    command = ["bash", "-c", f'ulimit -f {limit_blocks}; trap "" XFSZ; exec "$@"', "bash",
               *command]
  return subprocess.run(command, cwd=ROOT, env=_env(config), capture_output=True, text=True,
                        timeout=900)


def _iterations(out: str) -> list[int]:
  try:
    with open(os.path.join(out, "metrics.csv")) as f:
      return [int(line.split(",")[0]) for line in f.read().splitlines()[1:] if line]
  except (OSError, ValueError):
    return []


def _read(path: str) -> bytes | None:
  try:
    with open(path, "rb") as f:
      return f.read()
  except OSError:
    return None


def _newest_step(out: str) -> str:
  steps = [int(d) for d in os.listdir(os.path.join(out, "checkpoints")) if d.isdigit()]
  return os.path.join(out, "checkpoints", str(max(steps)))


def _truncate(path: str) -> None:
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)


def _check(out: str, rerun: subprocess.CompletedProcess, reference: bytes,
           expected_messages: int = 1) -> Outcome:
  messages = _messages(rerun.stderr)
  survived = rerun.returncode == 0 and _iterations(out) == list(range(1, ITERATIONS + 1))
  nothing_lost = survived and _read(os.path.join(out, "agent.msgpack")) == reference
  return Outcome(survived, nothing_lost, len(messages) <= expected_messages,
                 " | ".join(messages)[:300])


def trial(fault: str, work: str, config: str, reference: bytes, rng: random.Random) -> Outcome:
  """Runs one trial of `fault` in the empty folder `work`.

  Args:
    fault: one of `FAULTS`.
    work: a fresh folder.
    config: the TINY config file.
    reference: the final agent.msgpack of an uninterrupted run.
    rng: draws the fault's point.

  Returns:
    The Outcome.
  """
  out = os.path.join(work, "run")
  if fault in ("kill", "second-process"):
    process = subprocess.Popen(_command(out, config, ITERATIONS), cwd=ROOT, env=_env(config),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    owner = os.path.join(out, "run.lock.owner")
    deadline = time.monotonic() + 600
    while not os.path.exists(owner) and process.poll() is None and time.monotonic() < deadline:
      time.sleep(0.05)
    if fault == "second-process":
      second = _train(out, config)
      lines = _messages(second.stderr)
      process.communicate(timeout=900)
      refused = second.returncode == cli.USAGE and len(lines) == 1 and "is in use by" in lines[0]
      survived = refused and process.returncode == 0 and _iterations(out) == list(
          range(1, ITERATIONS + 1))
      return Outcome(survived, survived and _read(os.path.join(out, "agent.msgpack"))
                     == reference, len(lines) == 1, " | ".join(lines)[:300])
    # The run's own time: from holding its folder to its end is about
    # `ITERATIONS` short iterations after a compile of a few seconds.
    time.sleep(rng.uniform(0.0, 12.0))
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    return _check(out, _train(out, config), reference)
  if fault == "disk-full":
    return _disk_full(work, config, reference, rng)
  done = _train(out, config, ITERATIONS - 1)
  if done.returncode:
    return Outcome(False, False, False, "the run before the fault failed: "
                   + " | ".join(_messages(done.stderr))[:200])
  if fault in ("truncate-step", "delete-step-file"):
    step = _newest_step(out)
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(step)
                   for name in names)
    if fault == "truncate-step":
      _truncate(max(files, key=os.path.getsize))
    else:
      os.remove(rng.choice(files))
  else:
    action, name = fault.split("-")
    path = os.path.join(out, {"metrics": "metrics.csv", "config": "config.json",
                              "agent": "agent.msgpack"}[name])
    _truncate(path) if action == "truncate" else os.remove(path)
  return _check(out, _train(out, config), reference)


def _disk_full(work: str, config: str, reference: bytes, rng: random.Random) -> Outcome:
  """The run on a file system with room for part of it (a tmpfs of 120-300
  KiB; the whole run needs about 360): it stops when a write finds no room,
  saying so in one line; then the file system grows, as when the user frees
  space, and the rerun must end as if nothing had happened. Where no tmpfs
  can be mounted (not root), a file-size limit (`ulimit -f`) below the
  largest file stands in for it."""
  disk = os.path.join(work, "disk")
  os.makedirs(disk)
  out = os.path.join(disk, "run")
  mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={rng.randint(120, 300)}k",
                            "tmpfs", disk], capture_output=True).returncode == 0
  try:
    if mounted:
      first = _train(out, config)
      subprocess.run(["mount", "-o", "remount,size=64m", disk], check=True)
    else:
      first = _train(out, config, limit_blocks=rng.randint(4, 12))
    lines = _messages(first.stderr)
    if first.returncode == 0:
      return Outcome(False, False, False, "the fault did not happen: the run had room")
    outcome = _check(out, _train(out, config), reference, expected_messages=0)
    outcome.one_line = outcome.one_line and len(lines) == 1
    outcome.message = " | ".join(lines)[:300]
    return outcome
  finally:
    if mounted:
      subprocess.run(["umount", "-l", disk], capture_output=True)


def _read_log(path: str | None) -> dict[tuple[str, int], Outcome]:
  """The trials a log holds, by (fault, index); a torn last line is skipped."""
  done = {}
  if path and os.path.exists(path):
    with open(path) as f:
      for line in f:
        try:
          record = json.loads(line)
          key = (record.pop("fault"), record.pop("index"))
          done[key] = Outcome(**record)
        except (ValueError, KeyError, TypeError):
          continue
  return done


def sweep(faults, trials: int, seed: int, log: str | None = None) -> list[dict]:
  """Every fault `trials` times; one row per fault (`FIELDS`).

  Args:
    faults: the faults to inject (names from `FAULTS`).
    trials: trials per fault.
    seed: the sweep's seed; trial `i` of fault `f` draws from `(seed, f, i)`.
    log: a JSON-lines file of trial outcomes: those it holds are not rerun,
      new ones are appended as they end (None: no log).

  Returns:
    One dict per fault with the `FIELDS` keys.

  Raises:
    ValueError: a fault not in `FAULTS`.
  """
  unknown = [fault for fault in faults if fault not in FAULTS]
  if unknown:
    raise ValueError(f"unknown faults {unknown}: choose from {', '.join(FAULTS)}")
  done = _read_log(log)
  base = tempfile.mkdtemp(prefix="fault-sweep-")
  config = os.path.join(base, "tiny.json")
  with open(config, "w") as f:
    json.dump(TINY, f)
  rows = []
  try:
    if any((fault, index) not in done for fault in faults for index in range(trials)):
      reference_run = os.path.join(base, "reference")
      finished = _train(reference_run, config)
      if finished.returncode:
        raise RuntimeError("the uninterrupted reference run failed: " + finished.stderr[-500:])
      reference = _read(os.path.join(reference_run, "agent.msgpack"))
    for fault in faults:
      outcomes = []
      for index in range(trials):
        outcome = done.get((fault, index))
        if outcome is None:
          work = os.path.join(base, f"{fault}-{index}")
          os.makedirs(work)
          outcome = trial(fault, work, config, reference, random.Random(f"{seed}-{fault}-{index}"))
          shutil.rmtree(work, ignore_errors=True)
          if log:
            with open(log, "a") as f:
              f.write(json.dumps(dict(fault=fault, index=index, **dataclasses.asdict(outcome)))
                      + "\n")
        outcomes.append(outcome)
        print(f"  {fault:<17} {index + 1:>3}/{trials}: survived {outcome.survived}, nothing lost "
              f"{outcome.nothing_lost}, one line {outcome.one_line}: {outcome.message or '-'}",
              flush=True)
      rows.append(dict(fault=fault, trials=trials,
                       survived=sum(o.survived for o in outcomes),
                       nothing_lost=sum(o.nothing_lost for o in outcomes),
                       one_line=sum(o.one_line for o in outcomes),
                       messages=sorted({re.sub(r"/\S+", "<path>", o.message)
                                        for o in outcomes if o.message})[:3]))
  finally:
    shutil.rmtree(base, ignore_errors=True)
  return rows


def markdown(rows: list[dict]) -> str:
  """The sweep's table.

  Args:
    rows: `sweep`'s rows.

  Returns:
    str, the Markdown table.
  """
  lines = ["| fault | trials | survived | nothing lost | at most one line | what the rerun said |",
           "|---|---|---|---|---|---|"]
  for r in rows:
    said = "; ".join(f"`{m}`" for m in r["messages"]) or "nothing"
    lines.append(f"| {r['fault']} | {r['trials']} | {r['survived']} | {r['nothing_lost']} | "
                 f"{r['one_line']} | {said} |")
  return "\n".join(lines)
