"""Fingerprints of the lowered search programs, to show a change is a pure move.

  python -m mcgs_jax.benchmarks.program_hashes              # prints name and hash
  python -m mcgs_jax.benchmarks.program_hashes > before.txt # then after the change: diff

Each case is one search (Connect-4, 4 games, 16 simulations, the uniform
evaluator) with the enhancements of `CASES` on; its hash is the sha256 of the
StableHLO text jax lowers it to (source locations are not part of it). Two
trees whose hashes agree run the same programs: the change moved code, not
arithmetic, and needs no timing.
"""

from __future__ import annotations

import functools
import hashlib
import sys

import jax

import mcgs_jax
from mcgs_jax import envs

# Case -> the SearchConfig fields it turns on.
CASES = {
    "default": {},
    "gumbel": dict(root_policy="gumbel", max_considered_actions=4),
    "soft-pruning": dict(progressive_pruning="soft", min_root_visit_fraction=0.05),
    "hard-pruning": dict(progressive_pruning="hard"),
    "exploration": dict(eps_greedy=0.3, eps_constraint=0.1),
    "solver": dict(solver=True),
    "rave": dict(rave=True),
    "katago": dict(backup="katago", solver=True, progressive_pruning="soft"),
}


def program_hash(fields: dict, num_simulations: int = 16) -> str:
  """The sha256 of one search's lowered StableHLO.

  Args:
    fields: SearchConfig fields.
    num_simulations: S.

  Returns:
    The hex digest.
  """
  env = envs.make("connect4")
  config = mcgs_jax.SearchConfig(num_simulations=num_simulations, **fields)
  search = jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.uniform_eval(env),
                                     config=config))
  state = env.init(jax.random.PRNGKey(0), batch_size=4)
  text = search.lower(None, jax.random.PRNGKey(1), state).as_text()
  return hashlib.sha256(text.encode()).hexdigest()


def main(argv=None) -> int:
  """Prints `name hash` for every case (or the named ones).

  Args:
    argv: case names (none: all).

  Returns:
    0.
  """
  names = list(argv if argv is not None else sys.argv[1:]) or list(CASES)
  for name in names:
    print(name, program_hash(CASES[name]), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
