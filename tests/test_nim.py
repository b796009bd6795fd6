"""Nim envs: rules, keys, ids, and the closed-form ground truth."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import nim


def test_make_ids():
  assert envs.make("nim").piles == (1, 3, 5, 7)
  assert envs.make("nim").misere is False
  assert envs.make("nim-misere").misere is True
  assert envs.make("nim-piles:2,3,4").piles == (2, 3, 4)
  single = envs.make("nim:3,20")
  assert single.piles == (20,) and single.max_take == 3 and single.num_actions == 3
  assert envs.make("nim").num_actions == 28
  for bad in ["nim:1,2,3", "nim:a,b", "nim-piles", "chess"]:
    with pytest.raises(ValueError):
      envs.make(bad)


def test_step_rules_normal_and_misere():
  for misere in (False, True):
    env = nim.Nim(piles=(1, 2), misere=misere)
    s = env.init(jax.random.PRNGKey(0))
    assert s.legal_action_mask.tolist() == [True, False, True, True]
    s = env.step(s, 3)          # take 2 from pile 1
    assert s.piles.tolist() == [1, 0] and int(s.current_player) == 1
    assert not bool(s.terminated)
    s = env.step(s, 0)          # player 1 takes the last stone
    assert bool(s.terminated)
    winner_reward = -1.0 if misere else 1.0
    assert s.rewards.tolist() == [-winner_reward, winner_reward]
    same = env.step(s, 0)       # stepping a finished game is a no-op
    assert same.piles.tolist() == [0, 0] and same.rewards.tolist() == [0.0, 0.0]


def test_illegal_action_loses():
  env = nim.Nim(piles=(1, 2))
  s = env.step(env.init(jax.random.PRNGKey(0)), 1)   # take 2 from a 1-pile
  assert bool(s.terminated) and s.rewards.tolist() == [-1.0, 1.0]
  s = env.step(env.init(jax.random.PRNGKey(0)), 99)  # out of range
  assert bool(s.terminated) and s.rewards.tolist() == [-1.0, 1.0]


def test_single_pile_subtraction():
  env = envs.make("nim:3,5")
  s = env.init(jax.random.PRNGKey(0))
  assert s.legal_action_mask.tolist() == [True, True, True]
  s = env.step(s, 2)   # take 3 -> 2 left
  assert int(s.piles[0]) == 2 and s.legal_action_mask.tolist() == [True, True, False]
  s = env.step(s, 1)   # take 2, last stone
  assert bool(s.terminated) and s.rewards.tolist() == [-1.0, 1.0]


def test_keys_exact_and_unique():
  for env in (envs.make("nim"), envs.make("nim:3,20"), nim.Nim(ply_in_key=True)):
    positions = nim.all_positions(env)
    states = [nim.state_from_piles(env, p) for p in positions]
    keys = {tuple(np.asarray(s.key).tolist()) for s in states}
    assert len(keys) == len(positions)
  # Without the ply, move orders of different lengths meet.
  env = envs.make("nim")
  a = env.step(env.step(env.init(jax.random.PRNGKey(0)), 21), 22)   # 7-pile: take 1, then 2
  b = env.step(env.init(jax.random.PRNGKey(0)), 23)                  # take 3
  c = env.step(env.step(env.init(jax.random.PRNGKey(0)), 22), 21)
  assert a.piles.tolist() == b.piles.tolist() == c.piles.tolist()
  assert a.key.tolist() == b.key.tolist() == c.key.tolist()
  with_ply = nim.Nim(ply_in_key=True)
  a2 = with_ply.step(with_ply.step(with_ply.init(jax.random.PRNGKey(0)), 21), 22)
  b2 = with_ply.step(with_ply.init(jax.random.PRNGKey(0)), 23)
  assert a2.key.tolist() != b2.key.tolist()


def test_batched_init_and_step():
  env = envs.make("nim")
  s = env.init(jax.random.PRNGKey(0), batch_size=3)
  assert s.piles.shape == (3, 4) and s.key.shape == (3, 2)
  s = env.step(s, jnp.array([0, 1, 2]))
  assert s.piles[:, 0].tolist() == [0, 1, 1] and s.piles[:, 1].tolist() == [3, 3, 3]
  assert s.observation.shape == (3, 32)


@pytest.mark.parametrize("game_id", ["nim", "nim-misere", "nim:3,9", "nim-piles:2,3,4"])
def test_exact_eval_matches_minimax(game_id):
  env = envs.make(game_id)
  lost = {}

  def solve(piles):
    if piles not in lost:
      if sum(piles) == 0:
        lost[piles] = not env.misere   # the previous player took the last stone
      else:
        wins = False
        for pile, size in enumerate(piles):
          for take in range(1, min(size, env.take_limit) + 1):
            child = piles[:pile] + (size - take,) + piles[pile + 1:]
            wins |= solve(child)
        lost[piles] = not wins
    return lost[piles]

  positions = [p for p in nim.all_positions(env) if sum(p) > 0]
  states = envs.stack([nim.state_from_piles(env, p) for p in positions])
  _, value = nim.ExactEval(env)(None, None, states)
  for p, v in zip(positions, np.asarray(value)):
    assert (v < 0) == solve(p) == nim.lost_for_mover(env, p), p


def test_hashed_key_for_large_pile_sets():
  env = nim.Nim(piles=(255,) * 9)   # 72 bits of piles: hashed, not packed
  positions = [(255,) * 9, (254,) + (255,) * 8, (255,) * 8 + (254,), (0,) * 9, (1,) * 9]
  keys = {tuple(np.asarray(nim.state_from_piles(env, p).key).tolist()) for p in positions}
  assert len(keys) == len(positions)
