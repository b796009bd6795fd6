"""What the graph costs over the tree: the same searches and self-play loops
with `backup="mcgs"` and `backup="tree"`, compiled in one process and timed
in interleaved rounds by process CPU time (`mcgs-jax bench-graph-tax`).

Cells (Connect-4 with the benchmark MLP(128, 128), and Nim (1,3,5,7) with an
MLP(64, 64); random networks, PUCT):
  search-b1024-s64, search-b256-s200, search-b64-s800   one search from the
                                                        empty board
  selfplay-connect4, selfplay-nim   `selfplay.play`, B=256, S=64, 8 moves per
                                    call, graph reuse, root noise
  control-selfplay-connect4   the Connect-4 self-play cell's mcgs program
                    timed against a second copy of itself (in the tree's
                    column): its ratio, 1.0 but for noise, and its spread
                    are what the run can resolve
  floor-b1024-s64   the network and env steps alone (`phases.network_only`),
                    for the full search's distance from it
`network_cells` (`--networks`): Nim (1,3,5,7) self-play as graph-vs-tree
trains it (B=128, S=64), with networks from graph-vs-tree's MLP(32, 32) to
an MLP(1024, 1024), and with an evaluation budget (`max_nn_evals`=64 of 256
simulations), for how a network's cost dilutes the graph's.
`part_cells` (`--parts`): the self-play cells with the graph's switches
turned on one at a time against the tree: the table alone (`tt_cache`: each
new node looked up and indexed, no links), links without corrections
(`LINKS_ONLY`), then `mcgs`, for where the graph's self-play cost lies.
`profile` (`--profile`): the self-play cells' kernel time by phase of the
search (`kernel_phases`), mcgs against tree, for where it lies within.
Each round times every cell's mcgs and tree calls one after the other, the
first of the two alternating between rounds; a cell's ratio is the median of
its rounds' mcgs / tree ratios.
"""

import collections
import dataclasses
import functools
import os
import statistics
import time
from typing import Callable

import jax

from mcgs_jax import envs
from mcgs_jax import modes
import mcgs_jax
from mcgs_jax.benchmarks import kernel_phases
from mcgs_jax.benchmarks import phases
from mcgs_jax.learning import selfplay
from mcgs_jax.networks import MLP, MLPEval, init_params

FIELDS = ("cell", "mcgs_cpu_ms", "tree_cpu_ms", "ratio", "ratio_min", "ratio_max", "rounds")
PROFILE_FIELDS = ("cell", "phase", "mcgs_ms", "tree_ms", "difference_ms", "share_of_difference",
                  "mcgs_launches", "tree_launches", "rounds")
SOURCE_FIELDS = ("cell", "phase", "source", "mcgs_ms", "tree_ms", "difference_ms", "mcgs_launches",
                 "tree_launches", "rounds")
SEARCH_CELLS = ((1024, 64), (256, 200), (64, 800))
SELFPLAY = dict(batch=256, simulations=64, moves=8)
QUICK_SEARCH_CELLS = ((16, 8),)
QUICK_SELFPLAY = dict(batch=8, simulations=8, moves=2)
# Nim self-play cells of `network_cells`: (hidden sizes, simulations, max_nn_evals).
NETWORK_CELLS = (((32, 32), 64, None), ((512, 512), 64, None), ((1024, 1024), 64, None),
                 ((32, 32), 256, 64), ((512, 512), 256, 64))
QUICK_NETWORK_CELLS = (((8,), 8, None), ((8,), 16, 8))
# The graph without its corrections: links only (registered on first use).
LINKS_ONLY = "links-only"
# `part_cells`: (cell name suffix, backup timed against the tree).
PARTS = (("-table", "tt_cache"), ("-links", LINKS_ONLY), ("", "mcgs"))


@dataclasses.dataclass
class Cell:
  """One cell: a call per backup, each a zero-argument callable blocked on;
  for `profile`, the text of each call's compiled program (a callable that
  compiles it)."""
  name: str
  calls: dict[str, Callable[[], object]]
  programs: dict[str, Callable[[], str]] = dataclasses.field(default_factory=dict)


def _network(env, hidden):
  network = MLP(num_actions=env.num_actions, hidden_sizes=hidden)
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  return MLPEval(network), init_params(network, jax.random.PRNGKey(0), state.observation)


