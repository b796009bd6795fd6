"""Tic-tac-toe and HSR: rules, exact keys, ground-truth values, search."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import base
from mcgs_jax.envs import hsr
from mcgs_jax.envs import tictactoe
from mcgs_jax.envs import exhaustive
from tests import invariants


def _random_playouts(env, num_games, seed):
  """All states along `num_games` uniformly random games, as numpy dicts."""
  step = jax.jit(env.step)
  state = env.init(jax.random.PRNGKey(seed), batch_size=num_games)
  rng = jax.random.PRNGKey(seed + 1)
  seen = []
  for _ in range(env.max_game_length + 1):
    seen.append(jax.tree.map(np.asarray, state))
    rng, sub = jax.random.split(rng)
    state = step(state, base.random_legal_action(sub, state.legal_action_mask))
  return seen


def _assert_key_exact(seen, fields):
  """Equal keys <=> equal values of `fields` over all seen states."""
  by_key = {}
  for states in seen:
    key = np.asarray(states.key)
    keys = key[:, 0].astype(np.uint64) | (key[:, 1].astype(np.uint64) << np.uint64(32))
    for i, k in enumerate(keys.tolist()):
      content = tuple(np.asarray(getattr(states, f)[i]).tobytes() for f in fields)
      assert by_key.setdefault(k, content) == content
  contents = list(by_key.values())
  assert len(set(contents)) == len(contents)
  return len(by_key)


# ---------------------------------------------------------------- tic-tac-toe


def test_tictactoe_matches_pgx_on_random_games():
  ours, theirs = envs.make("tictactoe"), pgx.make("tic_tac_toe")
  batch = 256
  s = ours.init(jax.random.PRNGKey(0), batch_size=batch)
  p = jax.vmap(theirs.init)(jax.random.split(jax.random.PRNGKey(0), batch))
  step_ours, step_pgx = jax.jit(ours.step), jax.jit(jax.vmap(theirs.step))
  rng = jax.random.PRNGKey(3)
  for _ in range(9):
    # pgx marks every action legal once a game is over; ours marks none.
    live = ~np.asarray(p.terminated)
    np.testing.assert_array_equal(s.legal_action_mask[live], p.legal_action_mask[live])
    np.testing.assert_array_equal(s.observation[live], p.observation[live])
    # pgx draws which player id moves first; compare from the mover's side.
    mover_ours, mover_pgx = s.current_player, p.current_player
    rng, sub = jax.random.split(rng)
    logits = jnp.where(p.legal_action_mask, 0.0, -jnp.inf)
    action = jnp.where(p.terminated, 0, jax.random.categorical(sub, logits)).astype(jnp.int32)
    s, p = step_ours(s, action), step_pgx(p, action)
    np.testing.assert_array_equal(s.terminated, p.terminated)
    take = lambda r, i: jnp.take_along_axis(r, i[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(take(s.rewards, mover_ours), take(p.rewards, mover_pgx))


def test_tictactoe_key_is_exact_and_merges_move_orders():
  a = tictactoe.from_moves([4, 0, 8, 2])
  b = tictactoe.from_moves([8, 2, 4, 0])
  c = tictactoe.from_moves([4, 2, 8, 0])
  np.testing.assert_array_equal(a.key, b.key)
  np.testing.assert_array_equal(a.key, c.key)
  d = tictactoe.from_moves([4, 0, 2, 8])   # X and O swapped on two cells
  assert not np.array_equal(a.key, d.key)
  distinct = _assert_key_exact(_random_playouts(tictactoe.TicTacToe(), 512, 0),
                               ["position", "mask", "terminated", "winner"])
  assert distinct > 1000


def test_tictactoe_illegal_move_loses_and_is_keyed_apart():
  env = tictactoe.TicTacToe()
  s = tictactoe.from_moves([4])
  bad = env.step(s, 4)
  assert bool(bad.terminated) and int(bad.winner) == 0
  np.testing.assert_array_equal(bad.rewards, [1.0, -1.0])
  assert not np.array_equal(bad.key, s.key)
  with pytest.raises(ValueError):
    tictactoe.from_moves([4, 4])


def test_tictactoe_exhaustive_value_is_a_draw():
  env = tictactoe.TicTacToe()
  value, values = exhaustive.solve_game(env, env.init(jax.random.PRNGKey(0)))
  assert value == 0.0
  # 5478 legal positions minus the 958 finished ones (wins and full boards).
  assert len(values) == 5478 - 958
  # A known won position: X to move with two open threats wins.
  value, _ = exhaustive.solve_game(env, tictactoe.from_moves([0, 4, 8, 2, 6]))
  assert value == -1.0   # O to move, X threatens 3 and 7


# ------------------------------------------------------------------------ HSR


def test_hsr_closed_form():
  assert hsr.max_answers(4, 4) == 16
  assert hsr.tester_wins(4, 4, 16) and not hsr.tester_wins(4, 4, 17)
  assert hsr.max_answers(1, 5) == 6       # one jar: test rung by rung
  assert hsr.max_answers(9, 4) == 16      # jars beyond tests do not help: 2^q


@pytest.mark.parametrize("jars,tests,answers", [
    (1, 3, 4), (1, 3, 5), (2, 4, 11), (2, 4, 12), (4, 4, 16), (4, 4, 17),
])
def test_hsr_exhaustive_value_matches_closed_form(jars, tests, answers):
  env = envs.make(f"hsr:{jars},{tests},{answers}")
  value, _ = exhaustive.solve_game(env, env.init(jax.random.PRNGKey(0)))
  assert value == (1.0 if hsr.tester_wins(jars, tests, answers) else -1.0)


def test_hsr_rules_by_hand():
  env = hsr.HSR(1, 2, 3)   # answers 0, 1, 2; one jar, two tests: f = 3
  s = env.init(jax.random.PRNGKey(0))
  np.testing.assert_array_equal(s.legal_action_mask, [True, True])   # rungs 1, 2
  s = env.step(s, 0)                      # test rung 1
  assert int(s.current_player) == 1 and int(s.tests) == 1
  np.testing.assert_array_equal(s.legal_action_mask, [True, True])   # holds / breaks
  broke = env.step(s, hsr.BREAKS)         # answer is 0: found with the last jar
  assert bool(broke.terminated) and int(broke.winner) == 0
  np.testing.assert_array_equal(broke.rewards, [1.0, -1.0])
  held = env.step(s, hsr.HOLDS)           # answer in {1, 2}
  assert not bool(held.terminated) and (int(held.lo), int(held.hi)) == (1, 2)
  np.testing.assert_array_equal(held.legal_action_mask, [False, True])
  held = env.step(env.step(held, 1), hsr.BREAKS)   # rung 2 breaks: answer 1, no jar left
  assert bool(held.terminated) and int(held.winner) == 0
  top = env.step(env.step(env.init(jax.random.PRNGKey(0)), 1), hsr.HOLDS)   # {2}
  assert bool(top.terminated) and int(top.winner) == 0
  # Out of jars with two answers left: the adversary wins.
  s = env.init(jax.random.PRNGKey(0))
  s = env.step(env.step(s, 1), hsr.BREAKS)         # {0, 1}, no jar left
  assert bool(s.terminated) and int(s.winner) == 1
  np.testing.assert_array_equal(s.rewards, [-1.0, 1.0])
  # Illegal moves lose for the mover and keep the position.
  bad = env.step(env.init(jax.random.PRNGKey(0)), 2)
  assert bool(bad.terminated) and int(bad.winner) == 1
  bad = env.step(env.step(env.init(jax.random.PRNGKey(0)), 0), 2)
  assert bool(bad.terminated) and int(bad.winner) == 0


def test_hsr_key_is_exact_and_has_transpositions():
  env = hsr.HSR(4, 4, 16)
  seen = _random_playouts(env, 2048, 1)
  _assert_key_exact(seen, ["lo", "hi", "jars", "tests", "rung", "ply", "terminated", "winner"])
  s0 = env.init(jax.random.PRNGKey(0))
  a = env.step(env.step(env.step(env.step(s0, 4), hsr.HOLDS), 9), hsr.BREAKS)
  b = env.step(env.step(env.step(env.step(s0, 9), hsr.BREAKS), 4), hsr.HOLDS)
  np.testing.assert_array_equal(a.key, b.key)
  assert (int(a.lo), int(a.hi)) == (5, 9)


def test_hsr_bad_parameters():
  with pytest.raises(ValueError):
    envs.make("hsr:4,4")
  with pytest.raises(ValueError):
    hsr.HSR(0, 4, 16)
  with pytest.raises(ValueError):
    hsr.HSR(4, 4, 1)


@functools.lru_cache(maxsize=None)
def _search_fn(env, config):
  return jax.jit(functools.partial(mcgs_jax.search, env=env, eval_fn=envs.rollout_eval(env),
                                   config=config))


@pytest.mark.parametrize("game_id", ["hsr:4,4,16", "tictactoe"])
def test_search_on_small_games_keeps_invariants_and_transposes(game_id):
  env = envs.make(game_id)
  config = mcgs_jax.SearchConfig(num_simulations=200)
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  out = _search_fn(env, config)(None, jax.random.PRNGKey(1), state)
  graph = jax.device_get(out.graph)
  for b in range(2):
    invariants.check_graph(graph, b, config)
  assert np.all(np.asarray(out.stats.transposition_hits) > 0)
  assert np.all(np.asarray(out.visit_counts).sum(-1) == 200)
  legal = np.asarray(state.legal_action_mask)
  assert legal[np.arange(2), np.asarray(out.action)].all()
