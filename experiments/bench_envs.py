"""Connect-4 env throughput: `mcgs_jax.envs.make("connect4")` vs pgx's `connect_four`.

  mcgs-jax bench-envs                  # batch 4096, 256 steps per call
  mcgs-jax bench-envs --batch 1024 4096 16384 --steps 128

Both envs play a batch of games inside one jitted `lax.scan` of `--steps`
steps; a game that ends is replaced by a fresh one (auto-reset). Two ways to
choose the moves, the same for both envs:
  random-play  a uniformly random legal move (`mcgs_jax.envs.base.random_legal_action`)
  cyclic-play  the first legal column from a rotating offset: no RNG, so the
               time is the envs' `step`, legal mask and reset
steps/s counts single-game steps.
"""

from __future__ import annotations

import statistics
import sys

from mcgs_jax import envs
from mcgs_jax.learning import cli

# The library and jax, loaded on first use: after the arguments are checked.
jax = cli.lazy("jax")
jnp = cli.lazy("jax.numpy")
pgx = cli.lazy("pgx")
base = cli.lazy("mcgs_jax.envs.base")
measure = cli.lazy("mcgs_jax.benchmarks.measure")

FIELDS = ("backend", "batch", "steps", "mode", "env", "warmup_s", "median_ms",
          "steps_per_s", "speedup_vs_pgx")


def _ours():
  env = envs.make("connect4")
  return env.init, env.step


def _pgx():
  env = pgx.make("connect_four")
  init = lambda rng, batch_size: jax.vmap(env.init)(jax.random.split(rng, batch_size))
  return init, jax.vmap(env.step)


ENVS = {"mcgs_jax": _ours, "pgx": _pgx}


def _play(init, step, batch_size: int, num_steps: int, choose):
  """Jitted `rng -> games finished` playing `num_steps` steps of a batch of
  games with auto-reset; `choose(rng, i, legal [B, A]) -> action [B]`."""

  def run(rng):
    fresh = init(rng, batch_size)

    def body(carry, xs):
      state, finished = carry
      i, step_rng = xs
      state = step(state, choose(step_rng, i, state.legal_action_mask))
      done = state.terminated
      state = jax.tree.map(
          lambda new, old: jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old),
          fresh, state)
      return (state, finished + done.sum()), None

    xs = (jnp.arange(num_steps), jax.random.split(rng, num_steps))
    (_, finished), _ = jax.lax.scan(body, (fresh, jnp.int32(0)), xs)
    return finished

  return jax.jit(run)


def _random_choice(rng, i, legal):
  del i
  return base.random_legal_action(rng, legal)


def _cyclic_choice(rng, i, legal):
  """The first legal column at or after (i + game index) mod A: no RNG."""
  del rng
  batch, num_actions = legal.shape
  order = (jnp.arange(num_actions)[None, :] + i + jnp.arange(batch)[:, None]) % num_actions
  first = jnp.argmax(jnp.take_along_axis(legal, order, axis=1), axis=1)
  return jnp.take_along_axis(order, first[:, None], axis=1)[:, 0].astype(jnp.int32)


MODES = {"random-play": _random_choice, "cyclic-play": _cyclic_choice}
def bench(batch_sizes, num_steps, repeats, budget_s):
  rows = []
  backend = jax.default_backend()
  for batch in batch_sizes:
    for mode, build in MODES.items():
      cell = []
      for name, make in ENVS.items():
        init, step = make()
        fn = _play(init, step, batch, num_steps, build)
        rng = jax.random.PRNGKey(0)
        warmup, _, times = measure.time_calls(lambda fn=fn: fn(rng), repeats, budget_s)
        median = statistics.median(times)
        cell.append(dict(backend=backend, batch=batch, steps=num_steps, mode=mode, env=name,
                         warmup_s=round(warmup, 2), median_ms=round(median * 1e3, 2),
                         steps_per_s=round(batch * num_steps / median)))
      pgx_rate = next(r["steps_per_s"] for r in cell if r["env"] == "pgx")
      for r in cell:
        r["speedup_vs_pgx"] = round(r["steps_per_s"] / pgx_rate, 2)
      rows += cell
  return rows


def format_table(rows) -> str:
  lines = ["| backend | batch | mode | env | steps/s | vs pgx |", "|---|---|---|---|---|---|"]
  for r in rows:
    lines.append(f"| {r['backend']} | {r['batch']} | {r['mode']} | {r['env']} | "
                 f"{r['steps_per_s']:,} | {r['speedup_vs_pgx']:.2f}x |")
  return "\n".join(lines)


def main(argv=None):
  parser = cli.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, nargs="+", default=[4096])
  parser.add_argument("--steps", type=int, default=256)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--max-seconds", type=float, default=60.0)
  parser.add_argument("--csv", default="results/bench_envs.csv")
  args = parser.parse_args(argv)
  rows = bench(args.batch, args.steps, args.repeats, args.max_seconds)
  print(format_table(rows))
  measure.write_csv(args.csv, rows, FIELDS)
  print(f"CSV: {args.csv}")


if __name__ == "__main__":
  sys.exit(cli.main(main))
