"""pgx games behind the env contract: ids, keys, rules, agreement with pgx, and
a short search on every supported game."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import pgx_env
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)

# Compiling init + step + an 8-simulation search takes 4-15 s per game on two
# CPU cores (chess up to 25 s under load); shogi and animal_shogi take 20-55 s
# and run with the slow tests.
SLOW_SEARCH_GAMES = ("shogi", "animal_shogi")
FAST_SEARCH_GAMES = tuple(g for g in pgx_env.DETERMINISTIC_GAMES if g not in SLOW_SEARCH_GAMES)
ZOBRIST_GAMES = ("chess", "gardner_chess", "animal_shogi")


def _random_actions(rng, legal):
  logits = jnp.where(legal | ~jnp.any(legal, -1, keepdims=True), 0.0, -jnp.inf)
  return jax.random.categorical(rng, logits, axis=-1).astype(jnp.int32)


_PLAY_LENGTH = 6
_step = jax.jit(lambda env, state, action: env.step(state, action), static_argnums=0)


@functools.partial(jax.jit, static_argnums=0)
def _play_padded(env, actions):
  def body(state, action):
    return jax.tree.map(lambda a, b: jnp.where(action < 0, a, b), state,
                        env.step(state, jnp.maximum(action, 0))), None

  return jax.lax.scan(body, env.init(jax.random.key(0)), actions)[0]


def _play(env, actions):
  """A single game after `actions` (one compile per env: padded with -1 = skip)."""
  assert len(actions) <= _PLAY_LENGTH
  return _play_padded(env, jnp.array(list(actions) + [-1] * (_PLAY_LENGTH - len(actions))))


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _random_games(env, rng, num_games, num_plies):
  """States [num_plies + 1, num_games] along random legal games."""
  init_rng, play_rng = jax.random.split(rng)
  state = env.init(init_rng, num_games)

  def body(state, rng):
    state = env.step(state, _random_actions(rng, state.legal_action_mask))
    return state, state

  _, states = jax.lax.scan(body, state, jax.random.split(play_rng, num_plies))
  return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), state, states)


def _u64(key):
  key = np.asarray(key).astype(np.uint64)
  return key[..., 0] | (key[..., 1] << np.uint64(32))


def _rows(leaves, count):
  """Leaves with leading dim `count` -> int64 rows [count, words] (exact)."""
  cols = []
  for leaf in leaves:
    leaf = np.asarray(leaf).reshape(count, -1)
    if leaf.dtype.kind == "f":
      leaf = leaf.view(np.int32 if leaf.dtype.itemsize == 4 else np.int64)
    cols.append(leaf.astype(np.int64))
  return np.concatenate(cols, axis=1)


def _assert_key_is_bijective(keys, rows):
  """Equal keys <=> equal rows, over a set of states."""
  key_ids = np.unique(keys, return_inverse=True)[1].ravel()
  row_ids = np.unique(rows, axis=0, return_inverse=True)[1].ravel()
  pairs = np.unique(np.stack([key_ids, row_ids], 1), axis=0)
  assert len(pairs) == key_ids.max() + 1 == row_ids.max() + 1


def _position_rows(game_id, states):
  """What a "position" key must identify: player, ply, terminated, fields."""
  count = int(np.prod(states.ply.shape))
  fields = pgx_env.position_fields(game_id, states.pgx_state)
  common = [states.current_player, states.ply, states.terminated]
  return _rows(common + list(fields.values()), count)


# ----------------------------------------------------------------------------
# Ids and properties.


def test_make_and_properties():
  env = envs.make("pgx:tic_tac_toe")
  assert isinstance(env, pgx_env.PgxEnv)
  assert env == pgx_env.PgxEnv("tic_tac_toe") and hash(env) == hash(pgx_env.PgxEnv("tic_tac_toe"))
  assert env != pgx_env.PgxEnv("tic_tac_toe", key_mode="full")
  assert (env.id, env.num_actions, env.num_players, env.max_game_length) == (
      "pgx:tic_tac_toe", 9, 2, 9)
  assert env.observation_shape == (3, 3, 2)
  othello = envs.make("pgx:othello")
  assert (othello.num_actions, othello.max_game_length) == (65, 121)
  state = othello.init(jax.random.key(0), batch_size=3)
  assert state.key.shape == (3, 2) and state.key.dtype == jnp.uint32
  assert state.legal_action_mask.shape == (3, 65) and state.ply.shape == (3,)
  assert state.observation.shape == (3, 8, 8, 2)
  # The observation is not stored.
  assert state.pgx_state.observation.size == 0


def test_every_pgx_game_is_classified():
  available = set(pgx.available_envs())
  assert set(pgx_env.DETERMINISTIC_GAMES) <= available
  assert available <= set(pgx_env.DETERMINISTIC_GAMES) | set(pgx_env.UNSUPPORTED_GAMES)


@pytest.mark.parametrize("game_id,reason", [
    ("2048", "stochastic"), ("backgammon", "stochastic"), ("minatar-breakout", "stochastic"),
    ("kuhn_poker", "imperfect information"), ("leduc_holdem", "imperfect information"),
    ("sparrow_mahjong", "imperfect information"), ("bridge_bidding", "pgx.make")])
def test_unsupported_games_are_refused(game_id, reason):
  with pytest.raises(ValueError, match=reason):
    pgx_env.PgxEnv(game_id)
  with pytest.raises(ValueError, match=reason):
    envs.make(f"pgx:{game_id}")


def test_unknown_ids_and_modes_are_refused():
  for bad in ("pgx:nope", "pgx:Chess", "pgx:go_13x13"):
    with pytest.raises(ValueError, match="unknown pgx game"):
      envs.make(bad)
  with pytest.raises(ValueError, match="key_mode"):
    pgx_env.PgxEnv("hex", key_mode="history")


def _pgx_move_limit(game_id):
  if game_id.startswith("go_"):
    return pgx.make(game_id)._game.max_termination_steps
  if game_id in ("chess", "shogi"):
    module = __import__(f"pgx._src.games.{game_id}", fromlist=["_"])
  else:
    module = __import__(f"pgx.{game_id}", fromlist=["_"])
  return module.MAX_TERMINATION_STEPS


# Importing the shogi modules builds large tables (seconds).
@pytest.mark.parametrize("game_id", ["chess", "go_9x9", "go_19x19"] + [
    pytest.param(g, marks=pytest.mark.slow) for g in ("shogi", "gardner_chess", "animal_shogi")])
def test_max_game_length_is_pgx_move_limit(game_id):
  assert pgx_env.PgxEnv(game_id).max_game_length == _pgx_move_limit(game_id)


# ----------------------------------------------------------------------------
# Keys.


def test_word_conversion_is_exact():
  words = lambda x: np.asarray(pgx_env.to_words(x)).tolist()
  assert words(jnp.array([True, False])) == [1, 0]
  assert words(jnp.array([-1, 1], jnp.int8)) == [0xFFFFFFFF, 1]
  assert words(jnp.array([-0.0, 0.0, 1.0], jnp.float32)) == [0x80000000, 0, 0x3F800000]
  assert words(jnp.array([[7]], jnp.uint32)) == [7]


def test_hash_is_well_mixed():
  base = jnp.zeros(64, jnp.int32)
  # Every single-word change, every value 1..8 at every index, plus the base.
  variants = [base] + [base.at[i].set(v) for i in range(64) for v in range(1, 9)]
  keys = np.asarray(jax.jit(jax.vmap(lambda x: pgx_env.hash_leaves([x])))(jnp.stack(variants)))
  for lane in range(2):
    assert len(np.unique(keys[:, lane])) == len(variants)
    ones = np.unpackbits(np.ascontiguousarray(keys[:, lane]).view(np.uint8)).mean()
    assert 0.45 < ones < 0.55
  assert not np.any(keys[:, 0] == keys[:, 1])


def test_transpositions_share_keys_tic_tac_toe():
  env = pgx_env.PgxEnv("tic_tac_toe")
  a = _play(env, [0, 4, 8])
  b = _play(env, [8, 4, 0])
  c = _play(env, [0, 4, 7])
  assert _u64(a.key) == _u64(b.key) != _u64(c.key)
  for x, y in zip(jax.tree.leaves(a.pgx_state), jax.tree.leaves(b.pgx_state)):
    np.testing.assert_array_equal(x, y)


def test_hex_transposition_ignores_chain_labels():
  position, full = pgx_env.PgxEnv("hex"), pgx_env.PgxEnv("hex", key_mode="full")
  # The first player joins cells 0 and 1 in two orders: pgx labels the chain
  # by its last stone, so the boards differ in labels only.
  first, second = [0, 60, 1], [1, 60, 0]
  a, b = _play(position, first), _play(position, second)
  assert not np.array_equal(a.pgx_state._x.board, b.pgx_state._x.board)
  np.testing.assert_array_equal(np.sign(a.pgx_state._x.board), np.sign(b.pgx_state._x.board))
  assert _u64(a.key) == _u64(b.key)
  assert _u64(_play(full, first).key) != _u64(_play(full, second).key)


def test_go_transposition_merges_histories():
  env = pgx_env.PgxEnv("go_9x9")
  a, b = _play(env, [0, 40, 80]), _play(env, [80, 40, 0])
  assert _u64(a.key) == _u64(b.key)
  # Same stones, different board histories: the merged node keeps one of them.
  np.testing.assert_array_equal(a.pgx_state._x.board != 0, b.pgx_state._x.board != 0)
  assert not np.array_equal(a.pgx_state._x.board_history, b.pgx_state._x.board_history)
  # A pass keeps the stones but not the key (player, ply, passes).
  assert _u64(_play(env, [0, 40, 80, 81]).key) != _u64(a.key)


def test_player_ply_and_termination_are_in_the_key():
  env = pgx_env.PgxEnv("connect_four")
  state = env.init(jax.random.key(0))
  s = state.pgx_state
  variants = [s, s.replace(current_player=1 - s.current_player),
              s.replace(_step_count=s._step_count + 2), s.replace(terminated=jnp.bool_(True))]
  keys = [int(_u64(env.wrap(v).key)) for v in variants]
  assert len(set(keys)) == 4
  assert keys[0] == int(_u64(state.key))


@pytest.mark.parametrize("game_id", ["tic_tac_toe", "connect_four", "othello", "hex", "go_9x9"])
def test_keys_identify_positions_on_random_games(game_id):
  env = pgx_env.PgxEnv(game_id)
  plies = min(env.max_game_length, 40)
  states = _random_games(env, jax.random.key(7), 24, plies)
  count = 24 * (plies + 1)
  keys = _u64(states.key).ravel()
  _assert_key_is_bijective(keys, _position_rows(game_id, states))
  # Random play revisits positions (start, transpositions, finished games).
  assert len(np.unique(keys)) < count


@pytest.mark.parametrize("game_id", ["tic_tac_toe", "hex"])
def test_full_keys_identify_states_on_random_games(game_id):
  """Equal full keys <=> equal stored pgx states (rewards aside)."""
  full = pgx_env.PgxEnv(game_id, key_mode="full")
  plies = min(full.max_game_length, 40)
  count = 24 * (plies + 1)
  states = _random_games(full, jax.random.key(7), 24, plies)
  leaves = jax.tree.leaves(states.pgx_state.replace(rewards=jnp.zeros((plies + 1, 24, 0))))
  _assert_key_is_bijective(_u64(states.key).ravel(), _rows(leaves, count))


def test_chess_transposition():
  from pgx._src.games.chess import Action  # pylint: disable=g-import-not-at-top

  def move(from_, to):
    return int(Action(from_=jnp.int32(from_), to=jnp.int32(to))._to_label())

  # Squares are file * 8 + rank (a1 = 0); black's moves are seen from its side.
  nf3, nc3 = move(6 * 8 + 0, 5 * 8 + 2), move(1 * 8 + 0, 2 * 8 + 2)
  nf6 = nf3
  position = pgx_env.PgxEnv("chess")
  a, b = _play(position, [nf3, nf6, nc3]), _play(position, [nc3, nf6, nf3])
  np.testing.assert_array_equal(a.pgx_state._x.board, b.pgx_state._x.board)
  assert not bool(a.terminated) and int(a.ply) == 3
  assert _u64(a.key) == _u64(b.key)
  # Back to the start position two plies later: a different key (ply).
  back = _play(position, [nf3, nf6, move(5 * 8 + 2, 6 * 8 + 0), move(5 * 8 + 2, 6 * 8 + 0)])
  start = _play(position, [])
  np.testing.assert_array_equal(back.pgx_state._x.board, start.pgx_state._x.board)
  assert _u64(back.key) != _u64(start.key)


@pytest.mark.slow
@pytest.mark.parametrize("game_id", ZOBRIST_GAMES + ("shogi", "go_19x19"))
def test_keys_identify_positions_slow_games(game_id):
  env = pgx_env.PgxEnv(game_id)
  states = _random_games(env, jax.random.key(3), 16, 24)
  _assert_key_is_bijective(_u64(states.key).ravel(), _position_rows(game_id, states))


# ----------------------------------------------------------------------------
# Rules.


def test_step_on_terminated_is_a_no_op():
  env = pgx_env.PgxEnv("tic_tac_toe")
  won = _play(env, [0, 3, 1, 4, 2])
  assert bool(won.terminated) and sorted(won.rewards.tolist()) == [-1.0, 1.0]
  assert not won.legal_action_mask.any()
  live = _play(env, [0, 3])
  batch = envs.stack([won, live])
  after = _step(env, batch, jnp.array([5, 5]))
  no_rewards = lambda s: jax.tree.leaves(s.replace(pgx_state=s.pgx_state.replace(
      rewards=jnp.zeros_like(s.rewards))))
  for x, y in zip(no_rewards(after), no_rewards(batch)):
    np.testing.assert_array_equal(x[0], y[0])
  assert after.rewards[0].tolist() == [0.0, 0.0]
  assert int(after.ply[1]) == 3 and not bool(after.terminated[1])
  assert int(_step(env, won, 6).ply) == 5


def test_illegal_action_loses():
  env = pgx_env.PgxEnv("tic_tac_toe")
  state = _play(env, [4])
  mover = int(state.current_player)
  lost = _step(env, state, 4)   # occupied
  assert bool(lost.terminated) and int(lost.ply) == 2
  assert lost.rewards[mover] == -1.0 and lost.rewards[1 - mover] == 1.0


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _play_both(game_id, rng, num_games, num_plies):
  """The same actions, 1 in 10 of them uniform over all actions (illegal ones
  included), in the wrapper and in pgx directly. Returns, per ply [T, N]: the
  wrapper's states, pgx's, the wrapper's restored pgx states and observations."""
  env = pgx_env.PgxEnv(game_id)
  direct = pgx.make(game_id)
  init_rng, play_rng = jax.random.split(rng)
  ours = env.init(init_rng, num_games)
  theirs = jax.vmap(direct.init)(jax.random.split(init_rng, num_games))

  def body(carry, rng):
    ours, theirs = carry
    pick_rng, any_rng, coin_rng = jax.random.split(rng, 3)
    actions = jnp.where(jax.random.uniform(coin_rng, (num_games,)) < 0.1,
                        jax.random.randint(any_rng, (num_games,), 0, env.num_actions),
                        _random_actions(pick_rng, ours.legal_action_mask))
    ours, theirs = env.step(ours, actions), jax.vmap(direct.step)(theirs, actions)
    return (ours, theirs), (ours, theirs, ours.to_pgx(), ours.observation)

  _, trace = jax.lax.scan(body, (ours, theirs), jax.random.split(play_rng, num_plies))
  return trace


