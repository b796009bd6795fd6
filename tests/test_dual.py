"""Dual search (mcgs_jax.dual): the sliding-window backup, decaying
epsilon-greedy, the large search's priorities, the shared-state rule, and
training with --search dual."""

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import backup as backup_lib
from mcgs_jax import dual
from mcgs_jax import graph as graph_lib
from tests.fake_evals import HashEval, hash_eval_py
from tests import variants


def _chain_graph(depth=4):
  """ONE game's graph: a line 0 -a0-> 1 -a0-> 2 ... of `depth` edges with
  known statistics (every edge visited twice with Q 0.25, alternate movers)."""
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  graph = graph_lib.empty(1, 8, env.num_actions, 16, state)
  graph = jax.tree.map(lambda x: x[0], graph)
  nodes = jnp.arange(depth)
  return graph.replace(
      child=graph.child.at[nodes, 0].set(nodes + 1),
      visits=graph.visits.at[:depth + 1].set(3),
      value_sum=graph.value_sum.at[:depth + 1].set(0.3),
      parents=graph.parents.at[1:depth + 1, 0].set(1).at[1:depth + 1, 1].set(nodes),
      edge_visits=graph.edge_visits.at[nodes, 0].set(2),
      edge_q=graph.edge_q.at[nodes, 0].set(0.25),
      edge_discount=graph.edge_discount.at[nodes, 0].set(-1.0))


@pytest.mark.parametrize("mode", ["tree", "mcgs"])
def test_sliding_window_updates_only_the_last_w_edges(mode):
  graph = _chain_graph(depth=4)
  path = jnp.zeros((64,), jnp.int32).at[:4].set(jnp.arange(4))
  actions = jnp.zeros((64,), jnp.int32)
  config = mcgs_jax.SearchConfig(num_simulations=4, backup=mode, backup_window=2)
  after = backup_lib.backup(graph, path, actions, jnp.int32(4), jnp.float32(0.5), config)
  # Edge 3 (node 3 -> 4) receives the leaf value 0.5, edge 2 its negation.
  expected_q = {2: (2 * 0.25 - 0.5) / 3, 3: (2 * 0.25 + 0.5) / 3}
  for node in range(4):
    if node in expected_q:
      assert int(after.edge_visits[node, 0]) == 3
      assert int(after.visits[node]) == 4
      np.testing.assert_allclose(float(after.edge_q[node, 0]), expected_q[node], rtol=1e-6)
    else:   # outside the window: unchanged
      assert int(after.edge_visits[node, 0]) == 2 and int(after.visits[node]) == 3
      assert float(after.edge_q[node, 0]) == 0.25
  np.testing.assert_allclose(np.asarray(after.value_sum[:4]), [0.3, 0.3, 0.3 - 0.5, 0.3 + 0.5],
                             rtol=1e-6)
  # Without the window every edge changes.
  full = backup_lib.backup(graph, path, actions, jnp.int32(4), jnp.float32(0.5),
                           dataclasses.replace(config, backup_window=0))
  assert np.all(np.asarray(full.edge_visits[:4, 0]) == 3)


def test_window_and_decay_are_validated():
  with pytest.raises(ValueError, match="backup_window"):
    mcgs_jax.SearchConfig(backup_window=-1)
  with pytest.raises(ValueError, match="eps_decay"):
    mcgs_jax.SearchConfig(eps_decay=0.0)
  with pytest.raises(ValueError, match="value_mix"):
    dual.DualConfig(value_mix=1.5)
  with pytest.raises(ValueError, match="whole budget"):
    dual.DualConfig(small=mcgs_jax.SearchConfig(num_simulations=4, solver=True))


@pytest.mark.slow
def test_eps_decay_stops_exploring_after_the_first_simulation():
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  eval_fn = HashEval(env.num_actions)
  search = jax.jit(mcgs_jax.search, static_argnames=("env", "eval_fn", "config"))
  base = mcgs_jax.SearchConfig(num_simulations=6, backup="tree", eps_greedy=1.0)
  every = search(None, jax.random.PRNGKey(1), state, env, eval_fn, base)
  decayed = search(None, jax.random.PRNGKey(1), state, env, eval_fn,
                   dataclasses.replace(base, eps_decay=1e-6))
  np.testing.assert_array_equal(every.stats.explorations, [6, 6])
  # eps_t = 1e-6^t: only simulation t = 0 explores.
  np.testing.assert_array_equal(decayed.stats.explorations, [1, 1])


def _dual_setup(backup, small_sims=8, large_sims=3, rounds=1, value_mix=0.5):
  env = envs.make("nim:3,10")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  # Two different evaluators: f_S and f_L disagree on every state.
  eval_fn = dual.DualEval(small=HashEval(env.num_actions, value_scale=0.5, logit_scale=0.5),
                          large=HashEval(env.num_actions))
  config = dual.DualConfig(
      small=mcgs_jax.SearchConfig(num_simulations=small_sims, backup=backup),
      large=mcgs_jax.SearchConfig(num_simulations=large_sims, backup=backup),
      rounds=rounds, value_mix=value_mix)
  return env, state, eval_fn, config


_run = jax.jit(dual.run, static_argnames=("env", "eval_fn", "config"))
_RUNS = {}


def dual_run(backup, rounds=1):
  """(env, eval_fn, config, small, large), computed once per (backup, rounds)."""
  if (backup, rounds) not in _RUNS:
    env, state, eval_fn, config = _dual_setup(backup, large_sims=3 if rounds == 1 else 4,
                                              rounds=rounds)
    small, large = _run(None, jax.random.PRNGKey(2), state, env, eval_fn, config)
    _RUNS[backup, rounds] = env, eval_fn, config, small, large
  return _RUNS[backup, rounds]


