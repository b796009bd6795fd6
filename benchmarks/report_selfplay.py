"""The accelerator report's self-play section: groups of self-play loops timed in
interleaved rounds, each beside the mctx loop of its root policy.
"""

import math
import statistics
from typing import Any, Sequence

import jax
import jax.numpy as jnp

from mcgs_jax import networks
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import selfplay_speed
from mcgs_jax.benchmarks import names as benchmark_names


def matching_mctx(loop: str) -> str:
  """The mctx self-play loop a loop is compared with.

  Args:
    loop: a `selfplay_speed` contestant name.

  Returns:
    "mctx-gumbel" for the Gumbel loops, "mctx" for the others (itself for
    the mctx loops).
  """
  return "mctx-gumbel" if "gumbel" in loop else "mctx"


def selfplay_group(names: Sequence[str], eval_fn: Any, params: Any, plan: report_plan.Plan,
                   seed: int, deadline: float) -> list[dict]:
  """Times one group of selfplay_speed's loops in interleaved rounds, every
  contestant in every round, so that every one, mctx included, has timed
  calls.

  Each contestant is compiled and burnt in (`selfplay_speed.Runner`), which
  also gives its seconds per call. Then up to `plan.selfplay_rounds` rounds:
  in each, every contestant makes `Runner.time_round`'s untimed call and k
  timed ones, 1 <= k <= `plan.repeats`, k sized so that the rounds left fit
  what is left before `deadline` (and each contestant's timed calls
  `plan.max_seconds`). The first round always runs, whole; a later one only
  when it fits. selfplay_speed's own `bench_rows` instead gives each
  contestant a fixed seconds budget per round, which a loop slower than that
  budget (mctx at a large B on a CPU) never enters: no timed call.

  Args:
    names: selfplay_speed contestant names.
    eval_fn: the MLP's eval_fn.
    params: its variables.
    plan: the Plan.
    seed: the games' seed.
    deadline: `clock()` seconds the rounds should end by.

  Returns:
    selfplay_speed's rows (`selfplay_speed.FIELDS`), one per contestant, all
    "ok"; the ratio fields are NaN (`selfplay_section` fills them).
  """
  args = selfplay_speed.Settings(batch=plan.selfplay_batch, simulations=plan.selfplay_sims,
                                 moves=plan.selfplay_moves, rounds=plan.selfplay_rounds,
                                 repeats=plan.repeats, seed=seed)
  runners, call_s = [], {}
  for name in names:
    runner = selfplay_speed.Runner(name, eval_fn, params, args)
    begin = report_plan.clock()
    runner.compile()
    burn_in_s = report_plan.clock() - begin - runner.compile_s
    calls = selfplay_speed.BURN_IN_CALLS
    call_s[name] = max(burn_in_s / calls if calls and burn_in_s > 0 else runner.compile_s, 1e-6)
    print(
        f"  {name:<20} compiled and burnt in ({runner.compile_s:.1f} s first call, "
        f"~{call_s[name]:.2f} s/call)", flush=True)
    runners.append(runner)
  rounds = plan.selfplay_rounds
  for round_index in range(rounds):
    left = deadline - report_plan.clock()
    share = min(max(left, 0.0) / ((rounds - round_index) * len(runners)), plan.max_seconds / rounds)
    repeats = [max(1, min(plan.repeats, int(share / call_s[r.name]) - 1)) for r in runners]
    round_s = sum((1 + k) * call_s[r.name] for r, k in zip(runners, repeats))
    if round_index > 0 and round_s > left:
      print(
          f"  round {round_index + 1}/{rounds} skipped: predicted {round_s:.0f} s > "
          f"{max(left, 0):.0f} s left", flush=True)
      break
    for runner, k in zip(runners, repeats):
      runner.time_round(k, math.inf)
      call_s[runner.name] = statistics.median(runner.times)
    print(
        f"  round {round_index + 1}/{rounds}: " +
        ", ".join(f"{r.name} {call_s[r.name]:.3f}" for r in runners) + " s/call (medians so far)",
        flush=True)
  return [selfplay_speed.runner_row(runner, args) for runner in runners]


def selfplay_section(plan: report_plan.Plan, seed: int,
                     budget_s: float) -> tuple[list[dict], list[dict]]:
  """Section 2: selfplay_speed's loops, group by group, with the MLP.

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
    (rows, skipped): selfplay_speed's rows plus `group` and
    `ratio_vs_matching_mctx` (positions/s over those of mctx for PUCT
    loops, of mctx-gumbel for Gumbel loops; selfplay_speed's
    `ratio_vs_mctx` and `ratio_vs_mctx_gumbel` over each).
  """
  start = report_plan.clock()
  deadline = start + budget_s
  eval_fn = networks.mlp_eval(report_plan.NUM_ACTIONS, plan.mlp_hidden)
  params = networks.init(eval_fn.network, jax.random.key(seed),
                         jnp.zeros((1,) + report_plan.OBSERVATION_SHAPE, jnp.bool_))
  known = benchmark_names.SELFPLAY_CONTESTANTS + benchmark_names.SELFPLAY_EXTRA_CONTESTANTS
  in_plan = {n for group in plan.selfplay_groups for n in group}
  cell = f"B={plan.selfplay_batch} S={plan.selfplay_sims} moves={plan.selfplay_moves}"
  rows, skipped = [], []
  for name in known:
    if name not in in_plan:
      skipped.append(report_plan.skip("selfplay", f"{cell} {name}", "not in this plan"))
  seconds_per_contestant = 0.0
  groups = plan.selfplay_groups
  for index, group in enumerate(groups):
    skipped += [
        report_plan.skip("selfplay", f"{cell} {n}", "unknown to selfplay_speed")
        for n in group
        if n not in known
    ]
    measured = {r["contestant"] for r in rows}
    names = []
    for name in (n for n in group if n in known):
      reference = matching_mctx(name)
      if reference in group or reference in measured:
        names.append(name)
      else:
        skipped.append(
            report_plan.skip("selfplay", f"{cell} {name}", f"{reference} not measured: "
                             "nothing to compare with"))
    left = deadline - report_plan.clock()
    predicted = seconds_per_contestant * len(names)
    if not names or left <= 0 or predicted > left:
      skipped += [
          report_plan.skip(
              "selfplay", f"{cell} {n}", f"group predicted {predicted:.0f} s > "
              f"{max(left, 0):.0f} s left of the budget") for n in names
      ]
      continue
    group_start = report_plan.clock()
    try:
      group_rows = selfplay_group(names, eval_fn, params, plan, seed,
                                  start + budget_s * (index + 1) / len(groups))
    except Exception as error:  # pylint: disable=broad-except
      skipped += [
          report_plan.skip("selfplay", f"{cell} {n}", report_plan.failure(error)) for n in names
      ]
      continue
    seconds_per_contestant = (report_plan.clock() - group_start) / len(names)
    rows += [{**row, "group": index + 1} for row in group_rows]
  speed = {r["contestant"]: r["positions_per_s"] for r in rows}
  for row in rows:
    for field, reference in (("ratio_vs_mctx", "mctx"), ("ratio_vs_mctx_gumbel", "mctx-gumbel"),
                             ("ratio_vs_matching_mctx", matching_mctx(row["contestant"]))):
      row[field] = (row["positions_per_s"] / speed[reference] if reference in speed else math.nan)
  return rows, skipped
