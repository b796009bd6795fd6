"""The accelerator session's CPU smoke run (`mcgs_jax.experiments.device_session
--quick`): the report (`mcgs_jax.experiments.device_report --quick`) writes its
markdown and one CSV per section, every section with rows, finite ratios
against mctx and between XLA variants, the versions line and the list of
skipped cells; the training run's results land beside it with their curve,
and the session's summary says what each step did. Timings are not checked."""

import csv
import dataclasses
import math
import subprocess
import sys
import types

import pytest

from mcgs_jax.benchmarks import device_session
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import report_search
from mcgs_jax.benchmarks import report_selfplay
from mcgs_jax.benchmarks import report_training
from mcgs_jax.benchmarks import selfplay_speed
from mcgs_jax.benchmarks import report as report_lib

MEASURED = ("search", "selfplay", "memory", "device", "phases", "training", "xla", "kernels")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
  out = tmp_path_factory.mktemp("session")
  runs = tmp_path_factory.mktemp("runs")
  done = subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.device_session", "--quick",
                         "--out", str(out), "--runs", str(runs)], capture_output=True, text=True,
                        timeout=900)
  assert done.returncode == 0, done.stderr[-3000:]
  return dict(out=out, runs=runs)


@pytest.fixture(scope="module")
def report(session):
  out = session["out"] / "device"
  md = [p for p in out.glob("*.md") if not p.name.endswith("-session.md")]
  assert len(md) == 1, md
  stem = md[0].stem
  assert stem.endswith("-quick")
  paths = report_plan.report_paths(str(out), stem)
  tables = {}
  for section in report_plan.SECTIONS:
    with open(paths[section]) as f:
      tables[section] = list(csv.DictReader(f))
  return dict(out=out, paths=paths, text=md[0].read_text(), tables=tables, stem=stem)


@pytest.mark.slow
def test_the_session_trains_and_writes_its_summary(session, report):
  summary = (report["out"] / f"{report['stem']}-session.md").read_text()
  assert "| report | exit 0 |" in summary
  assert "| training | exit 0 |" in summary
  run = session["out"] / "learning" / "gpu" / "quick_session"
  for name in ("config.json", "metrics.csv", "agent.msgpack", "curve.csv", "curve.png"):
    assert (run / name).exists(), name
  with open(run / "curve.csv") as f:
    curve = list(csv.DictReader(f))
  mine = [r for r in curve if r["run"] == "quick_session"]
  # --quick: 4 iterations evaluated every 2; the CPU recipe's curve beside.
  assert [int(r["iteration"]) for r in mine] == [2, 4]
  assert any(r["run"].startswith("CPU recipe") for r in curve)
  for row in mine:
    assert 0.0 <= float(row["search_error_mean"]) <= 100.0
    assert float(row["elapsed_s"]) >= float(row["wall_s"]) > 0
  # Run state stays in --runs, never beside the results.
  assert not (run / "checkpoints").exists()
  assert (session["runs"] / "quick_session" / "checkpoints").exists()


def test_the_full_plan_fits_a_lent_machine():
  prediction = device_session.predict(report_plan.FULL_PLAN, 570.0, quick=False)
  assert prediction.total_s <= 570.0
  assert prediction.device_s <= 60 * device_session.DEVICE_MINUTES
  assert prediction.training_s >= device_session.MIN_TRAINING_S
  # Too little time left: no training rather than a run without evaluation.
  short = device_session.predict(report_plan.FULL_PLAN, 400.0, quick=False)
  assert short.training_s == 0.0


@pytest.mark.slow
def test_xla_variants_have_default_ratios(report):
  rows = report["tables"]["xla"]
  assert {r["kind"] for r in rows} == {"search", "selfplay"}
  assert {r["variant"] for r in rows} == {"default", "command-buffer-while"}
  for row in rows:
    ratio = float(row["ratio_vs_default"])
    assert math.isfinite(ratio) and ratio > 0, row
    if row["variant"] == "default":
      assert ratio == 1.0
    assert float(row["min"]) <= float(row["median"]) <= float(row["max"])


