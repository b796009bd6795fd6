"""The MLP policy-value network and its eval_fn adapter."""

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

import mcgs_jax
from envs import connect4
from networks import MLP, MLPEval, init_params, mlp_eval

ENV = connect4.Connect4()
PGX = pgx.make("connect_four")
EVAL_FN = mlp_eval(7, (32, 16))
MOVES = "4453327"  # a mid-game position, player 1 to move


@pytest.fixture(scope="module")
def params():
  return init_params(EVAL_FN.network, jax.random.key(1), jnp.zeros((1, 6, 7, 2)))


def test_shapes_and_value_range(params):
  kernels = [p["kernel"].shape for p in params["params"].values()]
  assert sorted(kernels) == sorted([(84, 32), (32, 16), (16, 7), (16, 1)])
  # Large inputs push the value head towards saturation.
  obs = jax.random.normal(jax.random.key(2), (5, 6, 7, 2)) * 50.0
  logits, value = EVAL_FN.network.apply(params, obs)
  assert logits.shape == (5, 7) and logits.dtype == jnp.float32
  assert value.shape == (5,) and value.dtype == jnp.float32
  assert np.all(np.abs(np.asarray(value)) <= 1.0)


def test_eval_fn_is_hashable_and_applies_to_states(params):
  assert hash(EVAL_FN) == hash(mlp_eval(7, [32, 16]))
  assert EVAL_FN == MLPEval(MLP(7, (32, 16)))
  assert EVAL_FN != mlp_eval(7, (64, 16))
  assert EVAL_FN.num_actions == 7
  state = ENV.init(jax.random.key(0), batch_size=3)
  logits, value = EVAL_FN(params, jax.random.key(3), state)
  assert logits.shape == (3, 7) and value.shape == (3,)
  # Identical initial positions evaluate identically.
  np.testing.assert_array_equal(logits[0], logits[2])


def test_same_output_on_ours_and_pgx_observation(params):
  ours = connect4.from_moves(MOVES)
  theirs = PGX.init(jax.random.key(4))
  step = jax.jit(PGX.step)
  for ch in MOVES:
    theirs = step(theirs, int(ch) - 1)
  np.testing.assert_array_equal(ours.observation, theirs.observation)
  ours_out = EVAL_FN(params, None, jax.tree.map(lambda x: x[None], ours))
  theirs_out = EVAL_FN.network.apply(params, theirs.observation[None])
  for a, b in zip(ours_out, theirs_out):
    np.testing.assert_array_equal(a, b)


def test_eval_fn_inside_search(params):
  config = mcgs_jax.SearchConfig(num_simulations=16)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  state = ENV.init(jax.random.key(0), batch_size=2)
  out = search(params, jax.random.key(5), state, env=ENV, eval_fn=EVAL_FN, config=config)
  assert out.action.shape == (2,)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), [16, 16])
  np.testing.assert_array_equal(out.stats.simulations, [16, 16])
  assert np.all(np.asarray(out.stats.nn_evals) >= 1)
  assert np.all(np.asarray(out.stats.nan_evals) == 0)
  assert np.all(np.abs(np.asarray(out.root_value)) <= 1.0)
  # Deterministic network, same root: both games search identically.
  np.testing.assert_array_equal(out.visit_counts[0], out.visit_counts[1])
