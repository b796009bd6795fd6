"""The terminal solver needs exact keys: equal keys, equal futures. Keys that
leave out path-dependent rules (pgx "position" keys of chess, go,
animal_shogi; an mctx `key_fn` declared inexact) make `search` refuse it."""

import jax
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import pgx_env
from tests import test_cycles

STATIC = ("env", "eval_fn", "config")
SOLVER = mcgs_jax.SearchConfig(num_simulations=4, solver=True)


def test_exact_keys_of_the_envs():
  for name in ("connect4", "nim", "tictactoe"):
    assert envs.make(name).exact_keys
    assert mcgs_jax.EnvModel(envs.make(name)).exact_keys
  for game in ("chess", "go_9x9", "go_19x19", "animal_shogi", "gardner_chess"):
    assert not pgx_env.PgxEnv(game).exact_keys
    assert not mcgs_jax.EnvModel(pgx_env.PgxEnv(game)).exact_keys
    assert pgx_env.PgxEnv(game, key_mode="full").exact_keys
  for game in ("tic_tac_toe", "connect_four", "othello", "hex", "shogi"):
    assert pgx_env.PgxEnv(game).exact_keys


@pytest.mark.parametrize("game", ["chess", "go_9x9", "animal_shogi"])
def test_solver_refused_on_position_keys(game):
  env = pgx_env.PgxEnv(game)
  # Refused at trace time, before the state is even looked at.
  with pytest.raises(ValueError, match=rf"(?s)solver=True.*{game}.*key_mode='full'"):
    jax.eval_shape(lambda: mcgs_jax.search(None, jax.random.PRNGKey(0), None, env,
                                           envs.uniform_eval(env), SOLVER))
  with pytest.raises(ValueError, match="exact_keys=False"):
    jax.eval_shape(lambda: mcgs_jax.simulate(None, jax.random.PRNGKey(0), None, env,
                                             envs.uniform_eval(env), SOLVER))


def test_solver_accepted_on_exact_pgx_keys():
  env = pgx_env.PgxEnv("tic_tac_toe")
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  out = jax.jit(mcgs_jax.search, static_argnames=STATIC)(
      None, jax.random.PRNGKey(0), state, env, envs.uniform_eval(env),
      mcgs_jax.SearchConfig(num_simulations=8, solver=True))
  assert int(out.stats.simulations[0]) == 8


@pytest.mark.slow
def test_solver_on_mctx_keys_follows_the_declaration():
  root = test_cycles.ring_root([0])
  inexact, eval_fn = mcgs_jax.from_mctx(test_cycles.ring_recurrent_fn,
                                        test_cycles.ring_key_fn, 3, exact_keys=False)
  assert not inexact.exact_keys
  with pytest.raises(ValueError, match="MctxModel has exact_keys=False"):
    mcgs_jax.search(None, jax.random.PRNGKey(0), root, inexact, eval_fn, SOLVER)
  # Without the solver the same model searches.
  out = mcgs_jax.search(None, jax.random.PRNGKey(0), root, inexact, eval_fn,
                        mcgs_jax.SearchConfig(num_simulations=4))
  assert int(out.stats.simulations[0]) == 4
  # The default takes key_fn at its word.
  exact, eval_fn = mcgs_jax.from_mctx(test_cycles.ring_recurrent_fn,
                                      test_cycles.ring_key_fn, 3)
  assert exact.exact_keys
  out = mcgs_jax.search(None, jax.random.PRNGKey(0), root, exact, eval_fn, SOLVER)
  assert int(out.stats.simulations[0]) == 4