@pytest.mark.slow
def test_kernel_rows_say_a_cpu_has_no_accelerator_plane(report):
  rows = report["tables"]["kernels"]
  assert [r["row"] for r in rows][:3] == ["search mctx-gumbel", "search tree-gumbel",
                                          "search tree-gumbel"]
  assert "phase step" in [r["row"] for r in rows]
  for row in rows:
    assert row["accelerator_planes"] == "0" and row["kernels_per_step"] == "nan"


def test_device_events_are_counted_on_stream_lines_only():
  import jax  # pylint: disable=g-import-not-at-top
  from mcgs_jax.benchmarks import measure  # pylint: disable=g-import-not-at-top
  text = """
  planes {
    name: "/device:GPU:0"
    lines { name: "Stream #7(Compute)"
            events { metadata_id: 1 duration_ps: 2000000 }
            events { metadata_id: 2 duration_ps: 1000000 }
            events { metadata_id: 3 duration_ps: 500000 }
            events { metadata_id: 1 duration_ps: 2000000 } }
    lines { name: "XLA Ops" events { metadata_id: 1 duration_ps: 2000000 } }
    event_metadata { key: 1 value { id: 1 name: "loop_fusion_3" } }
    event_metadata { key: 2 value { id: 2 name: "MemcpyD2H" } }
    event_metadata { key: 3 value { id: 3 name: "Memset" } }
  }
  planes { name: "/host:CPU" lines { name: "python" events { metadata_id: 1 duration_ps: 5 } }
           event_metadata { key: 1 value { id: 1 name: "f" } } }
  """
  events = measure.count_device_events(jax.profiler.ProfileData.from_text_proto(text))
  assert events == measure.DeviceEvents(kernels=2, copies=1, sets=1, device_ms=0.0055,
                                         planes=1)


@pytest.mark.slow
def test_files_are_flat_and_few(report):
  files = sorted(p.name for p in report["out"].iterdir())
  assert all(p.is_file() for p in report["out"].iterdir())
  # The report's markdown and CSVs, and the session's summary.
  expected = {p.split("/")[-1] for p in report["paths"].values()}
  assert set(files) == expected | {f"{report['stem']}-session.md"}, files


@pytest.mark.slow
def test_every_section_has_rows(report):
  for section in MEASURED:
    assert report["tables"][section], section


@pytest.mark.slow
def test_search_ratios_are_positive_and_finite(report):
  rows = [r for r in report["tables"]["search"] if r["status"] == "ok"]
  # Both root policies ran against their mctx policy.
  assert {r["policy"] for r in rows} == {"puct", "gumbel"}
  assert {r["search"] for r in rows} == {"mctx", "mcgs", "tree"}
  for row in rows:
    ratio = float(row["ratio_vs_mctx"])
    assert math.isfinite(ratio) and ratio > 0, row
    assert float(row["median_ms"]) > 0 and float(row["compile_s"]) > 0
    assert float(row["state_bytes_per_game"]) > 0
    if row["search"] == "mctx":
      assert ratio == 1.0


@pytest.mark.slow
def test_selfplay_ratios_are_positive_and_finite(report):
  rows = report["tables"]["selfplay"]
  assert any(r["contestant"].startswith("mctx") for r in rows)
  assert any(not r["contestant"].startswith("mctx") for r in rows)
  for row in rows:
    assert row["status"] == "ok", row
    ratio = float(row["ratio_vs_matching_mctx"])
    assert math.isfinite(ratio) and ratio > 0, row
    assert float(row["positions_per_s"]) > 0


@pytest.mark.slow
def test_memory_phases_and_training_rows(report):
  tables = report["tables"]
  assert all(float(r["state_bytes_per_game"]) > 0 for r in tables["memory"])
  assert [r["after_section"] for r in tables["device"]] == [
      "search", "selfplay", "phases", "training", "xla", "kernels"]
  phases = [r["row"] for r in tables["phases"]]
  assert phases[0] == "network+env only" and "phase step" in phases
  assert all(float(r["examples_per_s"]) > 0 for r in tables["training"])


