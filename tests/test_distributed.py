"""Training over two processes (JAX's multi-process runtime, gloo on CPU)
equals training on one process with two devices; a killed peer ends the
job in bounded time with one line, and the relaunch resumes.

Each run is a real `mcgs-jax train` process (the two-process runs through
scripts/launch_local.sh or two `--process-id`s), so these tests take about
three minutes.
"""

import json
import os
import socket
import subprocess
import sys
import time

import flax.serialization
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = {"network": "mlp", "network_kwargs": {"hidden_sizes": [16]}, "games": 4,
        "simulations": 4, "moves_per_iteration": 9, "batch_size": 8, "min_replay": 8,
        "updates_per_iteration": 2, "replay_capacity": 128, "eval_every": 3}
TRAIN = [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "tictactoe"]


def _env(devices=1):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                      f" --xla_force_host_platform_device_count={devices}").strip()
  env.pop("MCGS_JAX_WORKER", None)
  return env


def _free_port():
  with socket.socket() as s:
    s.bind(("", 0))
    return s.getsockname()[1]


def _losses(out):
  with open(os.path.join(out, "metrics.csv")) as f:
    header, *rows = [line.strip().split(",") for line in f]
  return [float(r[header.index("loss")]) for r in rows], [dict(zip(header, r)) for r in rows]


def _network(path):
  with open(path, "rb") as f:
    return flax.serialization.msgpack_restore(f.read())


def _assert_same_network(a, b):
  leaves_a, leaves_b = _flat(_network(a)), _flat(_network(b))
  assert leaves_a.keys() == leaves_b.keys()
  for name in leaves_a:
    np.testing.assert_allclose(leaves_a[name], leaves_b[name], rtol=1e-4, atol=1e-6,
                               err_msg=name)


