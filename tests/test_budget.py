"""The evaluation budget (`max_nn_evals`): network calls are counted apart
from simulations, free simulations retry inside a step, nothing is lost."""

import jax
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import nim
import mcgs_jax
from tests import invariants
from tests.fake_evals import HashEval
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
NIM = envs.make("nim-piles:1,3,5,7")
EVAL = HashEval(NIM.num_actions)


def _states():
  return envs.stack([nim.state_from_piles(NIM, piles)
                     for piles in [(1, 3, 5, 7), (1, 3, 5, 6), (0, 3, 4, 7)]])


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tt_cache", "tree"],
                                                        fast=["mcgs"]))
def test_budget_spends_exactly_the_evaluations(backup):
  budget = 120
  config = mcgs_jax.SearchConfig(num_simulations=1000, max_nodes=400, backup=backup,
                                 max_nn_evals=budget)
  out = search_jit(None, jax.random.PRNGKey(0), _states(), NIM, EVAL, config)
  g = jax.device_get(out.graph)
  for b in range(3):
    invariants.check_graph(g, b, config)
  np.testing.assert_array_equal(out.stats.nn_evals, budget)
  plain = search_jit(None, jax.random.PRNGKey(0), _states(), NIM, EVAL,
                     mcgs_jax.SearchConfig(num_simulations=budget, max_nodes=400, backup=backup))
  if backup == "tree":
    # Every tree simulation but a terminal one needs the network.
    assert np.all(out.stats.simulations >= budget - 1)
  else:
    # The same number of network calls buys more simulations (free ones).
    assert np.all(out.stats.simulations > plain.stats.simulations)
    free = (out.stats.transposition_hits + out.stats.corrections + out.stats.tt_cache_hits
            + out.stats.terminal_visits)
    np.testing.assert_array_equal(out.stats.simulations, out.stats.nn_evals - 1 + free)


@pytest.mark.slow
def test_simulations_stay_capped_and_retries_can_be_off():
  config = mcgs_jax.SearchConfig(num_simulations=50, max_nodes=400, max_nn_evals=1000)
  out = search_jit(None, jax.random.PRNGKey(0), _states(), NIM, EVAL, config)
  np.testing.assert_array_equal(out.stats.simulations, 50)
  config = mcgs_jax.SearchConfig(num_simulations=1000, max_nodes=400, max_nn_evals=60,
                                 free_retries=0)
  out = search_jit(None, jax.random.PRNGKey(0), _states(), NIM, EVAL, config)
  np.testing.assert_array_equal(out.stats.nn_evals, 60)


@pytest.mark.slow
def test_budget_with_the_solver_stops_at_proven_roots():
  config = mcgs_jax.SearchConfig(num_simulations=5000, max_nodes=400, max_nn_evals=400,
                                 solver=True)
  out = search_jit(None, jax.random.PRNGKey(0), _states(), NIM, envs.uniform_eval(NIM), config)
  assert np.all(np.asarray(out.root_solved) != 0)
  assert np.all(out.stats.nn_evals <= 400)
  invariants.check_graph(jax.device_get(out.graph), 0, config)


def test_bad_budget_is_refused():
  with pytest.raises(ValueError, match="max_nn_evals"):
    mcgs_jax.SearchConfig(max_nn_evals=0)
