"""Connect-4 bitboard env: agreement with pgx, golden positions, keys, edge rules."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from mcgs_jax.envs import bits
from mcgs_jax.envs import connect4
from mcgs_jax.envs import pons

ENV = connect4.Connect4()
PGX = pgx.make("connect_four")
NUM_GAMES = 4096

# Random full-length games found offline: the last move draws, or wins.
DRAW_GAME = "472424756645422154157737216635626711335331"
LAST_MOVE_WINS_GAME = "634622357364446374122717245762511631755315"

_step = jax.jit(ENV.step)


def _random_actions(rng, legal):
  logits = jnp.where(legal | ~jnp.any(legal, -1, keepdims=True), 0.0, -jnp.inf)
  return jax.random.categorical(rng, logits, axis=-1).astype(jnp.int32)


def _snapshot(ours, theirs):
  return dict(
      position=ours.position, mask=ours.mask, ply=ours.ply, key=ours.key,
      terminated=ours.terminated, winner=ours.winner, rewards=ours.rewards,
      legal=ours.legal_action_mask, obs=ours.observation,
      pgx_terminated=theirs.terminated, pgx_winner=theirs._x.winner,
      pgx_rewards=theirs.rewards, pgx_legal=theirs.legal_action_mask,
      pgx_obs=theirs.observation, pgx_player=theirs.current_player)


@functools.partial(jax.jit, static_argnums=1)
def _play_random_games(rng, num_games):
  """Plays the same random legal moves in both envs; returns per-ply
  snapshots [43, N, ...], the actions [42, N] and pgx's first mover [N]."""
  init_rng, pgx_rng, play_rng = jax.random.split(rng, 3)
  ours = ENV.init(init_rng, num_games)
  theirs = jax.vmap(PGX.init)(jax.random.split(pgx_rng, num_games))
  first = theirs.current_player

  def body(carry, rng):
    ours, theirs = carry
    actions = _random_actions(rng, ours.legal_action_mask)
    ours = ENV.step(ours, actions)
    theirs = jax.vmap(PGX.step)(theirs, actions)
    return (ours, theirs), (_snapshot(ours, theirs), actions)

  _, (snaps, actions) = jax.lax.scan(
      body, (ours, theirs), jax.random.split(play_rng, ENV.max_game_length))
  start = jax.tree.map(lambda x: x[None], _snapshot(ours, theirs))
  snaps = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), start, snaps)
  return snaps, actions, first


@pytest.fixture(scope="module")
def games():
  snaps, actions, first = _play_random_games(jax.random.key(0), NUM_GAMES)
  return jax.tree.map(np.asarray, snaps), np.asarray(actions), np.asarray(first)


def _as_u64(a):
  a = np.asarray(a).astype(np.uint64)
  return a[..., 0] | (a[..., 1] << np.uint64(32))


def test_env_properties():
  assert ENV.id == "connect4"
  assert (ENV.num_actions, ENV.num_players, ENV.max_game_length) == (7, 2, 42)
  assert ENV == connect4.Connect4() and hash(ENV) == hash(connect4.Connect4())


def test_init():
  state = ENV.init(jax.random.key(3))
  assert int(state.ply) == 0 and int(state.current_player) == 0
  assert not bool(state.terminated) and int(state.winner) == -1
  assert state.legal_action_mask.tolist() == [True] * 7
  assert not np.asarray(state.observation).any()
  batch = ENV.init(jax.random.key(3), batch_size=5)
  assert batch.position.shape == (5, 2) and batch.position.dtype == jnp.uint32
  assert batch.legal_action_mask.shape == (5, 7)
  assert batch.observation.shape == (5, 6, 7, 2)
  assert batch.key.shape == (5, 2) and batch.key.dtype == jnp.uint32
  assert batch.current_player.dtype == jnp.int32


def test_matches_pgx_on_random_games(games):
  snaps, _, first = games
  term = snaps["terminated"]
  np.testing.assert_array_equal(term, snaps["pgx_terminated"])
  np.testing.assert_array_equal(snaps["obs"], snaps["pgx_obs"])
  # pgx sets every action legal once terminated; ours are all illegal then.
  live = ~term
  np.testing.assert_array_equal(snaps["legal"][live], snaps["pgx_legal"][live])
  assert not snaps["legal"][term].any()
  # pgx's colour 0 is the first mover, our player 0; its player ids are shuffled.
  np.testing.assert_array_equal(snaps["winner"], snaps["pgx_winner"])
  first_rewards = np.take_along_axis(snaps["pgx_rewards"], first[None, :, None], -1)[..., 0]
  second_rewards = np.take_along_axis(snaps["pgx_rewards"], 1 - first[None, :, None], -1)[..., 0]
  np.testing.assert_array_equal(snaps["rewards"][..., 0], first_rewards)
  np.testing.assert_array_equal(snaps["rewards"][..., 1], second_rewards)
  # Same player to move (pgx flips its current player even on the final move).
  mover_id = np.where(snaps["ply"] % 2 == 0, first[None], 1 - first[None])
  np.testing.assert_array_equal(mover_id, snaps["pgx_player"])
  # Every game ends; both outcomes and some draws occur.
  final = {k: v[-1] for k, v in snaps.items()}
  assert final["terminated"].all()
  assert {0, 1, -1} <= set(final["winner"].tolist())
  ended_by_win = final["winner"] >= 0
  assert (final["ply"][~ended_by_win] == 42).all()


