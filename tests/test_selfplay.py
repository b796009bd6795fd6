"""Self-play: every finished game's positions come out once, with the right
outcome, across call boundaries; all search modes run."""

import dataclasses
import functools

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.learning import selfplay
from tests import variants

_play = jax.jit(selfplay.play, static_argnames=("env", "eval_fn", "config", "num_moves"))


def _config(**search):
  search = dict(dict(num_simulations=8, max_nodes=32, dirichlet_fraction=0.25), **search)
  return selfplay.SelfPlayConfig(search=mcgs_jax.SearchConfig(**search), temperature_moves=4)


@functools.lru_cache(maxsize=None)
def _run(game_id, calls, moves, batch, **search):
  env = envs.make(game_id)
  eval_fn = envs.uniform_eval(env)
  config = _config(**search)
  state = selfplay.init(jax.random.PRNGKey(0), env, batch)
  outputs = []
  for call in range(calls):
    state, examples, valid, stats = _play(None, jax.random.PRNGKey(call + 1), state, env,
                                         eval_fn, config, moves)
    outputs.append((jax.device_get(examples), np.asarray(valid), jax.device_get(stats)))
  return env, state, outputs


def test_positions_emitted_once_with_final_outcome():
  # Tic-tac-toe with 4 games, 3 calls of 5 moves: games cross call boundaries.
  env, state, outputs = _run("tictactoe", 3, 5, 4)
  emitted = sum(int(valid.sum()) for _, valid, _ in outputs)
  finished = sum(int(stats.games_finished) for _, _, stats in outputs)
  assert finished == int(state.games_finished) > 0
  # Every move of a finished game is emitted exactly once; the moves of the
  # games still running are not emitted yet.
  running_moves = int(np.asarray(state.move_number).sum())
  assert emitted == int(state.moves_played) - running_moves
  for examples, valid, _ in outputs:
    value = examples.value[valid]
    assert set(np.unique(value)).issubset({-1.0, 0.0, 1.0})
    policy = examples.policy[valid]
    np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-5)
    assert not np.any(policy[~examples.legal_action_mask[valid]] > 0)


def test_outcome_targets_match_replayed_games():
  # Rebuild each finished game from the per-slot rows of the window and check
  # the value targets against the game's real result from each mover's view.
  env = envs.make("tictactoe")
  config = _config()
  state = selfplay.init(jax.random.PRNGKey(3), env, 2)
  history = []
  for call in range(4):
    state, examples, valid, _ = _play(None, jax.random.PRNGKey(10 + call), state, env,
                                     envs.uniform_eval(env), config, 6)
    # Rows are [window time, game slot]; slot b's rows of one call are in time order.
    window = valid.shape[0] // 2
    history.append((jax.device_get(examples), np.asarray(valid), window))
  checked = games = 0
  for examples, valid, window in history:
    obs = examples.observation.reshape((window, 2) + examples.observation.shape[1:])
    val = examples.value.reshape(window, 2)
    player = examples.player.reshape(window, 2)
    ok = valid.reshape(window, 2)
    for slot in range(2):
      rows = np.nonzero(ok[:, slot])[0]
      for t in rows:
        # The mover's stones are plane 0 in pgx's layout; count stones to get the ply.
        ply = int(obs[t, slot].sum())
        assert player[t, slot] == ply % 2
        checked += 1
      stones = [int(obs[t, slot].sum()) for t in rows]
      for i, t in enumerate(rows):
        last = i + 1 == len(rows) or stones[i + 1] != stones[i] + 1
        if not last:
          # The next mover of the same game sees the opposite outcome.
          assert val[rows[i + 1], slot] == -val[t, slot]
        else:
          # Tic-tac-toe's last mover wins (needs >= 4 earlier stones) or
          # fills the board for a draw; it never loses on its own move.
          assert val[t, slot] in (0.0, 1.0)
          if val[t, slot] == 0.0:
            assert stones[i] == 8
          else:
            assert stones[i] >= 4
          games += 1
  assert checked > 10 and games >= 2


