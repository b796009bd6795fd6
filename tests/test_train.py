"""Training (`mcgs_jax.learning.training`, the work of `mcgs-jax train`): resume
equals an uninterrupted run, SIGKILL at any moment loses or repeats no
iteration, bad checkpoints stop with an error."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

import mcgs_jax
from mcgs_jax.learning import cli
from mcgs_jax.learning import loop
from mcgs_jax.learning import checkpoint as checkpoint_lib
from mcgs_jax.learning import config as config_lib
from mcgs_jax.learning import evaluation
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import screen
from mcgs_jax.learning import training
from tests import compile_count

# Tiny tic-tac-toe run: a few seconds of compilation, milliseconds per iteration.
TINY = dict(eval_every=0, games=8, simulations=4, moves_per_iteration=5, batch_size=16,
            min_replay=16, updates_per_iteration=2, replay_capacity=256,
            network_kwargs={"hidden_sizes": [16]})
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config(**changes):
  return config_lib.replace(config_lib.default_config("tictactoe"), **{**TINY, **changes})


def _run(directory, config, iterations):
  run = loop.Run(str(directory), config)
  try:
    while int(run.state["iteration"]) < iterations:
      run.step()
    return jax.device_get(run.state), run.rows
  finally:
    run.close()


def _train(out, **settings):
  """`training.run` behind the command lines' error boundary, as `mcgs-jax
  train` runs it: the exit code."""
  return cli.main(lambda argv: training.run(str(out), **settings), [])


def _iterations(directory):
  with open(os.path.join(directory, loop.METRICS), newline="") as f:
    return [int(row["iteration"]) for row in csv.DictReader(f)]


def _same_tree(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_resume_equals_uninterrupted(tmp_path):
  config = _config()
  straight, rows = _run(tmp_path / "straight", config, 4)
  _run(tmp_path / "resumed", config, 2)
  with compile_count.compilations() as compiles:
    resumed, resumed_rows = _run(tmp_path / "resumed", config, 4)
  # The restored state is placed like a fresh one: the compiled code is reused.
  assert not compiles, compiles
  _same_tree(straight["variables"], resumed["variables"])
  _same_tree(straight["opt_state"], resumed["opt_state"])
  _same_tree(straight["buffer"], resumed["buffer"])
  assert _iterations(tmp_path / "resumed") == [1, 2, 3, 4]
  drop = ("wall_s", "cpu_s", "selfplay_s", "train_s", "compile_s")
  strip = lambda rs: [{k: v for k, v in r.items() if k not in drop} for r in rs]
  assert strip(rows) == strip(resumed_rows)
  # Training moved the network and filled the buffer.
  assert rows[-1]["positions_total"] == int(straight["buffer"].total_added) > 0
  assert np.isfinite(rows[-1]["loss"])


def test_checkpoint_every_saves_fewer_steps_and_resumes_to_the_same_run(tmp_path):
  """`checkpoint_every` 3: steps 1, 3 and the last one before `close`; a run
  stopped without `close` (as by SIGKILL) repeats the iterations after its
  last checkpoint, to the same network as a run that saves every iteration."""
  straight, rows = _run(tmp_path / "straight", _config(), 5)
  config = _config(checkpoint_every=3, keep_checkpoints=10)
  _run(tmp_path / "spaced", config, 4)
  steps = lambda: sorted(int(d) for d in os.listdir(tmp_path / "spaced" / "checkpoints")
                         if d.isdigit())
  assert steps() == [1, 3, 4]
  run = loop.Run(str(tmp_path / "spaced"), config)
  run.step()
  run.checkpoints.close()  # killed after iteration 5, before any checkpoint of it
  run._lock.release()      # as the kernel releases a killed process's lock
  assert steps() == [1, 3, 4]
  assert _iterations(tmp_path / "spaced") == [1, 2, 3, 4, 5]
  resumed, resumed_rows = _run(tmp_path / "spaced", config, 5)
  assert steps() == [1, 3, 4, 5]
  assert _iterations(tmp_path / "spaced") == [1, 2, 3, 4, 5]
  _same_tree(straight["variables"], resumed["variables"])
  _same_tree(straight["buffer"], resumed["buffer"])
  assert [r["loss"] for r in rows] == [r["loss"] for r in resumed_rows]
  with pytest.raises(ValueError, match="checkpoint_every"):
    _config(checkpoint_every=0)


def test_overlapped_iterations_resume_and_train_one_iteration_behind(tmp_path):
  config = _config(overlap=True)
  straight, rows = _run(tmp_path / "straight", config, 3)
  _run(tmp_path / "resumed", config, 2)
  resumed, _ = _run(tmp_path / "resumed", config, 3)
  _same_tree(straight["variables"], resumed["variables"])
  _same_tree(straight["buffer"], resumed["buffer"])
  # Self-play is unchanged by the overlap; the updates see the buffer one
  # iteration late: none at iteration 1 (empty buffer), then steps on it.
  _, sequential_rows = _run(tmp_path / "sequential", _config(), 3)
  assert rows[0]["positions"] == sequential_rows[0]["positions"]
  assert rows[0]["loss"] is None and sequential_rows[0]["loss"] is not None
  assert np.isfinite(rows[-1]["loss"])
  assert all(r["wall_s"] > 0 for r in rows)


def test_weight_average_plays_is_saved_and_resumes(tmp_path):
  """ema_decay: self-play and agent.msgpack use the average, which follows
  its formula from the trained variables, and resuming keeps it exact."""
  config = _config(ema_decay=0.9)
  straight, _ = _run(tmp_path / "straight", config, 3)
  _run(tmp_path / "resumed", config, 2)
  resumed, _ = _run(tmp_path / "resumed", config, 3)
  _same_tree(straight["ema_variables"], resumed["ema_variables"])
  _same_tree(straight["variables"], resumed["variables"])
  saved = checkpoint_lib.read_variables(str(tmp_path / "straight" / checkpoint_lib.AGENT),
                                        straight["variables"])
  _same_tree(straight["ema_variables"], saved)
  # One more iteration by hand: the new average is d * old + (1 - d) * trained.
  run = loop.Run(str(tmp_path / "straight"), config)
  try:
    before = jax.device_get(run.state["ema_variables"])
    run.step()
    after = jax.device_get(run.state)
  finally:
    run.close()
  decay = loop.ema_decay_at(0.9, 4)
  assert decay == pytest.approx(5 / 14)
  for old, trained, average in zip(jax.tree.leaves(before), jax.tree.leaves(after["variables"]),
                                   jax.tree.leaves(after["ema_variables"]), strict=True):
    np.testing.assert_allclose(average, decay * old + (1 - decay) * trained, rtol=1e-5,
                               atol=1e-6)
  assert any(not np.allclose(a, v) for a, v in zip(jax.tree.leaves(after["ema_variables"]),
                                                   jax.tree.leaves(after["variables"])))
  assert loop.ema_decay_at(0.9, 1000) == 0.9
  with pytest.raises(ValueError, match="ema_decay"):
    _config(ema_decay=1.0)


@pytest.mark.slow
def test_opponent_policy_head_trains_and_the_agent_searches(tmp_path):
  """opponent_policy_weight: a ResNet with a third head, trained on the next
  move's policy; the search and load_agent see the usual two outputs."""
  config = _config(network="resnet", network_kwargs={"num_blocks": 1, "channels": 8},
                   opponent_policy_weight=0.15)
  run = loop.Run(str(tmp_path), config)
  try:
    initial = jax.device_get(run.state["variables"]["params"]["opponent_policy"])
    for _ in range(3):
      row = run.step()
    trained = jax.device_get(run.state["variables"]["params"]["opponent_policy"])
  finally:
    run.close()
  assert np.isfinite(row["opponent_policy_loss"]) and row["opponent_policy_loss"] > 0
  assert not np.allclose(initial["kernel"], trained["kernel"])
  env, eval_fn, params = checkpoint_lib.load_agent(str(tmp_path))
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  logits, value = eval_fn(params, None, state)
  assert logits.shape == (2, 9) and value.shape == (2,)
  with pytest.raises(ValueError, match="opponent_policy_weight needs network='resnet'"):
    _config(opponent_policy_weight=0.15)


def test_load_agent_searches(tmp_path):
  config = _config()
  _run(tmp_path, config, 2)
  env, eval_fn, params = checkpoint_lib.load_agent(str(tmp_path))
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  out = mcgs_jax.search(params, jax.random.PRNGKey(1), state, env, eval_fn,
                        mcgs_jax.SearchConfig(num_simulations=4))
  assert out.action.shape == (2,) and np.all(np.asarray(out.visit_counts).sum(-1) == 4)


def _truncate_step(step_dir):
  """Truncates every data file of a checkpoint step (its metadata stays)."""
  for root, _, files in os.walk(step_dir / "state" / "ocdbt.process_0"):
    for name in files:
      with open(os.path.join(root, name), "r+b") as f:
        f.truncate(3)


def test_corrupt_newest_checkpoint_falls_back(tmp_path, capsys):
  """Truncated files in the newest step: the run says so in one line, moves
  the step aside (kept), resumes from the step before and ends equal to an
  uninterrupted run; the CSV has every iteration once."""
  config = _config()
  straight, _ = _run(tmp_path / "straight", config, 5)
  run_dir = tmp_path / "run"
  _run(run_dir, config, 3)
  _truncate_step(run_dir / "checkpoints" / "3")
  with pytest.warns(loop.CheckpointFallbackWarning, match="checkpoints/3 is unreadable"):
    run = loop.Run(str(run_dir), config)
  try:
    assert int(run.state["iteration"]) == 2
  finally:
    run.close()
  assert (run_dir / "checkpoints-corrupt" / "3" / "state").is_dir()
  assert _iterations(run_dir) == [1, 2]
  # The command line: one warning line, then the run goes on to the end.
  _run(run_dir, config, 4)
  _truncate_step(run_dir / "checkpoints" / "4")
  capsys.readouterr()
  _train(run_dir, iterations=5)
  err = capsys.readouterr().err
  warning_lines = [line for line in err.splitlines() if line.startswith("warning:")]
  assert len(warning_lines) == 1 and "checkpoints/4 is unreadable" in warning_lines[0], err
  assert "resuming from iteration 3" in warning_lines[0]
  assert "Traceback" not in err and "Event loop" not in err
  assert _iterations(run_dir) == [1, 2, 3, 4, 5]
  resumed = checkpoint_lib.read_variables(str(run_dir / checkpoint_lib.AGENT), straight["variables"])
  _same_tree(straight["variables"], resumed)


def test_deleted_step_metadata_is_one_note(tmp_path, capfd, caplog):
  """The newest step's own metadata file deleted: opening the folder logs
  nothing (orbax would warn of the missing file), and `restore_latest` says
  it in its one note and falls back to the step before."""
  directory = str(tmp_path / "checkpoints")
  checkpoints = checkpoint_lib.Checkpointer(directory)
  for step in (1, 2):
    checkpoints.save(step, {"a": np.full(3, step, np.float32)}, {"step": step})
  checkpoints.close()
  os.remove(os.path.join(directory, "2", "_CHECKPOINT_METADATA"))
  capfd.readouterr()
  caplog.clear()
  checkpoints = checkpoint_lib.Checkpointer(directory)
  try:
    step, state, meta, notes = checkpoints.restore_latest({"a": np.zeros(3, np.float32)})
  finally:
    checkpoints.close()
  out, err = capfd.readouterr()
  assert (out, err) == ("", "")
  assert [record.getMessage() for record in caplog.records] == []
  assert (step, meta) == (1, {"step": 1})
  np.testing.assert_array_equal(state["a"], np.ones(3, np.float32))
  assert notes == [f"checkpoint {directory}/2 is unreadable (_CHECKPOINT_METADATA is missing); "
                   f"moved it to {directory}-corrupt/2"]


def test_no_intact_checkpoint_is_one_clear_error(tmp_path, capsys):
  config = _config()
  _run(tmp_path, config, 1)
  _truncate_step(tmp_path / "checkpoints" / "1")
  assert _train(tmp_path, iterations=2) == 1
  err = capsys.readouterr().err
  assert "Traceback" not in err
  assert [line for line in err.splitlines() if line.startswith("error:")] == [
      line for line in err.splitlines() if "no complete checkpoint" in line]
  assert (tmp_path / "checkpoints-corrupt" / "1").is_dir()


def test_incompatible_checkpoint_refused(tmp_path):
  _run(tmp_path, _config(), 1)
  with pytest.raises(checkpoint_lib.CheckpointError):
    loop.Run(str(tmp_path), _config(network_kwargs={"hidden_sizes": [8]}))


def test_checkpoint_without_an_optional_field_restores(tmp_path):
  """A step saved before an optional (None) field existed restores into
  today's template by name; a missing array is a config error, not a
  corrupt step (nothing is moved aside)."""
  from mcgs_jax.learning.example import Example  # pylint: disable=g-import-not-at-top
  arrays = dict(observation=np.ones((4, 3), np.float32), legal_action_mask=np.ones((4, 2), bool),
                policy=np.full((4, 2), 0.5, np.float32), player=np.arange(4, dtype=np.int32),
                value=np.linspace(-1, 1, 4).astype(np.float32))
  checkpoints = checkpoint_lib.Checkpointer(str(tmp_path / "checkpoints"))
  try:
    checkpoints.save(1, dict(data=arrays, steps=[dict(count=np.int32(7)), None]), {"a": 1})
    template = dict(data=Example(**{k: np.zeros_like(v) for k, v in arrays.items()}),
                    steps=[dict(count=np.int32(0)), None])
    assert template["data"].opponent_policy is None
    step, state, meta, notes = checkpoints.restore_latest(template)
    assert (step, meta, notes) == (1, {"a": 1}, [])
    assert isinstance(state["data"], Example) and state["data"].opponent_policy is None
    for name, value in arrays.items():
      np.testing.assert_array_equal(getattr(state["data"], name), value)
    assert int(state["steps"][0]["count"]) == 7 and state["steps"][1] is None
    wider = dict(data=template["data"].replace(opponent_policy=np.zeros((4, 2), np.float32)),
                 steps=template["steps"])
    with pytest.raises(checkpoint_lib.CheckpointError, match="opponent_policy") as error:
      checkpoints.restore_latest(wider)
    assert not isinstance(error.value, checkpoint_lib.CorruptCheckpointError)
    assert checkpoints.latest_step() == 1
  finally:
    checkpoints.close()


def test_metrics_without_checkpoint_refused(tmp_path):
  (tmp_path / loop.METRICS).write_text("iteration\n1\n")
  with pytest.raises(checkpoint_lib.CheckpointError, match="no complete checkpoint"):
    loop.Run(str(tmp_path), _config())


def test_cli_refuses_other_settings(tmp_path):
  config_file = tmp_path / "tiny.json"
  config_file.write_text(json.dumps(TINY))
  out = tmp_path / "run"
  config = training.resolve_config(str(out), str(config_file), env="tictactoe")
  loop.Run(str(out), config).close()   # writes config.json
  with pytest.raises(ValueError, match=r"\(search.num_simulations differ"):
    training.resolve_config(str(out), simulations=9)
  assert training.resolve_config(str(out)).search.num_simulations == TINY["simulations"]


def _cli(out, config_file, iterations):
  return [sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "tictactoe", "--out", str(out),
          "--iterations", str(iterations), "--config", str(config_file)]


@pytest.mark.slow
def test_sigkill_resume(tmp_path):
  """Kill a real run with SIGKILL while it trains, rerun the same command: the
  metrics have every iteration once and the network equals an uninterrupted
  run's."""
  config_file = tmp_path / "tiny.json"
  # TINY's shapes: the uninterrupted run below reuses the programs the
  # tests above compiled in this process.
  config_file.write_text(json.dumps(TINY))
  iterations = 12
  killed, straight = tmp_path / "killed", tmp_path / "straight"
  # The three processes compile the same programs: the first one's are
  # reused through the suite's persistent compilation cache (conftest.py),
  # which they inherit with the environment.
  env = dict(os.environ, PYTHONUNBUFFERED="1")
  proc = subprocess.Popen(_cli(killed, config_file, iterations), cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
  # Kill once a few iterations are checkpointed, mid-run.
  seen = 0
  for line in proc.stdout:
    seen += line.startswith("{")
    if seen >= 4:
      break
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  done_before = _iterations(killed)
  assert 0 < len(done_before) < iterations
  subprocess.run(_cli(killed, config_file, iterations), cwd=ROOT, env=env, check=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  assert _iterations(killed) == list(range(1, iterations + 1))
  # The uninterrupted run: the same training, in this process.
  _train(straight, env="tictactoe", iterations=iterations, config_file=str(config_file))
  assert (killed / checkpoint_lib.AGENT).read_bytes() == (straight / checkpoint_lib.AGENT).read_bytes()


def test_a_resume_removes_the_snapshots_written_after_its_checkpoint(tmp_path):
  """A run killed after an evaluation but before its checkpoint resumes
  from the checkpoint: the snapshot of the lost iteration goes (the
  repeated iteration writes its own), so every snapshot has its metrics
  row."""
  config = _config(eval_every=2, eval_simulations=4, checkpoint_every=3, keep_checkpoints=10)
  _run(tmp_path, config, 3)
  run = loop.Run(str(tmp_path), config)
  run.step()                # iteration 4: evaluated, a snapshot, no checkpoint
  run.checkpoints.close()   # killed here
  run._lock.release()       # as the kernel releases a killed process's lock
  assert evaluation.snapshot_iterations(str(tmp_path)) == [2, 4]
  with pytest.warns(loop.CheckpointFallbackWarning, match=r"iterations \[4\].*checkpoint 3"):
    run = loop.Run(str(tmp_path), config)
  try:
    assert evaluation.snapshot_iterations(str(tmp_path)) == [2]
    run.step()
    assert evaluation.snapshot_iterations(str(tmp_path)) == [2, 4]
  finally:
    run.close()
  assert _iterations(tmp_path) == [1, 2, 3, 4]


_EVALUATED = dict(eval_every=1, eval_simulations=4, arena_games=4, arena_simulations=4,
                  baseline_simulations=4)


def test_evaluation_columns_and_plots(tmp_path):
  """Evaluation every iteration: exact figures of policy and search, a
  snapshot, arena scores and an Elo ladder with the baseline at 0."""
  _, rows = _run(tmp_path, _config(**_EVALUATED), 2)
  first, second = rows
  for row in rows:
    for column in ("policy_keeps_value", "search_keeps_value", "arena_baseline_score", "elo"):
      assert 0 <= row[column] <= 1 or column == "elo", (column, row[column])
    assert row["elo_low"] <= row["elo"] <= row["elo_high"]
  assert "arena_prev_score" not in first and 0 <= second["arena_prev_score"] <= 1
  assert sorted(os.listdir(tmp_path / "snapshots")) == [
      "iteration_000001.msgpack", "iteration_000002.msgpack"]
  from mcgs_jax.learning import plots
  written = plots.plot_run(str(tmp_path))
  assert [os.path.basename(p) for p in written] == ["losses.png", "evaluation.png",
                                                   "arena_elo.png"]
  assert all(os.path.getsize(p) > 1000 for p in written)


def test_metrics_rows_are_appended_and_the_file_is_a_full_rewrite(tmp_path, monkeypatch):
  """metrics.csv is rewritten only when a row brings new columns (the first
  evaluation) or a process writes it first; otherwise the row is appended,
  and the file is byte for byte what a full rewrite gives."""
  rewrites = []
  full_write = loop.write_metrics

  def counted(path, rows):
    rewrites.append(len(rows))
    return full_write(path, rows)

  monkeypatch.setattr(loop, "write_metrics", counted)
  config = _config(eval_every=2, eval_simulations=4)
  _run(tmp_path / "run", config, 3)
  _, rows = _run(tmp_path / "run", config, 4)   # a second process resumes
  # The first row; the evaluation columns at 2; the resumed process's
  # checkpoint rows at 3. Rows 3 and 4 (evaluated: no new column) are appended.
  assert rewrites == [1, 2, 3], rewrites
  full_write(str(tmp_path / "full.csv"), rows)
  written = (tmp_path / "run" / loop.METRICS).read_bytes()
  assert written == (tmp_path / "full.csv").read_bytes()
  assert _iterations(tmp_path / "run") == [1, 2, 3, 4]
  assert "search_keeps_value" in rows[3] and "search_keeps_value" not in rows[2]


def test_tensorboard_events(tmp_path):
  pytest.importorskip("tensorboardX")
  run = loop.Run(str(tmp_path), _config(), tensorboard=True)
  try:
    run.step()
  finally:
    run.close()
  events = os.listdir(tmp_path / "tb")
  assert len(events) == 1 and events[0].startswith("events.out.tfevents")
  assert os.path.getsize(tmp_path / "tb" / events[0]) > 100


def test_diverging_training_stops_before_checkpointing(tmp_path):
  # No update before 40 examples: the first iterations only play.
  config = _config(learning_rate=1e30, optimizer="sgd", weight_decay=0.0, min_replay=40)
  run = loop.Run(str(tmp_path), config)
  try:
    with pytest.raises(FloatingPointError, match="non-finite"):
      for _ in range(6):
        run.step()
    failed = int(run.state["iteration"]) + 1
  finally:
    run.close()
  # Nothing of the failed iteration was written.
  assert failed > 1
  assert _iterations(tmp_path) == list(range(1, failed))
  assert checkpoint_lib.Checkpointer(str(tmp_path / "checkpoints")).latest_step() == failed - 1


@pytest.mark.slow
def test_gumbel_selfplay_learns_tictactoe_with_8_simulations(tmp_path):
  """Gumbel self-play with 8 simulations per move (improved-policy targets)
  makes the raw policy keep the game value in clearly more of tic-tac-toe's
  4520 positions than the initial network, within 40 short iterations."""
  from mcgs_jax.learning import agents  # pylint: disable=g-import-not-at-top
  from mcgs_jax.learning import ground_truth  # pylint: disable=g-import-not-at-top
  config = config_lib.replace(
      config_lib.default_config("tictactoe"), root_policy="gumbel", simulations=8, games=64,
      network_kwargs={"hidden_sizes": [64, 64]}, updates_per_iteration=16, batch_size=128,
      min_replay=128, replay_capacity=10_000, decay_updates=0, eval_every=0,
      eval_simulations=8, eval_solver=False)
  run = loop.Run(str(tmp_path), config)
  try:
    def figures():   # the raw policy alone: what the targets train
      policy = agents.PolicyAgent(eval_fn=run.eval_fn, params=run.state["variables"],
                                  name="policy")
      values = ground_truth.evaluate(run.env, policy, jax.random.PRNGKey(0))
      return {f"policy_{k}": v for k, v in values.items()}
    before = figures()
    for _ in range(40):
      row = run.step()
    after = figures()
  finally:
    run.close()
  assert row["nn_evals_total"] <= 40 * 64 * 9 * (8 + 1)
  assert after["policy_keeps_value"] >= before["policy_keeps_value"] + 0.08, (before, after)
  assert after["policy_critical_kept"] >= before["policy_critical_kept"] + 0.1, (before, after)
  assert after["policy_keeps_value"] >= 0.8, after


def test_ctrl_c_stops_cleanly(tmp_path, capsys, monkeypatch):
  """Ctrl-C, or SIGTERM (`kill`, as a background run is stopped), during an
  iteration: the last finished iteration is saved, one line says how to
  resume, no traceback; the same command then resumes."""
  step = loop.Run.step
  calls = []

  def interrupted(self):
    calls.append(1)
    if len(calls) == 3:
      os.kill(os.getpid(), signal.SIGTERM)
    return step(self)

  monkeypatch.setattr(loop.Run, "step", interrupted)
  config_file = tmp_path / "tiny.json"
  config_file.write_text(json.dumps(TINY))
  settings = dict(env="tictactoe", config_file=str(config_file), iterations=4)
  assert _train(tmp_path / "run", **settings) == 130
  err = capsys.readouterr().err
  assert "stopped at iteration 2; run the same command to resume" in err
  assert "Traceback" not in err
  # The handler is the caller's again once main returns.
  assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
  monkeypatch.setattr(loop.Run, "step", step)
  _train(tmp_path / "run", **settings)
  assert _iterations(tmp_path / "run") == [1, 2, 3, 4]


def test_evaluation_summary_line():
  row = {"iteration": 10, "search_c4_error_L3_R1": 0.01, "search_c4_error_L2_R1": 0.125,
         "policy_keeps_value": 0.5, "elo": 12.0, "elo_low": -3.0, "elo_high": 30.0}
  assert screen.evaluation_summary(row) == (
      "search errors: End-Easy 1.0%, Middle-Easy 12.5% (mean 6.8%); policy keeps value 0.5000; "
      "Elo +12 [-3, +30]")
  wrapped = screen.evaluation_summary(row, width=40).splitlines()
  assert len(wrapped) > 1 and all(len(line) <= 40 for line in wrapped)
  assert screen.short_summary(row) == "search 6.8%"
  assert screen.evaluation_summary({"iteration": 3, "loss": 1.0}) == ""



def test_mean_c4_error_of_a_metrics_row():
  sets = list(ground_truth.C4_SETS)
  row = {f"search_c4_error_{name}": str(i / 100) for i, name in enumerate(sets)}
  row.update({f"policy_c4_error_{name}": 0.25 for name in sets})
  assert evaluation.mean_c4_error(row) == pytest.approx(sum(range(len(sets))) / 100 / len(sets))
  assert evaluation.mean_c4_error(row, "policy_c4_error") == 0.25
  assert np.isnan(evaluation.mean_c4_error(row, "value_c4_sign_error"))
  row[f"search_c4_error_{sets[0]}"] = ""   # a row written between evaluations
  assert np.isnan(evaluation.mean_c4_error(row))


@pytest.mark.slow
def test_wall_time_excludes_compilation_and_stale_tmp_is_removed(tmp_path):
  """The first iteration of a process compiles; wall_s and cpu_s count the
  work without it (compile_s says how much). A temporary directory left by
  a killed save is removed quietly when the run opens its checkpoints."""
  config = _config(games=6)   # shapes no other test compiles
  run = loop.Run(str(tmp_path), config)
  try:
    first = run.step()
    second = run.step()
  finally:
    run.close()
  assert first["compile_s"] > 0.5, first
  # The step's little host work outside self-play and training (replay
  # insertion, metrics) takes milliseconds, more on a loaded machine.
  assert first["wall_s"] <= first["selfplay_s"] + first["train_s"] - first["compile_s"] + 0.25
  assert first["wall_s"] < first["compile_s"], first
  assert second["compile_s"] < 0.5 * first["compile_s"], second
  stale = tmp_path / "checkpoints" / "3.orbax-checkpoint-tmp-1234567"
  stale.mkdir()
  (stale / "partial").write_text("x")
  _run(tmp_path, config, 3)
  assert not stale.exists()
  assert _iterations(tmp_path) == [1, 2, 3]


def test_connect4_defaults_are_the_shipped_agents_training_config():
  """`make train-connect4` (the connect4 defaults) trains the run the shipped
  agent came from: its config.json holds exactly the defaults."""
  with open(os.path.join(ROOT, "networks", "pretrained", "connect4", "config.json")) as f:
    shipped = config_lib.TrainConfig.from_json(json.load(f))
  assert shipped == config_lib.default_config("connect4")


def test_an_interrupt_inside_a_save_completes_it_and_names_its_iteration(tmp_path, capfd,
                                                                        monkeypatch):
  """Ctrl-C at 20 random points inside iteration 2's save (the checkpoint, the
  metrics row, the agent file): the save completes, the message names the
  iteration metrics.csv ends at and the newest checkpoint holds, and the
  terminal shows that line only."""
  import random  # pylint: disable=g-import-not-at-top
  import threading  # pylint: disable=g-import-not-at-top
  save = loop.Run._save
  delays = random.Random(0)

  def interrupted_save(self, iteration):
    if iteration == 2:
      # From another thread, a random moment into the save.
      threading.Timer(delays.uniform(0.0, 0.05), os.kill, (os.getpid(), signal.SIGINT)).start()
      time.sleep(0.06)   # the signal lands while this save runs
    return save(self, iteration)

  monkeypatch.setattr(loop.Run, "_save", interrupted_save)
  config_file = tmp_path / "tiny.json"
  config_file.write_text(json.dumps(TINY))
  for trial in range(20):
    out = tmp_path / f"run{trial}"
    assert _train(out, env="tictactoe", config_file=str(config_file), iterations=3) == 130, trial
    err = capfd.readouterr().err
    assert err.strip() == "stopped at iteration 2; run the same command to resume", (trial, err)
    assert _iterations(out) == [1, 2]
    assert checkpoint_lib.Checkpointer(str(out / "checkpoints")).latest_step() == 2
