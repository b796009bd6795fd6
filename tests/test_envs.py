"""The per-game constants of `mcgs_jax.envs.base.Env` are plain attributes: never
dataclass fields, so equality and hashing (envs are static `jax.jit`
arguments) stay those of the fields, and recomputed by `dataclasses.replace`."""

import dataclasses

import jax
import pytest

from mcgs_jax import envs
from mcgs_jax.envs import base
from mcgs_jax.envs import hsr
from mcgs_jax.envs import nim
from mcgs_jax.envs import pgx_env

IDS = ("connect4", "tictactoe", "nim", "nim:3,10", "nim-misere:2,3", "hsr:2,3,7",
       "pgx:tic_tac_toe")


@pytest.mark.parametrize("game_id", IDS)
def test_constants_are_attributes_not_fields(game_id):
  env = envs.make(game_id)
  assert env.id == game_id or game_id == "nim"
  fields = {f.name for f in dataclasses.fields(env)}
  for name in base.CONSTANTS:
    assert name not in fields
    assert not isinstance(getattr(type(env), name, None), property), name
    getattr(env, name)  # every constant is set
  assert env.num_players == 2 and env.acyclic_keys and env.alternating_zero_sum
  assert env == envs.make(game_id) and hash(env) == hash(envs.make(game_id))


def test_replace_recomputes_the_constants():
  env = nim.Nim(piles=(2, 3))
  other = dataclasses.replace(env, piles=(4, 5, 6))
  assert (env.id, env.num_actions, env.max_game_length) == ("nim-piles:2,3", 6, 5)
  assert (other.id, other.num_actions, other.max_game_length) == ("nim-piles:4,5,6", 18, 15)
  assert dataclasses.replace(hsr.HSR(), tests=5).max_game_length == 10
  position = pgx_env.PgxEnv("tic_tac_toe")
  assert dataclasses.replace(position, key_mode="full").exact_keys


def test_equal_envs_share_a_compilation():
  add = jax.jit(lambda env, x: x + env.num_actions, static_argnums=0)
  assert int(add(nim.Nim(piles=(2, 3)), 1)) == 7
  assert int(add(nim.Nim(piles=(2, 3)), 1)) == 7
  assert add._cache_size() == 1  # pylint: disable=protected-access
  assert int(add(nim.Nim(piles=(2, 4)), 1)) == 9


def test_set_constants_refuses_other_names():
  with pytest.raises(ValueError, match="not env constants"):
    base.set_constants(nim.Nim(), num_action=3)
