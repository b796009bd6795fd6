"""Replay buffer (masked ring insertion, uniform sampling) and the board
symmetries used to augment training examples."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import base
from mcgs_jax.envs import connect4
from mcgs_jax.envs import tictactoe
from mcgs_jax.learning import example as example_lib
from mcgs_jax.learning import replay

_C4 = connect4.Connect4()
_TTT = tictactoe.TicTacToe()


def _play(env, actions):
  """States after each ply of the games `actions` int[B, T], as numpy [T + 1]."""
  step = jax.jit(env.step)
  state = env.init(jax.random.PRNGKey(0), batch_size=actions.shape[0])
  states = [jax.tree.map(np.asarray, state)]
  for ply in range(actions.shape[1]):
    state = step(state, jnp.asarray(actions[:, ply]))
    states.append(jax.tree.map(np.asarray, state))
  return states


def _random_connect4_games(num_games, num_plies, seed):
  """int[G, T]: random columns, never a full one (a won game ignores the rest)."""
  rng = np.random.default_rng(seed)
  actions = np.zeros((num_games, num_plies), np.int32)
  for g in range(num_games):
    heights = np.zeros(connect4.NUM_COLS, np.int32)
    for ply in range(num_plies):
      col = rng.choice(np.flatnonzero(heights < connect4.NUM_ROWS))
      heights[col] += 1
      actions[g, ply] = col
  return actions


def _action_maps(env):
  """int[S, A]: where each symmetry sends each action, read off how it
  permutes a one-hot policy (so the game tests below check the policy
  permutation against the game itself)."""
  num_actions = env.num_actions
  observation = np.zeros(env.observe(env.init(jax.random.PRNGKey(0))).shape, np.bool_)
  one_hot = jnp.eye(num_actions, dtype=jnp.float32)
  legal = jnp.ones((num_actions,), jnp.bool_)

  def sends(index):
    moved = jax.vmap(lambda p: env.symmetry(index, observation, p, legal)[1])(one_hot)
    return jnp.argmax(moved, axis=-1)

  maps = np.asarray(jax.jit(jax.vmap(sends))(jnp.arange(env.num_symmetries)))
  for row in maps:   # every symmetry permutes the actions
    assert sorted(row.tolist()) == list(range(num_actions))
  return maps


def _transform_states(env, index, states):
  """(observation, legal) of a batch of states after symmetry `index` [B]."""
  dummy_policy = jnp.zeros(states.legal_action_mask.shape, jnp.float32)
  observation, _, legal = jax.jit(jax.vmap(env.symmetry))(
      jnp.asarray(index), states.observation, dummy_policy, states.legal_action_mask)
  return np.asarray(observation), np.asarray(legal)


# ------------------------------------------------------------------ symmetries


def test_connect4_mirror_is_the_game_played_mirrored():
  maps = _action_maps(_C4)
  np.testing.assert_array_equal(maps, [np.arange(7), np.arange(7)[::-1]])
  num_games, num_plies = 12, 16
  actions = _random_connect4_games(num_games, num_plies, seed=1)
  plain = _play(_C4, actions)
  mirrored = _play(_C4, maps[1][actions])
  changed = 0
  for ply, (ours, theirs) in enumerate(zip(plain, mirrored)):
    observation, legal = _transform_states(_C4, np.ones(num_games, np.int32), ours)
    np.testing.assert_array_equal(observation, theirs.observation, err_msg=f"ply {ply}")
    np.testing.assert_array_equal(legal, theirs.legal_action_mask, err_msg=f"ply {ply}")
    np.testing.assert_array_equal(ours.terminated, theirs.terminated)
    changed += int(np.any(observation != ours.observation))
  assert changed >= num_plies // 2   # the mirror really moves stones


def test_connect4_mirror_golden_positions():
  for moves, mirrored_moves in [("4455", "4433"), ("1234", "7654"), ("112233", "776655")]:
    state, expected = connect4.from_moves(moves), connect4.from_moves(mirrored_moves)
    policy = jnp.arange(7, dtype=jnp.float32) / 21.0
    observation, mirrored_policy, legal = _C4.symmetry(
        1, state.observation, policy, state.legal_action_mask)
    np.testing.assert_array_equal(observation, expected.observation)
    np.testing.assert_array_equal(legal, expected.legal_action_mask)
    np.testing.assert_allclose(mirrored_policy, policy[::-1])
    identity = _C4.symmetry(0, state.observation, policy, state.legal_action_mask)
    for got, want in zip(identity, (state.observation, policy, state.legal_action_mask)):
      np.testing.assert_array_equal(got, want)


def test_tictactoe_symmetries_are_the_game_played_transformed():
  maps = _action_maps(_TTT)
  num_symmetries = _TTT.num_symmetries
  assert num_symmetries == 8
  rng = np.random.default_rng(2)
  num_games = 6
  # Distinct cells: never an illegal move; games won early ignore the rest.
  actions = np.stack([rng.permutation(9) for _ in range(num_games)]).astype(np.int32)
  index = np.repeat(np.arange(num_symmetries, dtype=np.int32), num_games)
  plain = _play(_TTT, np.tile(actions, (num_symmetries, 1)))
  transformed = _play(_TTT, maps[index[:, None], np.tile(actions, (num_symmetries, 1))])
  for ply, (ours, theirs) in enumerate(zip(plain, transformed)):
    observation, legal = _transform_states(_TTT, index, ours)
    np.testing.assert_array_equal(observation, theirs.observation, err_msg=f"ply {ply}")
    np.testing.assert_array_equal(legal, theirs.legal_action_mask, err_msg=f"ply {ply}")
    np.testing.assert_array_equal(ours.winner, theirs.winner)


def test_tictactoe_symmetries_are_the_dihedral_group():
  maps = _action_maps(_TTT)
  np.testing.assert_array_equal(maps[0], np.arange(9))
  as_tuples = {tuple(row) for row in maps.tolist()}
  assert len(as_tuples) == 8
  for first, second in itertools.product(maps, repeat=2):
    assert tuple(second[first]) in as_tuples   # closed under composition
  lines = {frozenset(np.flatnonzero((int(line) >> np.arange(9)) & 1)) for line in tictactoe._LINES}
  for row in maps:
    assert {frozenset(row[list(line)].tolist()) for line in lines} == lines
  # Index 1 is the clockwise quarter turn: the top-left corner goes top-right.
  assert maps[1][0] == 2 and maps[1][4] == 4


def test_default_symmetry_is_the_identity():
  env = envs.make("nim")
  assert env.num_symmetries == 1
  state = env.init(jax.random.PRNGKey(0))
  observation = env.observe(state)
  policy = jnp.full((env.num_actions,), 1.0 / env.num_actions)
  got = env.symmetry(0, observation, policy, state.legal_action_mask)
  for out, given in zip(got, (observation, policy, state.legal_action_mask)):
    assert out is given
  with pytest.raises(ValueError, match="out of range"):
    env.symmetry(1, observation, policy, state.legal_action_mask)


def test_bad_symmetry_index_or_shape_is_rejected():
  state = connect4.from_moves("4")
  c4_args = (state.observation, jnp.zeros(7), state.legal_action_mask)
  ttt_args = (jnp.zeros((3, 3, 2), bool), jnp.zeros(9), jnp.zeros(9, bool))
  for env, args, bad in [(_C4, c4_args, 2), (_C4, c4_args, -1), (_TTT, ttt_args, 8)]:
    with pytest.raises(ValueError, match=r"out of range \[0, "):
      env.symmetry(bad, *args)
  for bad in (1.0, jnp.array([1])):
    with pytest.raises(ValueError, match="integer scalar"):
      _C4.symmetry(bad, *c4_args)
  with pytest.raises(AssertionError):
    _C4.symmetry(1, state.observation, jnp.zeros(9), state.legal_action_mask)


# ---------------------------------------------------------------- replay


def _marked_items(markers):
  """Example [M] whose every field encodes `markers` (ints), for tracking rows."""
  markers = np.asarray(markers, np.int32)
  num_rows = markers.shape[0]
  observation = (markers[:, None, None, None] >> np.arange(3)[None, :, None, None]) & 1
  observation = np.broadcast_to(observation, (num_rows, 3, 7, 2)).astype(np.bool_)
  policy = np.zeros((num_rows, 7), np.float32)
  policy[np.arange(num_rows), np.abs(markers) % 7] = 1.0
  return example_lib.Example(
      observation=jnp.asarray(observation),
      legal_action_mask=jnp.asarray(policy > 0),
      policy=jnp.asarray(policy),
      player=jnp.asarray(markers),
      value=jnp.asarray(markers.astype(np.float32)))


def _prototype():
  return jax.tree.map(lambda x: x[0], _marked_items([0]))


_add = jax.jit(replay.add)
_sample = jax.jit(replay.sample, static_argnames="batch_size")


def _assert_rows_coherent(items):
  """Every field of each row encodes the same marker (no mixed rows)."""
  markers = np.asarray(items.player)
  np.testing.assert_array_equal(np.asarray(items.value), markers.astype(np.float32))
  np.testing.assert_array_equal(np.argmax(np.asarray(items.policy), -1), np.abs(markers) % 7)
  np.testing.assert_array_equal(np.asarray(items.observation)[:, :, 0, 0].T,
                                (markers[None] >> np.arange(3)[:, None]) & 1)


def _assert_buffer(buffer, slots, size, next_index, total_added):
  np.testing.assert_array_equal(np.asarray(buffer.data.player), slots)
  _assert_rows_coherent(buffer.data)
  assert (int(buffer.size), int(buffer.next_index), int(buffer.total_added)) == (
      size, next_index, total_added)


def test_add_golden_order_wraparound_and_overflow():
  buffer = replay.init(_prototype(), capacity=5)
  _assert_buffer(buffer, [0, 0, 0, 0, 0], 0, 0, 0)
  # Valid rows keep their order; invalid rows (marker -1) are never written.
  buffer = _add(buffer, _marked_items([1, -1, 2, 3, -1, -1]),
                jnp.array([True, False, True, True, False, False]))
  _assert_buffer(buffer, [1, 2, 3, 0, 0], 3, 3, 3)
  # Wrap-around: 4 valid rows go to slots 3, 4, 0, 1.
  buffer = _add(buffer, _marked_items([4, 5, -1, 6, 7, -1]),
                jnp.array([True, True, False, True, True, False]))
  _assert_buffer(buffer, [6, 7, 3, 4, 5], 5, 2, 7)
  # Nothing valid: unchanged.
  buffer = _add(buffer, _marked_items([-1] * 6), jnp.zeros(6, bool))
  _assert_buffer(buffer, [6, 7, 3, 4, 5], 5, 2, 7)
  # 7 valid rows into 5 slots from slot 2: as if added one at a time, 10 and
  # 11 land in slots 2, 3 and are overwritten by 15, 16; 12 is now the oldest.
  buffer = _add(buffer, _marked_items([10, -1, 11, 12, 13, 14, -1, 15, 16]),
                jnp.array([True, False, True, True, True, True, False, True, True]))
  _assert_buffer(buffer, [13, 14, 15, 16, 12], 5, 4, 14)


def test_add_matches_a_one_at_a_time_ring():
  capacity, rows = 5, 8
  rng = np.random.default_rng(3)
  buffer = replay.init(_prototype(), capacity)
  ring, next_index, total = [0] * capacity, 0, 0
  marker = 1
  for _ in range(15):
    valid = rng.random(rows) < rng.choice([0.2, 0.6, 1.0])
    markers = np.where(valid, np.arange(marker, marker + rows), -1)
    marker += rows
    buffer = _add(buffer, _marked_items(markers), jnp.asarray(valid))
    for m in markers[valid]:
      ring[next_index] = int(m)
      next_index = (next_index + 1) % capacity
      total += 1
    _assert_buffer(buffer, ring, min(total, capacity), next_index, total)


def test_add_rejects_mismatched_items():
  buffer = replay.init(_prototype(), capacity=4)
  items = _marked_items([1, 2, 3])
  with pytest.raises(ValueError, match="valid must be bool"):
    replay.add(buffer, items, jnp.ones(3, jnp.int32))
  with pytest.raises(ValueError, match=r"items\.\w+ must be \w+\[2"):
    replay.add(buffer, items, jnp.ones(2, bool))
  with pytest.raises(ValueError, match=r"items\.policy must be float32"):
    replay.add(buffer, items.replace(policy=items.policy.astype(jnp.bfloat16)), jnp.ones(3, bool))
  with pytest.raises(ValueError, match="structure"):
    replay.add(buffer, {"value": items.value}, jnp.ones(3, bool))
  for bad in (0, -3, 2.5, True):
    with pytest.raises(ValueError, match="capacity must be a positive int"):
      replay.init(_prototype(), bad)
  assert replay.init(_prototype(), np.int64(3)).capacity == 3


def test_sample_returns_only_filled_rows_uniformly():
  buffer = replay.init(_prototype(), capacity=16)
  buffer = _add(buffer, _marked_items([11, -1, 12, 13, 14, 15]),
                jnp.array([True, False, True, True, True, True]))
  items, weights = _sample(buffer, jax.random.PRNGKey(4), batch_size=4000)
  np.testing.assert_array_equal(weights, np.ones(4000, np.float32))
  _assert_rows_coherent(items)
  markers, counts = np.unique(np.asarray(items.player), return_counts=True)
  np.testing.assert_array_equal(markers, [11, 12, 13, 14, 15])
  # Chi-square with 4 degrees of freedom; 25 is exceeded with p < 1e-4.
  expected = 4000 / 5
  assert np.sum((counts - expected) ** 2 / expected) < 25.0
  # After wrap-around every slot is filled and may be drawn.
  buffer = _add(buffer, _marked_items(np.arange(20, 34)), jnp.ones(14, bool))
  items, _ = _sample(buffer, jax.random.PRNGKey(5), batch_size=4000)
  expected_markers = sorted(np.asarray(buffer.data.player).tolist())
  assert sorted(set(np.asarray(items.player).tolist())) == expected_markers
  assert len(expected_markers) == 16 and 11 not in expected_markers


def test_sample_from_an_empty_buffer_has_zero_weight():
  buffer = replay.init(_prototype(), capacity=8)
  items, weights = _sample(buffer, jax.random.PRNGKey(0), batch_size=6)
  np.testing.assert_array_equal(weights, np.zeros(6, np.float32))
  assert items.policy.shape == (6, 7) and not np.any(np.asarray(items.policy))
  with pytest.raises(ValueError, match="batch_size must be a positive int"):
    replay.sample(buffer, jax.random.PRNGKey(0), batch_size=0)


def test_buffer_survives_an_orbax_round_trip(tmp_path):
  ocp = pytest.importorskip("orbax.checkpoint")
  buffer = replay.init(_prototype(), capacity=4)
  buffer = _add(buffer, _marked_items([1, 2, 3, 4, 5]), jnp.ones(5, bool))
  with ocp.StandardCheckpointer() as checkpointer:
    checkpointer.save(tmp_path / "replay", buffer)
    checkpointer.wait_until_finished()
    restored = checkpointer.restore(tmp_path / "replay", target=buffer)
  assert isinstance(restored, replay.ReplayBuffer)
  jax.tree.map(np.testing.assert_array_equal, restored, buffer)
  _assert_buffer(restored, [5, 2, 3, 4], 4, 1, 5)


# ---------------------------------------------------------------- augmentation


def _random_positions(env, num_games, num_plies, seed):
  """Example [N] from random games: random policies over the legal moves."""
  rng = jax.random.PRNGKey(seed)
  step = jax.jit(env.step)
  state = env.init(rng, batch_size=num_games)
  seen = []
  for _ in range(num_plies):
    seen.append(state)
    rng, sub = jax.random.split(rng)
    state = step(state, base.random_legal_action(sub, state.legal_action_mask))
  states = jax.tree.map(lambda *xs: jnp.concatenate(xs), *seen)
  legal = states.legal_action_mask
  rng, sub = jax.random.split(rng)
  logits = jnp.where(legal, jax.random.normal(sub, legal.shape), -jnp.inf)
  policy = jnp.where(legal.any(-1, keepdims=True), jax.nn.softmax(logits), 0.0)
  value = jax.random.uniform(rng, (legal.shape[0],), minval=-1.0, maxval=1.0)
  return example_lib.Example(observation=states.observation, legal_action_mask=legal,
                             policy=policy, player=states.current_player, value=value)


def test_augment_connect4_mirrors_whole_rows():
  # 7 plies: no game has ended, so every policy sums to 1.
  items = _random_positions(_C4, num_games=8, num_plies=7, seed=6)
  # The opponent-policy target is mirrored with its row.
  items = items.replace(opponent_policy=jax.nn.softmax(
      jax.random.normal(jax.random.PRNGKey(8), items.policy.shape)))
  augmented = jax.jit(replay.augment, static_argnums=0)(_C4, jax.random.PRNGKey(7), items)
  np.testing.assert_array_equal(augmented.value, items.value)
  np.testing.assert_array_equal(augmented.player, items.player)
  np.testing.assert_allclose(np.asarray(augmented.policy).sum(-1), 1.0, rtol=1e-5)
  original = jax.tree.map(np.asarray, items)
  got = jax.tree.map(np.asarray, augmented)
  mirrored = [0, 0]
  for i in range(original.value.shape[0]):
    fields = (original.observation[i], original.policy[i], original.legal_action_mask[i])
    flipped = (fields[0][:, ::-1], fields[1][::-1], fields[2][::-1])
    outcome = (got.observation[i], got.policy[i], got.legal_action_mask[i])
    # The same choice for the three fields of a row.
    is_identity = all(np.array_equal(a, b) for a, b in zip(outcome, fields))
    is_mirror = all(np.array_equal(a, b) for a, b in zip(outcome, flipped))
    assert is_identity or is_mirror, f"row {i}"
    mirrored[int(is_mirror and not is_identity)] += 1
    opponent = original.opponent_policy[i][::-1] if is_mirror else original.opponent_policy[i]
    np.testing.assert_array_equal(got.opponent_policy[i], opponent)
  assert min(mirrored) >= 14   # both choices are drawn (56 rows, p = 1/2 each)
  # The mirror is an involution.
  twice = jax.jit(jax.vmap(lambda o, p, m: _C4.symmetry(1, *_C4.symmetry(1, o, p, m))))(
      items.observation, items.policy, items.legal_action_mask)
  for got_field, want in zip(twice, (items.observation, items.policy, items.legal_action_mask)):
    np.testing.assert_array_equal(got_field, want)


def test_augment_tictactoe_draws_all_symmetries_consistently():
  items = _random_positions(_TTT, num_games=16, num_plies=5, seed=8)
  augmented = jax.jit(replay.augment, static_argnums=0)(_TTT, jax.random.PRNGKey(9), items)
  np.testing.assert_array_equal(augmented.value, items.value)
  np.testing.assert_allclose(np.asarray(augmented.policy).sum(-1), 1.0, rtol=1e-5)
  num_rows = items.value.shape[0]
  # Every candidate transform of every row, to find which one was drawn.
  index = jnp.repeat(jnp.arange(8, dtype=jnp.int32), num_rows)
  tile = lambda x: jnp.tile(x, (8,) + (1,) * (x.ndim - 1))
  candidates = jax.jit(jax.vmap(_TTT.symmetry))(
      index, tile(items.observation), tile(items.policy), tile(items.legal_action_mask))
  candidates = [np.asarray(c).reshape((8, num_rows) + c.shape[1:]) for c in candidates]
  got = (augmented.observation, augmented.policy, augmented.legal_action_mask)
  drawn = set()
  for i in range(num_rows):
    matches = [k for k in range(8)
               if all(np.array_equal(c[k, i], np.asarray(g[i])) for c, g in zip(candidates, got))]
    assert matches, f"row {i} is no symmetry of its original"
    drawn.update(matches)
  assert drawn == set(range(8))


def test_augment_without_symmetries_returns_the_items():
  env = envs.make("nim")
  assert env.num_symmetries == 1
  state = env.init(jax.random.PRNGKey(0), batch_size=3)
  items = example_lib.Example(
      observation=env.observe(state), legal_action_mask=state.legal_action_mask,
      policy=jnp.zeros(state.legal_action_mask.shape), player=state.current_player,
      value=jnp.zeros(3))
  assert replay.augment(env, jax.random.PRNGKey(0), items) is items
