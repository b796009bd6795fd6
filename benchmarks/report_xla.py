"""The accelerator report's XLA section: the same search and self-play cells compiled
under each XLA flag set worth trying, side by side with the default.
"""

import math
import time
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp

from mcgs_jax import networks
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import report_search
from mcgs_jax.benchmarks import selfplay_speed


def xla_search_rows(plan: report_plan.Plan, net: report_plan.ReportNetwork, batch: int, sims: int,
                    name: str, cache: Mapping, deadline: float) -> tuple[list[dict], list[dict]]:
  """One search contestant of one cell under every XLA variant, timed in
  interleaved rounds (`xla_section`).

  Args:
    plan: the report's plan.
    net: the network.
    batch: B.
    sims: S.
    name: the contestant.
    cache: compiled contestants by cell, shared with the search section.
    deadline: `report_plan.clock()` seconds the rounds end by.

  Returns:
    (rows of `XLA_FIELDS`, skipped rows).
  """
  cell = f"{net.description} B={batch} S={sims} {name}"
  variants = ("default",) + tuple(plan.xla_variants)
  cached = cache.get((net.label, batch, sims, name))
  contestant = cached[0] if cached else report_search.search_contestant(name, net, batch, sims)
  args = (net.params, jax.random.key(0), contestant.root)
  compiled, compile_s, skipped = {}, {}, []
  for variant in variants:
    if variant == "default" and cached:
      compiled[variant], compile_s[variant] = cached[1], cached[2]
      continue
    begin = report_plan.clock()
    try:
      compiled[variant] = contestant.search.lower(*args).compile(
          compiler_options=report_plan.XLA_VARIANTS[variant] or None)
      jax.block_until_ready(compiled[variant](*args))
    except Exception as error:  # pylint: disable=broad-except
      compiled.pop(variant, None)
      skipped.append(report_plan.skip("xla", f"{cell} {variant}", report_plan.failure(error)))
      continue
    compile_s[variant] = report_plan.clock() - begin
  times = {v: [] for v in compiled}
  for round_index in range(plan.xla_rounds):
    if round_index and report_plan.clock() > deadline:
      break
    for variant, fn in compiled.items():
      jax.block_until_ready(fn(*args))  # untimed, as measure.time_calls
      for _ in range(plan.repeats):
        begin = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times[variant].append(time.perf_counter() - begin)
  rows = [
      dict(kind="search", network=net.label, batch=batch, sims=sims, contestant=name,
           variant=v, status="ok", compile_s=compile_s[v], unit="ms/call",
           **report_plan.spread(ts, 1e3)) for v, ts in times.items()
  ]
  return rows, skipped


def xla_selfplay_rows(plan: report_plan.Plan, name: str, eval_fn: Any, params: Any, seed: int,
                      deadline: float) -> tuple[list[dict], list[dict]]:
  """One self-play loop under every XLA variant, timed in interleaved rounds
  (`xla_section`).

  Args:
    plan: the report's plan.
    name: the loop (`selfplay_speed` contestant name).
    eval_fn: the network.
    params: its parameters.
    seed: the games' seed.
    deadline: `report_plan.clock()` seconds the rounds end by.

  Returns:
    (rows of `XLA_FIELDS`, skipped rows).
  """
  args = selfplay_speed.Settings(batch=plan.selfplay_batch, simulations=plan.selfplay_sims,
                                 moves=plan.selfplay_moves, seed=seed)
  cell = f"self-play B={plan.selfplay_batch} S={plan.selfplay_sims} {name}"
  runners, skipped = {}, []
  for variant in ("default",) + tuple(plan.xla_variants):
    runner = selfplay_speed.Runner(name, eval_fn, params, args,
                                   compiler_options=report_plan.XLA_VARIANTS[variant])
    try:
      runner.compile()
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(report_plan.skip("xla", f"{cell} {variant}", report_plan.failure(error)))
      continue
    runners[variant] = runner
  for round_index in range(plan.xla_rounds):
    if round_index and report_plan.clock() > deadline:
      break
    for runner in runners.values():
      runner.time_round(plan.repeats, math.inf)
  positions = plan.selfplay_moves * plan.selfplay_batch
  rows = []
  for variant, runner in runners.items():
    speeds = [positions / s for s in runner.times]
    rows.append(
        dict(kind="selfplay", network="mlp", batch=plan.selfplay_batch, sims=plan.selfplay_sims,
             contestant=name, variant=variant, status="ok", compile_s=runner.compile_s,
             unit="positions/s", **report_plan.spread(speeds, 1.0)))
  return rows, skipped


def with_default_ratios(rows: Sequence[dict]) -> list[dict]:
  """Adds `ratio_vs_default`: a row's median over the "default" variant's in
  the same (kind, network, B, S, contestant); below 1 is faster for ms/call,
  above 1 for positions/s.

  Args:
    rows: rows of `XLA_FIELDS`.

  Returns:
    The rows with the ratio (NaN without a default row).
  """
  key = lambda r: (r["kind"], r["network"], r["batch"], r["sims"], r["contestant"])
  default = {key(r): r["median"] for r in rows if r["variant"] == "default"}
  return [{
      **r, "ratio_vs_default": r["median"] / default[key(r)] if key(r) in default else math.nan
  } for r in rows]


def xla_section(plan: report_plan.Plan, nets: Mapping[str, report_plan.ReportNetwork], seed: int,
                budget_s: float, cache: Mapping) -> tuple[list[dict], list[dict]]:
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
  deadline = report_plan.clock() + budget_s
  rows, skipped = [], []
  if not plan.xla_variants:
    return rows, skipped
  for label, batch, sims in plan.xla_search_cells:
    for name in plan.xla_search_contestants:
      if report_plan.clock() > deadline:
        skipped.append(
            report_plan.skip("xla", f"{nets[label].description} B={batch} S={sims} {name}",
                             "the section's budget was spent"))
        continue
      unit_rows, unit_skipped = xla_search_rows(plan, nets[label], batch, sims, name, cache,
                                                deadline)
      rows += unit_rows
      skipped += unit_skipped
  eval_fn = networks.mlp_eval(report_plan.NUM_ACTIONS, plan.mlp_hidden)
  params = networks.init(eval_fn.network, jax.random.key(seed),
                         jnp.zeros((1,) + report_plan.OBSERVATION_SHAPE, jnp.bool_))
  for name in plan.xla_selfplay_loops:
    if report_plan.clock() > deadline:
      skipped.append(report_plan.skip("xla", f"self-play {name}", "the section's budget was spent"))
      continue
    unit_rows, unit_skipped = xla_selfplay_rows(plan, name, eval_fn, params, seed, deadline)
    rows += unit_rows
    skipped += unit_skipped
  for r in rows:
    print(
        f"  {r['kind']:<8} {r['contestant']:<20} {r['variant']:<22} {r['median']:12.2f} "
        f"{r['unit']}", flush=True)
  return with_default_ratios(rows), skipped