def test_states_are_consistent(games):
  snaps, _, _ = games
  ply = snaps["ply"]
  mask = _as_u64(snaps["mask"])
  position = _as_u64(snaps["position"])
  assert ((position & ~mask) == 0).all()
  popcount = np.array([bin(int(m)).count("1") for m in mask.ravel()]).reshape(mask.shape)
  np.testing.assert_array_equal(popcount, ply)
  # Rewards are zero except on the move that ends a game.
  just_ended = np.concatenate([snaps["terminated"][:1], snaps["terminated"][1:] & ~snaps["terminated"][:-1]])
  assert not snaps["rewards"][~just_ended].any()
  np.testing.assert_array_equal(snaps["rewards"].sum(-1), 0.0)


def test_key_is_position_plus_mask(games):
  snaps, _, _ = games
  key = _as_u64(snaps["key"])
  np.testing.assert_array_equal(key, _as_u64(snaps["position"]) + _as_u64(snaps["mask"]))
  for i in range(0, NUM_GAMES, 97):
    for t in (0, 7, 20, 42):
      expected = bits.to_int(snaps["position"][t, i]) + bits.to_int(snaps["mask"][t, i])
      assert bits.to_int(snaps["key"][t, i]) == expected


def test_keys_identify_positions(games):
  snaps, _, _ = games
  key = _as_u64(snaps["key"]).ravel()
  obs = snaps["obs"].reshape(key.shape[0], -1)
  player = (snaps["ply"] % 2).ravel()
  # A board plus the player to move, as bytes: one key per board, one board per key.
  boards = np.concatenate([np.packbits(obs, axis=1), player[:, None].astype(np.uint8)], axis=1)
  board_ids = np.unique(boards, axis=0, return_inverse=True)[1].ravel()
  pairs = np.unique(np.stack([key, board_ids.astype(np.uint64)], axis=1), axis=0)
  assert len(pairs) == len(np.unique(key)) == len(np.unique(board_ids))
  assert len(np.unique(key)) > 50_000


def test_transpositions_share_keys():
  def key(moves):
    return bits.to_int(connect4.from_moves(moves).key)

  assert key("1234") == key("3214") == key("3412")
  assert key("4455") == key("5544") != key("4554")
  assert key("1234") != key("1243")
  assert key("44") != key("4")
  assert key("12") != key("21")
  state = ENV.init(jax.random.key(0))
  for a in (2, 1, 0, 3):
    state = _step(state, a)
  assert bits.to_int(state.key) == key("1234")