def test_lambda_returns():
  """value_lambda: a hand-computed 3-move game (golden); out-of-range lambda
  refused."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  # One game: players 0, 1, 0; player 0 wins on the third move; then a new
  # game's first move (player 0), not finished.
  rewards = jnp.array([[0, 0], [0, 0], [1, -1], [0, 0]], jnp.float32)[:, None]
  records = selfplay.MoveRecord(
      observation=jnp.zeros((4, 1, 1)), legal_action_mask=jnp.ones((4, 1, 1), bool),
      policy=jnp.zeros((4, 1, 1)), player=jnp.array([[0], [1], [0], [0]], jnp.int32),
      root_value=jnp.array([[0.2], [-0.4], [0.6], [0.0]]), rewards=rewards,
      done=jnp.array([[False], [False], [True], [False]]), filled=jnp.ones((4, 1), bool),
      emitted=jnp.zeros((4, 1), bool))
  g2 = 0.5 * 0.6 + 0.5 * 1.0           # 0.8
  g1 = 0.5 * -0.4 + 0.5 * -g2          # -0.6
  g0 = 0.5 * 0.2 + 0.5 * -g1           # 0.4
  values = np.asarray(selfplay._lambda_returns(records, 0.5))[:3, 0]
  np.testing.assert_allclose(values, [g0, g1, g2], rtol=1e-6)
  with pytest.raises(ValueError, match="value_lambda"):
    selfplay.SelfPlayConfig(value_lambda=1.5)


@pytest.mark.slow
def test_lambda_returns_on_real_windows():
  """lambda = 1 on real self-play windows gives the outcomes; play() emits
  the lambda-returns as value targets."""
  env = envs.make("tictactoe")
  config = _config()
  state = selfplay.init(jax.random.PRNGKey(3), env, 4)
  for call in range(2):
    state, _, _, _ = _play(None, jax.random.PRNGKey(20 + call), state, env,
                           envs.uniform_eval(env), config, 6)
  outcomes, known = selfplay._outcomes(state.history)
  returns = selfplay._lambda_returns(state.history, 1.0)
  assert int(known.sum()) > 10
  np.testing.assert_allclose(np.asarray(returns)[np.asarray(known)],
                             np.asarray(outcomes)[np.asarray(known)], atol=1e-6)
  # play() emits the lambda-returns, not the outcomes (which are -1, 0 or 1).
  lam = dataclasses.replace(config, value_lambda=0.5)
  _, examples, valid, _ = _play(None, jax.random.PRNGKey(30), state, env,
                                envs.uniform_eval(env), lam, 6)
  value = np.asarray(examples.value)[np.asarray(valid)]
  assert value.size > 0 and not set(np.unique(value)).issubset({-1.0, 0.0, 1.0})
  assert np.all(np.abs(value) <= 1)


@pytest.mark.slow
def test_opponent_policy_targets():
  """The next move's policy target of the same game (golden), zero after a
  game's last move; play() emits them with opponent_policy."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  policy = jnp.arange(4 * 3, dtype=jnp.float32).reshape(4, 1, 3)
  done = jnp.array([[False], [False], [True], [False]])
  records = selfplay.MoveRecord(
      observation=jnp.zeros((4, 1, 1)), legal_action_mask=jnp.ones((4, 1, 3), bool),
      policy=policy, player=jnp.zeros((4, 1), jnp.int32), root_value=jnp.zeros((4, 1)),
      rewards=jnp.zeros((4, 1, 2)), done=done, filled=jnp.ones((4, 1), bool),
      emitted=jnp.zeros((4, 1), bool))
  np.testing.assert_array_equal(np.asarray(selfplay._next_policies(records))[:, 0],
                                [[3, 4, 5], [6, 7, 8], [0, 0, 0], [0, 0, 0]])
  env = envs.make("tictactoe")
  config = dataclasses.replace(_config(), opponent_policy=True)
  state = selfplay.init(jax.random.PRNGKey(3), env, 4)
  for call in range(2):
    state, examples, valid, _ = _play(None, jax.random.PRNGKey(40 + call), state, env,
                                      envs.uniform_eval(env), config, 6)
  assert examples.opponent_policy.shape == examples.policy.shape
  opponent = np.asarray(examples.opponent_policy)[np.asarray(valid)]
  sums = opponent.sum(-1)
  # A distribution after every move but a game's last, which leaves zeros.
  assert np.all(np.isclose(sums, 1.0, atol=1e-5) | (sums == 0))
  assert 0 < np.sum(sums == 0) < sums.size
  assert selfplay.example_like(env, opponent_policy=True).opponent_policy.shape == (9,)
  assert selfplay.example_like(env).opponent_policy is None


@pytest.mark.parametrize("search", variants.slow_unless(
    [dict(backup="tree"), dict(backup="tt_cache"), dict(solver=True), dict(backup="mcgs")],
    fast=[dict(backup="tree")]))
@pytest.mark.slow
def test_search_modes_run(search):
  env, state, outputs = _run("nim-piles:1,2,3", 2, 4, 3, **search)
  del env
  assert int(state.moves_played) == 2 * 4 * 3
  assert sum(int(stats.nn_evals) for _, _, stats in outputs) > 0