def search_cell(batch: int, sims: int) -> Cell:
  """One Connect-4 search from the empty board, mcgs and tree.

  Args:
    batch: B, games.
    sims: S, simulations.

  Returns:
    The Cell.
  """
  env = envs.make("connect4")
  eval_fn, params = _network(env, (128, 128))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  calls = {}
  for backup in ("mcgs", "tree"):
    config = mcgs_jax.SearchConfig(num_simulations=sims, backup=backup)
    search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
    calls[backup] = functools.partial(lambda s: s(params, jax.random.PRNGKey(1), state).action,
                                      search)
  return Cell(f"search-b{batch}-s{sims}", calls)


def selfplay_cell(game: str, batch: int, simulations: int, moves: int,
                  hidden: tuple[int, ...] | None = None, max_nn_evals: int | None = None,
                  name: str | None = None, graph_backup: str = "mcgs",
                  against: str = "tree") -> Cell:
  """`selfplay.play` with graph reuse, mcgs and tree, each on its own games.

  Args:
    game: an env id ("connect4", "nim").
    batch: B, games.
    simulations: S per move.
    moves: moves per call.
    hidden: the MLP's hidden sizes; None: (128, 128) on Connect-4, (64, 64)
      otherwise.
    max_nn_evals: the search's evaluation budget (None: none).
    name: the cell's name; None: "selfplay-GAME".
    graph_backup: the backup mode timed in the cell's "mcgs" place.
    against: the backup mode timed in its "tree" place (`graph_backup`
      itself: a control, the same program compiled twice).

  Returns:
    The Cell; each call plays the next `moves` moves of its games.
  """
  env = envs.make(game)
  if hidden is None:
    hidden = (128, 128) if game == "connect4" else (64, 64)
  eval_fn, params = _network(env, hidden)
  calls, programs = {}, {}
  for place, backup in (("mcgs", graph_backup), ("tree", against)):
    search = mcgs_jax.SearchConfig(num_simulations=simulations, backup=backup,
                                   max_nodes=2 * (simulations + 1), dirichlet_fraction=0.25,
                                   dirichlet_alpha=0.3, max_nn_evals=max_nn_evals)
    config = selfplay.SelfPlayConfig(search=search, reuse_graph=True)
    play = jax.jit(functools.partial(selfplay.play, env=env, eval_fn=eval_fn, config=config,
                                     num_moves=moves))
    games = {"state": selfplay.init(jax.random.PRNGKey(0), env, batch), "calls": 0}

    def call(play=play, games=games):
      games["calls"] += 1
      state, *_ = play(params, jax.random.fold_in(jax.random.PRNGKey(1), games["calls"]),
                       games["state"])
      games["state"] = state
      return state

    calls[place] = call
    # The same lowering compiles to the same program, instruction names and all.
    programs[place] = functools.partial(
        lambda play, games: play.lower(params, jax.random.PRNGKey(1),
                                       games["state"]).compile().as_text(), play, games)
  return Cell(name or f"selfplay-{game.split(':')[0]}", calls, programs)


def floor_cell(batch: int, sims: int) -> Cell:
  """The network and env floor beside the mcgs search of the same shape.

  Args:
    batch: B, games.
    sims: S, network calls and env steps.

  Returns:
    The Cell (its "tree" call is the floor).
  """
  env = envs.make("connect4")
  eval_fn, params = _network(env, (128, 128))
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  floor = jax.jit(functools.partial(phases.network_only, env=env, eval_fn=eval_fn,
                                    num_steps=sims))
  config = mcgs_jax.SearchConfig(num_simulations=sims)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=eval_fn, config=config))
  return Cell(f"floor-b{batch}-s{sims}", {
      "mcgs": lambda: search(params, jax.random.PRNGKey(1), state).action,
      "tree": lambda: floor(params, state)})   # "tree" here: the floor


def cells(quick: bool = False) -> list[Cell]:
  """Every cell, compiled lazily on its first call.

  Args:
    quick: tiny shapes (a smoke test).

  Returns:
    The cells in `measure`'s order.
  """
  grid, play = (QUICK_SEARCH_CELLS, QUICK_SELFPLAY) if quick else (SEARCH_CELLS, SELFPLAY)
  out = [search_cell(b, s) for b, s in grid]
  out += [selfplay_cell(game, play["batch"], play["simulations"], play["moves"])
          for game in ("connect4", "nim")]
  out.append(selfplay_cell("connect4", play["batch"], play["simulations"], play["moves"],
                           name="control-selfplay-connect4", against="mcgs"))
  out.append(floor_cell(*grid[0]))
  return out