def test_from_moves_matches_step(games):
  snaps, actions, _ = games
  for i in range(0, NUM_GAMES, 211):
    length = int(snaps["ply"][-1, i])
    moves = "".join(str(a + 1) for a in actions[:length, i])
    for t in sorted({0, length // 2, length}):
      state = connect4.from_moves(moves[:t])
      for name in ("position", "mask", "ply", "terminated", "winner", "rewards"):
        np.testing.assert_array_equal(np.asarray(getattr(state, name)), snaps[name][t, i], err_msg=name)


def test_from_moves_golden():
  empty = connect4.from_moves("")
  assert int(empty.ply) == 0 and bits.to_int(empty.mask) == 0

  state = connect4.from_moves("4455")
  assert bits.to_int(state.mask) == (1 << 21) | (1 << 22) | (1 << 28) | (1 << 29)
  assert bits.to_int(state.position) == (1 << 21) | (1 << 28)
  assert int(state.ply) == 4 and int(state.current_player) == 0
  assert not bool(state.terminated) and int(state.winner) == -1
  assert connect4.render(state).splitlines()[-3:] == [
      ". . . O O . .",
      ". . . X X . .",
      "1 2 3 4 5 6 7",
  ]
  obs = np.asarray(state.observation)
  assert obs[5, 3, 0] and obs[5, 4, 0] and obs[4, 3, 1] and obs[4, 4, 1]
  assert obs.sum() == 4


@pytest.mark.parametrize("moves, winner, ply", [
    ("1212121", 0, 7),         # vertical
    ("1122334", 0, 7),         # horizontal
    ("12233434544", 0, 11),    # diagonal /
    ("76655454344", 0, 11),    # diagonal \
    ("21212131", 1, 8),        # second player, vertical
    (LAST_MOVE_WINS_GAME, 1, 42),
    (DRAW_GAME, -1, 42),
])
def test_from_moves_game_ends(moves, winner, ply):
  state = connect4.from_moves(moves)
  assert bool(state.terminated)
  assert int(state.winner) == winner and int(state.ply) == ply
  expected = [0.0, 0.0] if winner < 0 else [1.0 if p == winner else -1.0 for p in (0, 1)]
  assert state.rewards.tolist() == expected
  assert not state.legal_action_mask.any()
  # The move before is still open, and stepping the last move agrees.
  before = connect4.from_moves(moves[:-1])
  assert not bool(before.terminated)
  after = _step(before, int(moves[-1]) - 1)
  for name in ("position", "mask", "ply", "terminated", "winner", "rewards"):
    np.testing.assert_array_equal(getattr(after, name), getattr(state, name), err_msg=name)


@pytest.mark.parametrize("moves, message", [
    ("0", "bad move"),
    ("8", "bad move"),
    ("12a", "bad move"),
    ("1 2", "bad move"),
    ("1111111", "full column"),
    ("12121212", "after the end"),
    (DRAW_GAME + "1", "after the end"),
])
def test_from_moves_errors(moves, message):
  with pytest.raises(ValueError, match=message):
    connect4.from_moves(moves)


def test_illegal_action_loses():
  empty = ENV.init(jax.random.key(0))
  for action in (7, -1, 100):
    state = _step(empty, action)
    assert bool(state.terminated) and int(state.winner) == 1
    assert state.rewards.tolist() == [-1.0, 1.0]
    assert int(state.ply) == 1 and bits.to_int(state.mask) == 0
    assert not state.legal_action_mask.any()
  # A full column, with player 0 to move.
  full = connect4.from_moves("111111")
  assert not bool(full.legal_action_mask[0]) and bool(full.legal_action_mask[1:].all())
  state = _step(full, 0)
  assert bool(state.terminated) and int(state.winner) == 1
  assert state.rewards.tolist() == [-1.0, 1.0]
  np.testing.assert_array_equal(state.mask, full.mask)
  # The key stays distinct from every real position (flag bit 63).
  opponent = bits.to_int(full.position) ^ bits.to_int(full.mask)
  assert bits.to_int(state.key) == (opponent + bits.to_int(full.mask)) | (1 << 63)
  # With player 1 to move, and batched with a legal move.
  one = connect4.from_moves("1111112")
  batch = jax.tree.map(lambda x: jnp.stack([x, x]), one)
  out = _step(batch, jnp.array([0, 2]))
  assert out.terminated.tolist() == [True, False]
  assert out.winner.tolist() == [0, -1]
  assert out.rewards.tolist() == [[1.0, -1.0], [0.0, 0.0]]


def test_step_on_terminated_is_noop():
  done = connect4.from_moves("1212121")
  for action in (0, 3, 9, -2):
    after = _step(done, action)
    for name in ("position", "mask", "ply", "terminated", "winner"):
      np.testing.assert_array_equal(getattr(after, name), getattr(done, name), err_msg=name)
    assert after.rewards.tolist() == [0.0, 0.0]
  illegal_end = _step(ENV.init(jax.random.key(0)), 9)
  again = _step(illegal_end, 0)
  np.testing.assert_array_equal(again.key, illegal_end.key)
  assert again.rewards.tolist() == [0.0, 0.0]


def test_pons_positions_parse():
  if not pons.path("L3_R1").exists():
    pytest.skip(f"{pons.DATA_DIR} not found")
  rows = pons.read_scores("L3_R1", 100)
  assert len(rows) == 100
  for moves, _ in rows:
    state = connect4.from_moves(moves)
    assert not bool(state.terminated), moves
    assert int(state.ply) == len(moves)


def test_bits_against_python_ints():
  rng = np.random.default_rng(0)
  values = [int(v) for v in rng.integers(0, 2**63, size=64, dtype=np.uint64)]
  values += [0, 1, 2**32 - 1, 2**32, 2**64 - 1, 2**63]
  others = values[::-1]
  m64 = 2**64 - 1
  x = bits.unpack(jnp.asarray(np.stack([bits.from_int(v) for v in values])))
  y = bits.unpack(jnp.asarray(np.stack([bits.from_int(v) for v in others])))

  def check(result, expected):
    got = np.asarray(bits.pack(result))
    assert [bits.to_int(g) for g in got] == [e & m64 for e in expected]

  check(bits.add(x, y), [a + b for a, b in zip(values, others)])
  check(bits.sub(x, y), [a - b for a, b in zip(values, others)])
  check(bits.and_(x, y), [a & b for a, b in zip(values, others)])
  check(bits.or_(x, y), [a | b for a, b in zip(values, others)])
  check(bits.xor(x, y), [a ^ b for a, b in zip(values, others)])
  check(bits.not_(x), [~a for a in values])
  for n in (0, 1, 6, 7, 8, 14, 31, 32, 33, 48, 63, 64):
    check(bits.shl(x, n), [a << n for a in values])
    check(bits.shr(x, n), [a >> n for a in values])
  assert bits.popcount(x).tolist() == [bin(a).count("1") for a in values]
  assert bits.nonzero(x).tolist() == [a != 0 for a in values]
  assert bits.equal(x, x).all() and bits.equal(x, y).tolist() == [a == b for a, b in zip(values, others)]
  index = jnp.arange(-1, 66)
  got = np.asarray(bits.pack(bits.bit(index)))
  assert [bits.to_int(g) for g in got] == [(1 << int(i)) if 0 <= i < 64 else 0 for i in index]
