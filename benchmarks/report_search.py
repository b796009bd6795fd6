"""The accelerator report's search section (ours and mctx's over a B x S grid, cells
predicted from those done and skipped whole when they would not fit) and its memory rows.
"""

import math
import statistics
from typing import Mapping, Sequence

import jax
import pgx

from mcgs_jax.benchmarks import measure
from mcgs_jax.benchmarks import report_plan
from mcgs_jax.benchmarks import search_speed


def search_contestant(name: str, net: report_plan.ReportNetwork, batch: int,
                      sims: int) -> search_speed.Contestant:
  """search_speed's contestant for a `SEARCH_CONTESTANTS` name.

  Args:
    name: e.g. "mctx-gumbel", "tree-puct".
    net: the network.
    batch: B.
    sims: S.

  Returns:
    search_speed.Contestant.
  """
  search, policy = report_plan.SEARCH_CONTESTANTS[name]
  if search == "mctx":
    return search_speed.mctx_contestant(net.module, batch, sims, pgx.make("connect_four"),
                                        policy="muzero" if policy == "puct" else "gumbel_muzero",
                                        eval_fn=net.eval_fn)
  return search_speed.mcgs_contestant(net.module, search, batch, sims, root_policy=policy,
                                      eval_fn=net.eval_fn)


