"""The accelerator report's phases section (the network+env floor, then each phase of one
simulation step jitted apart) and its kernels section (device kernels per step from a
profiler trace).
"""

import functools
import itertools
import math
import os
import statistics
from typing import Mapping

import jax

from mcgs_jax import envs
from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import phases
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import report_search
from mcgs_jax.networks import MLP, MLPEval, init_params


def phases_section(plan: report_plan.Plan, seed: int, budget_s: float,
                   cache: dict | None = None) -> tuple[list[dict], list[dict]]:
  """Section 4: the network+env floor and `phases.profile` per backup.

  Args:
    plan: the Plan.
    seed: the network's seed.
    budget_s: the section's seconds.

  Returns:
    (rows of `PHASE_FIELDS`, skipped).
  """
  start = report_plan.clock()
  deadline = start + budget_s
  batch, sims = plan.phase_batch, plan.phase_sims
  cell = f"B={batch} S={sims} MLP{tuple(plan.mlp_hidden)}"
  env = envs.make("connect4")
  network = MLP(num_actions=env.num_actions, hidden_sizes=tuple(plan.mlp_hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  params = init_params(network, jax.random.PRNGKey(seed), state.observation)
  only = jax.jit(
      functools.partial(phases.network_only, env=env, eval_fn=MLPEval(network), num_steps=sims))
  _, _, times = measure.time_calls(lambda: only(params, state), plan.repeats, plan.max_seconds)
  network_ms = 1e3 * statistics.median(times) if times else math.nan
  rows = [
      dict(row="network+env only", backup="-", median_ms=network_ms, per_step_ms=network_ms / sims)
  ]
  skipped = [
      report_plan.skip("phases", f"{cell} {b}", "not in this plan (--quick)")
      for b in report_plan.PHASE_BACKUPS
      if b not in plan.phase_backups
  ]
  last_s = 0.0
  for backup in plan.phase_backups:
    left = min(deadline - report_plan.clock(), plan.max_seconds)
    if left <= 0 or last_s > left:
      skipped.append(
          report_plan.skip(
              "phases", f"{cell} {backup}", f"predicted {last_s:.0f} s > "
              f"{max(left, 0):.0f} s left of the budget"))
      continue
    backup_start = report_plan.clock()
    try:
      calls = phases.phase_calls(backup, batch, sims, plan.mlp_hidden)
      if cache is not None:  # section 7 traces the same executables
        cache[("phases", backup, batch, sims)] = calls
      rows += phases.profile(backup, batch, sims, plan.mlp_hidden, plan.repeats, left, calls)
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(report_plan.skip("phases", f"{cell} {backup}", report_plan.failure(error)))
    last_s = report_plan.clock() - backup_start
  out = []
  for r in rows:
    is_phase = r["row"].startswith("phase")
    # Phases are per step: x S compares them with the whole network+env row.
    vs_network = r["median_ms"] * (sims if is_phase else 1) / network_ms
    out.append(
        dict(row=r["row"], backup=r["backup"], batch=batch, sims=sims, median_ms=r["median_ms"],
             per_step_ms=r["per_step_ms"], vs_network=vs_network,
             share_of_step=r.get("share_of_step", math.nan)))
  return out, skipped


def kernel_row(row: str, variant: str, batch: int, sims: int, steps: int,
               events: measure.DeviceEvents) -> dict:
  """A row of `KERNEL_FIELDS` from one traced call.

  Args:
    row: the row's name (a phase, or the whole step).
    variant: the XLA variant.
    batch: games B.
    sims: simulations S.
    steps: simulation steps in the traced call.
    events: the call's device events.

  Returns:
    The row.
  """
  known = events.planes > 0
  per_step = lambda n: n / steps if known else math.nan
  return dict(row=row, variant=variant, batch=batch, sims=sims, steps=steps,
              kernels_per_step=per_step(events.kernels), copies_per_step=per_step(events.copies),
              memsets_per_step=per_step(events.sets), device_ms_per_step=per_step(events.device_ms),
              kernels_total=events.kernels if known else math.nan, accelerator_planes=events.planes)


def kernels_section(plan: report_plan.Plan, nets: Mapping[str, report_plan.ReportNetwork],
                    budget_s: float, trace_dir: str,
                    cache: Mapping) -> tuple[list[dict], list[dict]]:
  """Section 7: kernels, copies and memsets per simulation step, counted in
  `jax.profiler` traces of one call each: the searches of
  `plan.kernel_contestants` (ours also under every XLA variant of the plan)
  at (kernel_batch, kernel_sims) with the MLP, the network+env floor, and
  each phase of one of our simulation steps (`phases.phase_calls`,
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
  deadline = report_plan.clock() + budget_s
  batch, sims = plan.kernel_batch, plan.kernel_sims
  rows, skipped = [], []
  if not batch:
    return rows, skipped
  net = nets["mlp"]
  count = itertools.count()

  def trace(row, variant, steps, fn, args):
    cell = f"{row} {variant} B={batch} S={sims}"
    if report_plan.clock() > deadline:
      skipped.append(report_plan.skip("kernels", cell, "the section's budget was spent"))
      return
    try:
      events = measure.trace_device_events(fn, args, os.path.join(trace_dir, str(next(count))))
    except Exception as error:  # pylint: disable=broad-except
      skipped.append(report_plan.skip("kernels", cell, report_plan.failure(error)))
      return
    rows.append(kernel_row(row, variant, batch, sims, steps, events))
    print(
        f"  {cell:<48} {rows[-1]['kernels_per_step']:8.1f} kernels/step "
        f"{rows[-1]['copies_per_step']:6.2f} copies/step", flush=True)

  for name in plan.kernel_contestants:
    cached = cache.get(("mlp", batch, sims, name))
    contestant = cached[0] if cached else report_search.search_contestant(name, net, batch, sims)
    args = lambda c=contestant: (net.params, jax.random.key(0), c.root)
    ours = report_plan.SEARCH_CONTESTANTS[name][0] != "mctx"
    for variant in ("default",) + (tuple(plan.xla_variants) if ours else ()):
      if variant == "default" and cached:
        search = cached[1]
      else:
        search = measure.with_compiler_options(contestant.search, report_plan.XLA_VARIANTS[variant])
      trace(f"search {name}", variant, sims, search, args)
  env = envs.make("connect4")
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  only = jax.jit(
      functools.partial(phases.network_only, env=env, eval_fn=net.eval_fn, num_steps=sims))
  trace("network+env only", "default", sims, only, lambda: (net.params, state))
  try:
    calls = dict(
        cache.get(("phases", "mcgs", batch, sims)) or
        phases.phase_calls("mcgs", batch, sims, plan.mlp_hidden))
  except Exception as error:  # pylint: disable=broad-except
    skipped.append(
        report_plan.skip("kernels", f"phases B={batch} S={sims}", report_plan.failure(error)))
    return rows, skipped
  calls.pop("search")
  for name, (fn, args) in calls.items():
    trace(f"phase {name}", "default", 1, fn, args)
  return rows, skipped