def test_random_openings():
  env = envs.make("tictactoe")
  states = selfplay.new_games(jax.random.PRNGKey(0), env, 256, opening_plies=3)
  plies = np.asarray(states.ply)
  assert set(np.unique(plies)) == {0, 1, 2, 3}
  assert not np.any(np.asarray(states.terminated))
  # Every stone was placed by a legal alternating move: X has ceil(ply/2) marks.
  obs = np.asarray(env.observe(states)).reshape(256, 9, 2)
  mover, other = obs[..., 0].sum(1), obs[..., 1].sum(1)
  np.testing.assert_array_equal(mover + other, plies)
  np.testing.assert_array_equal(other - mover, plies % 2)
  with pytest.raises(ValueError, match="opening_plies"):
    selfplay.SelfPlayConfig(opening_plies=-1)


def test_gumbel_target_and_move_match_mctx():
  """Gumbel self-play in tree mode (no noise, no reuse): the recorded policy
  target of each game's first move is mctx's `action_weights` on the same
  position and network, and the played move is mctx's `action` (golden)."""
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import mctx  # pylint: disable=g-import-not-at-top
  from tests.fake_evals import HashEval  # pylint: disable=g-import-not-at-top
  from tests.test_gumbel import _recurrent_fn  # pylint: disable=g-import-not-at-top
  env = envs.make("tictactoe")
  eval_fn = HashEval(env.num_actions, value_scale=0.5)
  search = mcgs_jax.SearchConfig(num_simulations=16, backup="tree", root_policy="gumbel",
                                 max_considered_actions=4, gumbel_scale=0.0, max_depth=16)
  config = selfplay.SelfPlayConfig(search=search, reuse_graph=False)
  state = selfplay.init(jax.random.PRNGKey(5), env, 8, opening_plies=3)
  positions = state.env_state
  state, _, _, _ = _play(None, jax.random.PRNGKey(6), state, env, eval_fn, config, 1)
  first = jax.tree.map(lambda x: np.asarray(x[-1]), state.history)
  logits, value = eval_fn(None, None, positions)
  theirs = mctx.gumbel_muzero_policy(
      None, jax.random.PRNGKey(0), mctx.RootFnOutput(prior_logits=logits, value=value,
                                                     embedding=positions),
      _recurrent_fn(env, eval_fn), 16, invalid_actions=~positions.legal_action_mask,
      max_num_considered_actions=4, gumbel_scale=0.0)
  np.testing.assert_allclose(first.policy, theirs.action_weights, atol=1e-5)
  # The move played is the search's choice: the next position holds its stone.
  played = np.asarray(jax.vmap(env.step)(positions, theirs.action).key)
  after = np.asarray(state.env_state.key)
  replaced = first.done
  np.testing.assert_array_equal(after[~replaced], played[~replaced])
  # Not vacuous: the improved policy is not the prior, nor one-hot.
  prior = np.asarray(jax.nn.softmax(jnp.where(positions.legal_action_mask, logits, -jnp.inf)))
  assert np.abs(first.policy - prior).max() > 0.05
  assert np.all(first.policy.max(-1) < 1)


def test_playout_cap_randomization():
  """Fast moves record no policy target (all zero), full ones a distribution;
  the network calls add up to the two budgets; bad settings are refused."""
  env = envs.make("tictactoe")
  search = mcgs_jax.SearchConfig(num_simulations=16, max_nodes=64)
  config = selfplay.SelfPlayConfig(search=search, fast_simulations=2, full_search_prob=0.5,
                                   reuse_graph=False)
  state = selfplay.init(jax.random.PRNGKey(0), env, 4)
  # 9 moves: the history window (tic-tac-toe's longest game) holds them all.
  state, _, _, stats = _play(None, jax.random.PRNGKey(1), state, env, envs.uniform_eval(env),
                             config, 9)
  totals = jax.device_get(state.history).policy.sum(-1)     # [moves, games]
  full = totals[:, 0] > 0
  # One draw per move for the whole batch.
  assert np.all((totals > 0) == full[:, None])
  np.testing.assert_allclose(totals[full], 1.0, atol=1e-5)
  assert 0 < full.sum() < 9
  # Each search makes at most its budget of network calls plus the fresh
  # root's; the full searches alone need more than the fast ones allow.
  evals = int(stats.nn_evals)
  assert evals <= 4 * (17 * int(full.sum()) + 3 * int((~full).sum()))
  assert evals > 4 * 3 * 9
  with pytest.raises(ValueError, match="fast_simulations"):
    selfplay.SelfPlayConfig(search=search, fast_simulations=17)
  with pytest.raises(ValueError, match="full_search_prob"):
    selfplay.SelfPlayConfig(search=search, fast_simulations=2, full_search_prob=0.0)