def search_cell(name: str, net: report_plan.ReportNetwork, batch: int, sims: int, repeats: int,
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
  search, policy = report_plan.SEARCH_CONTESTANTS[name]
  row = dict(network=net.label, batch=batch, sims=sims, contestant=name, search=search,
             policy=policy, status="ok", compile_s=math.nan, warmup_s=math.nan, repeats=0,
             median_ms=math.nan, sims_per_s=math.nan, ratio_vs_mctx=math.nan,
             nodes_per_game=math.nan, nn_evals_per_game=math.nan, state_bytes_per_game=math.nan,
             xla_temp_bytes=math.nan, xla_output_bytes=math.nan)
  contestant = search_contestant(name, net, batch, sims)
  timing = measure.compile_and_time(contestant.search,
                                    (net.params, jax.random.key(0), contestant.root), repeats,
                                    budget_s)
  row.update(compile_s=timing.compile_s, warmup_s=timing.compile_s + timing.first_call_s)
  if cache is not None:
    cache[(net.label, batch, sims, name)] = (contestant, timing.compiled, timing.compile_s)
  if not timing.times:
    row["status"] = f"skipped (first call {timing.first_call_s:.0f} s over the budget)"
    return row
  seconds = statistics.median(timing.times)
  nodes, evals, state_bytes = contestant.metrics(timing.output)
  temp_bytes, output_bytes = report_plan.xla_sizes(timing.compiled)
  row.update(repeats=len(timing.times), median_ms=1e3 * seconds, sims_per_s=batch * sims / seconds,
             nodes_per_game=nodes, nn_evals_per_game=evals, state_bytes_per_game=state_bytes,
             xla_temp_bytes=temp_bytes, xla_output_bytes=output_bytes)
  return row


def with_search_ratios(rows: list[dict]) -> list[dict]:
  """The rows with `ratio_vs_mctx`: ms over the ms of the matching mctx
  policy (`MCTX_OF_POLICY`) in the same network and cell; NaN without one.

  Args:
    rows: search rows.

  Returns:
    New rows.
  """
  reference = {
      (r["network"], r["batch"], r["sims"], r["contestant"]): r["median_ms"]
      for r in rows
      if r["status"] == "ok"
  }
  out = []
  for r in rows:
    ref = reference.get(
        (r["network"], r["batch"], r["sims"], report_plan.MCTX_OF_POLICY[r["policy"]]))
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
  measured = [
      r for r in done
      if r["contestant"] == name and r["status"] == "ok" and r["batch"] * r["sims"] <= batch * sims
  ]
  if not measured:
    return None
  ref = max(measured, key=lambda r: (r["batch"] == batch, r["batch"] * r["sims"]))
  call_s = ref["median_ms"] / 1e3 * (batch * sims) / (ref["batch"] * ref["sims"])
  timed = min(repeats, max(1, math.ceil(timed_s / max(call_s, 1e-9))))
  return ref["compile_s"] + call_s, ref["compile_s"] + call_s * (1 + timed)


def predict_cell(done: Sequence[dict], names: Sequence[str], batch: int, sims: int, repeats: int,
                 timed_s: float) -> tuple[float, dict[str, float]]:
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


def search_cell_group(names: Sequence[str], net: report_plan.ReportNetwork, batch: int, sims: int,
                      plan: report_plan.Plan,
                      cache: dict | None = None) -> tuple[list[dict], list[dict]]:
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
  for name in (n for n in report_plan.SEARCH_CONTESTANTS if n in names):
    cell = f"{net.description} B={batch} S={sims} {name}"
    reference = report_plan.MCTX_OF_POLICY[report_plan.SEARCH_CONTESTANTS[name][1]]
    if name != reference and status.get(reference) != "ok":
      why = status.get(reference, "not in this plan")
      skipped.append(
          report_plan.skip("search", cell, f"{reference} not measured in this cell ({why})"))
      continue
    try:
      row = search_cell(name, net, batch, sims, plan.repeats, plan.max_seconds, cache)
    except Exception as error:  # pylint: disable=broad-except
      status[name] = report_plan.failure(error)
      skipped.append(report_plan.skip("search", cell, status[name]))
      continue
    status[name] = row["status"]
    if row["status"] != "ok":
      skipped.append(report_plan.skip("search", cell, row["status"]))
    rows.append(row)
    print(f"  {cell:<44} {row['median_ms']:10.2f} ms  compile {row['compile_s']:.1f} s", flush=True)
  return rows, skipped


def search_section(plan: report_plan.Plan, nets: Mapping[str, report_plan.ReportNetwork],
                   budget_s: float, cache: dict | None = None) -> tuple[list[dict], list[dict]]:
  """Section 1: every network's contestants over its B x S grid, cell by
  cell (`ordered_cells`).

  Each network gets its share of the budget (`Plan.search_shares`, equal
  where not given; time a network leaves unused passes to the next); a
  contestant runs in the cells `Plan.runs_in` gives it. A cell is measured
  whole (`search_cell_group`) or skipped whole: skipped when its predicted seconds (`predict_cell`)
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
  start = report_plan.clock()
  rows, skipped = [], []
  labels = list(plan.search_contestants)
  shares = [plan.search_shares.get(label, 1.0 / len(labels)) for label in labels]
  for index, label in enumerate(labels):
    net = nets[label]
    deadline = start + budget_s * sum(shares[:index + 1]) / sum(shares)
    for batch, sims in report_plan.ordered_cells(plan.search_batches(label), plan.sims):
      cell = f"{net.description} B={batch} S={sims}"
      names = [n for n in plan.search_contestants[label] if plan.runs_in(n, batch, sims)]
      skipped += [
          report_plan.skip("search", f"{cell} {n}", "not in this plan")
          for n in report_plan.SEARCH_CONTESTANTS
          if n not in names
      ]
      done = [r for r in rows if r["network"] == label]
      predicted, warmups = predict_cell(done, names, batch, sims, plan.repeats, plan.max_seconds)
      left = deadline - report_plan.clock()
      whole = f"{cell}, all {len(names)} contestants"
      slow = {n: w for n, w in warmups.items() if w > plan.max_seconds}
      if left <= 0 or predicted > left:
        skipped.append(
            report_plan.skip(
                "search", whole, f"cell predicted {predicted:.0f} s > "
                f"{max(left, 0):.0f} s left of the budget"))
        continue
      if slow:
        name, warmup = max(slow.items(), key=lambda item: item[1])
        skipped.append(
            report_plan.skip(
                "search", whole, f"{name} predicted {warmup:.0f} s to compile "
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
  mib = 2.0**20
  return [
      dict(network=r["network"], batch=r["batch"], sims=r["sims"], contestant=r["contestant"],
           nodes_per_game=r["nodes_per_game"], state_bytes_per_game=r["state_bytes_per_game"],
           state_mib_all_games=r["state_bytes_per_game"] * r["batch"] / mib,
           xla_temp_mib=r["xla_temp_bytes"] / mib, xla_output_mib=r["xla_output_bytes"] / mib)
      for r in search_rows
      if r["status"] == "ok"
  ]


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
  return dict(after_section=section, section_s=section_s, compiles=len(known) if known else "-",
              compile_s_total=sum(known) if known else math.nan,
              compile_s_max=max(known) if known else math.nan, **report_plan.device_memory())
