"""The accelerator report: search, self-play, memory, phase and training
speed on whatever device JAX sees, in one process.

  python -m experiments.device_report                   # the full report (~8 min on an H100)
  python -m experiments.device_report --quick           # CPU smoke run: tiny shapes, < 3 min
  python -m experiments.device_report --out results/device --budget-scale 2

Writes `<out>/<device>.md` (default out: docs/device; device:
`jax.devices()[0].device_kind` slugified, e.g. `cpu`, `nvidia-h100-80gb-hbm3`,
with `-quick` appended under `--quick`) and one CSV per section beside it:
`<device>-search.csv`, `-selfplay.csv`, `-memory.csv`, `-device.csv`,
`-phases.csv`, `-training.csv` and `-skipped.csv` (8 flat files). The files
are rewritten after every section, so a run cut short keeps what it
measured.

Sections (Connect-4 from the empty board throughout):
  1. search    ms per call of `mcgs_jax.search` (backups mcgs and tree; root
               policies puct and gumbel) against `mctx.muzero_policy` and
               `mctx.gumbel_muzero_policy` on pgx's `connect_four`, with the
               MLP of bench_search and a ResNet 6x64, over a B x S grid
               (bench_search's contestants). Each cell is compiled ahead of
               time (`benchmarks.compile_and_time`), then timed (median).
  2. selfplay  positions per second of `learning.selfplay.play` (mcgs / tree,
               PUCT / Gumbel, graph reuse on / off) against the pgx-style mctx
               loops: bench_selfplay's contestants, timed by its `bench_rows`.
  3. memory    the search state one game holds (our graph arrays,
               `mcgs_jax.bytes_per_game`; mctx's search tree), the compiled
               search's XLA buffers, and the device's memory in use and peak
               (`Device.memory_stats()`, n/a on CPU) and compile seconds after
               each section.
  4. phases    `bench_phases.profile` of one large search: selection,
               transition, lookup, evaluation, expansion+backup per step.
  5. training  examples per second of `learning.trainer.update` on the
               ResNet (TrainConfig's default Adam settings).

The full plan (`FULL_PLAN`) is sized for an H100-class GPU. Where the device
is a CPU, the full report runs `CPU_PLAN` instead (smaller B, the ResNet at
one small B, self-play at bench_selfplay's default B=256; about 10 minutes
on a loaded 2-core machine); the report's "Mode" line says which plan ran.

Every section has a time budget (`Plan.budgets_s`, times `--budget-scale`).
What is compared is measured together or not at all:
  - search: a (network, B, S) cell is measured whole (all its contestants,
    each mctx policy before ours) or skipped whole, when its predicted
    seconds (compile, first call and timed calls of every contestant, from
    the network's smaller cells) exceed what is left of the network's share
    of the budget, or one contestant's predicted compile and first call
    exceed `--max-seconds`. Once started, a cell runs to its end; one of ours
    whose matching mctx policy got no timed call in the cell is skipped.
  - selfplay: a group is timed whole (every contestant, mctx included, gets
    at least one timed call: the first interleaved round always runs whole)
    or skipped whole, when the groups before it predict that it would overrun
    the budget; one of ours whose matching mctx loop is neither in its group
    nor measured earlier is skipped.
Skipped cells, and the cells a `--quick` plan leaves out, are printed and
listed in the report's "Skipped" section.
"""

import argparse
import dataclasses
import datetime
import functools
import itertools
import math
import os
import platform
import re
import shlex
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Mapping, Sequence

import flax
import jax
import jax.numpy as jnp
import jaxlib
import mctx
import optax
import pgx

import envs
import networks
from experiments import bench_phases
from experiments import bench_search
from experiments import bench_selfplay
from learning import benchmarks
from learning import config as config_lib
from learning import example as example_lib
from learning import trainer
from learning import cli
from networks import MLP, MLPEval, init_params

NUM_ACTIONS = 7
OBSERVATION_SHAPE = (6, 7, 2)
SECTIONS = ("search", "selfplay", "memory", "device", "phases", "training", "xla", "kernels",
            "skipped")
# Search contestants: name -> (search, root policy). Each policy's mctx
# contestant comes first, so ours can report their time relative to it.
SEARCH_CONTESTANTS = {
    "mctx-muzero": ("mctx", "puct"),
    "mcgs-puct": ("mcgs", "puct"),
    "tree-puct": ("tree", "puct"),
    "mctx-gumbel": ("mctx", "gumbel"),
    "mcgs-gumbel": ("mcgs", "gumbel"),
    "tree-gumbel": ("tree", "gumbel"),
}
MCTX_OF_POLICY = {"puct": "mctx-muzero", "gumbel": "mctx-gumbel"}
PHASE_BACKUPS = ("mcgs", "tree")
# XLA options compared side by side with the defaults (section 6), each
# passed to the compile of one executable (`compile(compiler_options=...)`),
# so every variant runs in the same process, interleaved with the default.
#   command-buffer-while: XLA's default command-buffer (CUDA graph) types
#     plus WHILE: a while loop, the search's simulation and descent loops,
#     is captured as a graph with conditional nodes instead of launching its
#     body's kernels one by one and copying its predicate to the host every
#     iteration (CUDA >= 12.3). The list is spelled out: compile options
#     take no "+WHILE".
#   unroll-2: XLA's double-buffer unrolling of while loops (two iterations
#     per trip, half the predicate round trips of a loop it can unroll).
XLA_VARIANTS = {
    "default": {},
    "command-buffer-while": {
        "xla_gpu_enable_command_buffer":
            "FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,DYNAMIC_SLICE_FUSION,WHILE",
        "xla_gpu_graph_min_graph_size": 1},
    "unroll-2": {"xla_gpu_enable_while_loop_unrolling": "WHILE_LOOP_UNROLLING_DOUBLE_BUFFER"},
}

SEARCH_FIELDS = ("network", "batch", "sims", "contestant", "search", "policy", "status",
                 "compile_s", "warmup_s", "repeats", "median_ms", "sims_per_s", "ratio_vs_mctx",
                 "nodes_per_game", "nn_evals_per_game", "state_bytes_per_game",
                 "xla_temp_bytes", "xla_output_bytes")
MEMORY_FIELDS = ("network", "batch", "sims", "contestant", "nodes_per_game",
                 "state_bytes_per_game", "state_mib_all_games", "xla_temp_mib",
                 "xla_output_mib")
DEVICE_FIELDS = ("after_section", "section_s", "compiles", "compile_s_total", "compile_s_max",
                 "bytes_in_use", "peak_bytes_in_use", "bytes_limit")
PHASE_FIELDS = ("row", "backup", "batch", "sims", "median_ms", "per_step_ms", "vs_network",
                "share_of_step")
TRAINING_FIELDS = ("network", "batch", "status", "compile_s", "repeats", "median_ms",
                   "examples_per_s")
XLA_FIELDS = ("kind", "network", "batch", "sims", "contestant", "variant", "status",
              "compile_s", "repeats", "median", "min", "max", "unit", "ratio_vs_default")
KERNEL_FIELDS = ("row", "variant", "batch", "sims", "steps", "kernels_per_step",
                 "copies_per_step", "memsets_per_step", "device_ms_per_step", "kernels_total",
                 "accelerator_planes")
SKIPPED_FIELDS = ("section", "cell", "reason")