def _key(graph, g, n):
  return tuple(int(k) for k in np.asarray(graph.key[g, n]))


@pytest.mark.parametrize("backup", ["tree", pytest.param("mcgs", marks=pytest.mark.slow)])
def test_large_search_evaluates_the_most_visited_small_states(backup):
  env, _, config, small, large = dual_run(backup)
  for g in range(2):
    used = int(small.nodes_used[g])
    visits = np.asarray(small.visits[g, 1:used])
    # Most visits first, the older node among equals.
    order = 1 + np.lexsort((np.arange(1, used), -visits))
    wanted = {_key(small, g, n) for n in order[:3]}
    got = {_key(large, g, n) for n in range(1, int(large.nodes_used[g]))}
    assert got == wanted


@pytest.mark.parametrize("backup", variants.slow_unless(["tree", "mcgs"], fast=["tree"]))
def test_large_leaf_value_mixes_small_search_value_and_large_network(backup):
  env, _, config, small, large = dual_run(backup)
  index = {_key(small, 0, n): n for n in range(int(small.nodes_used[0]))}
  for n in range(1, int(large.nodes_used[0])):
    key = _key(large, 0, n)
    m = index[key]
    _, f_small = hash_eval_py(key, [True] * env.num_actions, value_scale=0.5, logit_scale=0.5)
    _, f_large = hash_eval_py(key, [True] * env.num_actions)
    # T_S's value of the state before the shared-state rule replaced its
    # own evaluation f_S by T_L's.
    v_small = (float(small.value_sum[0, m]) - (float(small.nn_value[0, m]) - f_small)) / int(
        small.visits[0, m])
    expected = config.value_mix * v_small + (1 - config.value_mix) * f_large
    assert float(large.nn_value[0, n]) == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("backup,rounds", variants.slow_unless(
    [("tree", 1), ("mcgs", 1), ("tree", 2)], fast=[("tree", 1), ("mcgs", 1)]))
def test_shared_states_have_one_policy_and_value(backup, rounds):
  _, _, _, small, large = dual_run(backup, rounds)
  shared = 0
  for g in range(2):
    large_keys = {_key(large, g, n): n for n in range(int(large.nodes_used[g]))}
    for n in range(int(small.nodes_used[g])):
      m = large_keys.get(_key(small, g, n))
      if m is None:
        continue
      shared += 1
      np.testing.assert_allclose(np.asarray(small.prior[g, n]), np.asarray(large.prior[g, m]),
                                 rtol=1e-6)
      assert float(small.nn_value[g, n]) == pytest.approx(float(large.nn_value[g, m]))
  # The root and the large search's states, in both games.
  assert shared >= 2 * 4
  # A state only the small search holds keeps f_S's (different) prior.
  last = int(small.nodes_used[0]) - 1
  assert _key(small, 0, last) not in {_key(large, 0, n) for n in range(int(large.nodes_used[0]))}
  f_small, _ = hash_eval_py(_key(small, 0, last), [True] * 3, value_scale=0.5, logit_scale=0.5)
  legal = np.asarray(small.child[0, last]) != graph_lib.ILLEGAL
  expected = np.where(legal, f_small, 0.0)
  np.testing.assert_allclose(np.asarray(small.prior[0, last]), expected / expected.sum(),
                             rtol=1e-5)


def test_dual_search_output_is_the_large_search():
  env, state, eval_fn, config = _dual_setup("tree", small_sims=8, large_sims=4)
  config = dataclasses.replace(config, large=dataclasses.replace(config.large, num_simulations=4))
  out = jax.jit(dual.search, static_argnames=("env", "eval_fn", "config"))(
      None, jax.random.PRNGKey(4), state, env, eval_fn, config)
  np.testing.assert_array_equal(out.visit_counts.sum(-1), [4, 4])
  np.testing.assert_array_equal(out.stats.simulations, [12, 12])
  assert out.action.shape == (2,)


def test_window_for_grows_with_the_state_space():
  assert dual.window_for(20) == 2
  assert dual.window_for(2072) == 4
  assert dual.window_for(4_531_985_219_092) == 13


@pytest.mark.slow
def test_train_and_arena_with_dual_search(tmp_path):
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from mcgs_jax.learning import checkpoint
  from mcgs_jax.learning import agents, arena
  from mcgs_jax.learning import config as config_lib
  config = dict(network="dual_mlp", network_kwargs={"num_layers": 2, "width": 8},
                small_simulations=4, large_simulations=3, games=4, moves_per_iteration=4,
                batch_size=16, min_replay=8, updates_per_iteration=2, eval_every=0,
                backup_window=2, eps_greedy=0.1, eps_decay=0.9, dual_backup="tree")
  path = tmp_path / "config.json"
  path.write_text(json.dumps(config))
  out = str(tmp_path / "run")
  # The training command line, as a user runs it.
  subprocess.run([sys.executable, "-m", "mcgs_jax.experiments.train", "--env", "nim:3,10",
                  "--out", out, "--search", "dual", "--config", str(path), "--iterations", "2"],
                 check=True, timeout=900)
  env, eval_fn, params = checkpoint.load_agent(out)
  assert isinstance(eval_fn, dual.DualEval)
  run_config = config_lib.TrainConfig.from_json(
      config_lib.load_json(os.path.join(out, "config.json")))
  agent = agents.SearchAgent(env=env, eval_fn=eval_fn, params=params,
                             config=run_config.search_config(noise=False))
  result = arena.play_games(env, agent, agents.RandomAgent(), jax.random.PRNGKey(0), 4)
  assert len(result.scores) == 4