def _flat(tree, prefix=""):
  if isinstance(tree, dict):
    return {k: v for key, sub in tree.items() for k, v in _flat(sub, f"{prefix}/{key}").items()}
  return {prefix: np.asarray(tree)}


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
  """4 iterations on 1 process over 2 virtual devices."""
  folder = tmp_path_factory.mktemp("one")
  config = folder / "tiny.json"
  config.write_text(json.dumps(TINY))
  out = str(folder / "run")
  done = subprocess.run(TRAIN + ["--config", str(config), "--out", out, "--iterations", "4"],
                        env=_env(2), cwd=str(folder), capture_output=True, text=True,
                        timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  return str(config), out


def test_two_processes_equal_one_process_with_two_devices(one_process, tmp_path):
  config, single = one_process
  out = str(tmp_path / "run")
  done = subprocess.run(
      ["bash", os.path.join(ROOT, "scripts", "launch_local.sh"), "2"] + TRAIN +
      ["--config", config, "--out", out, "--iterations", "3", "--distributed"],
      env=dict(_env(1), MCGS_LOGS=str(tmp_path / "logs")), cwd=str(tmp_path),
      capture_output=True, text=True, timeout=600)
  logs = "".join(open(tmp_path / "logs" / f"process-{i}.log").read() for i in range(2))
  assert done.returncode == 0, done.stderr + logs[-3000:]
  losses, rows = _losses(out)
  single_losses, single_rows = _losses(single)
  np.testing.assert_allclose(losses, single_losses[:3], rtol=1e-4)
  assert [r["positions"] for r in rows] == [r["positions"] for r in single_rows[:3]]
  assert all(r["devices"] == "2" for r in rows)
  # One evaluation (eval_every=3), by process 0: its figures and one snapshot.
  assert [bool(r.get("snapshot")) for r in rows] == [False, False, True]
  assert os.listdir(os.path.join(out, "snapshots")) == os.listdir(
      os.path.join(single, "snapshots"))
  # The network after 3 iterations: the 2-process run's last, the 1-process
  # run's snapshot of iteration 3.
  snapshot, = os.listdir(os.path.join(single, "snapshots"))
  _assert_same_network(os.path.join(out, "agent.msgpack"),
                       os.path.join(single, "snapshots", snapshot))
  # Process 0 alone wrote the metrics: one header, three rows.
  assert open(os.path.join(out, "metrics.csv")).read().count("iteration,") == 1


def _start_pair(config, out, iterations, port, logs):
  processes = []
  for rank in range(2):
    log = open(logs / f"process-{rank}.log", "w")
    processes.append((subprocess.Popen(
        TRAIN + ["--config", config, "--out", out, "--iterations", str(iterations),
                 "--distributed", "--coordinator-address", f"localhost:{port}",
                 "--num-processes", "2", "--process-id", str(rank)],
        env=_env(1), cwd=str(logs), stdout=log, stderr=subprocess.STDOUT), log))
  return processes


def _rows_written(out):
  try:
    return len(_losses(out)[0])
  except (OSError, ValueError, IndexError):   # not there yet, or a line half written
    return 0


def _wait_for_rows(out, count, pair, logs):
  deadline = time.monotonic() + 300
  while _rows_written(out) < count:
    assert time.monotonic() < deadline, open(logs / "process-0.log").read()[-3000:]
    assert all(p.poll() is None for p, _ in pair), open(logs / "process-0.log").read()[-3000:]
    time.sleep(0.5)


def test_killed_peer_ends_the_job_with_one_line_and_relaunches_resume(one_process, tmp_path):
  config, single = one_process
  out = str(tmp_path / "run")
  pair = _start_pair(config, out, 400, _free_port(), tmp_path)
  _wait_for_rows(out, 2, pair, tmp_path)
  pair[1][0].kill()   # SIGKILL: no goodbye to the coordinator
  killed = time.monotonic()
  code = pair[0][0].wait(timeout=120)
  ended_s = time.monotonic() - killed
  for _, log in pair:
    log.close()
  survivor = open(tmp_path / "process-0.log").read()
  assert code == 1 and ended_s < 90, (code, ended_s)
  errors = [line for line in survivor.splitlines() if line.startswith("error:")]
  assert len(errors) == 1, survivor[-3000:]
  assert "process 1 of the job stopped answering" in errors[0]
  assert "Traceback" not in survivor and "Check failure" not in survivor
  # The relaunch resumes; SIGKILLed together mid-run, both resume again, and
  # the run finishes as the uninterrupted one-process run did.
  pair = _start_pair(config, out, 400, _free_port(), tmp_path)
  _wait_for_rows(out, 3, pair, tmp_path)
  for process, log in pair:
    process.kill()
    process.wait(timeout=60)
    log.close()
  pair = _start_pair(config, out, 4, _free_port(), tmp_path)
  codes = [p.wait(timeout=600) for p, _ in pair]
  for _, log in pair:
    log.close()
  assert codes == [0, 0], open(tmp_path / "process-0.log").read()[-3000:]
  losses, _ = _losses(out)
  np.testing.assert_allclose(losses, _losses(single)[0], rtol=1e-4)
  _assert_same_network(os.path.join(out, "agent.msgpack"),
                       os.path.join(single, "agent.msgpack"))


def _slurm(rank, job_id):
  """What srun gives task `rank` of a 2-task step on this host."""
  return dict(_env(1), SLURM_JOB_ID=str(job_id), SLURM_STEP_NODELIST="localhost",
              SLURM_NTASKS="2", SLURM_PROCID=str(rank), SLURM_LOCALID="0")


def test_second_process_follows_process_0_on_a_busy_folder(tmp_path):
  """A folder another job holds refuses the whole job, process 1 included,
  with the lock holder's line (process 0 decides for all). The two
  processes find each other as under SLURM's `srun`: `--distributed` alone,
  the coordinator, count and index read from SLURM's variables."""
  from mcgs_jax.learning import run_lock  # pylint: disable=g-import-not-at-top
  out = str(tmp_path / "run")
  lock = run_lock.acquire(out)
  try:
    job_id = 100000 + os.getpid()   # jax's SLURM port: 61440 + the job id mod 4096
    processes = [subprocess.Popen(
        TRAIN + ["--out", out, "--iterations", "1", "--distributed"],
        env=_slurm(rank, job_id), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for rank in range(2)]
    results = [p.communicate(timeout=300) for p in processes]
  finally:
    lock.release()
  for process, (_, err) in zip(processes, results):
    assert process.returncode == 2, err[-2000:]   # as one process is refused
    assert f"{out} is in use by pid {os.getpid()}" in err, err[-2000:]


def _documented_train_commands():
  """Every `mcgs-jax train` command of docs/guide/distributed.md, its
  continuation lines joined (shell backslashes, the YAML's folded args)."""
  lines = open(os.path.join(ROOT, "docs", "guide", "distributed.md")).read().splitlines()
  commands, in_code = [], False
  for i, line in enumerate(lines):
    in_code ^= line.startswith("```")
    # Outside code blocks, and the synopsis with its [optional] flags: prose.
    if not in_code or "mcgs-jax train" not in line:
      continue
    text, j = line[line.index("mcgs-jax train"):], i
    while text.endswith("\\") or (j + 1 < len(lines) and lines[j + 1].strip().startswith("--")):
      j += 1
      text = text.rstrip("\\") + " " + lines[j].strip()
    if "[" not in text:
      commands.append(text.split("&")[0].rstrip("'").strip())
  return commands


def test_the_documented_launch_commands_parse():
  """A dry run of the launch guide: each command's arguments are what the
  command line accepts (the variables a cluster sets replaced by 0)."""
  import shlex  # pylint: disable=g-import-not-at-top
  commands = _documented_train_commands()
  assert len(commands) == 5, commands   # one machine, a GPU node, SLURM, TPU, Kubernetes
  for command in commands:
    words = shlex.split(command.replace("$JOB_COMPLETION_INDEX", "0").replace("$i", "0"))
    assert words[:2] == ["mcgs-jax", "train"], command
    # The command itself, stopped by the parser's last check (a bad budget):
    # reaching it, every flag before it and the distributed checks passed.
    done = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.train", *words[2:],
                           "--wall-budget", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (command, done.stderr)
    assert done.stderr.startswith("error: --wall-budget must be > 0"), (command, done.stderr)
    assert "--distributed" in words, command
