"""The accelerator report's CPU smoke run (`--quick`) writes its markdown and
one CSV per section, every section with rows, finite ratios against mctx,
the versions line and the list of skipped cells. Timings are not checked."""

import csv
import dataclasses
import math

import pytest

from experiments import device_report

MEASURED = ("search", "selfplay", "memory", "device", "phases", "training")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
  out = tmp_path_factory.mktemp("device")
  device_report.main(["--quick", "--out", str(out)])
  md = list(out.glob("*.md"))
  assert len(md) == 1, md
  stem = md[0].stem
  assert stem.endswith("-quick")
  paths = device_report.report_paths(str(out), stem)
  tables = {}
  for section in device_report.SECTIONS:
    with open(paths[section]) as f:
      tables[section] = list(csv.DictReader(f))
  return dict(out=out, paths=paths, text=md[0].read_text(), tables=tables)


def test_files_are_flat_and_few(report):
  files = sorted(p.name for p in report["out"].iterdir())
  assert all(p.is_file() for p in report["out"].iterdir())
  assert len(files) <= 8, files
  assert set(files) == {p.split("/")[-1] for p in report["paths"].values()}


def test_every_section_has_rows(report):
  for section in MEASURED:
    assert report["tables"][section], section


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


def test_selfplay_ratios_are_positive_and_finite(report):
  rows = report["tables"]["selfplay"]
  assert any(r["contestant"].startswith("mctx") for r in rows)
  assert any(not r["contestant"].startswith("mctx") for r in rows)
  for row in rows:
    assert row["status"] == "ok", row
    ratio = float(row["ratio_vs_matching_mctx"])
    assert math.isfinite(ratio) and ratio > 0, row
    assert float(row["positions_per_s"]) > 0


def test_memory_phases_and_training_rows(report):
  tables = report["tables"]
  assert all(float(r["state_bytes_per_game"]) > 0 for r in tables["memory"])
  assert [r["after_section"] for r in tables["device"]] == [
      "search", "selfplay", "phases", "training"]
  phases = [r["row"] for r in tables["phases"]]
  assert phases[0] == "network+env only" and "phase step" in phases
  assert all(float(r["examples_per_s"]) > 0 for r in tables["training"])


def test_markdown_header_and_skipped_list(report):
  text = report["text"]
  versions = next(line for line in text.splitlines() if line.startswith("Versions:"))
  for package in ("jax", "jaxlib", "mctx", "pgx"):
    assert f"{package} " in versions
  assert "Command: `python -m experiments.device_report --quick" in text
  for heading in ("## 1. Search", "## 2. Self-play", "## 3. Memory", "## 4. Phase",
                  "## 5. Training", "## Skipped"):
    assert heading in text
  # The quick plan leaves cells out, and every one is listed.
  skipped = report["tables"]["skipped"]
  assert skipped
  section = text.split("## Skipped", 1)[1]
  for row in skipped:
    assert f"| {row['section']} | {row['cell']} | {row['reason']} |" in section


def test_device_slug():
  assert device_report.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
  assert device_report.device_slug("cpu") == "cpu"


def test_cells_start_with_the_diagonal():
  cells = device_report.ordered_cells((256, 1024, 4096), (64, 200, 800))
  assert cells[:3] == [(256, 64), (1024, 200), (4096, 800)]
  assert sorted(cells) == sorted((b, s) for b in (256, 1024, 4096) for s in (64, 200, 800))


def test_a_spent_budget_skips_every_cell_without_compiling():
  plan = dataclasses.replace(device_report.QUICK_PLAN, batches=(4, 8), sims=(4,))
  nets = device_report.make_networks(plan, seed=0)
  rows, skipped = device_report.search_section(plan, nets, budget_s=0.0)
  assert rows == []
  cells = len(plan.search_contestants) * 2 * len(device_report.SEARCH_CONTESTANTS)
  assert len(skipped) == cells
  assert any("left of the budget" in r["reason"] for r in skipped)
  rows, skipped = device_report.selfplay_section(plan, seed=0, budget_s=0.0)
  assert rows == [] and any("left of the budget" in r["reason"] for r in skipped)
  rows, skipped = device_report.training_section(plan, nets["resnet"], budget_s=0.0)
  assert rows == [] and len(skipped) == len(plan.training_batches)