@pytest.mark.slow
def test_markdown_header_and_skipped_list(report):
  text = report["text"]
  versions = next(line for line in text.splitlines() if line.startswith("Versions:"))
  for package in ("jax", "jaxlib", "mctx", "pgx"):
    assert f"{package} " in versions
  assert "Command: `mcgs-jax device-report --out" in text
  assert text.rstrip().count("--quick") >= 1
  for heading in ("## 1. Search", "## 2. Self-play", "## 3. Memory", "## 4. Phase",
                  "## 5. Training", "## 6. XLA", "## 7. Kernels", "## Skipped"):
    assert heading in text
  # The quick plan leaves cells out, and every one is listed.
  skipped = report["tables"]["skipped"]
  assert skipped
  section = text.split("## Skipped", 1)[1]
  for row in skipped:
    assert f"| {row['section']} | {row['cell']} | {row['reason']} |" in section


def test_device_slug():
  assert report_plan.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
  assert report_plan.device_slug("cpu") == "cpu"


def test_cells_start_with_the_diagonal():
  cells = report_plan.ordered_cells((256, 1024, 4096), (64, 200, 800))
  assert cells[:3] == [(256, 64), (1024, 200), (4096, 800)]
  assert sorted(cells) == sorted((b, s) for b in (256, 1024, 4096) for s in (64, 200, 800))


def test_a_spent_budget_skips_every_cell_without_compiling():
  plan = dataclasses.replace(report_plan.QUICK_PLAN, batches=(4, 8), sims=(4,))
  nets = report_plan.make_networks(plan, seed=0)
  rows, skipped = report_search.search_section(plan, nets, budget_s=0.0)
  assert rows == []
  whole = [r for r in skipped if "left of the budget" in r["reason"]]
  assert len(whole) == len(plan.search_contestants) * 2   # one row per skipped cell
  assert all("all 2 contestants" in r["cell"] for r in whole)
  rows, skipped = report_selfplay.selfplay_section(plan, seed=0, budget_s=0.0)
  assert rows == [] and any("left of the budget" in r["reason"] for r in skipped)
  rows, skipped = report_training.training_section(plan, nets["resnet"], budget_s=0.0)
  assert rows == [] and len(skipped) == len(plan.training_batches)


def test_the_plan_follows_the_platform():
  assert report_plan.select_plan(True, "gpu") is report_plan.QUICK_PLAN
  assert report_plan.select_plan(False, "gpu") is report_plan.FULL_PLAN
  cpu = report_plan.select_plan(False, "cpu")
  assert cpu is report_plan.CPU_PLAN and cpu.label == "full (CPU plan)"
  assert cpu.selfplay_batch == 256 and max(cpu.batches) < min(report_plan.FULL_PLAN.batches
                                                               [1:])
  assert cpu.search_batches("resnet") == (32,) and cpu.search_batches("mlp") == cpu.batches
  header = report_lib.header_lines("cpu", [], cpu, 1.0, quick=False)
  assert any(line.startswith("Mode: full (CPU plan);") for line in header)
  # Every self-play loop of the CPU plan is timed in the group of its mctx loop.
  for group in cpu.selfplay_groups:
    assert all(report_selfplay.matching_mctx(name) in group for name in group), group


class FakeClock:
  """The sections' clock, advanced by the stubs below instead of real work."""

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


@pytest.fixture
def fake_clock(monkeypatch):
  clock = FakeClock()
  monkeypatch.setattr(report_plan, "clock", clock)
  return clock


ALL_SIX = tuple(report_plan.SEARCH_CONTESTANTS)


