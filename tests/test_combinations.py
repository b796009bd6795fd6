"""Random combinations of SearchConfig switches on random positions: no
crash, a legal move, a distribution over the legal moves, graph invariants."""

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from tests import invariants
from tests.fake_evals import RandomEval
from tests.test_search import legal_checker, random_positions

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
GAMES = ("nim", "tictactoe", "connect4")


def random_config(rng):
  """One draw of the switches (`rng`: numpy Generator)."""
  pick = lambda options: options[rng.integers(len(options))]
  leaves = int(pick([1, 1, 3]))
  return mcgs_jax.SearchConfig(
      num_simulations=int(pick([0, 1, 2, 7, 24])),
      backup=str(pick(["mcgs", "tree", "tt_cache"])),
      solver=bool(pick([False, True])),
      eps_greedy=float(pick([0.0, 0.5])),
      eps_constraint=float(pick([0.0, 0.3])),
      q_value_weight=float(pick([0.0, 2.0])),
      q_veto_delta=float(pick([0.0, 0.1])),
      leaves_per_step=leaves,
      max_nn_evals=None if leaves > 1 else pick([None, 1, 5]),
      dirichlet_fraction=float(pick([0.0, 0.25])),
      visit_temperature=float(pick([0.0, 1.0])),
      node_temperature=float(pick([1.0, 0.5])))


def check_combinations(count, seed):
  rng = np.random.default_rng(seed)
  for i in range(count):
    env = envs.make(str(GAMES[rng.integers(len(GAMES))]))
    config = random_config(rng)
    key = jax.random.PRNGKey(i)
    state = random_positions(env, key, batch=2, max_moves=4)
    out = jax.device_get(search_jit(None, key, state, env, RandomEval(env.num_actions), config))
    for b in range(2):
      legal = np.asarray(state.legal_action_mask[b])
      if not legal.any():
        continue
      assert legal[out.action[b]], (config, b)
      weights = out.action_weights[b]
      assert np.all(weights >= 0) and np.all(weights[~legal] == 0), (config, b)
      np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-5, err_msg=str(config))
      invariants.check_graph(out.graph, b, config, legal_checker(out.graph, b, env))
      assert out.stats.simulations[b] <= config.num_simulations


@pytest.mark.slow
def test_config_combinations_small():
  check_combinations(2, seed=0)


@pytest.mark.slow
def test_config_combinations():
  check_combinations(24, seed=1)
