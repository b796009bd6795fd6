"""Uniform and random-rollout evaluators."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax.envs import connect4
from mcgs_jax.envs import nim
from mcgs_jax.envs.evaluators import RolloutEval, UniformEval, rollout_eval, uniform_eval

ENV = connect4.Connect4()

# Random full-length games found offline. DRAW: the last move draws; WIN: the
# 42nd move wins for player 1; SAMECOL: the last two moves are in the only
# non-full column and the 42nd wins for player 1.
DRAW_GAME = "472424756645422154157737216635626711335331"
WIN_GAME = "634622357364446374122717245762511631755315"
SAMECOL_GAME = "267453316431537175161342256261362552477744"

TRACES = []


def _evaluate_impl(eval_fn, rng, state):
  TRACES.append(eval_fn)
  return eval_fn(None, rng, state)


_evaluate = jax.jit(_evaluate_impl, static_argnums=0)


def _stack(states):
  return jax.tree.map(lambda *x: jnp.stack(x), *states)


# name -> (state, expected value, tolerance) for the player to move.
_ILLEGAL_END = ENV.step(ENV.init(jax.random.key(0)), 9)
CASES = {
    # Only move wins / draws / lets the opponent's only move win: exact.
    "last_move_wins": (connect4.from_moves(WIN_GAME[:41]), 1.0, 0.0),
    "last_move_draws": (connect4.from_moves(DRAW_GAME[:41]), 0.0, 0.0),
    "forced_loss": (connect4.from_moves(SAMECOL_GAME[:40]), -1.0, 0.0),
    "terminated_win": (connect4.from_moves("1212121"), 0.0, 0.0),
    "terminated_illegal": (_ILLEGAL_END, 0.0, 0.0),
    # Mover has two immediate wins on the bottom row: E ~ +0.58.
    "double_threat": (connect4.from_moves("443322"), 0.58, 0.25),
    # Opponent has that double threat: E ~ -0.38.
    "facing_double_threat": (connect4.from_moves("4433227"), -0.38, 0.2),
    # Mover wins at once vertically with p=1/7 but the opponent also has
    # three in a column, so E ~ +0.08 only; its sibling one ply earlier ~ -0.20.
    "vertical_threat": (connect4.from_moves("121212"), 0.08, 0.2),
    "vertical_threat_opponent": (connect4.from_moves("12121"), -0.20, 0.2),
}
NAMES = list(CASES)
NUM_ROLLOUTS = 256


@pytest.fixture(scope="module")
def rollout_values():
  states = _stack([CASES[n][0] for n in NAMES])
  logits, values = _evaluate(rollout_eval(ENV, NUM_ROLLOUTS), jax.random.key(0), states)
  return np.asarray(logits), dict(zip(NAMES, np.asarray(values).tolist()))


def test_golden_games_are_what_they_claim():
  assert int(connect4.from_moves(WIN_GAME).winner) == 1
  assert int(connect4.from_moves(DRAW_GAME).winner) == -1
  assert int(connect4.from_moves(SAMECOL_GAME).winner) == 1
  assert int(connect4.from_moves(SAMECOL_GAME[:41]).winner) == -1
  assert int(connect4.from_moves(SAMECOL_GAME[:40]).legal_action_mask.sum()) == 1
  assert int(connect4.from_moves(WIN_GAME[:41]).legal_action_mask.sum()) == 1


def test_uniform_eval():
  eval_fn = uniform_eval(ENV)
  assert eval_fn == UniformEval(ENV) and hash(eval_fn) == hash(uniform_eval(connect4.Connect4()))
  states = ENV.init(jax.random.key(0), batch_size=3)
  logits, value = eval_fn({"unused": 1}, jax.random.key(1), states)
  assert logits.shape == (3, 7) and logits.dtype == jnp.float32
  assert value.shape == (3,) and value.dtype == jnp.float32
  assert not np.asarray(logits).any() and not np.asarray(value).any()
  logits, value = _evaluate(eval_fn, jax.random.key(1), states)
  assert logits.shape == (3, 7) and value.shape == (3,)


def test_rollout_shapes(rollout_values):
  logits, values = rollout_values
  assert logits.shape == (len(NAMES), 7) and not logits.any()
  assert all(-1.0 <= v <= 1.0 for v in values.values())


@pytest.mark.parametrize("name", NAMES)
def test_rollout_values(rollout_values, name):
  _, values = rollout_values
  _, expected, tolerance = CASES[name]
  assert abs(values[name] - expected) <= tolerance, values[name]


def test_rollout_signs(rollout_values):
  _, values = rollout_values
  assert values["double_threat"] > 0.3
  assert values["facing_double_threat"] < -0.15
  assert values["vertical_threat"] > values["vertical_threat_opponent"] + 0.1


def test_rollout_eval_is_a_static_jit_argument():
  states = _stack([CASES["double_threat"][0], CASES["last_move_wins"][0]])
  a, b = rollout_eval(ENV, 4), rollout_eval(connect4.Connect4(), num_rollouts=4)
  assert a == b and hash(a) == hash(b) and a != rollout_eval(ENV, 5)
  assert a == RolloutEval(ENV, 4)
  before = len(TRACES)
  _, v1 = _evaluate(a, jax.random.key(2), states)
  _, v2 = _evaluate(b, jax.random.key(2), states)
  assert len(TRACES) - before == 1
  np.testing.assert_array_equal(v1, v2)
  assert float(v1[1]) == 1.0


def test_rollout_single_state_and_other_env():
  value = rollout_eval(ENV, 2)(None, jax.random.key(0), CASES["forced_loss"][0])[1]
  assert value.shape == () and float(value) == -1.0
  # One stone left: the mover takes it and wins (normal play), or loses (misere).
  for misere, expected in ((False, 1.0), (True, -1.0)):
    env = nim.Nim(piles=(1,), misere=misere)
    states = env.init(jax.random.key(0), batch_size=2)
    logits, values = rollout_eval(env, 3)(None, jax.random.key(0), states)
    assert logits.shape == (2, env.num_actions)
    assert values.tolist() == [expected, expected]


def test_num_rollouts_must_be_positive():
  with pytest.raises(ValueError):
    rollout_eval(ENV, 0)


def test_random_legal_action_is_uniform_over_legal_actions():
  from mcgs_jax.envs import base  # pylint: disable=g-import-not-at-top
  legal = jnp.array([[True, False, True, True, False, False, True],
                     [False] * 6 + [True],
                     [False] * 7])
  draws = jax.vmap(lambda r: base.random_legal_action(r, legal))(
      jax.random.split(jax.random.PRNGKey(0), 20000))
  draws = np.asarray(draws)
  freq = np.bincount(draws[:, 0], minlength=7) / len(draws)
  np.testing.assert_allclose(freq, [0.25, 0, 0.25, 0.25, 0, 0, 0.25], atol=0.015)
  assert np.all(draws[:, 1] == 6)
  assert np.all(draws[:, 2] == 0)   # no legal action: action 0


def test_random_legal_action_with_many_actions():
  from mcgs_jax.envs import base  # pylint: disable=g-import-not-at-top
  legal = jnp.zeros((2, 40), bool).at[0, jnp.array([3, 17, 39])].set(True)
  draws = np.asarray(jax.vmap(lambda r: base.random_legal_action(r, legal))(
      jax.random.split(jax.random.PRNGKey(1), 9000)))
  freq = np.bincount(draws[:, 0], minlength=40) / len(draws)
  np.testing.assert_allclose(freq[[3, 17, 39]], 1 / 3, atol=0.02)
  assert freq.sum() == pytest.approx(freq[[3, 17, 39]].sum())
  assert np.all(draws[:, 1] == 0)
