"""Where a search's time goes: phases of one simulation step, and the distance
from "only the network".

  mcgs-jax bench-phases                          # B=1024, S=800, MLP(128, 128)
  mcgs-jax bench-phases --batch 1024 --sims 64   # the network-only comparison
  mcgs-jax bench-phases --hidden 512 512 512     # a larger network

Connect-4 from the empty board, the flax MLP as eval_fn. Rows:
  network+env only  S network calls and env steps on B states in a lax.scan,
                    nothing else: the floor any search with S simulations pays.
  search <mode>     the full `mcgs_jax.search` (init, S simulations, summary).
  phase <name>      one phase of a simulation step, jitted on its own and run on
                    the graph half-way through a search (S/2 simulations done),
                    so the graph has realistic depth and occupancy:
                      selection   `selection.select_batch` (PUCT descent, B games)
                      transition  `Model.transition` at the selected edges
                      lookup      the children's keys in the hash tables
                      evaluation  `eval_fn` on the B children (`expansion.evaluate`)
                      expansion+backup  `expansion.expand_and_backup` (vmap)
                      step        `mcgs_jax.simulate`: all of the above, one jit
                    The two that write the graph get it donated (updated in
                    place, as inside the search loop).
Times are medians of repeats after a compile warm-up; a phase's time is per
step (x S gives its share of a search). `vs network` divides by the
network+env row; phases report their share of the `step` row. Writes
results/bench_phases.csv.
"""

from __future__ import annotations

import functools
import sys

from mcgs_jax import envs
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
networks = cli.lazy("mcgs_jax.networks")
jax = cli.lazy("jax")
measure = cli.lazy("mcgs_jax.benchmarks.measure")
phases = cli.lazy("mcgs_jax.benchmarks.phases")


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--sims", type=int, default=800)
  parser.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
  parser.add_argument("--backups", nargs="+", default=["mcgs", "tree"])
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--budget-s", type=float, default=120.0)
  parser.add_argument("--csv", default="results/bench_phases.csv")
  args = parser.parse_args(argv)

  env = envs.make("connect4")
  network = networks.MLP(num_actions=env.num_actions, hidden_sizes=tuple(args.hidden))
  state = env.init(jax.random.PRNGKey(0), batch_size=args.batch)
  params = networks.init_params(network, jax.random.PRNGKey(0), state.observation)
  only = jax.jit(
      functools.partial(phases.network_only, env=env, eval_fn=networks.MLPEval(network),
                        num_steps=args.sims))
  network_ms = phases.median_ms(lambda: only(params, state), args.repeats, args.budget_s)
  rows = [
      dict(row="network+env only", backup="-", median_ms=network_ms,
           per_step_ms=network_ms / args.sims)
  ]
  for backup in args.backups:
    rows += phases.profile(backup, args.batch, args.sims, args.hidden, args.repeats, args.budget_s)
  for r in rows:
    r.update(batch=args.batch, sims=args.sims)
    r["vs_network"] = round(r["median_ms"] /
                            network_ms, 2) if not r["row"].startswith("phase") else round(
                                r["median_ms"] * args.sims / network_ms, 2)
    r.setdefault("share_of_step", "")
    r["median_ms"] = round(r["median_ms"], 2)
    r["per_step_ms"] = round(r["per_step_ms"], 3)
  print(f"MLP hidden {tuple(args.hidden)}, {jax.devices()[0].platform}; phase rows: ms per "
        "step; vs_network: x S over the network+env-only row")
  print(measure.markdown_table(rows, phases.FIELDS))
  measure.write_csv(args.csv, rows, phases.FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