def stub_search_cell(clock, calls, no_timed_call=()):
  """search_cell that costs 10 s of the fake clock: 5 s compile, 1 ms per
  game and simulation; `no_timed_call`: (name, batch) whose first call was
  over the budget."""
  def search_cell(name, net, batch, sims, repeats, budget_s, cache=None):
    del repeats, budget_s, cache
    calls.append((net.label, batch, sims, name))
    clock.now += 10.0
    search, policy = report_plan.SEARCH_CONTESTANTS[name]
    ok = (name, batch) not in no_timed_call
    return dict(network=net.label, batch=batch, sims=sims, contestant=name, search=search,
                policy=policy, status="ok" if ok else "skipped (first call 99 s over the budget)",
                compile_s=5.0, warmup_s=6.0, repeats=2 if ok else 0,
                median_ms=float(batch * sims) if ok else math.nan, sims_per_s=1.0,
                ratio_vs_mctx=math.nan, nodes_per_game=1.0, nn_evals_per_game=1.0,
                state_bytes_per_game=1.0, xla_temp_bytes=1.0, xla_output_bytes=1.0)
  return search_cell


def cells_of(rows):
  cells = {}
  for r in rows:
    cells.setdefault((r["network"], r["batch"], r["sims"]), set()).add(r["contestant"])
  return cells


def test_search_cells_are_measured_whole_or_skipped_whole(fake_clock, monkeypatch):
  plan = dataclasses.replace(report_plan.QUICK_PLAN, batches=(4, 8), sims=(4, 16),
                             search_contestants={"mlp": ALL_SIX, "resnet": ALL_SIX},
                             network_batches={"resnet": (4,)})
  nets = report_plan.make_networks(plan, seed=0)
  calls = []
  monkeypatch.setattr(report_search, "search_cell", stub_search_cell(fake_clock, calls))
  # 50 s per network; a cell costs 60 s: the budget runs out in each network's
  # first cell, which still measures all six, and the other cells are skipped.
  rows, skipped = report_search.search_section(plan, nets, budget_s=100.0)
  assert cells_of(rows) == {("mlp", 4, 4): set(ALL_SIX), ("resnet", 4, 4): set(ALL_SIX)}
  assert [c[3] for c in calls[:6]] == list(ALL_SIX)   # a cell's six before the next cell
  for row in rows:
    assert math.isfinite(row["ratio_vs_mctx"]) and row["ratio_vs_mctx"] > 0, row
  whole = [r["cell"] for r in skipped]
  assert all(c.endswith("all 6 contestants") for c in whole), whole
  assert len(whole) == 3 + 1   # mlp: 4 cells, one measured; resnet (B=4 only): 2, one measured
  # With room for more, the next cell is predicted from the first (whole).
  fake_clock.now, calls[:] = 0.0, []
  rows, skipped = report_search.search_section(plan, nets, budget_s=400.0)
  assert all(len(names) == 6 for names in cells_of(rows).values())
  assert len(cells_of(rows)) >= 3


def test_ours_is_skipped_without_its_mctx_row(fake_clock, monkeypatch):
  plan = dataclasses.replace(report_plan.QUICK_PLAN, batches=(4,), sims=(4,),
                             search_contestants={"mlp": ALL_SIX})
  nets = report_plan.make_networks(plan, seed=0)
  calls = []
  monkeypatch.setattr(report_search, "search_cell",
                      stub_search_cell(fake_clock, calls, no_timed_call={("mctx-muzero", 4)}))
  rows, skipped = report_search.search_section(plan, nets, budget_s=1000.0)
  assert [c[3] for c in calls] == ["mctx-muzero", "mctx-gumbel", "mcgs-gumbel", "tree-gumbel"]
  reasons = {r["cell"].split()[-1]: r["reason"] for r in skipped}
  assert reasons["mcgs-puct"].startswith("mctx-muzero not measured in this cell")
  assert reasons["tree-puct"].startswith("mctx-muzero not measured in this cell")
  ok = [r for r in rows if r["status"] == "ok"]
  assert {r["contestant"] for r in ok} == {"mctx-gumbel", "mcgs-gumbel", "tree-gumbel"}
  assert all(math.isfinite(r["ratio_vs_mctx"]) for r in ok)


