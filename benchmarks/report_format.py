"""The accelerator report's markdown (one table per section, the skipped cells listed)
and its CSV files.
"""

import math
import os
from typing import Mapping, Sequence

from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import selfplay_speed


def _table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> str:
  """`rows` as markdown, `columns` as (header, field, format spec)."""
  if not rows:
    return "(no rows)"
  table = [{
      header: measure.format_number(r.get(field, math.nan), spec) for header, field, spec in columns
  } for r in rows]
  return measure.markdown_table(table, [header for header, _, _ in columns])


SEARCH_COLUMNS = (("network", "network", ""), ("B", "batch", "d"), ("S", "sims", "d"),
                  ("contestant", "contestant", ""), ("ms/call", "median_ms", ".2f"),
                  ("sims/s", "sims_per_s", ",.0f"), ("ms / mctx ms", "ratio_vs_mctx", ".2f"),
                  ("compile s", "compile_s", ".1f"), ("repeats", "repeats",
                                                      "d"), ("nodes/game", "nodes_per_game", ".1f"))
SELFPLAY_COLUMNS = (("loop", "contestant", ""), ("group", "group",
                                                 "d"), ("positions/s", "positions_per_s", ",.0f"),
                    ("vs matching mctx", "ratio_vs_matching_mctx",
                     ".2f"), ("s/call", "s_per_call", ".3f"), ("compile s", "compile_s", ".1f"),
                    ("nn evals/move", "nn_evals_per_move",
                     ".1f"), ("TT hits/move", "transposition_hits_per_move",
                              ".1f"), ("nodes kept/move", "nodes_kept_per_move", ".1f"),
                    ("repeats", "repeats", "d"), ("status", "status", ""))
MEMORY_COLUMNS = (("network", "network", ""), ("B", "batch", "d"), ("S", "sims", "d"),
                  ("contestant", "contestant", ""), ("nodes/game", "nodes_per_game", ".1f"),
                  ("state KiB/game", "state_bytes_per_game",
                   ",.1f"), ("state MiB (B games)", "state_mib_all_games",
                             ",.2f"), ("XLA temp MiB", "xla_temp_mib",
                                       ",.2f"), ("XLA output MiB", "xla_output_mib", ",.2f"))
DEVICE_COLUMNS = (("after section", "after_section", ""), ("section s", "section_s", ".0f"),
                  ("compiles", "compiles", ""), ("compile s total", "compile_s_total", ".1f"),
                  ("compile s max", "compile_s_max", ".1f"), ("bytes in use", "bytes_in_use", ",d"),
                  ("peak bytes in use", "peak_bytes_in_use", ",d"), ("bytes limit", "bytes_limit",
                                                                     ",d"))
PHASE_COLUMNS = (("row", "row", ""), ("backup", "backup", ""), ("ms", "median_ms", ".2f"),
                 ("ms per step", "per_step_ms", ".3f"), ("vs network", "vs_network", ".2f"),
                 ("share of step", "share_of_step", ".0%"))
TRAINING_COLUMNS = (("network", "network", ""), ("batch", "batch", "d"),
                    ("ms/step", "median_ms", ".2f"), ("examples/s", "examples_per_s", ",.0f"),
                    ("compile s", "compile_s", ".1f"), ("repeats", "repeats", "d"), ("status",
                                                                                     "status", ""))
XLA_COLUMNS = (("kind", "kind", ""), ("network", "network", ""), ("B", "batch", "d"),
               ("S", "sims", "d"), ("contestant", "contestant", ""), ("variant", "variant", ""),
               ("median", "median", ",.2f"), ("min", "min", ",.2f"), ("max", "max", ",.2f"),
               ("unit", "unit", ""), ("vs default", "ratio_vs_default", ".3f"),
               ("compile s", "compile_s", ".1f"), ("repeats", "repeats", "d"))
KERNEL_COLUMNS = (("row", "row", ""), ("variant", "variant", ""), ("B", "batch", "d"),
                  ("S", "sims", "d"), ("steps", "steps", "d"), ("kernels/step", "kernels_per_step",
                                                                ".1f"), ("copies/step",
                                                                         "copies_per_step", ".2f"),
                  ("memsets/step", "memsets_per_step",
                   ".2f"), ("device ms/step", "device_ms_per_step",
                            ".4f"), ("accelerator planes", "accelerator_planes", "d"))
SKIPPED_COLUMNS = (("section", "section", ""), ("cell", "cell", ""), ("reason", "reason", ""))


def _kib_rows(rows: Sequence[dict]) -> list[dict]:
  return [{**r, "state_bytes_per_game": r["state_bytes_per_game"] / 1024} for r in rows]