def network_cells(quick: bool = False) -> list[Cell]:
  """Nim self-play cells over network sizes and an evaluation budget
  (`NETWORK_CELLS`), named e.g. "nim-512x512-s64" or "nim-32x32-s256-e64".

  Args:
    quick: tiny shapes (a smoke test).

  Returns:
    The cells.
  """
  batch, moves = (8, 2) if quick else (128, 8)
  return [selfplay_cell("nim", batch, sims, moves, hidden, evals,
                        name=f"nim-{'x'.join(map(str, hidden))}-s{sims}"
                        + (f"-e{evals}" if evals else ""))
          for hidden, sims, evals in (QUICK_NETWORK_CELLS if quick else NETWORK_CELLS)]


def part_cells(quick: bool = False) -> list[Cell]:
  """The self-play cells of `cells` once per switch of the graph (`PARTS`),
  named e.g. "selfplay-nim-table", "selfplay-nim-links", "selfplay-nim".

  Args:
    quick: tiny shapes (a smoke test).

  Returns:
    The cells, each game's in `PARTS`' order.
  """
  if LINKS_ONLY not in modes.names():
    modes.register(modes.BackupMode(LINKS_ONLY, "the graph's links without corrections",
                                    uses_table=True, links_transpositions=True))
  play = QUICK_SELFPLAY if quick else SELFPLAY
  return [selfplay_cell(game, play["batch"], play["simulations"], play["moves"],
                        name=f"selfplay-{game}{suffix}", graph_backup=backup)
          for game in ("connect4", "nim") for suffix, backup in PARTS]


def _cpu_ms(call, repeats: int) -> float:
  times = []
  for _ in range(repeats):
    start = time.process_time()
    jax.block_until_ready(call())
    times.append(1e3 * (time.process_time() - start))
  return statistics.median(times)


def measure(all_cells: list[Cell], rounds: int, repeats: int, log=print) -> list[dict]:
  """Interleaved rounds over every cell; one row per cell (`FIELDS`).

  Args:
    all_cells: the cells (`cells`).
    rounds: rounds of timing.
    repeats: timed calls per backup per cell per round (their median).
    log: where each round's ratios are printed.

  Returns:
    Rows: each cell's median CPU ms per call of mcgs and of tree (for the
    floor cell: of the floor) and the median, least and largest of its
    rounds' ratios.
  """
  for cell in all_cells:   # compile, and spread self-play over the opening
    for call in cell.calls.values():
      for _ in range(3):
        jax.block_until_ready(call())
  times = {(c.name, b): [] for c in all_cells for b in ("mcgs", "tree")}
  for index in range(rounds):
    order = ("mcgs", "tree") if index % 2 == 0 else ("tree", "mcgs")
    for cell in all_cells:
      for backup in order:
        times[cell.name, backup].append(_cpu_ms(cell.calls[backup], repeats))
    log(f"  round {index + 1}/{rounds}: " + ", ".join(
        f"{c.name} {times[c.name, 'mcgs'][-1] / times[c.name, 'tree'][-1]:.3f}"
        for c in all_cells))
  rows = []
  for cell in all_cells:
    ratios = [m / t for m, t in zip(times[cell.name, "mcgs"], times[cell.name, "tree"])]
    rows.append(dict(cell=cell.name, mcgs_cpu_ms=round(statistics.median(times[cell.name, "mcgs"]), 2),
                     tree_cpu_ms=round(statistics.median(times[cell.name, "tree"]), 2),
                     ratio=round(statistics.median(ratios), 3), ratio_min=round(min(ratios), 3),
                     ratio_max=round(max(ratios), 3), rounds=rounds))
  return rows


def profile_cells(quick: bool = False) -> list[Cell]:
  """The self-play cells of `cells`, for `profile`.

  Args:
    quick: tiny shapes (a smoke test).

  Returns:
    The Connect-4 and Nim self-play cells.
  """
  play = QUICK_SELFPLAY if quick else SELFPLAY
  return [selfplay_cell(game, play["batch"], play["simulations"], play["moves"])
          for game in ("connect4", "nim")]


def _warm_programs(cell: Cell, trace_dir: str) -> dict[str, str]:
  """The texts of a cell's mcgs and tree programs, each compiled, run over
  the opening and traced once (a process's first traces run slowly while
  the profiler starts up: that one is left out)."""
  texts = {backup: cell.programs[backup]() for backup in ("mcgs", "tree")}
  for call in cell.calls.values():   # compile, and spread self-play over the opening
    for _ in range(3):
      jax.block_until_ready(call())
  for backup, text in texts.items():
    kernel_phases.kernels(cell.calls[backup], text, os.path.join(trace_dir, "warm-up"))
  return texts


