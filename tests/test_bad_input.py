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


def test_all_minus_inf_logits_are_refused_with_the_check_and_replaced_without_it():
  params = dict(logit=-jnp.inf, value=0.0)
  with pytest.raises(Exception) as info:
    jax.block_until_ready(_search(ParamEval(), True, params=params))
  refused = mcgs_jax.expansion.as_input_error(info.value)
  assert isinstance(refused, mcgs_jax.expansion.EvaluatorError)
  assert "field `prior_logits`, shape (3, 9)" in str(refused) and "-inf on every one" in str(refused)
  # Unchecked: the uniform prior instead, counted with the NaN outputs, so
  # the search spreads as it does with a flat network.
  out = _search(ParamEval(), False, params=params)
  flat = _search(ParamEval(), False, params=dict(logit=0.0, value=0.0))
  assert np.all(np.asarray(out.stats.nan_evals) == np.asarray(out.stats.nn_evals))
  np.testing.assert_array_equal(out.visit_counts, flat.visit_counts)


def _stuck_roots(rows=4, stuck=2):
  import mctx  # pylint: disable=g-import-not-at-top
  from tests import test_cycles  # pylint: disable=g-import-not-at-top
  root = mctx.RootFnOutput(prior_logits=jnp.zeros((rows, 3)), value=jnp.zeros(rows),
                           embedding=jnp.arange(rows, dtype=jnp.int32))
  invalid = jnp.zeros((rows, 3), bool).at[stuck].set(True)
  return test_cycles.MODEL, test_cycles.EVAL, test_cycles.MODEL.make_root(root, invalid)


def test_a_non_terminal_root_without_a_legal_move_is_refused():
  model, eval_fn, roots = _stuck_roots()
  config = mcgs_jax.SearchConfig(num_simulations=4, check_evaluator=True)
  message = r"legal_action_mask is all False for row 2 \(field `legal_action_mask`, shape \(4, 3\)\)"
  with pytest.raises(mcgs_jax.expansion.RootError, match=message):   # outside jit: at once
    mcgs_jax.search(None, jax.random.PRNGKey(0), roots, model, eval_fn, config)
  with pytest.raises(Exception) as info:   # under jit: when the search runs
    jax.block_until_ready(SEARCH(None, jax.random.PRNGKey(0), roots, model, eval_fn, config))
  assert isinstance(mcgs_jax.expansion.as_input_error(info.value), mcgs_jax.expansion.RootError)
  with pytest.raises(mcgs_jax.expansion.RootError):   # outside jit, even unchecked
    mcgs_jax.search(None, jax.random.PRNGKey(0), roots, model, eval_fn,
                    mcgs_jax.SearchConfig(num_simulations=4))
  # A terminal root without moves is fine: nothing to search.
  _, _, fine = _stuck_roots()
  fine = fine.replace(terminal=fine.terminal.at[2].set(True))
  out = SEARCH(None, jax.random.PRNGKey(0), fine, model, eval_fn, config)
  assert int(out.stats.simulations[2]) == 0 and int(out.stats.simulations[0]) == 4


def test_a_ragged_batch_names_its_fields():
  state = ENV.init(jax.random.PRNGKey(0), batch_size=4)
  ragged = state.replace(mask=state.mask[:3])
  with pytest.raises(ValueError, match=r"state.mask has 3 rows \(shape \(3,\)\), state.ply 4"):
    SEARCH(None, jax.random.PRNGKey(1), ragged, ENV, envs.uniform_eval(ENV),
           mcgs_jax.SearchConfig(num_simulations=4))


def test_a_capacity_far_below_the_budget_warns_with_its_numbers():
  with pytest.warns(mcgs_jax.config.CapacityWarning,
                    match="max_nodes=1 leaves room for 0 new nodes for 800 simulations"):
    mcgs_jax.SearchConfig(max_nodes=1, num_simulations=800)
  import warnings  # pylint: disable=g-import-not-at-top
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    mcgs_jax.SearchConfig(max_nodes=65, num_simulations=64)      # room for every simulation
    mcgs_jax.SearchConfig(max_nodes=9, num_simulations=32, max_nn_evals=8)   # the budget's
