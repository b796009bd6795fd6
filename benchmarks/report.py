"""The accelerator report's opening lines and its sections run in order
(the library of `mcgs-jax device-report`)."""

from __future__ import annotations

import datetime
import platform
import shlex
import tempfile
import time
from typing import Callable, Mapping, Sequence

import flax
import jax
import jaxlib
import mctx
import optax
import pgx

from mcgs_jax.benchmarks import report_phases
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import report_search
from mcgs_jax.benchmarks import report_selfplay
from mcgs_jax.benchmarks import report_training
from mcgs_jax.benchmarks import report_xla


def header_lines(title: str, argv: Sequence[str], plan: report_plan.Plan, budget_scale: float,
                 quick: bool) -> list[str]:
  """The report's opening lines: versions, device, date, command, budgets.

  Args:
    title: the device kind.
    argv: the command's arguments.
    plan: the Plan.
    budget_scale: `--budget-scale`.
    quick: `--quick`.

  Returns:
    Lines of markdown.
  """
  device = jax.devices()[0]
  budgets = ", ".join(f"{k} {v * budget_scale:.0f} s" for k, v in plan.budgets_s.items())
  now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
  return [
      f"# Device report: {title}{' (quick)' if quick else ''}",
      "",
      f"Versions: jax {jax.__version__}, jaxlib {jaxlib.__version__}, mctx {mctx.__version__}, "
      f"pgx {pgx.__version__}, flax {flax.__version__}, optax {optax.__version__}, "
      f"Python {platform.python_version()}.",
      "",
      f"Device: {device.device_kind} (platform {device.platform}), "
      f"{jax.device_count()} device(s); measured on the first.",
      "",
      f"Date: {now}.",
      "",
      "Command: `" + shlex.join(["mcgs-jax", "device-report", *argv]) + "`",
      "",
      f"Mode: {plan.label}; section budgets {budgets}; a contestant predicted to take more "
      f"than {plan.max_seconds:.0f} s to compile and call once is skipped with its cell.",
  ]


def run_sections(plan: report_plan.Plan, nets: Mapping[str, report_plan.ReportNetwork], seed: int,
                 budget_scale: float, write: Callable[[dict], None]) -> dict:
  """Runs the five sections in order, calling `write(results)` after each.

  Args:
    plan: the Plan.
    nets: label -> ReportNetwork.
    seed: parameters and games.
    budget_scale: multiplies `plan.budgets_s`.
    write: called with the results so far after every section.

  Returns:
    dict section -> rows.
  """
  budget = {k: v * budget_scale for k, v in plan.budgets_s.items()}
  compiled = {}  # section 1's compiled searches, section 6's defaults
  steps = (
      ("1. search", "search",
       lambda: report_search.search_section(plan, nets, budget["search"], compiled)),
      ("2. self-play", "selfplay",
       lambda: report_selfplay.selfplay_section(plan, seed, budget["selfplay"])),
      ("4. phases", "phases",
       lambda: report_phases.phases_section(plan, seed, budget["phases"], compiled)),
      ("5. training", "training",
       lambda: report_training.training_section(plan, nets["resnet"], budget["training"])),
      ("6. XLA options", "xla",
       lambda: report_xla.xla_section(plan, nets, seed, budget["xla"], compiled)),
      ("7. kernels", "kernels",
       lambda: report_phases.kernels_section(plan, nets, budget[
           "kernels"], tempfile.mkdtemp(prefix="device-report-traces-"), compiled)),
  )
  results = {s: [] for s in report_plan.SECTIONS}
  for title, section, run in steps:
    print(f"{title} (budget {budget[section]:.0f} s)", flush=True)
    start = time.perf_counter()
    try:
      results[section], skipped = run()
    except Exception as error:  # pylint: disable=broad-except
      # One section's failure costs that section, not the report (a lent
      # accelerator is not lent twice).
      results[section], skipped = [], [
          report_plan.skip(section, "the whole section", report_plan.failure(error))
      ]
    results["skipped"] += skipped
    if section == "search":  # section 3's search-state table
      results["memory"] = report_search.memory_rows(results["search"])
    compiles = [r["compile_s"] for r in results[section] if "compile_s" in r]
    results["device"].append(
        report_search.device_row(section,
                                 time.perf_counter() - start, compiles))
    write(results)
  return results