class FakeRunner:
  """selfplay_speed.Runner on the fake clock: 20 s to compile, then
  CALL_S[name] (default 1 s) per call."""
  CALL_S = {"mctx": 10.0, "mctx-gumbel": 10.0}
  clock = None

  def __init__(self, name, eval_fn, params, args):
    del eval_fn, params, args
    self.name = name
    self.call_s = self.CALL_S.get(name, 1.0)
    self.times, self.stats, self.compile_s = [], [], math.nan
    metrics = lambda stats: dict(nn_evals_per_move=1.0, transposition_hits_per_move=0.0,
                                 nodes_kept_per_move=0.0)
    self.contestant = types.SimpleNamespace(net_batches_per_move=9.0, metrics=metrics)

  def compile(self):
    self.compile_s = 20.0 + self.call_s
    self.clock.now += 20.0 + self.call_s * (1 + selfplay_speed.BURN_IN_CALLS)

  def time_round(self, repeats, budget_s):
    # bench_rows' per-round budget is what left mctx without a timed call.
    assert budget_s == math.inf
    self.clock.now += self.call_s * (1 + repeats)
    self.times += [self.call_s] * repeats
    self.stats += [None] * (1 + repeats)


@pytest.fixture
def fake_runner(fake_clock, monkeypatch):
  monkeypatch.setattr(FakeRunner, "clock", fake_clock)
  monkeypatch.setattr(selfplay_speed, "Runner", FakeRunner)


def test_selfplay_groups_are_timed_whole_or_skipped_whole(fake_clock, fake_runner):
  plan = dataclasses.replace(
      report_plan.QUICK_PLAN, repeats=3, selfplay_rounds=2, max_seconds=60.0,
      selfplay_groups=(("mctx", "mcgs", "tree"), ("mctx-gumbel", "mcgs-gumbel")))
  # Compiling group 1 alone overruns the budget: its first round still times
  # all three (mctx's 10 s calls included), group 2 is skipped whole.
  rows, skipped = report_selfplay.selfplay_section(plan, seed=0, budget_s=60.0)
  assert [r["contestant"] for r in rows] == ["mctx", "mcgs", "tree"]
  for row in rows:
    assert row["status"] == "ok" and row["repeats"] >= 1 and row["group"] == 1, row
    assert math.isfinite(row["ratio_vs_matching_mctx"]), row
  assert rows[0]["ratio_vs_matching_mctx"] == 1.0 and rows[1]["ratio_vs_matching_mctx"] == 10.0
  group2 = [r for r in skipped if r["cell"].split()[-1] in ("mctx-gumbel", "mcgs-gumbel")]
  assert len(group2) == 2 and all("group predicted" in r["reason"] for r in group2)
  # With room, both groups: two rounds each, every contestant in each.
  fake_clock.now = 0.0
  rows, skipped = report_selfplay.selfplay_section(plan, seed=0, budget_s=1000.0)
  assert [r["group"] for r in rows] == [1, 1, 1, 2, 2]
  assert all(2 <= r["repeats"] <= 2 * plan.repeats for r in rows)
  assert all(math.isfinite(r["ratio_vs_matching_mctx"]) for r in rows)


def test_selfplay_loop_without_its_mctx_is_skipped(fake_clock, fake_runner):
  plan = dataclasses.replace(report_plan.QUICK_PLAN,
                             selfplay_groups=(("tree-noreuse",), ("mctx", "mcgs")))
  rows, skipped = report_selfplay.selfplay_section(plan, seed=0, budget_s=1000.0)
  assert [r["contestant"] for r in rows] == ["mctx", "mcgs"]
  reason = next(r["reason"] for r in skipped if r["cell"].endswith("tree-noreuse"))
  assert reason.startswith("mctx not measured")
