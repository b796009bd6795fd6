"""One trained Connect-4 network under several evaluation-search settings.

  python -m experiments.eval_search docs/learning/runs/connect4 --variants base solver q_choice
  python -m experiments.eval_search docs/learning/runs/connect4 --positions 400 --out docs/learning

Training curves score one fixed search (200 PUCT simulations, no noise, no
solver). This script keeps the network and changes the search: each variant
is `SearchConfig` overrides (`VARIANTS`) on top of the run's evaluation
config. Every variant is scored on Pons' six sets (`--positions` per set) and,
so that a setting is not chosen for those sets alone, on freshly generated
solver-labelled positions (`experiments.fresh_check`'s two bands,
`--fresh` per band). Rows are appended to `--out/eval_search.csv` (a rerun
skips the variants already there for the same run directory).
"""

import argparse
import dataclasses
import os
import sys

import jax

from experiments import fresh_check
from learning import agents
from learning import checkpoint
from learning import ground_truth
from learning import loop
from learning import cli

SETS = tuple(ground_truth.C4_SETS)

# SearchConfig fields changed from the run's evaluation search.
VARIANTS = {
    "base": {},
    "solver": dict(solver=True),
    "q_choice": dict(q_value_weight=2.0, q_veto_delta=0.1),
    "lcb": dict(move_choice="lcb"),
    "c_1.25": dict(c_init=1.25),
    "c_4": dict(c_init=4.0),
    "fpu_0": dict(q_init=0.0),
    "gumbel": dict(root_policy="gumbel", gumbel_scale=0.0),
    "tree": dict(backup="tree"),
    "depth_1": dict(depth_i=1),
    "solver_c_1.25": dict(solver=True, c_init=1.25),
}


def variant_config(base, name: str):
  """The run's evaluation SearchConfig with variant `name`'s overrides."""
  if name not in VARIANTS:
    raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
  return dataclasses.replace(base, **VARIANTS[name])


def score(directory: str, base: agents.SearchAgent, name: str, positions: int,
          fresh: int) -> dict:
  """Pons error rates and fresh-position keep rates of variant `name` of the
  run's evaluation search (`base`: the run's network and search)."""
  agent = dataclasses.replace(base, config=variant_config(base.config, name), name=name)
  rng = jax.random.PRNGKey(0)
  errors = ground_truth.connect4_error_rates(agent, rng, positions_per_set=positions)
  row = dict(run=os.path.normpath(directory), variant=name,
             simulations=base.config.num_simulations, positions=positions)
  values = [errors[f"c4_error_{s}"] for s in SETS]
  row.update({f"search_{s}": v for s, v in zip(SETS, values)})
  row["search_mean"] = sum(values) / len(values)
  for band in fresh_check.BANDS if fresh else ():
    labelled = fresh_check.labelled_positions(band, fresh, 2026)
    kept = fresh_check.kept_count(agent, labelled, fresh_check.position_states(labelled), rng)
    row[f"fresh_{band}"] = kept / fresh
  return row


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("run", help="a run directory (config.json and agent.msgpack)")
  parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
  parser.add_argument("--positions", type=int, default=400, help="positions per Pons set")
  parser.add_argument("--fresh", type=int, default=300,
                      help="fresh positions per band (0: Pons' sets only)")
  parser.add_argument("--simulations", type=int, default=200)
  parser.add_argument("--out", default="docs/learning")
  args = parser.parse_args(argv)
  for name in args.variants:
    if name not in VARIANTS:
      parser.error(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
  path = os.path.join(args.out, "eval_search.csv")
  rows = loop.read_metrics(path)
  done = {(r["run"], r["variant"], int(r["simulations"]), int(r["positions"])) for r in rows}
  env, eval_fn, params = checkpoint.load_agent(args.run)
  base = agents.SearchAgent(
      env=env, eval_fn=eval_fn, params=params, name="base",
      config=checkpoint.load_config(args.run).search_config(args.simulations, noise=False))
  for name in args.variants:
    key = (os.path.normpath(args.run), name, args.simulations, args.positions)
    if key in done:
      continue
    row = score(args.run, base, name, args.positions, args.fresh)
    rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    loop.write_metrics(path, rows)
    print(f"{name:14s} Pons: " + " / ".join(f"{100 * row[f'search_{s}']:.1f}" for s in SETS)
          + f"  mean {100 * row['search_mean']:.2f}%   fresh: "
          + ", ".join(f"{band} {100 * row[f'fresh_{band}']:.1f}%" for band in fresh_check.BANDS
                      if f"fresh_{band}" in row),
          flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(cli.main(main))