@dataclasses.dataclass(frozen=True)
class Plan:
  """What a report measures, and how long each section may take.

  Attributes:
    label: what the report's "Mode" line calls the plan.
    batches: B of the search grid.
    sims: S of the search grid.
    mlp_hidden: hidden sizes of the MLP (search, self-play and phases).
    resnet_blocks: residual blocks of the ResNet (search and training).
    resnet_channels: its channels.
    search_contestants: network label ("mlp", "resnet") -> the
      `SEARCH_CONTESTANTS` names run with it.
    selfplay_batch: games B of the self-play loops.
    selfplay_sims: simulations per move S.
    selfplay_moves: moves per jitted call.
    selfplay_groups: bench_selfplay contestant names, in groups timed
      together (interleaved rounds); a group is skipped whole when the
      budget left cannot fit it.
    selfplay_rounds: bench_selfplay's interleaved rounds.
    phase_batch: B of the phase profile.
    phase_sims: S of the phase profile.
    phase_backups: backups profiled, in order.
    training_batches: batch sizes of the update step.
    repeats: timed calls per cell at most.
    max_seconds: a cell predicted to take longer is skipped (search: one
      contestant's compile and first call); also bounds each cell's timed
      calls (self-play: a contestant's timed calls over all rounds).
    budgets_s: section -> seconds ("search", "selfplay", "phases",
      "training", "xla", "kernels").
    network_batches: network label -> B of its search grid, where it
      differs from `batches` (`search_batches`).
    contestant_cells: search contestant -> the only (B, S) cells it is
      measured in (`runs_in`); a contestant not listed runs in every cell.
    search_shares: network label -> its share of the search budget (equal
      shares where empty; time a network leaves unused passes to the next).
    xla_variants: `XLA_VARIANTS` names measured beside "default" (section
      6); empty: no section 6.
    xla_search_cells: (network label, B, S) search cells of section 6.
    xla_search_contestants: their contestants.
    xla_selfplay_loops: bench_selfplay loops of section 6 (at the
      self-play section's B, S and moves).
    xla_rounds: interleaved timing rounds over the variants.
    kernel_batch, kernel_sims: B and S of section 7's traced searches and
      phases (MLP); 0: no section 7.
    kernel_contestants: the searches section 7 traces.
  """
  label: str
  batches: tuple[int, ...]
  sims: tuple[int, ...]
  mlp_hidden: tuple[int, ...]
  resnet_blocks: int
  resnet_channels: int
  search_contestants: Mapping[str, tuple[str, ...]]
  selfplay_batch: int
  selfplay_sims: int
  selfplay_moves: int
  selfplay_groups: tuple[tuple[str, ...], ...]
  selfplay_rounds: int
  phase_batch: int
  phase_sims: int
  phase_backups: tuple[str, ...]
  training_batches: tuple[int, ...]
  repeats: int
  max_seconds: float
  budgets_s: Mapping[str, float]
  network_batches: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
  contestant_cells: Mapping[str, tuple[tuple[int, int], ...]] = dataclasses.field(
      default_factory=dict)
  search_shares: Mapping[str, float] = dataclasses.field(default_factory=dict)
  xla_variants: tuple[str, ...] = ()
  xla_search_cells: tuple[tuple[str, int, int], ...] = ()
  xla_search_contestants: tuple[str, ...] = ()
  xla_selfplay_loops: tuple[str, ...] = ()
  xla_rounds: int = 2
  kernel_batch: int = 0
  kernel_sims: int = 0
  kernel_contestants: tuple[str, ...] = ("mctx-muzero", "mcgs-puct")

  def search_batches(self, label: str) -> tuple[int, ...]:
    """B of network `label`'s search grid."""
    return tuple(self.network_batches.get(label, self.batches))

  def runs_in(self, name: str, batch: int, sims: int) -> bool:
    """Whether search contestant `name` is measured in cell (B, S): in
    every cell unless `contestant_cells` lists its cells."""
    return name not in self.contestant_cells or (batch, sims) in self.contestant_cells[name]


# The report of one lent accelerator session (`experiments.device_session`,
# `make device-session`), planned for about 7.5 of its minutes on an H100-class
# GPU: 413 s of section budgets plus imports, sized from the first session
# (docs/device/nvidia-h200.md, 2026-11-28: compiles 2-12 s; search 158 s for
# 10 cells, one self-play group of four loops 48 s, the XLA section 70 s).
# The plan's size is set by the number of executables: the MLP's whole 3 x 3
# grid with PUCT (mctx's and ours) in every cell and the Gumbel roots on its
# diagonal, the ResNet at B=1024 with what is left of the search budget, both
# self-play groups at B=1024, the phase profile and training at one size, the
# XLA variants on one search cell and the Gumbel self-play loop, and the
# kernel counts on the cell the phases use (their executables reused).
_GUMBEL_DIAGONAL = ((256, 64), (1024, 200), (4096, 800))
FULL_PLAN = Plan(
    label="full",
    batches=(256, 1024, 4096), sims=(64, 200, 800), mlp_hidden=bench_search.HIDDEN_SIZES,
    resnet_blocks=6, resnet_channels=64,
    search_contestants={"mlp": ("mctx-muzero", "mcgs-puct", "mctx-gumbel", "mcgs-gumbel"),
                        "resnet": ("mctx-muzero", "mcgs-puct", "mctx-gumbel", "mcgs-gumbel")},
    network_batches={"resnet": (1024,)},
    contestant_cells={"mctx-gumbel": _GUMBEL_DIAGONAL, "mcgs-gumbel": _GUMBEL_DIAGONAL},
    search_shares={"mlp": 0.88, "resnet": 0.12},
    selfplay_batch=1024, selfplay_sims=64, selfplay_moves=8,
    selfplay_groups=(("mctx", "mcgs", "mcgs-noreuse", "tree"),
                     ("mctx-gumbel", "mcgs-gumbel", "mcgs-gumbel-noreuse", "tree-gumbel")),
    selfplay_rounds=2, phase_batch=1024, phase_sims=200, phase_backups=("mcgs",),
    training_batches=(1024,), repeats=2, max_seconds=30.0,
    budgets_s={"search": 170.0, "selfplay": 105.0, "phases": 20.0, "training": 8.0,
               "xla": 75.0, "kernels": 35.0},
    xla_variants=("command-buffer-while", "unroll-2"), xla_search_cells=(("mlp", 1024, 200),),
    xla_search_contestants=("mctx-muzero", "mcgs-puct", "mctx-gumbel", "mcgs-gumbel"),
    xla_selfplay_loops=("mcgs-gumbel",), kernel_batch=1024, kernel_sims=200)
# The full report where the device is a CPU (`select_plan`): FULL_PLAN's
# shapes take seconds per call there, and a compile ~10-20 s (search) or
# ~20-45 s (self-play) on a loaded 2-core machine, so one search cell of six
# contestants costs about two minutes. Sized for ~9-10 minutes there (555 s of
# section budgets, plus imports and the overrun of a cell or group once
# started): the search grid at B 64 and 256 for the MLP and B=32 for the
# ResNet (the budget guard skips the cells that do not fit: on a loaded
# 2-core machine the first cell of each network), self-play at
# bench_selfplay's default B=256 in one group with both mctx loops (the
# no-reuse loops left out), phases and training at B=256 (training 1024 where
# it fits).
CPU_PLAN = Plan(
    label="full (CPU plan)",
    batches=(64, 256), sims=(64, 200, 800), mlp_hidden=bench_search.HIDDEN_SIZES,
    resnet_blocks=6, resnet_channels=64,
    search_contestants={"mlp": tuple(SEARCH_CONTESTANTS), "resnet": tuple(SEARCH_CONTESTANTS)},
    network_batches={"resnet": (32,)},
    selfplay_batch=bench_selfplay.FULL["batch"], selfplay_sims=bench_selfplay.FULL["simulations"],
    selfplay_moves=bench_selfplay.FULL["moves"],
    selfplay_groups=(("mctx", "mcgs", "tree", "mctx-gumbel", "mcgs-gumbel"),),
    selfplay_rounds=2, phase_batch=256, phase_sims=800, phase_backups=PHASE_BACKUPS,
    training_batches=(256, 1024), repeats=3, max_seconds=30.0,
    budgets_s={"search": 220.0, "selfplay": 230.0, "phases": 60.0, "training": 45.0,
               "xla": 0.0, "kernels": 0.0})
# The CPU smoke run: one tiny cell per section; both mctx policies, both
# backups, both root policies and both networks once each, in few compiles
# (they are most of its time).
QUICK_PLAN = Plan(
    label="quick (CPU smoke run, tiny shapes)",
    batches=(8,), sims=(16,), mlp_hidden=(16, 16), resnet_blocks=1, resnet_channels=8,
    search_contestants={"mlp": ("mctx-gumbel", "tree-gumbel"),
                        "resnet": ("mctx-muzero", "mcgs-puct")},
    selfplay_batch=8, selfplay_sims=8, selfplay_moves=2,
    selfplay_groups=(("mctx-gumbel", "mcgs-gumbel-noreuse"),),
    selfplay_rounds=1, phase_batch=8, phase_sims=16, phase_backups=("mcgs",),
    training_batches=(32,), repeats=2, max_seconds=60.0,
    budgets_s={"search": 120.0, "selfplay": 90.0, "phases": 45.0, "training": 30.0,
               "xla": 60.0, "kernels": 30.0},
    xla_variants=("command-buffer-while",), xla_search_cells=(("mlp", 8, 16),),
    xla_search_contestants=("mctx-gumbel", "tree-gumbel"),
    xla_selfplay_loops=("mcgs-gumbel-noreuse",), xla_rounds=1, kernel_batch=8, kernel_sims=16,
    kernel_contestants=("mctx-gumbel", "tree-gumbel"))


