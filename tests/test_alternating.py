"""`alternating_zero_sum`: the games that declare it reward only the end and
pass the turn on every other move, and a search that takes those values
instead of reading them builds the same graph."""

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from tests import random_play
from tests import variants

search_jit = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))


@pytest.mark.parametrize("game_id,max_plies", [
    ("connect4", None), ("tictactoe", None), ("nim-piles:2,3,4", None), ("nim:3,9", None),
    ("nim-misere:2,3", None), ("hsr:2,3,7", None), ("pgx:tic_tac_toe", None),
    ("pgx:othello", None), ("pgx:hex", 60), ("pgx:go_9x9", 60),
    pytest.param("pgx:chess", 40, marks=pytest.mark.slow)])   # 13 s of compilation
def test_declared_games_reward_only_the_end(game_id, max_plies):
  """Along random lines of play every move into a non-terminal position has
  reward 0 and discount -1, as the declaration promises (the first
  `max_plies` moves of the longer pgx games; whole games otherwise)."""
  env = envs.make(game_id)
  model = mcgs_jax.EnvModel(env)
  assert env.alternating_zero_sum and model.alternating_zero_sum
  batch = 16
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  transition = jax.jit(lambda state, action: model.transition(None, None, state, action))
  inner = ends = 0
  for moving, trans in random_play.random_steps(state, transition, jax.random.PRNGKey(1),
                                                max_plies or env.max_game_length,
                                                lambda t: t.embedding):
    going = moving & ~np.asarray(trans.terminal)
    np.testing.assert_array_equal(np.asarray(trans.reward)[going], 0.0)
    np.testing.assert_array_equal(np.asarray(trans.discount)[going], -1.0)
    inner += going.sum()
    ends += (moving & np.asarray(trans.terminal)).sum()
  assert inner > batch and (max_plies is not None or ends == batch)


class _UndeclaredModel(mcgs_jax.EnvModel):
  """The same env, its edge rewards and discounts read from the graph."""
  alternating_zero_sum = False


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree"], fast=["mcgs"]))
def test_search_as_when_reading_the_edges(backup):
  """Taking reward 0 and discount -1 inside the paths (the transposition
  test, the batched backup) gives the same graph, bit for bit, as reading
  them: Nim (3, 4, 5), random rollouts, B=2, with links and corrections."""
  env = envs.make("nim-piles:3,4,5")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  config = mcgs_jax.SearchConfig(num_simulations=48, dirichlet_fraction=0.25, q_eps=0.0,
                                 backup=backup)
  eval_fn = envs.rollout_eval(env)
  outs = [jax.device_get(search_jit(None, jax.random.PRNGKey(3), state, env=model,
                                    eval_fn=eval_fn, config=config))
          for model in (mcgs_jax.EnvModel(env), _UndeclaredModel(env=env))]
  if backup == "mcgs":
    assert np.all(outs[0].stats.transposition_hits > 0) and np.all(outs[0].stats.corrections > 0)
  for declared, read in zip(jax.tree.leaves(outs[0]), jax.tree.leaves(outs[1])):
    np.testing.assert_array_equal(declared, read)