def _assert_agrees_with_pgx(game_id, num_games, num_plies):
  ours, theirs, restored, obs = jax.tree.map(
      np.asarray, _play_both(game_id, jax.random.key(5), num_games, num_plies))
  term = theirs.terminated
  np.testing.assert_array_equal(ours.terminated, term)
  np.testing.assert_array_equal(ours.rewards, theirs.rewards)
  np.testing.assert_array_equal(ours.current_player, theirs.current_player)
  np.testing.assert_array_equal(ours.ply, theirs._step_count)
  np.testing.assert_array_equal(ours.legal_action_mask, theirs.legal_action_mask & ~term[..., None])
  np.testing.assert_array_equal(obs, theirs.observation)
  for x, y in zip(jax.tree.leaves(restored), jax.tree.leaves(theirs)):
    np.testing.assert_array_equal(x, y)
  return ours


def test_connect_four_agrees_with_pgx():
  ours = _assert_agrees_with_pgx("connect_four", 64, 43)
  # The trace has finished games and illegal-move losses (a full column).
  assert ours.terminated[-1].all()
  illegal_end = (ours.ply[-1] < 42) & (np.abs(ours.rewards).sum((0, 2)) > 0)
  assert illegal_end.any()


@pytest.mark.slow
@pytest.mark.parametrize("game_id", ["chess", "shogi", "go_9x9", "othello"])
def test_agrees_with_pgx_slow(game_id):
  # chess and shogi do not store the outer legal mask: restored from `_x`.
  _assert_agrees_with_pgx(game_id, 8, 30)