def select_plan(quick: bool, platform_name: str) -> Plan:
  """The plan a run measures: `QUICK_PLAN` with --quick, else `CPU_PLAN`
  where the device's platform is "cpu" and `FULL_PLAN` elsewhere.

  Args:
    quick: `--quick`.
    platform_name: `jax.devices()[0].platform`, e.g. "cpu", "gpu", "tpu".

  Returns:
    The Plan.
  """
  if quick:
    return QUICK_PLAN
  return CPU_PLAN if platform_name == "cpu" else FULL_PLAN


def clock() -> float:
  """The sections' clock (`time.perf_counter`; the tests replace it)."""
  return time.perf_counter()


@dataclasses.dataclass(frozen=True)
class ReportNetwork:
  """A network the report searches or trains with.

  Attributes:
    label: "mlp" or "resnet" (the `Plan.search_contestants` key).
    description: e.g. "MLP(128, 128)", "ResNet 6x64".
    module: the flax module.
    eval_fn: the search's eval_fn.
    params: its variables.
  """
  label: str
  description: str
  module: Any
  eval_fn: Any
  params: Any


def device_slug(device_kind: str) -> str:
  """A file name for a device kind: lower case, runs of other characters
  than letters and digits become one hyphen.

  Args:
    device_kind: e.g. "NVIDIA H100 80GB HBM3" or "cpu".

  Returns:
    e.g. "nvidia-h100-80gb-hbm3" or "cpu".
  """
  return re.sub(r"[^a-z0-9]+", "-", device_kind.lower()).strip("-") or "device"


def report_paths(out_dir: str, stem: str) -> dict[str, str]:
  """Where a report writes: "md" and one CSV per section.

  Args:
    out_dir: the folder.
    stem: the file stem (the device slug, `-quick` with --quick).

  Returns:
    dict "md" | section -> path.
  """
  paths = {"md": os.path.join(out_dir, f"{stem}.md")}
  paths.update({s: os.path.join(out_dir, f"{stem}-{s}.csv") for s in SECTIONS})
  return paths


def make_networks(plan: Plan, seed: int) -> dict[str, ReportNetwork]:
  """The MLP (bench_search's, `MLPEval`) and the ResNet of a plan.

  Args:
    plan: the Plan.
    seed: the initialisation seed.

  Returns:
    dict label -> ReportNetwork.
  """
  rng = jax.random.key(seed)
  mlp = MLP(num_actions=NUM_ACTIONS, hidden_sizes=tuple(plan.mlp_hidden))
  resnet = networks.make("resnet", envs.make("connect4"), num_blocks=plan.resnet_blocks,
                         channels=plan.resnet_channels)
  example = jnp.zeros((1,) + OBSERVATION_SHAPE)
  return {
      "mlp": ReportNetwork("mlp", f"MLP{tuple(plan.mlp_hidden)}", mlp, MLPEval(mlp),
                           init_params(mlp, rng, example)),
      "resnet": ReportNetwork("resnet", f"ResNet {plan.resnet_blocks}x{plan.resnet_channels}",
                              resnet, networks.NetworkEval(resnet),
                              networks.init(resnet, rng, example)),
  }


