"""The accelerator report's plan (which cells, in which order, under which
budget), its networks and the helpers its sections share
(`mcgs_jax.experiments.device_report`).
"""

import dataclasses
import itertools
import math
import os
import re
import statistics
import time
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp

from mcgs_jax import envs
from mcgs_jax import networks
from mcgs_jax.benchmarks import search_speed
from mcgs_jax.benchmarks import names
from mcgs_jax.networks import MLP, MLPEval, init_params

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
        "xla_gpu_graph_min_graph_size": 1,
    },
    "unroll-2": {
        "xla_gpu_enable_while_loop_unrolling": "WHILE_LOOP_UNROLLING_DOUBLE_BUFFER"
    },
}

SEARCH_FIELDS = ("network", "batch", "sims", "contestant", "search", "policy", "status",
                 "compile_s", "warmup_s", "repeats", "median_ms", "sims_per_s", "ratio_vs_mctx",
                 "nodes_per_game", "nn_evals_per_game", "state_bytes_per_game", "xla_temp_bytes",
                 "xla_output_bytes")
MEMORY_FIELDS = ("network", "batch", "sims", "contestant", "nodes_per_game", "state_bytes_per_game",
                 "state_mib_all_games", "xla_temp_mib", "xla_output_mib")
DEVICE_FIELDS = ("after_section", "section_s", "compiles", "compile_s_total", "compile_s_max",
                 "bytes_in_use", "peak_bytes_in_use", "bytes_limit")
PHASE_FIELDS = ("row", "backup", "batch", "sims", "median_ms", "per_step_ms", "vs_network",
                "share_of_step")
TRAINING_FIELDS = ("network", "batch", "status", "compile_s", "repeats", "median_ms",
                   "examples_per_s")
XLA_FIELDS = ("kind", "network", "batch", "sims", "contestant", "variant", "status", "compile_s",
              "repeats", "median", "min", "max", "unit", "ratio_vs_default")
