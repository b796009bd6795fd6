"""MPV-MCTS: two separate networks (networks.NetworkPair) in the dual search,
trained together (the sum of both losses), and --search mpv in training."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import networks
from mcgs_jax.learning import trainer
from mcgs_jax import dual


def _pair(env):
  return networks.make("pair", env, kind="resmlp", small_blocks=1, large_blocks=2, width=8)


def test_pair_heads_are_the_two_networks():
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=3)
  pair = _pair(env)
  variables = networks.init(pair, jax.random.PRNGKey(1), env.observe(state))
  assert set(variables["params"]) == {"small", "large"}
  small = networks.ResMLP(env.num_actions, num_layers=1, width=8)
  large = networks.ResMLP(env.num_actions, num_layers=2, width=8)
  want_small = small.apply({"params": variables["params"]["small"]}, env.observe(state))
  want_large = large.apply({"params": variables["params"]["large"]}, env.observe(state))
  got_small = networks.NetworkEval(pair, env, head="small")(variables, None, state)
  got_large = networks.NetworkEval(pair, env, head="large")(variables, None, state)
  for got, want in ((got_small, want_small), (got_large, want_large)):
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
  assert networks.has_two_heads(pair)


@pytest.mark.slow
def test_pair_trains_both_networks_on_the_sum_of_their_losses():
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=4)
  pair = _pair(env)
  variables = networks.init(pair, jax.random.PRNGKey(1), env.observe(state))
  outputs = networks.apply(pair, variables, env.observe(state))
  from mcgs_jax.learning import example
  examples = example.Example(observation=env.observe(state),
                             legal_action_mask=state.legal_action_mask,
                             policy=jnp.full((4, env.num_actions), 1.0 / env.num_actions),
                             player=jnp.zeros((4,), jnp.int32), value=jnp.ones((4,)))
  total, parts = trainer.loss_terms(pair, trainer.LossConfig(), outputs, examples, jnp.ones(4))
  assert float(total) == pytest.approx(float(parts["small_policy"] + parts["small_value"]
                                             + parts["large_policy"] + parts["large_value"]))
  optimizer = networks.make_optimizer(1e-2, kind="adam")
  new, _, _ = trainer.update(variables, optimizer.init(variables["params"]), examples,
                             jnp.ones(4), network=pair, optimizer=optimizer,
                             loss_config=trainer.LossConfig())
  for name in ("small", "large"):
    moved = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))),
                         new["params"][name], variables["params"][name])
    assert max(jax.tree.leaves(moved)) > 0


@pytest.mark.parametrize("backup", ["tree", pytest.param("mcgs", marks=pytest.mark.slow)])
def test_mpv_search_spends_both_budgets(backup):
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  pair = _pair(env)
  variables = networks.init(pair, jax.random.PRNGKey(1), env.observe(state))
  eval_fn = dual.DualEval(small=networks.NetworkEval(pair, env, head="small"),
                          large=networks.NetworkEval(pair, env, head="large"))
  config = dual.DualConfig(small=mcgs_jax.SearchConfig(num_simulations=6, backup=backup),
                           large=mcgs_jax.SearchConfig(num_simulations=4, backup=backup))
  out = jax.jit(dual.search, static_argnames=("env", "eval_fn", "config"))(
      variables, jax.random.PRNGKey(2), state, env, eval_fn, config)
  np.testing.assert_array_equal(out.stats.simulations, [10, 10])
  # The policy is the large search's: b_L root visits (no window).
  np.testing.assert_array_equal(out.visit_counts.sum(-1), [4, 4])
  np.testing.assert_allclose(out.action_weights.sum(-1), [1.0, 1.0], rtol=1e-6)


@pytest.mark.slow
def test_train_and_arena_with_mpv_search(tmp_path):
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from mcgs_jax.learning import checkpoint
  from mcgs_jax.learning import agents, arena
  config = dict(network="pair", network_kwargs={"kind": "resmlp", "small_blocks": 1,
                                                "large_blocks": 2, "width": 8},
                small_simulations=4, large_simulations=3, games=4, moves_per_iteration=4,
                batch_size=16, min_replay=8, updates_per_iteration=2, eval_every=0)
  path = tmp_path / "config.json"
  path.write_text(json.dumps(config))
  out = str(tmp_path / "run")
  # The training command line, as a user runs it.
  subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "nim:3,10",
                  "--out", out, "--search", "mpv", "--config", str(path), "--iterations", "2"],
                 check=True, timeout=900)
  env, eval_fn, params = checkpoint.load_agent(out)
  from mcgs_jax.learning import config as config_lib
  import os
  run_config = config_lib.TrainConfig.from_json(config_lib.load_json(os.path.join(out,
                                                                                  "config.json")))
  agent = agents.SearchAgent(env=env, eval_fn=eval_fn, params=params,
                             config=run_config.search_config(noise=False))
  result = arena.play_games(env, agent, agents.RandomAgent(), jax.random.PRNGKey(0), 4)
  assert len(result.scores) == 4


def test_mpv_needs_a_two_network_config():
  from mcgs_jax.learning import config as config_lib
  with pytest.raises(ValueError, match="two-head network"):
    config_lib.replace(config_lib.TrainConfig(), search="mpv", network="mlp")
