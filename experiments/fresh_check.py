"""Connect-4 agents on freshly generated positions (not Pons' sets).

  python -m experiments.fresh_check --agents docs/learning/runs/connect4 networks/pretrained/connect4
  python -m experiments.fresh_check --agents runs/c4 --count 300 --seed 7 --out docs/learning

Training is measured on Pons' six sets; this check guards against tuning to
them. For a seed it draws random-play positions in two bands, "early-middle"
(8-14 stones) and "middle" (15-24 stones), none over and none with an
immediate win for the side to move (`envs.pons.generate`), and labels
every column with the exact solver (`envs.connect4_solver`; the labelled sets
are cached in `results/`). Each agent (a run directory or shipped agent:
its network with a `--simulations` PUCT MCGS, no noise, and its raw policy)
and the reference, an MCTS-Solver with random rollouts (`--reference-
simulations`, the terminal solver on), choose a move in every position; a
move keeps the outcome when it keeps the position's exact result (won stays
won, drawn stays drawn; any move in a lost position). Rates with Wilson 95%
intervals go to `--out/fresh_check.csv` and print as a table; a rerun keeps
the file's rows and measures only the contestants (and the reference) not yet
there for the seed.
"""

import argparse
import os
import pathlib
import sys

import jax
import numpy as np

import envs
import mcgs_jax
from envs import connect4
from envs import pons
from learning import evaluation
from learning import agents
from learning import checkpoint
from learning import loop
from learning import cli

BANDS = {"early-middle": (8, 14), "middle": (15, 24)}
CACHE = pathlib.Path("results")


def labelled_positions(band: str, count: int, seed: int) -> list[pons.Position]:
  """`count` solved positions of `band`, cached in results/fresh_<band>_<count>_<seed>.txt."""
  low, high = BANDS[band]
  path = CACHE / f"fresh_{band}_{count}_{seed}.txt"
  if path.exists():
    return pons.load_positions(str(path))
  positions = pons.generate(count, low, high, seed + low)
  CACHE.mkdir(exist_ok=True)
  path.write_text("".join(pons.format_columns_line(p.moves, p.column_scores) + "\n"
                          for p in positions))
  return positions


def kept_count(agent, positions: list[pons.Position], states, rng: jax.Array) -> int:
  """How many of `positions` (their `states`, stacked) keep their exact
  outcome under the agent's move."""
  moves = agents.act_in_chunks(agent, rng, states, chunk_size=100)
  return sum(p.preserves(int(m)) for p, m in zip(positions, moves))


def position_states(positions):
  """The Connect-4 states of `positions`, stacked along a leading batch axis."""
  return jax.tree.map(lambda *xs: np.stack(xs),
                      *[jax.tree.map(np.asarray, connect4.from_moves(p.moves)) for p in positions])


def contestants(agent_dirs, simulations: int, reference_simulations: int):
  """(name, Agent) pairs: each agent's search and raw policy, then the reference."""
  env = envs.make("connect4")
  out = []
  for directory in agent_dirs:
    agent_env, eval_fn, params = checkpoint.load_agent(directory)
    config = mcgs_jax.SearchConfig(num_simulations=simulations, max_nodes=3 * (simulations + 1),
                                   check_evaluator=True)
    name = os.path.normpath(directory)
    out.append((f"{name} search {simulations}",
                agents.SearchAgent(env=agent_env, eval_fn=eval_fn, params=params, config=config)))
    out.append((f"{name} raw policy", agents.PolicyAgent(eval_fn=eval_fn, params=params)))
  reference = mcgs_jax.SearchConfig(num_simulations=reference_simulations, solver=True)
  out.append((f"MCTS-Solver, {reference_simulations} random rollouts",
              agents.SearchAgent(env=env, eval_fn=envs.rollout_eval(env, num_rollouts=1),
                                 config=reference)))
  return out


def merge_rows(previous: list[dict], new: list[dict]) -> list[dict]:
  """`previous` then `new`, a new row replacing a previous one of the same
  (band, agent, seed)."""
  def key(row):
    return row["band"], row["agent"], str(row["seed"])
  replaced = {key(row) for row in new}
  return [row for row in previous if key(row) not in replaced] + list(new)


def run(agent_dirs, count: int, seed: int, simulations: int, reference_simulations: int,
        out: str | None) -> list[dict]:
  """Measures every contestant not yet in `out`/fresh_check.csv for `seed`
  (delete its rows to measure it again) and writes the file: the earlier rows,
  then the new ones."""
  path = os.path.join(out, "fresh_check.csv") if out else None
  previous = loop.read_metrics(path) if path else []
  done = {(r["band"], r["agent"]) for r in previous if r["seed"] == str(seed)}
  rows = []
  players = contestants(agent_dirs, simulations, reference_simulations)
  for band in BANDS:
    positions = labelled_positions(band, count, seed)
    states = position_states(positions)
    for name, agent in players:
      if (band, name) in done:
        print(f"{band:12s} {name:55s} already in {path}", flush=True)
        continue
      kept = kept_count(agent, positions, states, jax.random.PRNGKey(seed))
      low, high = evaluation.wilson_interval(kept, len(positions))
      rows.append(dict(band=band, stones=f"{BANDS[band][0]}-{BANDS[band][1]}", agent=name,
                       positions=len(positions), keeps_outcome=round(kept / len(positions), 4),
                       low=round(low, 4), high=round(high, 4), seed=seed))
      print(f"{band:12s} {name:55s} keeps the outcome in {100 * kept / len(positions):5.1f}% "
            f"[{100 * low:.1f}, {100 * high:.1f}]", flush=True)
  if path and rows:
    os.makedirs(out, exist_ok=True)
    loop.write_metrics(path, merge_rows(previous, rows))
  return rows


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--agents", nargs="+", required=True,
                      help="run directories or shipped agents (config.json + agent.msgpack)")
  parser.add_argument("--count", type=int, default=300, help="positions per band")
  parser.add_argument("--seed", type=int, default=2026)
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--reference-simulations", type=int, default=1000)
  parser.add_argument("--out", default=None, help="folder for fresh_check.csv")
  args = parser.parse_args(argv)
  run(args.agents, args.count, args.seed, args.simulations, args.reference_simulations,
      args.out)


if __name__ == "__main__":
  sys.exit(cli.main(main))