# ----------------------------------------------------------------------------
# Search.


def _search_sanity(game_id, eval_fn=None):
  env = pgx_env.PgxEnv(game_id)
  config = mcgs_jax.SearchConfig(num_simulations=8)
  state = env.init(jax.random.key(0), batch_size=2)
  out = search_jit(None, jax.random.key(1), state, env=env,
                   eval_fn=eval_fn or envs.uniform_eval(env), config=config)
  legal = np.asarray(state.legal_action_mask)
  assert legal[np.arange(2), np.asarray(out.action)].all()
  np.testing.assert_array_equal(out.visit_counts.sum(-1), 8)
  np.testing.assert_array_equal(out.stats.simulations, 8)
  assert not np.asarray(out.stats.capacity_overflows).any()
  assert np.isfinite(np.asarray(out.root_value)).all()


# Chess, Gardner chess, go, hex and othello (6-19 s each): the slow suite.
@pytest.mark.parametrize("game_id", variants.slow_unless(
    FAST_SEARCH_GAMES, fast=[g for g in FAST_SEARCH_GAMES
                             if g not in ("chess", "gardner_chess", "go_19x19", "go_9x9", "hex", "othello")]))
def test_search_runs_on_every_game(game_id):
  _search_sanity(game_id)


@pytest.mark.slow
@pytest.mark.parametrize("game_id", SLOW_SEARCH_GAMES)
def test_search_runs_on_slow_games(game_id):
  _search_sanity(game_id)


def test_search_with_rollouts():
  _search_sanity("tic_tac_toe", envs.rollout_eval(pgx_env.PgxEnv("tic_tac_toe")))
