"""Bad input gets a clear error: a broken network (SearchConfig.check_evaluator
names the field, its shape and the value; a healthy one searches exactly as
without the check), a count that is not an int, one PRNG key per game."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.learning import loop
from mcgs_jax.learning import cli
from mcgs_jax.learning import config as config_lib
from tests.fake_evals import HashEval, NaNEval

ENV = envs.make("tictactoe")
SEARCH = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))


@dataclasses.dataclass(frozen=True)
class ParamEval:
  """Outputs read from `params` (one compilation for every case): the same
  logit on every action and the same value in every row."""

  def __call__(self, params, rng, state):
    del rng
    batch = state.key.shape[0]
    return (jnp.full((batch, 9), params["logit"]), jnp.full((batch,), params["value"]))


def _search(eval_fn, check, simulations=8, params=None):
  state = ENV.init(jax.random.PRNGKey(0), batch_size=3)
  config = mcgs_jax.SearchConfig(num_simulations=simulations, check_evaluator=check)
  return SEARCH(params, jax.random.PRNGKey(1), state, ENV, eval_fn, config)


@pytest.mark.parametrize("logit,value,field,shown", [
    (0.0, 5.0, "`value`", "5.0"),              # a value head without tanh
    (0.0, -1.5, "`value`", "-1.5"),
    (0.0, float("nan"), "`value`", "nan"),
    (float("nan"), 0.5, "`prior_logits`", "nan"),
    (float("inf"), 0.5, "`prior_logits`", "inf"),
])
def test_broken_evaluator_is_a_clear_error(logit, value, field, shown):
  params = {"logit": jnp.float32(logit), "value": jnp.float32(value)}
  with pytest.raises(Exception, match="EvaluatorError") as error:
    jax.block_until_ready(_search(ParamEval(), check=True, params=params))
  message, code = cli.explain(error.value)
  assert code == cli.FAILURE
  assert message.startswith("the network's output was refused: ")
  assert field in message and shown in message, message
  assert "shape (3" in message, message


def test_unchecked_search_counts_and_goes_on():
  # Without the check the outputs are replaced and counted, as before.
  out = _search(NaNEval(9), check=False)
  assert int(np.asarray(out.stats.nan_evals).sum()) > 0
  out = _search(ParamEval(), check=False,
                params={"logit": jnp.float32(0.0), "value": jnp.float32(5.0)})
  assert int(np.asarray(out.stats.nan_evals).sum()) == 0


def test_healthy_evaluator_searches_as_without_the_check():
  eval_fn = HashEval(9, value_scale=0.5)
  checked, plain = _search(eval_fn, check=True, simulations=16), _search(eval_fn, check=False,
                                                                         simulations=16)
  for a, b in zip(jax.tree.leaves(checked.graph), jax.tree.leaves(plain.graph)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_trainer_stops_on_a_nan_network(tmp_path):
  config = config_lib.replace(
      config_lib.default_config("tictactoe"), eval_every=0, games=4, simulations=4,
      moves_per_iteration=3, batch_size=8, min_replay=8, updates_per_iteration=1,
      replay_capacity=64, network_kwargs={"hidden_sizes": [8]})
  assert config.search_config().check_evaluator
  assert config.search_config(noise=False).check_evaluator
  run = loop.Run(str(tmp_path), config)
  try:
    variables = run.state["variables"]
    run.state = dict(run.state, variables=jax.tree.map(lambda x: x * jnp.nan, variables))
    # The EvaluatorError itself, not jax's runtime error around it: its
    # message is the first line the user sees.
    with pytest.raises(mcgs_jax.expansion.EvaluatorError) as error:
      run.step()
  finally:
    run.close()
  assert str(error.value).startswith("eval_fn returned ")
  message, _ = cli.explain(error.value)
  assert message.startswith("the network's output was refused")
  # Nothing of the failed iteration was saved.
  assert run.checkpoints.latest_step() is None


@pytest.mark.parametrize("field,value", [("num_simulations", 2.5), ("max_nodes", 3.0),
                                         ("max_depth", True), ("leaves_per_step", "4")])
def test_counts_must_be_ints(field, value):
  with pytest.raises(TypeError, match=f"SearchConfig.{field} must be (None or )?an int"):
    mcgs_jax.SearchConfig(**{field: value})
  assert mcgs_jax.SearchConfig(num_simulations=np.int64(4)).num_simulations == 4


def test_one_key_per_game_is_refused_clearly():
  state = ENV.init(jax.random.PRNGKey(0), batch_size=3)
  config = mcgs_jax.SearchConfig(num_simulations=2)
  keys = jax.random.split(jax.random.PRNGKey(1), 3)
  with pytest.raises(ValueError, match=r"one PRNG key \(shape \(2,\)\), got an array of shape "
                     r"\(3, 2\)"):
    SEARCH(None, keys, state, ENV, envs.uniform_eval(ENV), config)
  # A typed key works as well as a raw one.
  out = SEARCH(None, jax.random.key(1), state, ENV, envs.uniform_eval(ENV), config)
  assert out.action.shape == (3,)