def profile(all_cells: list[Cell], rounds: int, trace_dir: str, log=print) -> list[dict]:
  """Kernel time by phase of each cell's mcgs and tree calls
  (`kernel_phases.kernels`), `rounds` traced calls each, alternating.

  Args:
    all_cells: cells with their programs (`profile_cells`).
    rounds: traced calls per backup per cell.
    trace_dir: a folder for the traces (its contents replaced).
    log: where each cell's table line is printed.

  Returns:
    Rows (`PROFILE_FIELDS`): per cell, one per phase (`kernel_phases.PHASES`)
    and a "total": the mean kernel ms per call of mcgs and of tree, their
    difference, the phase's share of the cell's total difference, and the
    mean kernel launches per call of each.
  """
  rows = []
  for cell in all_cells:
    texts = _warm_programs(cell, trace_dir)
    totals = {backup: dict.fromkeys(kernel_phases.PHASES, 0.0) for backup in texts}
    launches = {backup: dict.fromkeys(kernel_phases.PHASES, 0) for backup in texts}
    for index in range(rounds):
      for backup in ("mcgs", "tree") if index % 2 == 0 else ("tree", "mcgs"):
        ms, count = kernel_phases.kernels(cell.calls[backup], texts[backup],
                                          os.path.join(trace_dir, f"{cell.name}-{backup}"))
        for phase in kernel_phases.PHASES:
          totals[backup][phase] += ms[phase] / rounds
          launches[backup][phase] += count[phase]
    for per_phase in (*totals.values(), *launches.values()):
      per_phase["total"] = sum(per_phase.values())
    difference = totals["mcgs"]["total"] - totals["tree"]["total"]
    for phase in kernel_phases.PHASES + ("total",):
      mcgs_ms, tree_ms = totals["mcgs"][phase], totals["tree"][phase]
      rows.append(dict(cell=cell.name, phase=phase, mcgs_ms=round(mcgs_ms, 2),
                       tree_ms=round(tree_ms, 2), difference_ms=round(mcgs_ms - tree_ms, 2),
                       share_of_difference=round((mcgs_ms - tree_ms) / difference, 3)
                       if difference else float("nan"),
                       mcgs_launches=round(launches["mcgs"][phase] / rounds),
                       tree_launches=round(launches["tree"][phase] / rounds), rounds=rounds))
    log(f"  {cell.name}: mcgs {rows[-1]['mcgs_ms']} ms, tree {rows[-1]['tree_ms']} ms of kernels "
        "per call")
  return rows


def profile_sources(all_cells: list[Cell], rounds: int, trace_dir: str, phase: str,
                    log=print) -> list[dict]:
  """`profile`'s kernel time of one phase by jax source path
  (`kernel_phases.source_kernels`): which operations of the phase make the
  difference between mcgs and tree.

  Args:
    all_cells: cells with their programs (`profile_cells`).
    rounds: traced calls per backup per cell.
    trace_dir: a folder for the traces (its contents replaced).
    phase: one of `kernel_phases.PHASES`.
    log: where each cell's line is printed.

  Returns:
    Rows (`SOURCE_FIELDS`): per cell, one per source path of the phase in
    either program, the largest difference (mcgs - tree) first: the mean
    kernel ms and launches per call of each.
  """
  rows = []
  for cell in all_cells:
    texts = _warm_programs(cell, trace_dir)
    totals = {backup: collections.Counter() for backup in texts}
    launches = {backup: collections.Counter() for backup in texts}
    for index in range(rounds):
      for backup in ("mcgs", "tree") if index % 2 == 0 else ("tree", "mcgs"):
        ms, count = kernel_phases.source_kernels(
            cell.calls[backup], texts[backup], os.path.join(trace_dir, f"{cell.name}-{backup}"),
            phase)
        totals[backup].update(ms)
        launches[backup].update(count)
    sources = set(totals["mcgs"]) | set(totals["tree"])
    cell_rows = [dict(cell=cell.name, phase=phase, source=source,
                      mcgs_ms=round(totals["mcgs"][source] / rounds, 3),
                      tree_ms=round(totals["tree"][source] / rounds, 3),
                      difference_ms=round((totals["mcgs"][source] - totals["tree"][source])
                                          / rounds, 3),
                      mcgs_launches=round(launches["mcgs"][source] / rounds),
                      tree_launches=round(launches["tree"][source] / rounds), rounds=rounds)
                 for source in sources]
    rows += sorted(cell_rows, key=lambda row: (-row["difference_ms"], row["source"]))
    log(f"  {cell.name} {phase}: mcgs {sum(r['mcgs_ms'] for r in cell_rows):.2f} ms, tree "
        f"{sum(r['tree_ms'] for r in cell_rows):.2f} ms of kernels per call")
  return rows