KERNEL_FIELDS = ("row", "variant", "batch", "sims", "steps", "kernels_per_step", "copies_per_step",
                 "memsets_per_step", "device_ms_per_step", "kernels_total", "accelerator_planes")
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
    selfplay_groups: selfplay_speed contestant names, in groups timed
      together (interleaved rounds); a group is skipped whole when the
      budget left cannot fit it.
    selfplay_rounds: selfplay_speed's interleaved rounds.
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
    xla_selfplay_loops: selfplay_speed loops of section 6 (at the
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
  contestant_cells: Mapping[str, tuple[tuple[int, int],
                                       ...]] = dataclasses.field(default_factory=dict)
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
    """B of one network's search grid.

    Args:
      label: the network ("mlp" or "resnet").

    Returns:
      The batch sizes.
    """
    return tuple(self.network_batches.get(label, self.batches))

  def runs_in(self, name: str, batch: int, sims: int) -> bool:
    """Whether a search contestant is measured in a cell: in every cell unless
    `contestant_cells` lists its cells.

    Args:
      name: the contestant.
      batch: B.
      sims: S.

    Returns:
      True when it runs there.
    """
    return name not in self.contestant_cells or (batch, sims) in self.contestant_cells[name]


# The report of one lent accelerator session (`mcgs_jax.experiments.device_session`,
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
# The tree beside the graph (the graph's tax on the device): in the MLP's
# search grid, the self-play groups, the phase profile and the kernel counts.
FULL_PLAN = Plan(
    label="full", batches=(256, 1024, 4096), sims=(64, 200, 800),
    mlp_hidden=search_speed.HIDDEN_SIZES, resnet_blocks=6, resnet_channels=64, search_contestants={
        "mlp": ("mctx-muzero", "mcgs-puct", "tree-puct", "mctx-gumbel", "mcgs-gumbel"),
        "resnet": ("mctx-muzero", "mcgs-puct", "mctx-gumbel", "mcgs-gumbel")
    }, network_batches={"resnet": (1024,)}, contestant_cells={
        "mctx-gumbel": _GUMBEL_DIAGONAL,
        "mcgs-gumbel": _GUMBEL_DIAGONAL
    }, search_shares={
        "mlp": 0.88,
        "resnet": 0.12
    }, selfplay_batch=1024, selfplay_sims=64, selfplay_moves=8,
    selfplay_groups=(("mctx", "mcgs", "mcgs-noreuse", "tree"),
                     ("mctx-gumbel", "mcgs-gumbel", "mcgs-gumbel-noreuse", "tree-gumbel")),
    selfplay_rounds=2, phase_batch=1024, phase_sims=200, phase_backups=PHASE_BACKUPS,
    training_batches=(1024,), repeats=2, max_seconds=30.0, budgets_s={
        # The XLA variants' verdict is in (docs/device/nvidia-h200.md): their
        # section gives the tree's cells 25 s.
        "search": 185.0,
        "selfplay": 105.0,
        "phases": 25.0,
        "training": 8.0,
        "xla": 50.0,
        "kernels": 40.0
    }, xla_variants=("command-buffer-while", "unroll-2"), xla_search_cells=(("mlp", 1024, 200),),
    xla_search_contestants=("mctx-muzero", "mcgs-puct", "mctx-gumbel", "mcgs-gumbel"),
    xla_selfplay_loops=("mcgs-gumbel",), kernel_batch=1024, kernel_sims=200,
    kernel_contestants=("mctx-muzero", "mcgs-puct", "tree-puct"))
# The full report where the device is a CPU (`select_plan`): FULL_PLAN's
# shapes take seconds per call there, and a compile ~10-20 s (search) or
# ~20-45 s (self-play) on a loaded 2-core machine, so one search cell of six
# contestants costs about two minutes. Sized for ~9-10 minutes there (555 s of
# section budgets, plus imports and the overrun of a cell or group once
# started): the search grid at B 64 and 256 for the MLP and B=32 for the
# ResNet (the budget guard skips the cells that do not fit: on a loaded
# 2-core machine the first cell of each network), self-play at
# selfplay_speed's default B=256 in one group with both mctx loops (the
# no-reuse loops left out), phases and training at B=256 (training 1024 where
# it fits).
CPU_PLAN = Plan(
    label="full (CPU plan)", batches=(64, 256), sims=(64, 200, 800),
    mlp_hidden=search_speed.HIDDEN_SIZES, resnet_blocks=6, resnet_channels=64, search_contestants={
        "mlp": tuple(SEARCH_CONTESTANTS),
        "resnet": tuple(SEARCH_CONTESTANTS)
    }, network_batches={"resnet": (32,)}, selfplay_batch=names.SELFPLAY_FULL["batch"],
    selfplay_sims=names.SELFPLAY_FULL["simulations"], selfplay_moves=names.SELFPLAY_FULL["moves"],
    selfplay_groups=(("mctx", "mcgs", "tree", "mctx-gumbel", "mcgs-gumbel"),), selfplay_rounds=2,
    phase_batch=256, phase_sims=800, phase_backups=PHASE_BACKUPS, training_batches=(256, 1024),
    repeats=3, max_seconds=30.0, budgets_s={
        "search": 220.0,
        "selfplay": 230.0,
        "phases": 60.0,
        "training": 45.0,
        "xla": 0.0,
        "kernels": 0.0
    })
# The CPU smoke run: one tiny cell per section; both mctx policies, both
# backups, both root policies and both networks once each, in few compiles
# (they are most of its time).
QUICK_PLAN = Plan(
    label="quick (CPU smoke run, tiny shapes)", batches=(8,), sims=(16,), mlp_hidden=(16, 16),
    resnet_blocks=1, resnet_channels=8, search_contestants={
        "mlp": ("mctx-gumbel", "tree-gumbel"),
        "resnet": ("mctx-muzero", "mcgs-puct")
    }, selfplay_batch=8, selfplay_sims=8, selfplay_moves=2,
    selfplay_groups=(("mctx-gumbel",
                      "mcgs-gumbel-noreuse"),), selfplay_rounds=1, phase_batch=8, phase_sims=16,
    phase_backups=("mcgs",), training_batches=(32,), repeats=2, max_seconds=60.0, budgets_s={
        "search": 120.0,
        "selfplay": 90.0,
        "phases": 45.0,
        "training": 30.0,
        "xla": 60.0,
        "kernels": 30.0
    }, xla_variants=("command-buffer-while",), xla_search_cells=(("mlp", 8, 16),),
    xla_search_contestants=("mctx-gumbel",
                            "tree-gumbel"), xla_selfplay_loops=("mcgs-gumbel-noreuse",),
    xla_rounds=1, kernel_batch=8, kernel_sims=16, kernel_contestants=("mctx-gumbel", "tree-gumbel"))


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
  """The sections' clock (`time.perf_counter`; the tests replace it).

  Returns:
    Seconds.
  """
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
  """The MLP (search_speed's, `MLPEval`) and the ResNet of a plan.

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
      "mlp":
          ReportNetwork("mlp", f"MLP{tuple(plan.mlp_hidden)}", mlp, MLPEval(mlp),
                        init_params(mlp, rng, example)),
      "resnet":
          ReportNetwork("resnet", f"ResNet {plan.resnet_blocks}x{plan.resnet_channels}", resnet,
                        networks.NetworkEval(resnet), networks.init(resnet, rng, example)),
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
  return sorted(itertools.product(batches, sims), key=lambda c:
                (c not in diagonal, c[0] * c[1], c[0]))


def skip(section: str, cell: str, reason: str) -> dict:
  """A row of `SKIPPED_FIELDS`.

  Args:
    section: the section.
    cell: the cell skipped.
    reason: why.

  Returns:
    The row.
  """
  print(f"  skipped {section}: {cell}: {reason}", flush=True)
  return dict(section=section, cell=cell, reason=reason)


def failure(error: Exception) -> str:
  """An error in one line for a skipped cell's reason.

  Args:
    error: the exception.

  Returns:
    "failed: <type>: <first line>", the line cut at 160 characters.
  """
  lines = str(error).strip().splitlines()
  return f"failed: {type(error).__name__}: {lines[0][:160] if lines else ''}"


def xla_sizes(compiled: Any) -> tuple[float, float]:
  """Memory of a compiled executable.

  Args:
    compiled: a `jax.stages.Compiled`.

  Returns:
    (temp bytes, output bytes), NaN where XLA does not say.
  """
  try:
    analysis = compiled.memory_analysis()
    return float(analysis.temp_size_in_bytes), float(analysis.output_size_in_bytes)
  except Exception:  # pylint: disable=broad-except
    return math.nan, math.nan


def spread(times: Sequence[float], scale: float) -> dict:
  """Median, min, max and count of timings (at least one).

  Args:
    times: seconds.
    scale: multiplies each (1e3: ms).

  Returns:
    A dict of `median`, `min`, `max`, `repeats`.
  """
  return dict(repeats=len(times), median=scale * statistics.median(times), min=scale * min(times),
              max=scale * max(times))
