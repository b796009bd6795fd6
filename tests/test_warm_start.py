"""Warm-start labels: exact values and uniform policies over the best moves."""

import jax
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import exhaustive
from mcgs_jax.learning import warm_start


def test_tictactoe_labels_are_exact():
  env = envs.make("tictactoe")
  examples = warm_start.labelled_examples(env, jax.random.PRNGKey(0), 100_000)
  table = exhaustive.game_table(env)
  assert examples.value.shape == (len(table),) == (4520,)
  np.testing.assert_array_equal(np.asarray(examples.value), table.values)
  policy = np.asarray(examples.policy)
  np.testing.assert_allclose(policy.sum(1), 1.0, atol=1e-6)
  best = table.move_values >= table.values[:, None] - 1e-9
  # Weight exactly on the value-keeping moves, equal among them.
  assert np.all((policy > 0) == best)
  np.testing.assert_allclose(policy[best], np.repeat(1.0 / best.sum(1), best.sum(1)), atol=1e-6)
  # The empty board is a draw with every move keeping it.
  assert examples.value[0] == 0 and np.all(policy[0] == np.float32(1 / 9))


def test_subset_and_unsupported_env():
  env = envs.make("nim:3,20")
  everything = warm_start.labelled_examples(env, jax.random.PRNGKey(1), 10_000)
  examples = warm_start.labelled_examples(env, jax.random.PRNGKey(1), 5)
  assert examples.value.shape == (5,) and everything.value.shape[0] > 5
  label = {np.asarray(o).tobytes(): (float(v), np.asarray(p).tobytes()) for o, v, p in zip(
      everything.observation, everything.value, everything.policy)}
  for o, v, p in zip(examples.observation, examples.value, examples.policy):
    assert label[np.asarray(o).tobytes()] == (float(v), np.asarray(p).tobytes())
  # Nim(3, 20) is lost for the mover exactly when the pile is a multiple of 4.
  assert set(np.unique(np.asarray(everything.value))) == {-1.0, 1.0}
  assert int((np.asarray(everything.value) < 0).sum()) == 5   # piles 4, 8, 12, 16, 20
  with pytest.raises(ValueError, match="no exact labels"):
    warm_start.labelled_examples(envs.make("pgx:othello"), jax.random.PRNGKey(0), 2)


def test_connect4_labels_follow_the_solver():
  env = envs.make("connect4")
  examples = warm_start.labelled_examples(env, jax.random.PRNGKey(2), 4)
  assert examples.value.shape == (4,)
  policy, legal = np.asarray(examples.policy), np.asarray(examples.legal_action_mask)
  assert np.all(policy[~legal] == 0)
  np.testing.assert_allclose(policy.sum(1), 1.0, atol=1e-6)
  # Every labelled position has at least CONNECT4_MIN_PLIES stones.
  stones = np.asarray(examples.observation).reshape(4, -1).sum(1)
  assert np.all(stones >= warm_start.CONNECT4_MIN_PLIES)