def format_report(header: Sequence[str], plan: report_plan.Plan,
                  nets: Mapping[str, report_plan.ReportNetwork], results: Mapping[str,
                                                                                  list]) -> str:
  """The report's markdown.

  Args:
    header: its opening lines (versions, device, date, command).
    plan: the Plan measured.
    nets: label -> ReportNetwork.
    results: section -> rows (sections not run yet: absent or empty).

  Returns:
    The markdown text.
  """
  get = lambda section: results.get(section, [])
  descriptions = ", ".join(f"{n.label} = {n.description}" for n in nets.values())
  grid = "; ".join(f"{label} B {{{', '.join(map(str, plan.search_batches(label)))}}} x "
                   f"S {{{', '.join(map(str, plan.sims))}}}" for label in plan.search_contestants)
  groups = "; ".join(f"{i + 1}: " + ", ".join(f"`{n}`"
                                              for n in group)
                     for i, group in enumerate(plan.selfplay_groups))
  parts = list(header) + [
      "",
      "## 1. Search time per call",
      "",
      f"Connect-4 from the empty board; networks {descriptions}; grid {grid}. "
      "A cell is measured whole (all its contestants) or skipped whole. `mctx-muzero` / "
      "`mctx-gumbel`: `mctx.muzero_policy` / `mctx.gumbel_muzero_policy` on pgx's "
      "`connect_four` (mctx's defaults); `mcgs-*` / `tree-*`: `mcgs_jax.search` with that "
      "backup and `root_policy` puct / gumbel (SearchConfig defaults). ms/call: median of "
      "the timed calls after an ahead-of-time compile; ms / mctx ms: over the matching mctx "
      "policy in the same cell (below 1: faster than mctx).",
      "",
      _table(get("search"), SEARCH_COLUMNS),
      "",
      "## 2. Self-play positions per second",
      "",
      f"`mcgs_jax.experiments.bench_selfplay`'s loops with {nets['mlp'].description}: "
      f"B={plan.selfplay_batch} games, S={plan.selfplay_sims} simulations per move, "
      f"{plan.selfplay_moves} moves per jitted call. Groups ({groups}) are timed whole in "
      "interleaved rounds (every contestant, mctx included, in every round) or skipped "
      "whole. vs matching mctx: positions/s over those of `mctx` (PUCT loops) or "
      "`mctx-gumbel` (Gumbel loops); above 1: faster than mctx.",
      "",
      _table(get("selfplay"), SELFPLAY_COLUMNS),
      "",
      "## 3. Memory and compile time",
      "",
      "Search state one game holds after a search of S simulations: our graph's node, edge "
      "and hash-table arrays (`mcgs_jax.bytes_per_game`, allocated for the node capacity "
      "S + 1), mctx's search tree (all its arrays, embeddings included). XLA temp / output: "
      "the compiled search's buffers for all B games (`Compiled.memory_analysis()`).",
      "",
      _table(_kib_rows(get("memory")), MEMORY_COLUMNS),
      "",
      "Device memory after each section (`Device.memory_stats()`; n/a where the device "
      "reports none, as on CPU) and the section's compile seconds.",
      "",
      _table(get("device"), DEVICE_COLUMNS),
      "",
      "## 4. Phase profile",
      "",
      "`mcgs_jax.benchmarks.phases.profile`: the full search, then each phase of one "
      "simulation step jitted on its own on the graph half-way through a search. vs network: "
      "over the network+env-only row (phases x S); share of step: over the `phase step` row.",
      "",
      _table(get("phases"), PHASE_COLUMNS),
      "",
      "## 5. Training throughput",
      "",
      "`mcgs_jax.learning.trainer.update` (one Adam step with TrainConfig's defaults, AlphaZero loss, "
      "BatchNorm in training mode) on random Connect-4 examples; examples/s = batch / "
      "median step time.",
      "",
      _table(get("training"), TRAINING_COLUMNS),
      "",
      "## 6. XLA options side by side",
      "",
      "Each contestant compiled once per variant in this process (`compile(compiler_options="
      "...)`) and timed in interleaved rounds: `default` (XLA's defaults), " +
      ", ".join(f"`{v}` ({', '.join(f'{k}={o}' for k, o in report_plan.XLA_VARIANTS[v].items())})"
                for v in plan.xla_variants) +
      ". Search rows in ms per call (below 1 vs default: faster), self-play rows in "
      "positions per second (above 1: faster); min and max are the spread of the timed calls.",
      "",
      _table(get("xla"), XLA_COLUMNS),
      "",
      "## 7. Kernels per simulation step",
      "",
      "Device events in one `jax.profiler` trace per row (after a warm-up call): kernels, "
      "memory copies (a dynamic while loop copies its predicate to the host each iteration) "
      "and memsets on the accelerator's streams, divided by the call's steps (S for a whole "
      "search or the network+env floor, 1 for a phase of one step, "
      "`mcgs_jax.benchmarks.phases.phase_calls`). On a CPU the trace has no accelerator plane "
      "and the counts are empty.",
      "",
      _table(get("kernels"), KERNEL_COLUMNS),
      "",
      "## Skipped",
      "",
      ("Cells not measured, and why (budget, failures, and what the plan leaves out)."
       if get("skipped") else "Nothing was skipped."),
      "",
  ]
  if get("skipped"):
    parts += [_table(get("skipped"), SKIPPED_COLUMNS), ""]
  return "\n".join(parts)


SECTION_FIELDS = {
    "search": report_plan.SEARCH_FIELDS,
    "memory": report_plan.MEMORY_FIELDS,
    "device": report_plan.DEVICE_FIELDS,
    "phases": report_plan.PHASE_FIELDS,
    "training": report_plan.TRAINING_FIELDS,
    "xla": report_plan.XLA_FIELDS,
    "kernels": report_plan.KERNEL_FIELDS,
    "skipped": report_plan.SKIPPED_FIELDS
}


def write_report(paths: Mapping[str, str], markdown: str, results: Mapping[str, list]):
  """Writes the markdown and every section's CSV.

  Args:
    paths: from `report_paths`.
    markdown: `format_report`'s text.
    results: section -> rows.
  """
  os.makedirs(os.path.dirname(paths["md"]) or ".", exist_ok=True)
  with open(paths["md"], "w") as f:
    f.write(markdown)
  selfplay_fields = tuple(selfplay_speed.FIELDS) + ("group", "ratio_vs_matching_mctx")
  for section in report_plan.SECTIONS:
    fields = selfplay_fields if section == "selfplay" else SECTION_FIELDS[section]
    measure.write_csv(paths[section], results.get(section, []), fields)