def device_memory() -> dict:
  """The first device's memory counters, "n/a" where it has none (CPU).

  Returns:
    dict bytes_in_use, peak_bytes_in_use, bytes_limit.
  """
  try:
    stats = jax.devices()[0].memory_stats() or {}
  except Exception:  # pylint: disable=broad-except
    stats = {}
  return {k: stats.get(k, "n/a") for k in ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")}


def ordered_cells(batches: Sequence[int], sims: Sequence[int]) -> list[tuple[int, int]]:
  """The B x S grid in the order it is measured: the diagonal first (small,
  medium, large), then the rest from the smallest B * S up, so a budget that
  runs out still leaves a spread of sizes.

  Args:
    batches: B values, ascending.
    sims: S values, ascending.

  Returns:
    list of (B, S).
  """
  diagonal = set(zip(batches, sims))
  return sorted(itertools.product(batches, sims),
                key=lambda c: (c not in diagonal, c[0] * c[1], c[0]))


def _skip(section: str, cell: str, reason: str) -> dict:
  print(f"  skipped {section}: {cell}: {reason}", flush=True)
  return dict(section=section, cell=cell, reason=reason)


def _failure(error: Exception) -> str:
  lines = str(error).strip().splitlines()
  return f"failed: {type(error).__name__}: {lines[0][:160] if lines else ''}"


def _xla_sizes(compiled: Any) -> tuple[float, float]:
  """(temp bytes, output bytes) of a compiled executable, NaN if unknown."""
  try:
    analysis = compiled.memory_analysis()
    return float(analysis.temp_size_in_bytes), float(analysis.output_size_in_bytes)
  except Exception:  # pylint: disable=broad-except
    return math.nan, math.nan


def search_contestant(name: str, net: ReportNetwork, batch: int,
                      sims: int) -> bench_search.Contestant:
  """bench_search's contestant for a `SEARCH_CONTESTANTS` name.

  Args:
    name: e.g. "mctx-gumbel", "tree-puct".
    net: the network.
    batch: B.
    sims: S.

  Returns:
    bench_search.Contestant.
  """
  search, policy = SEARCH_CONTESTANTS[name]
  if search == "mctx":
    return bench_search.mctx_contestant(
        net.module, batch, sims, pgx.make("connect_four"),
        policy="muzero" if policy == "puct" else "gumbel_muzero", eval_fn=net.eval_fn)
  return bench_search.mcgs_contestant(net.module, search, batch, sims, root_policy=policy,
                                      eval_fn=net.eval_fn)


def search_cell(name: str, net: ReportNetwork, batch: int, sims: int, repeats: int,
                budget_s: float, cache: dict | None = None) -> dict:
  """Compiles and times one search contestant in one cell.

  Args:
    name: a `SEARCH_CONTESTANTS` name.
    net: the network.
    batch: B.
    sims: S.
    repeats: timed calls at most.
    budget_s: the timed calls stop once they have used this long.
    cache: where given, (network label, B, S, name) -> (contestant, its
      compiled search, compile seconds) is stored in it (section 6 reuses
      them as its "default" variant).

  Returns:
    The row (`SEARCH_FIELDS`; ratio_vs_mctx still NaN).
  """
  search, policy = SEARCH_CONTESTANTS[name]
  row = dict(network=net.label, batch=batch, sims=sims, contestant=name, search=search,
             policy=policy, status="ok", compile_s=math.nan, warmup_s=math.nan, repeats=0,
             median_ms=math.nan, sims_per_s=math.nan, ratio_vs_mctx=math.nan,
             nodes_per_game=math.nan, nn_evals_per_game=math.nan,
             state_bytes_per_game=math.nan, xla_temp_bytes=math.nan,
             xla_output_bytes=math.nan)
  contestant = search_contestant(name, net, batch, sims)
  timing = benchmarks.compile_and_time(contestant.search,
                                     (net.params, jax.random.key(0), contestant.root),
                                     repeats, budget_s)
  row.update(compile_s=timing.compile_s, warmup_s=timing.compile_s + timing.first_call_s)
  if cache is not None:
    cache[(net.label, batch, sims, name)] = (contestant, timing.compiled, timing.compile_s)
  if not timing.times:
    row["status"] = f"skipped (first call {timing.first_call_s:.0f} s over the budget)"
    return row
  seconds = statistics.median(timing.times)
  nodes, evals, state_bytes = contestant.metrics(timing.output)
  temp_bytes, output_bytes = _xla_sizes(timing.compiled)
  row.update(repeats=len(timing.times), median_ms=1e3 * seconds,
             sims_per_s=batch * sims / seconds, nodes_per_game=nodes, nn_evals_per_game=evals,
             state_bytes_per_game=state_bytes, xla_temp_bytes=temp_bytes,
             xla_output_bytes=output_bytes)
  return row


def with_search_ratios(rows: list[dict]) -> list[dict]:
  """The rows with `ratio_vs_mctx`: ms over the ms of the matching mctx
  policy (`MCTX_OF_POLICY`) in the same network and cell; NaN without one.

  Args:
    rows: search rows.

  Returns:
    New rows.
  """
  reference = {(r["network"], r["batch"], r["sims"], r["contestant"]): r["median_ms"]
               for r in rows if r["status"] == "ok"}
  out = []
  for r in rows:
    ref = reference.get((r["network"], r["batch"], r["sims"], MCTX_OF_POLICY[r["policy"]]))
    ratio = r["median_ms"] / ref if ref and r["status"] == "ok" else math.nan
    out.append({**r, "ratio_vs_mctx": ratio})
  return out


def predict_contestant(done: Sequence[dict], name: str, batch: int, sims: int, repeats: int,
                       timed_s: float) -> tuple[float, float] | None:
  """Seconds a search contestant is expected to take in a cell, from its
  largest measured cell of no more B * S (the same B first): the call time
  scaled linearly in B * S (an overestimate when B grows), the compile time
  as measured there.

  Args:
    done: the network's rows so far.
    name: the contestant.
    batch: B.
    sims: S.
    repeats: timed calls at most.
    timed_s: the timed calls stop once they have used this long.

  Returns:
    (compile + first call, compile + first call + timed calls) seconds, or
    None without a measured cell to scale from.
  """
  measured = [r for r in done if r["contestant"] == name and r["status"] == "ok"
              and r["batch"] * r["sims"] <= batch * sims]
  if not measured:
    return None
  ref = max(measured, key=lambda r: (r["batch"] == batch, r["batch"] * r["sims"]))
  call_s = ref["median_ms"] / 1e3 * (batch * sims) / (ref["batch"] * ref["sims"])
  timed = min(repeats, max(1, math.ceil(timed_s / max(call_s, 1e-9))))
  return ref["compile_s"] + call_s, ref["compile_s"] + call_s * (1 + timed)


def predict_cell(done: Sequence[dict], names: Sequence[str], batch: int, sims: int,
                 repeats: int, timed_s: float) -> tuple[float, dict[str, float]]:
  """Seconds a whole search cell is expected to take (`predict_contestant`
  of each contestant; one without a measured cell counts as the slowest of
  the others; 0 in a network's first cell, which nothing predicts).

  Args:
    done: the network's rows so far.
    names: the cell's contestants.
    batch: B.
    sims: S.
    repeats: timed calls per contestant at most.
    timed_s: the timed calls of one contestant stop once they have used
      this long.

  Returns:
    (the cell's seconds, name -> predicted compile + first call seconds of
    the contestants with a prediction).
  """
  predicted = {n: predict_contestant(done, n, batch, sims, repeats, timed_s) for n in names}
  known = {n: p for n, p in predicted.items() if p is not None}
  slowest = max((total for _, total in known.values()), default=0.0)
  total = sum(known[n][1] if n in known else slowest for n in names)
  return total, {n: warmup for n, (warmup, _) in known.items()}


def search_cell_group(names: Sequence[str], net: ReportNetwork, batch: int, sims: int,
                      plan: Plan, cache: dict | None = None) -> tuple[list[dict], list[dict]]:
  """Measures every contestant of one (network, B, S) cell, each mctx policy
  before ours (`SEARCH_CONTESTANTS`' order), whatever the section's clock
  says: the cell was predicted to fit. One of ours whose matching mctx policy
  is not in `names`, failed or got no timed call is skipped: it would have
  nothing to compare with.

  Args:
    names: the cell's contestants.
    net: the network.
    batch: B.
    sims: S.
    plan: the Plan (`repeats`; `max_seconds` bounds each contestant's timed
      calls).
    cache: `search_cell`'s cache of compiled searches.

  Returns:
    (rows, skipped).
  """
  rows, skipped, status = [], [], {}
  for name in (n for n in SEARCH_CONTESTANTS if n in names):
    cell = f"{net.description} B={batch} S={sims} {name}"
    reference = MCTX_OF_POLICY[SEARCH_CONTESTANTS[name][1]]
    if name != reference and status.get(reference) != "ok":
      why = status.get(reference, "not in this plan")
      skipped.append(_skip("search", cell, f"{reference} not measured in this cell ({why})"))
      continue
    try:
      row = search_cell(name, net, batch, sims, plan.repeats, plan.max_seconds, cache)
    except Exception as error:  # pylint: disable=broad-except
      status[name] = _failure(error)
      skipped.append(_skip("search", cell, status[name]))
      continue
    status[name] = row["status"]
    if row["status"] != "ok":
      skipped.append(_skip("search", cell, row["status"]))
    rows.append(row)
    print(f"  {cell:<44} {row['median_ms']:10.2f} ms  compile {row['compile_s']:.1f} s",
          flush=True)
  return rows, skipped


def search_section(plan: Plan, nets: Mapping[str, ReportNetwork], budget_s: float,
                   cache: dict | None = None) -> tuple[list[dict], list[dict]]:
  """Section 1: every network's contestants over its B x S grid, cell by
  cell (`ordered_cells`).

  Each network gets its share of the budget (`Plan.search_shares`, equal
  where not given; time a network leaves unused passes to the next); a
  contestant runs in the cells `Plan.runs_in` gives it. A cell is measured whole (`search_cell_group`)
  or skipped whole: skipped when its predicted seconds (`predict_cell`)
  exceed what is left of the network's share, or when one contestant's
  predicted compile and first call exceed `plan.max_seconds`. A cell that
  started runs to its end, so a spent budget drops whole cells, and every
  row of ours has its mctx row in the same cell.

  Args:
    plan: the Plan.
    nets: label -> ReportNetwork.
    budget_s: the section's seconds.
    cache: `search_cell`'s cache of compiled searches.

  Returns:
    (rows, skipped).
  """
  start = clock()
  rows, skipped = [], []
  labels = list(plan.search_contestants)
  shares = [plan.search_shares.get(label, 1.0 / len(labels)) for label in labels]
  for index, label in enumerate(labels):
    net = nets[label]
    deadline = start + budget_s * sum(shares[:index + 1]) / sum(shares)
    for batch, sims in ordered_cells(plan.search_batches(label), plan.sims):
      cell = f"{net.description} B={batch} S={sims}"
      names = [n for n in plan.search_contestants[label] if plan.runs_in(n, batch, sims)]
      skipped += [_skip("search", f"{cell} {n}", "not in this plan")
                  for n in SEARCH_CONTESTANTS if n not in names]
      done = [r for r in rows if r["network"] == label]
      predicted, warmups = predict_cell(done, names, batch, sims, plan.repeats,
                                        plan.max_seconds)
      left = deadline - clock()
      whole = f"{cell}, all {len(names)} contestants"
      slow = {n: w for n, w in warmups.items() if w > plan.max_seconds}
      if left <= 0 or predicted > left:
        skipped.append(_skip("search", whole, f"cell predicted {predicted:.0f} s > "
                             f"{max(left, 0):.0f} s left of the budget"))
        continue
      if slow:
        name, warmup = max(slow.items(), key=lambda item: item[1])
        skipped.append(_skip("search", whole, f"{name} predicted {warmup:.0f} s to compile "
                             f"and call once > {plan.max_seconds:.0f} s"))
        continue
      cell_rows, cell_skipped = search_cell_group(names, net, batch, sims, plan, cache)
      rows += cell_rows
      skipped += cell_skipped
  return with_search_ratios(rows), skipped


def memory_rows(search_rows: Sequence[dict]) -> list[dict]:
  """Section 3's search-state table from the measured search rows.

  Args:
    search_rows: section 1's rows.

  Returns:
    Rows of `MEMORY_FIELDS`: the search state per game (our graph arrays
    or mctx's tree), for all B games, and the compiled search's XLA temp and
    output buffers.
  """
  mib = 2.0 ** 20
  return [dict(network=r["network"], batch=r["batch"], sims=r["sims"],
               contestant=r["contestant"], nodes_per_game=r["nodes_per_game"],
               state_bytes_per_game=r["state_bytes_per_game"],
               state_mib_all_games=r["state_bytes_per_game"] * r["batch"] / mib,
               xla_temp_mib=r["xla_temp_bytes"] / mib,
               xla_output_mib=r["xla_output_bytes"] / mib)
          for r in search_rows if r["status"] == "ok"]


def device_row(section: str, section_s: float, compile_seconds: Sequence[float]) -> dict:
  """The device's memory after a section, the section's wall time and its
  compiles.

  Args:
    section: the section's name.
    section_s: the section's wall seconds.
    compile_seconds: compile seconds of what the section compiled (NaN
      entries are left out).

  Returns:
    A row of `DEVICE_FIELDS`.
  """
  known = [s for s in compile_seconds if not math.isnan(s)]
  return dict(after_section=section, section_s=section_s,
              compiles=len(known) if known else "-",
              compile_s_total=sum(known) if known else math.nan,
              compile_s_max=max(known) if known else math.nan, **device_memory())


def matching_mctx(loop: str) -> str:
  """The mctx self-play loop a bench_selfplay loop is compared with: mctx-gumbel
  for the Gumbel loops, mctx for the others (itself for the mctx loops)."""
  return "mctx-gumbel" if "gumbel" in loop else "mctx"


def selfplay_group(names: Sequence[str], eval_fn: Any, params: Any, plan: Plan, seed: int,
                   deadline: float) -> list[dict]:
  """Times one group of bench_selfplay's loops in interleaved rounds, every
  contestant in every round, so that every one, mctx included, has timed
  calls.

  Each contestant is compiled and burnt in (`bench_selfplay.Runner`), which
  also gives its seconds per call. Then up to `plan.selfplay_rounds` rounds:
  in each, every contestant makes `Runner.time_round`'s untimed call and k
  timed ones, 1 <= k <= `plan.repeats`, k sized so that the rounds left fit
  what is left before `deadline` (and each contestant's timed calls
  `plan.max_seconds`). The first round always runs, whole; a later one only
  when it fits. bench_selfplay's own `bench_rows` instead gives each
  contestant a fixed seconds budget per round, which a loop slower than that
  budget (mctx at a large B on a CPU) never enters: no timed call.

  Args:
    names: bench_selfplay contestant names.
    eval_fn: the MLP's eval_fn.
    params: its variables.
    plan: the Plan.
    seed: the games' seed.
    deadline: `clock()` seconds the rounds should end by.

  Returns:
    bench_selfplay's rows (`bench_selfplay.FIELDS`), one per contestant, all
    "ok"; the ratio fields are NaN (`selfplay_section` fills them).
  """
  args = bench_selfplay.parse_args([
      "--batch", str(plan.selfplay_batch), "--simulations", str(plan.selfplay_sims),
      "--moves", str(plan.selfplay_moves), "--rounds", str(plan.selfplay_rounds),
      "--repeats", str(plan.repeats), "--seed", str(seed)])
  runners, call_s = [], {}
  for name in names:
    runner = bench_selfplay.Runner(name, eval_fn, params, args)
    begin = clock()
    runner.compile()
    burn_in_s = clock() - begin - runner.compile_s
    calls = bench_selfplay.BURN_IN_CALLS
    call_s[name] = max(burn_in_s / calls if calls and burn_in_s > 0 else runner.compile_s,
                       1e-6)
    print(f"  {name:<20} compiled and burnt in ({runner.compile_s:.1f} s first call, "
          f"~{call_s[name]:.2f} s/call)", flush=True)
    runners.append(runner)
  rounds = plan.selfplay_rounds
  for round_index in range(rounds):
    left = deadline - clock()
    share = min(max(left, 0.0) / ((rounds - round_index) * len(runners)),
                plan.max_seconds / rounds)
    repeats = [max(1, min(plan.repeats, int(share / call_s[r.name]) - 1)) for r in runners]
    round_s = sum((1 + k) * call_s[r.name] for r, k in zip(runners, repeats))
    if round_index > 0 and round_s > left:
      print(f"  round {round_index + 1}/{rounds} skipped: predicted {round_s:.0f} s > "
            f"{max(left, 0):.0f} s left", flush=True)
      break
    for runner, k in zip(runners, repeats):
      runner.time_round(k, math.inf)
      call_s[runner.name] = statistics.median(runner.times)
    print(f"  round {round_index + 1}/{rounds}: " + ", ".join(
        f"{r.name} {call_s[r.name]:.3f}" for r in runners) + " s/call (medians so far)",
          flush=True)
  return [bench_selfplay.runner_row(runner, args) for runner in runners]


def selfplay_section(plan: Plan, seed: int,
                     budget_s: float) -> tuple[list[dict], list[dict]]:
  """Section 2: bench_selfplay's loops, group by group, with the MLP.

  A group is timed whole (`selfplay_group`: every contestant, mctx
  included, gets timed calls; its rounds sized to the group's share of the
  budget, time a group leaves unused passing to the next) or skipped whole,
  when the seconds per contestant of the groups before it predict that it
  would overrun the section's budget, or when it fails. One of ours whose
  matching mctx loop (`matching_mctx`) is neither in its group nor measured
  in an earlier one is skipped: it would have nothing to compare with.

  Args:
    plan: the Plan.
    seed: parameters and games.
    budget_s: the section's seconds.

  Returns:
    (rows, skipped): bench_selfplay's rows plus `group` and
    `ratio_vs_matching_mctx` (positions/s over those of mctx for PUCT
    loops, of mctx-gumbel for Gumbel loops; bench_selfplay's
    `ratio_vs_mctx` and `ratio_vs_mctx_gumbel` over each).
  """
  start = clock()
  deadline = start + budget_s
  eval_fn = networks.mlp_eval(NUM_ACTIONS, plan.mlp_hidden)
  params = networks.init(eval_fn.network, jax.random.key(seed),
                         jnp.zeros((1,) + OBSERVATION_SHAPE, jnp.bool_))
  known = bench_selfplay.CONTESTANTS + bench_selfplay.EXTRA_CONTESTANTS
  in_plan = {n for group in plan.selfplay_groups for n in group}
  cell = f"B={plan.selfplay_batch} S={plan.selfplay_sims} moves={plan.selfplay_moves}"
  rows, skipped = [], []
  for name in known:
    if name not in in_plan:
      skipped.append(_skip("selfplay", f"{cell} {name}", "not in this plan"))
  seconds_per_contestant = 0.0
  groups = plan.selfplay_groups
  for index, group in enumerate(groups):
    skipped += [_skip("selfplay", f"{cell} {n}", "unknown to bench_selfplay")
                for n in group if n not in known]
    measured = {r["contestant"] for r in rows}
    names = []
    for name in (n for n in group if n in known):
      reference = matching_mctx(name)
      if reference in group or reference in measured:
        names.append(name)
      else:
        skipped.append(_skip("selfplay", f"{cell} {name}", f"{reference} not measured: "
                             "nothing to compare with"))
    left = deadline - clock()
    predicted = seconds_per_contestant * len(names)
    if not names or left <= 0 or predicted > left:
      skipped += [_skip("selfplay", f"{cell} {n}", f"group predicted {predicted:.0f} s > "
                        f"{max(left, 0):.0f} s left of the budget") for n in names]
      continue
    group_start = clock()
    try:
      group_rows = selfplay_group(names, eval_fn, params, plan, seed,
                                  start + budget_s * (index + 1) / len(groups))
    except Exception as error:  # pylint: disable=broad-except
      skipped += [_skip("selfplay", f"{cell} {n}", _failure(error)) for n in names]
      continue
    seconds_per_contestant = (clock() - group_start) / len(names)
    rows += [{**row, "group": index + 1} for row in group_rows]
  speed = {r["contestant"]: r["positions_per_s"] for r in rows}
  for row in rows:
    for field, reference in (("ratio_vs_mctx", "mctx"), ("ratio_vs_mctx_gumbel", "mctx-gumbel"),
                             ("ratio_vs_matching_mctx", matching_mctx(row["contestant"]))):
      row[field] = (row["positions_per_s"] / speed[reference] if reference in speed
                    else math.nan)
  return rows, skipped


def phases_section(plan: Plan, seed: int, budget_s: float,
                   cache: dict | None = None) -> tuple[list[dict], list[dict]]:
  """Section 4: the network+env floor and `bench_phases.profile` per backup.

  Args:
    plan: the Plan.
    seed: the network's seed.
    budget_s: the section's seconds.

  Returns:
    (rows of `PHASE_FIELDS`, skipped).
  """
  start = clock()
  deadline = start + budget_s
  batch, sims = plan.phase_batch, plan.phase_sims
  cell = f"B={batch} S={sims} MLP{tuple(plan.mlp_hidden)}"
  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=tuple(plan.mlp_hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = init_params(network, jax.random.PRNGKey(seed), state.observation)
  only = jax.jit(functools.partial(bench_phases.network_only, env=env,
                                   eval_fn=MLPEval(network), num_steps=sims))
  _, _, times = benchmarks.time_calls(lambda: only(params, state), plan.repeats,
                                    plan.max_seconds)
  network_ms = 1e3 * statistics.median(times) if times else math.nan
  rows = [dict(row="network+env only", backup="-", median_ms=network_ms,
               per_step_ms=network_ms / sims)]
  skipped = [_skip("phases", f"{cell} {b}", "not in this plan (--quick)")
             for b in PHASE_BACKUPS if b not in plan.phase_backups]
  last_s = 0.0
  for backup in plan.phase_backups:
    left = min(deadline - clock(), plan.max_seconds)
    if left <= 0 or last_s > left:
      skipped.append(_skip("phases", f"{cell} {backup}", f"predicted {last_s:.0f} s > "
                           f"{max(left, 0):.0f} s left of the budget"))
      continue
    backup_start = clock()
    try:
      calls = bench_phases.phase_calls(backup, batch, sims, plan.mlp_hidden)
      if cache is not None:   # section 7 traces the same executables
        cache[("phases", backup, batch, sims)] = calls
      rows += bench_phases.profile(backup, batch, sims, plan.mlp_hidden, plan.repeats, left,
                                   calls)
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(_skip("phases", f"{cell} {backup}", _failure(error)))
    last_s = clock() - backup_start
  out = []
  for r in rows:
    is_phase = r["row"].startswith("phase")
    # Phases are per step: x S compares them with the whole network+env row.
    vs_network = r["median_ms"] * (sims if is_phase else 1) / network_ms
    out.append(dict(row=r["row"], backup=r["backup"], batch=batch, sims=sims,
                    median_ms=r["median_ms"], per_step_ms=r["per_step_ms"],
                    vs_network=vs_network, share_of_step=r.get("share_of_step", math.nan)))
  return out, skipped


def synthetic_examples(rng: jax.Array, batch: int) -> tuple[example_lib.Example, jax.Array]:
  """A batch of random Connect-4 training examples and their weights.

  Args:
    rng: a PRNG key.
    batch: B.

  Returns:
    (Example [B], f32[B] weights of 1).
  """
  obs_rng, policy_rng, value_rng = jax.random.split(rng, 3)
  examples = example_lib.Example(
      observation=jax.random.bernoulli(obs_rng, 0.3, (batch,) + OBSERVATION_SHAPE),
      legal_action_mask=jnp.ones((batch, NUM_ACTIONS), bool),
      policy=jax.nn.softmax(jax.random.normal(policy_rng, (batch, NUM_ACTIONS))),
      player=jnp.zeros((batch,), jnp.int32),
      value=jax.random.randint(value_rng, (batch,), -1, 2).astype(jnp.float32))
  return examples, jnp.ones((batch,), jnp.float32)


def training_section(plan: Plan, net: ReportNetwork,
                     budget_s: float) -> tuple[list[dict], list[dict]]:
  """Section 5: `trainer.update` steps per second on the ResNet.

  The optimizer is `TrainConfig`'s default (Adam, its learning rate and
  weight decay), built as `learning.loop` builds it; the loss AlphaZero's.

  Args:
    plan: the Plan.
    net: the ResNet.
    budget_s: the section's seconds.

  Returns:
    (rows of `TRAINING_FIELDS`, skipped).
  """
  deadline = clock() + budget_s
  defaults = config_lib.TrainConfig()
  optimizer = networks.make_optimizer(defaults.learning_rate, defaults.weight_decay,
                                      kind=defaults.optimizer)
  opt_state = optimizer.init(net.params["params"])
  update = jax.jit(functools.partial(trainer.update, network=net.module, optimizer=optimizer,
                                     loss_config=trainer.LossConfig(kind=defaults.loss)))
  rows, skipped, last_s = [], [], 0.0
  for batch in plan.training_batches:
    cell = f"{net.description} batch {batch}"
    left = min(deadline - clock(), plan.max_seconds)
    if left <= 0 or last_s > left:
      skipped.append(_skip("training", cell, f"predicted {last_s:.0f} s > "
                           f"{max(left, 0):.0f} s left of the budget"))
      continue
    cell_start = clock()
    examples, weights = synthetic_examples(jax.random.key(batch), batch)
    try:
      timing = benchmarks.compile_and_time(update, (net.params, opt_state, examples, weights),
                                         plan.repeats, left)
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(_skip("training", cell, _failure(error)))
      continue
    last_s = clock() - cell_start
    row = dict(network=net.description, batch=batch, status="ok",
               compile_s=timing.compile_s, repeats=len(timing.times), median_ms=math.nan,
               examples_per_s=math.nan)
    if timing.times:
      seconds = statistics.median(timing.times)
      row.update(median_ms=1e3 * seconds, examples_per_s=batch / seconds)
    else:
      row["status"] = f"skipped (first step {timing.first_call_s:.0f} s over the budget)"
      skipped.append(_skip("training", cell, row["status"]))
    rows.append(row)
    print(f"  {cell:<30} {row['median_ms']:10.2f} ms/step  compile {timing.compile_s:.1f} s",
          flush=True)
  return rows, skipped


def _spread(times: Sequence[float], scale: float) -> dict:
  return dict(repeats=len(times), median=scale * statistics.median(times),
              min=scale * min(times), max=scale * max(times))


def xla_search_rows(plan: Plan, net: ReportNetwork, batch: int, sims: int, name: str,
                    cache: Mapping, deadline: float) -> tuple[list[dict], list[dict]]:
  """One search contestant of one cell under every XLA variant, timed in
  interleaved rounds (`xla_section`).

  Returns:
    (rows of `XLA_FIELDS`, skipped).
  """
  cell = f"{net.description} B={batch} S={sims} {name}"
  variants = ("default",) + tuple(plan.xla_variants)
  cached = cache.get((net.label, batch, sims, name))
  contestant = cached[0] if cached else search_contestant(name, net, batch, sims)
  args = (net.params, jax.random.key(0), contestant.root)
  compiled, compile_s, skipped = {}, {}, []
  for variant in variants:
    if variant == "default" and cached:
      compiled[variant], compile_s[variant] = cached[1], cached[2]
      continue
    begin = clock()
    try:
      compiled[variant] = contestant.search.lower(*args).compile(
          compiler_options=XLA_VARIANTS[variant] or None)
      jax.block_until_ready(compiled[variant](*args))
    except Exception as error:  # pylint: disable=broad-except
      compiled.pop(variant, None)
      skipped.append(_skip("xla", f"{cell} {variant}", _failure(error)))
      continue
    compile_s[variant] = clock() - begin
  times = {v: [] for v in compiled}
  for round_index in range(plan.xla_rounds):
    if round_index and clock() > deadline:
      break
    for variant, fn in compiled.items():
      jax.block_until_ready(fn(*args))   # untimed, as benchmarks.time_calls
      for _ in range(plan.repeats):
        begin = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times[variant].append(time.perf_counter() - begin)
  rows = [dict(kind="search", network=net.label, batch=batch, sims=sims, contestant=name,
               variant=v, status="ok", compile_s=compile_s[v], unit="ms/call",
               **_spread(ts, 1e3)) for v, ts in times.items()]
  return rows, skipped


def xla_selfplay_rows(plan: Plan, name: str, eval_fn: Any, params: Any, seed: int,
                      deadline: float) -> tuple[list[dict], list[dict]]:
  """One bench_selfplay loop under every XLA variant, timed in interleaved
  rounds (`xla_section`).

  Returns:
    (rows of `XLA_FIELDS`, skipped).
  """
  args = bench_selfplay.parse_args([
      "--batch", str(plan.selfplay_batch), "--simulations", str(plan.selfplay_sims),
      "--moves", str(plan.selfplay_moves), "--seed", str(seed)])
  cell = f"self-play B={plan.selfplay_batch} S={plan.selfplay_sims} {name}"
  runners, skipped = {}, []
  for variant in ("default",) + tuple(plan.xla_variants):
    runner = bench_selfplay.Runner(name, eval_fn, params, args,
                                   compiler_options=XLA_VARIANTS[variant])
    try:
      runner.compile()
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(_skip("xla", f"{cell} {variant}", _failure(error)))
      continue
    runners[variant] = runner
  for round_index in range(plan.xla_rounds):
    if round_index and clock() > deadline:
      break
    for runner in runners.values():
      runner.time_round(plan.repeats, math.inf)
  positions = plan.selfplay_moves * plan.selfplay_batch
  rows = []
  for variant, runner in runners.items():
    speeds = [positions / s for s in runner.times]
    rows.append(dict(kind="selfplay", network="mlp", batch=plan.selfplay_batch,
                     sims=plan.selfplay_sims, contestant=name, variant=variant, status="ok",
                     compile_s=runner.compile_s, unit="positions/s", **_spread(speeds, 1.0)))
  return rows, skipped


def with_default_ratios(rows: Sequence[dict]) -> list[dict]:
  """`ratio_vs_default`: a row's median over the "default" variant's in the
  same (kind, network, B, S, contestant); below 1 is faster for ms/call,
  above 1 for positions/s."""
  key = lambda r: (r["kind"], r["network"], r["batch"], r["sims"], r["contestant"])
  default = {key(r): r["median"] for r in rows if r["variant"] == "default"}
  return [{**r, "ratio_vs_default": r["median"] / default[key(r)] if key(r) in default
           else math.nan} for r in rows]


def xla_section(plan: Plan, nets: Mapping[str, ReportNetwork], seed: int, budget_s: float,
                cache: Mapping) -> tuple[list[dict], list[dict]]:
  """Section 6: the XLA variants (`XLA_VARIANTS`) side by side with XLA's
  defaults, on `plan.xla_search_cells` and `plan.xla_selfplay_loops`.

  Every variant of one contestant is compiled in this process (the default
  from section 1 where it compiled it), then all are timed in interleaved
  rounds; the first round always runs whole, a later one only before the
  section's deadline. A unit (one contestant in one cell, all variants) is
  skipped whole once the deadline has passed.

  Args:
    plan: the Plan.
    nets: label -> ReportNetwork.
    seed: parameters and games.
    budget_s: the section's seconds.
    cache: section 1's compiled searches (`search_cell`).

  Returns:
    (rows of `XLA_FIELDS`, skipped).
  """
  deadline = clock() + budget_s
  rows, skipped = [], []
  if not plan.xla_variants:
    return rows, skipped
  for label, batch, sims in plan.xla_search_cells:
    for name in plan.xla_search_contestants:
      if clock() > deadline:
        skipped.append(_skip("xla", f"{nets[label].description} B={batch} S={sims} {name}",
                             "the section's budget was spent"))
        continue
      unit_rows, unit_skipped = xla_search_rows(plan, nets[label], batch, sims, name, cache,
                                                deadline)
      rows += unit_rows
      skipped += unit_skipped
  eval_fn = networks.mlp_eval(NUM_ACTIONS, plan.mlp_hidden)
  params = networks.init(eval_fn.network, jax.random.key(seed),
                         jnp.zeros((1,) + OBSERVATION_SHAPE, jnp.bool_))
  for name in plan.xla_selfplay_loops:
    if clock() > deadline:
      skipped.append(_skip("xla", f"self-play {name}", "the section's budget was spent"))
      continue
    unit_rows, unit_skipped = xla_selfplay_rows(plan, name, eval_fn, params, seed, deadline)
    rows += unit_rows
    skipped += unit_skipped
  for r in rows:
    print(f"  {r['kind']:<8} {r['contestant']:<20} {r['variant']:<22} {r['median']:12.2f} "
          f"{r['unit']}", flush=True)
  return with_default_ratios(rows), skipped


def kernel_row(row: str, variant: str, batch: int, sims: int, steps: int,
               events: benchmarks.DeviceEvents) -> dict:
  """A row of `KERNEL_FIELDS` from one traced call of `steps` steps."""
  known = events.planes > 0
  per_step = lambda n: n / steps if known else math.nan
  return dict(row=row, variant=variant, batch=batch, sims=sims, steps=steps,
              kernels_per_step=per_step(events.kernels),
              copies_per_step=per_step(events.copies),
              memsets_per_step=per_step(events.sets),
              device_ms_per_step=per_step(events.device_ms),
              kernels_total=events.kernels if known else math.nan,
              accelerator_planes=events.planes)


def kernels_section(plan: Plan, nets: Mapping[str, ReportNetwork], budget_s: float,
                    trace_dir: str, cache: Mapping) -> tuple[list[dict], list[dict]]:
  """Section 7: kernels, copies and memsets per simulation step, counted in
  `jax.profiler` traces of one call each: the searches of
  `plan.kernel_contestants` (ours also under every XLA variant of the plan)
  at (kernel_batch, kernel_sims) with the MLP, the network+env floor, and
  each phase of one of our simulation steps (`bench_phases.phase_calls`,
  one step per call). What sections 1 and 4 compiled for the same settings
  is traced as it is. On a CPU the traces hold no accelerator plane: the
  rows say so (NaN counts, 0 planes).

  Args:
    plan: the Plan.
    nets: label -> ReportNetwork.
    budget_s: the section's seconds (a unit starts only before its end).
    trace_dir: a folder for the traces.
    cache: sections 1 and 4's compiled searches and phase calls.

  Returns:
    (rows of `KERNEL_FIELDS`, skipped).
  """
  deadline = clock() + budget_s
  batch, sims = plan.kernel_batch, plan.kernel_sims
  rows, skipped = [], []
  if not batch:
    return rows, skipped
  net = nets["mlp"]
  count = itertools.count()

  def trace(row, variant, steps, fn, args):
    cell = f"{row} {variant} B={batch} S={sims}"
    if clock() > deadline:
      skipped.append(_skip("kernels", cell, "the section's budget was spent"))
      return
    try:
      events = benchmarks.trace_device_events(fn, args, os.path.join(trace_dir, str(next(count))))
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(_skip("kernels", cell, _failure(error)))
      return
    rows.append(kernel_row(row, variant, batch, sims, steps, events))
    print(f"  {cell:<48} {rows[-1]['kernels_per_step']:8.1f} kernels/step "
          f"{rows[-1]['copies_per_step']:6.2f} copies/step", flush=True)

  for name in plan.kernel_contestants:
    cached = cache.get(("mlp", batch, sims, name))
    contestant = cached[0] if cached else search_contestant(name, net, batch, sims)
    args = lambda c=contestant: (net.params, jax.random.key(0), c.root)
    ours = SEARCH_CONTESTANTS[name][0] != "mctx"
    for variant in ("default",) + (tuple(plan.xla_variants) if ours else ()):
      if variant == "default" and cached:
        search = cached[1]
      else:
        search = benchmarks.with_compiler_options(contestant.search, XLA_VARIANTS[variant])
      trace(f"search {name}", variant, sims, search, args)
  env = envs.make("connect4")
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  only = jax.jit(functools.partial(bench_phases.network_only, env=env, eval_fn=net.eval_fn,
                                   num_steps=sims))
  trace("network+env only", "default", sims, only, lambda: (net.params, state))
  try:
    calls = dict(cache.get(("phases", "mcgs", batch, sims))
                 or bench_phases.phase_calls("mcgs", batch, sims, plan.mlp_hidden))
  except Exception as error:  # pylint: disable=broad-except
    skipped.append(_skip("kernels", f"phases B={batch} S={sims}", _failure(error)))
    return rows, skipped
  calls.pop("search")
  for name, (fn, args) in calls.items():
    trace(f"phase {name}", "default", 1, fn, args)
  return rows, skipped


def _fmt(value: Any, spec: str) -> str:
  if isinstance(value, str):
    return value
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "-"
  try:
    return format(value, spec)
  except (TypeError, ValueError):   # e.g. a float where an int was expected
    return str(value)


def _table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> str:
  """`rows` as markdown, `columns` as (header, field, format spec)."""
  if not rows:
    return "(no rows)"
  table = [{header: _fmt(r.get(field, math.nan), spec) for header, field, spec in columns}
           for r in rows]
  return benchmarks.markdown_table(table, [header for header, _, _ in columns])


SEARCH_COLUMNS = (("network", "network", ""), ("B", "batch", "d"), ("S", "sims", "d"),
                  ("contestant", "contestant", ""), ("ms/call", "median_ms", ".2f"),
                  ("sims/s", "sims_per_s", ",.0f"), ("ms / mctx ms", "ratio_vs_mctx", ".2f"),
                  ("compile s", "compile_s", ".1f"), ("repeats", "repeats", "d"),
                  ("nodes/game", "nodes_per_game", ".1f"))
SELFPLAY_COLUMNS = (("loop", "contestant", ""), ("group", "group", "d"),
                    ("positions/s", "positions_per_s", ",.0f"),
                    ("vs matching mctx", "ratio_vs_matching_mctx", ".2f"),
                    ("s/call", "s_per_call", ".3f"), ("compile s", "compile_s", ".1f"),
                    ("nn evals/move", "nn_evals_per_move", ".1f"),
                    ("TT hits/move", "transposition_hits_per_move", ".1f"),
                    ("nodes kept/move", "nodes_kept_per_move", ".1f"),
                    ("repeats", "repeats", "d"), ("status", "status", ""))
MEMORY_COLUMNS = (("network", "network", ""), ("B", "batch", "d"), ("S", "sims", "d"),
                  ("contestant", "contestant", ""), ("nodes/game", "nodes_per_game", ".1f"),
                  ("state KiB/game", "state_bytes_per_game", ",.1f"),
                  ("state MiB (B games)", "state_mib_all_games", ",.2f"),
                  ("XLA temp MiB", "xla_temp_mib", ",.2f"),
                  ("XLA output MiB", "xla_output_mib", ",.2f"))
DEVICE_COLUMNS = (("after section", "after_section", ""), ("section s", "section_s", ".0f"),
                  ("compiles", "compiles", ""),
                  ("compile s total", "compile_s_total", ".1f"),
                  ("compile s max", "compile_s_max", ".1f"),
                  ("bytes in use", "bytes_in_use", ",d"),
                  ("peak bytes in use", "peak_bytes_in_use", ",d"),
                  ("bytes limit", "bytes_limit", ",d"))
PHASE_COLUMNS = (("row", "row", ""), ("backup", "backup", ""), ("ms", "median_ms", ".2f"),
                 ("ms per step", "per_step_ms", ".3f"), ("vs network", "vs_network", ".2f"),
                 ("share of step", "share_of_step", ".0%"))
TRAINING_COLUMNS = (("network", "network", ""), ("batch", "batch", "d"),
                    ("ms/step", "median_ms", ".2f"), ("examples/s", "examples_per_s", ",.0f"),
                    ("compile s", "compile_s", ".1f"), ("repeats", "repeats", "d"),
                    ("status", "status", ""))
XLA_COLUMNS = (("kind", "kind", ""), ("network", "network", ""), ("B", "batch", "d"),
               ("S", "sims", "d"), ("contestant", "contestant", ""),
               ("variant", "variant", ""), ("median", "median", ",.2f"), ("min", "min", ",.2f"),
               ("max", "max", ",.2f"), ("unit", "unit", ""),
               ("vs default", "ratio_vs_default", ".3f"), ("compile s", "compile_s", ".1f"),
               ("repeats", "repeats", "d"))
KERNEL_COLUMNS = (("row", "row", ""), ("variant", "variant", ""), ("B", "batch", "d"),
                  ("S", "sims", "d"), ("steps", "steps", "d"),
                  ("kernels/step", "kernels_per_step", ".1f"),
                  ("copies/step", "copies_per_step", ".2f"),
                  ("memsets/step", "memsets_per_step", ".2f"),
                  ("device ms/step", "device_ms_per_step", ".4f"),
                  ("accelerator planes", "accelerator_planes", "d"))
SKIPPED_COLUMNS = (("section", "section", ""), ("cell", "cell", ""), ("reason", "reason", ""))


def _kib_rows(rows: Sequence[dict]) -> list[dict]:
  return [{**r, "state_bytes_per_game": r["state_bytes_per_game"] / 1024} for r in rows]


def format_report(header: Sequence[str], plan: Plan, nets: Mapping[str, ReportNetwork],
                  results: Mapping[str, list]) -> str:
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
  grid = "; ".join(
      f"{label} B {{{', '.join(map(str, plan.search_batches(label)))}}} x "
      f"S {{{', '.join(map(str, plan.sims))}}}" for label in plan.search_contestants)
  groups = "; ".join(f"{i + 1}: " + ", ".join(f"`{n}`" for n in group)
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
      f"`experiments.bench_selfplay`'s loops with {nets['mlp'].description}: "
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
      "`experiments.bench_phases.profile`: the full search, then each phase of one "
      "simulation step jitted on its own on the graph half-way through a search. vs network: "
      "over the network+env-only row (phases x S); share of step: over the `phase step` row.",
      "",
      _table(get("phases"), PHASE_COLUMNS),
      "",
      "## 5. Training throughput",
      "",
      "`learning.trainer.update` (one Adam step with TrainConfig's defaults, AlphaZero loss, "
      "BatchNorm in training mode) on random Connect-4 examples; examples/s = batch / "
      "median step time.",
      "",
      _table(get("training"), TRAINING_COLUMNS),
      "",
      "## 6. XLA options side by side",
      "",
      "Each contestant compiled once per variant in this process (`compile(compiler_options="
      "...)`) and timed in interleaved rounds: `default` (XLA's defaults), "
      + ", ".join(f"`{v}` ({', '.join(f'{k}={o}' for k, o in XLA_VARIANTS[v].items())})"
                  for v in plan.xla_variants)
      + ". Search rows in ms per call (below 1 vs default: faster), self-play rows in "
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
      "`experiments.bench_phases.phase_calls`). On a CPU the trace has no accelerator plane "
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


SECTION_FIELDS = {"search": SEARCH_FIELDS, "memory": MEMORY_FIELDS, "device": DEVICE_FIELDS,
                  "phases": PHASE_FIELDS, "training": TRAINING_FIELDS, "xla": XLA_FIELDS,
                  "kernels": KERNEL_FIELDS, "skipped": SKIPPED_FIELDS}


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
  selfplay_fields = tuple(bench_selfplay.FIELDS) + ("group", "ratio_vs_matching_mctx")
  for section in SECTIONS:
    fields = selfplay_fields if section == "selfplay" else SECTION_FIELDS[section]
    benchmarks.write_csv(paths[section], results.get(section, []), fields)


def header_lines(title: str, argv: Sequence[str], plan: Plan, budget_scale: float,
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
      "Command: `" + shlex.join(["python", "-m", "experiments.device_report", *argv]) + "`",
      "",
      f"Mode: {plan.label}; section budgets {budgets}; a contestant predicted to take more "
      f"than {plan.max_seconds:.0f} s to compile and call once is skipped with its cell.",
  ]


def parse_args(argv=None):
  """The command line.

  Args:
    argv: arguments (None: sys.argv[1:]).

  Returns:
    argparse.Namespace.
  """
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--quick", action="store_true",
                      help="tiny shapes and networks, few repeats (the CPU smoke run)")
  parser.add_argument("--out", default=os.path.join("docs", "device"),
                      help="folder of the report and its CSVs")
  parser.add_argument("--budget-scale", type=float, default=1.0,
                      help="multiplies every section's time budget")
  parser.add_argument("--max-seconds", type=float,
                      help="skip a cell predicted to take longer (default: the plan's)")
  parser.add_argument("--seed", type=int, default=0)
  return parser.parse_args(argv)


def run_sections(plan: Plan, nets: Mapping[str, ReportNetwork], seed: int, budget_scale: float,
                 write: Callable[[dict], None]) -> dict:
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
  compiled = {}   # section 1's compiled searches, section 6's defaults
  steps = (
      ("1. search", "search", lambda: search_section(plan, nets, budget["search"], compiled)),
      ("2. self-play", "selfplay", lambda: selfplay_section(plan, seed, budget["selfplay"])),
      ("4. phases", "phases", lambda: phases_section(plan, seed, budget["phases"], compiled)),
      ("5. training", "training",
       lambda: training_section(plan, nets["resnet"], budget["training"])),
      ("6. XLA options", "xla",
       lambda: xla_section(plan, nets, seed, budget["xla"], compiled)),
      ("7. kernels", "kernels",
       lambda: kernels_section(plan, nets, budget["kernels"],
                               tempfile.mkdtemp(prefix="device-report-traces-"), compiled)),
  )
  results = {s: [] for s in SECTIONS}
  for title, section, run in steps:
    print(f"{title} (budget {budget[section]:.0f} s)", flush=True)
    start = time.perf_counter()
    try:
      results[section], skipped = run()
    except Exception as error:  # pylint: disable=broad-except
      # One section's failure costs that section, not the report (a lent
      # accelerator is not lent twice).
      results[section], skipped = [], [_skip(section, "the whole section", _failure(error))]
    results["skipped"] += skipped
    if section == "search":   # section 3's search-state table
      results["memory"] = memory_rows(results["search"])
    compiles = [r["compile_s"] for r in results[section] if "compile_s" in r]
    results["device"].append(device_row(section, time.perf_counter() - start, compiles))
    write(results)
  return results


def main(argv=None):
  argv = sys.argv[1:] if argv is None else list(argv)
  args = parse_args(argv)
  plan = select_plan(args.quick, jax.devices()[0].platform)
  if args.max_seconds is not None:
    plan = dataclasses.replace(plan, max_seconds=args.max_seconds)
  device_kind = jax.devices()[0].device_kind
  stem = device_slug(device_kind) + ("-quick" if args.quick else "")
  paths = report_paths(args.out, stem)
  header = header_lines(device_kind, argv, plan, args.budget_scale, args.quick)
  print("\n".join(line for line in header if line), flush=True)
  start = time.perf_counter()
  nets = make_networks(plan, args.seed)

  def write(results):
    wall = f"Wall time: {time.perf_counter() - start:.0f} s."
    write_report(paths, format_report(header + ["", wall], plan, nets, results), results)

  results = run_sections(plan, nets, args.seed, args.budget_scale, write)
  print(f"\nSkipped ({len(results['skipped'])}):")
  for row in results["skipped"]:
    print(f"  {row['section']}: {row['cell']}: {row['reason']}")
  print(f"\nTotal {time.perf_counter() - start:.0f} s. Report: {paths['md']}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
