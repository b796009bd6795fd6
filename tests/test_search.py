"""The search end to end: invariants on random searches, capacity limits,
bad input, ground truth on Nim, the mctx adapter."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import nim
from tests import invariants
from mcgs_jax import backup as backup_lib
from tests.fake_evals import NaNEval, RandomEval
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
C4 = envs.make("connect4")
NIM = envs.make("nim")


# One program per (env, batch, max_moves): op by op, the moves' many small
# dispatches cost more than the searches the positions feed.
@functools.partial(jax.jit, static_argnames=("env", "batch", "max_moves"))
def random_positions(env, rng, batch, max_moves):
  """A batch of non-terminal positions after random legal moves."""
  state = env.init(rng, batch_size=batch)
  lengths = jax.random.randint(rng, (batch,), 0, max_moves + 1)
  for i in range(max_moves):
    rng, sub = jax.random.split(rng)
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    action = jax.random.categorical(sub, logits).astype(jnp.int32)
    nxt = env.step(state, action)
    keep = (i >= lengths) | nxt.terminated
    state = jax.tree.map(lambda old, new: jnp.where(
        keep.reshape(keep.shape + (1,) * (old.ndim - 1)), old, new), state, nxt)
  return state


def legal_checker(g, b, env):
  def legal_of(i):
    state = jax.tree.map(lambda x: x[b, i], g.embedding)
    return np.asarray(state.legal_action_mask)
  return legal_of


# Nim's dense transpositions for the graph; the others in make test-slow.
@pytest.mark.parametrize("env,backup", variants.slow_unless(
    [(NIM, "mcgs"), (NIM, "tree"), (NIM, "tt_cache"), (C4, "mcgs"), (C4, "tree"), (C4, "tt_cache")],
    fast=[(NIM, "mcgs")]), ids=lambda v: getattr(v, "id", v))
def test_invariants_on_random_searches(env, backup):
  config = mcgs_jax.SearchConfig(num_simulations=96, backup=backup)
  eval_fn = RandomEval(env.num_actions)
  for seed in range(3):
    rng = jax.random.PRNGKey(seed)
    state = random_positions(env, rng, batch=4, max_moves=6)
    out = jax.device_get(search_jit(None, rng, state, env, eval_fn, config))
    g = out.graph
    for b in range(4):
      invariants.check_graph(g, b, config, legal_checker(g, b, env))
      assert out.stats.simulations[b] == config.num_simulations
      assert out.stats.nodes_used[b] <= config.num_simulations + 1
      assert state.legal_action_mask[b, out.action[b]]
      np.testing.assert_allclose(out.action_weights[b].sum(), 1.0, rtol=1e-6)
      assert np.all(out.action_weights[b][~np.asarray(state.legal_action_mask[b])] == 0)
    assert out.stats.capacity_overflows.sum() == 0
    assert out.stats.depth_overflows.sum() == 0
    if backup == "tree":
      assert out.stats.transposition_hits.sum() == out.stats.corrections.sum() == 0
      np.testing.assert_array_equal(out.stats.nodes_used,
                                    out.stats.nn_evals)   # one eval per node, root included


def test_tiny_node_capacity_counts_overflows():
  with pytest.warns(mcgs_jax.config.CapacityWarning, match="room for 5 new nodes"):
    config = mcgs_jax.SearchConfig(num_simulations=64, max_nodes=6)
  state = C4.init(jax.random.PRNGKey(0), batch_size=2)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(1), state, C4,
                                  RandomEval(7), config))
  for b in range(2):
    invariants.check_graph(out.graph, b, config)
  assert np.all(out.stats.nodes_used == 6)
  assert np.all(out.stats.node_overflows > 0)
  assert np.all(out.stats.capacity_overflows >= out.stats.node_overflows)
  assert np.all(out.stats.simulations == 64)       # the search went on
  assert np.all(out.visit_counts.sum(-1) == 64)
  assert np.all(np.isfinite(out.root_value))


def test_tiny_table_counts_overflows_and_stays_consistent():
  config = mcgs_jax.SearchConfig(num_simulations=64, table_size=8, max_probes=2)
  state = NIM.init(jax.random.PRNGKey(0), batch_size=2)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(1), state, NIM,
                                  RandomEval(NIM.num_actions), config))
  assert np.all(out.stats.table_overflows > 0)
  assert np.all(out.stats.capacity_overflows == out.stats.table_overflows)
  for b in range(2):
    invariants.check_graph(out.graph, b, config)
    assert (out.graph.table.nodes[b] >= 0).sum() <= 8


def test_depth_limit_is_counted():
  config = mcgs_jax.SearchConfig(num_simulations=48, max_depth=2)
  state = NIM.init(jax.random.PRNGKey(0), batch_size=1)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(1), state, NIM,
                                  RandomEval(NIM.num_actions), config))
  invariants.check_graph(out.graph, 0, config)
  assert out.stats.depth_overflows[0] > 0


def test_nan_network_is_counted_and_replaced():
  config = mcgs_jax.SearchConfig(num_simulations=32)
  state = NIM.init(jax.random.PRNGKey(0), batch_size=2)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(1), state, NIM,
                                  NaNEval(NIM.num_actions), config))
  assert out.stats.nan_evals.sum() > 0
  assert np.all(np.isfinite(out.graph.value_sum)) and np.all(np.isfinite(out.graph.prior))
  for b in range(2):
    invariants.check_graph(out.graph, b, config)


def test_terminal_root_and_zero_simulations():
  finished = envs.connect4.from_moves("1212121")
  state = jax.tree.map(lambda x: x[None], finished)
  out = search_jit(None, jax.random.PRNGKey(0), state, C4, RandomEval(7),
                   mcgs_jax.SearchConfig(num_simulations=8))
  assert int(out.stats.simulations[0]) == 0 and int(out.stats.nn_evals[0]) == 0
  assert float(out.action_weights.sum()) == 0.0 and float(out.root_value[0]) == 0.0
  out = search_jit(None, jax.random.PRNGKey(0), C4.init(jax.random.PRNGKey(0), 3), C4,
                   RandomEval(7), mcgs_jax.SearchConfig(num_simulations=0))
  assert np.all(np.asarray(out.stats.nodes_used) == 1)
  # Without simulations the policy is the root prior (a usable training
  # target), and the move its most probable action.
  prior = np.asarray(out.graph.prior[:, 0])
  np.testing.assert_allclose(np.asarray(out.action_weights), prior / prior.sum(-1, keepdims=True),
                             rtol=1e-6)
  np.testing.assert_array_equal(np.asarray(out.action), prior.argmax(-1))


@pytest.mark.slow
def test_an_evaluation_budget_of_one_is_the_root_prior():
  """An evaluation budget of one (the root's own evaluation): no simulation,
  the policy the root prior."""
  budget = search_jit(None, jax.random.PRNGKey(0), C4.init(jax.random.PRNGKey(0), 3), C4,
                      RandomEval(7), mcgs_jax.SearchConfig(num_simulations=8, max_nn_evals=1))
  assert int(np.asarray(budget.stats.simulations).sum()) == 0
  np.testing.assert_allclose(np.asarray(budget.action_weights).sum(-1), 1.0, rtol=1e-6)


def test_bad_input_gives_clear_errors():
  single = C4.init(jax.random.PRNGKey(0))
  with pytest.raises(ValueError, match="batch"):
    mcgs_jax.search(None, jax.random.PRNGKey(0), single, C4, RandomEval(7),
                    mcgs_jax.SearchConfig(num_simulations=2))
  with pytest.raises(ValueError, match="eval_fn must return"):
    mcgs_jax.search(None, jax.random.PRNGKey(0), C4.init(jax.random.PRNGKey(0), 2), C4,
                    RandomEval(5), mcgs_jax.SearchConfig(num_simulations=2))
  with pytest.raises(ValueError, match="backup"):
    mcgs_jax.SearchConfig(backup="graph")
  with pytest.raises(ValueError, match="power of two"):
    mcgs_jax.SearchConfig(table_size=100)


@pytest.mark.parametrize("game_id", variants.slow_unless(["nim", "nim-misere", "nim:3,20"],
                                                         fast=["nim"]))
def test_nim_exact_eval_picks_optimal_moves(game_id):
  """With a perfect value, every non-lost position gets a winning move."""
  env = envs.make(game_id)
  positions = [p for p in nim.all_positions(env)
               if sum(p) > 0 and not nim.lost_for_mover(env, p)]
  states = envs.stack([nim.state_from_piles(env, p) for p in positions])
  config = mcgs_jax.SearchConfig(num_simulations=64)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(0), states, env,
                                  nim.ExactEval(env), config))
  children = env.step(states, jnp.asarray(out.action))
  for p, piles, done in zip(positions, np.asarray(children.piles), np.asarray(children.terminated)):
    won = done if not env.misere else False
    assert won or nim.lost_for_mover(env, tuple(piles)), (p, piles)
  assert len(positions) > 10
  assert np.all(out.root_value > 0)   # the search sees the win


def test_correction_pulls_the_edge_mean_onto_its_target():
  """docs/algorithm.md, "The correction": one running-mean update with
  Q_phi = clip(N (target - Q) + target) lands on the target unless clipped,
  and a clipped one still moves Q towards it."""
  cfg = mcgs_jax.SearchConfig()
  n = jnp.array([0.0, 1.0, 3.0, 10.0, 10.0])
  q = jnp.array([0.0, 0.5, -0.2, 0.30, -0.9])
  target = jnp.array([0.7, 0.1, 0.1, 0.32, 0.9])
  value = backup_lib.correction_value(n, q, target, cfg)
  new_q = q + (value - q) / (n + 1)
  np.testing.assert_allclose(new_q[:4], target[:4], atol=1e-6)
  assert float(value[4]) == cfg.value_max                        # clipped
  assert abs(float(new_q[4] - target[4])) < abs(float(q[4] - target[4]))


def test_mcgs_saves_nodes_on_nim():
  """Transpositions: MCGS stores far fewer nodes than the tree (at most 40%
  on Nim (1,3,5,7) at 800 simulations; docs/benchmarks.md, "What
  transpositions save", has the measured 32%)."""
  state = NIM.init(jax.random.PRNGKey(0), batch_size=1)
  eval_fn = envs.uniform_eval(NIM)
  used = {}
  for backup in ("mcgs", "tree"):
    out = search_jit(None, jax.random.PRNGKey(0), state, NIM, eval_fn,
                     mcgs_jax.SearchConfig(num_simulations=800, backup=backup))
    used[backup] = int(out.stats.nodes_used[0])
  assert used["mcgs"] <= 0.4 * used["tree"], used


# ---------------------------------------------------------------------------
# mctx adapter: an mctx user's recurrent_fn over our Connect-4 env.

def _network(params, state):
  del params
  return jnp.zeros(state.legal_action_mask.shape), jnp.zeros(state.ply.shape)


def c4_recurrent_fn(params, rng, action, state):
  del rng
  mover = state.current_player
  child = C4.step(state, action)
  logits, value = _network(params, child)
  logits = jnp.where(child.legal_action_mask, logits, jnp.finfo(jnp.float32).min)
  reward = jnp.take_along_axis(child.rewards, mover[:, None], axis=1)[:, 0]
  discount = jnp.where(child.terminated, 0.0, -1.0)
  return mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                prior_logits=logits, value=value), child


def c4_key_fn(state):
  return state.key


def test_from_mctx_matches_native_env():
  model, eval_fn = mcgs_jax.from_mctx(c4_recurrent_fn, c4_key_fn, num_actions=7)
  state = C4.init(jax.random.PRNGKey(0), batch_size=2)
  logits, value = _network(None, state)
  root = model.make_root(mctx.RootFnOutput(prior_logits=logits, value=value,
                                           embedding=state),
                         invalid_actions=~state.legal_action_mask)
  config = mcgs_jax.SearchConfig(num_simulations=64)
  adapted = search_jit(None, jax.random.PRNGKey(0), root, model, eval_fn, config)
  native = search_jit(None, jax.random.PRNGKey(0), state, C4, envs.uniform_eval(C4), config)
  np.testing.assert_array_equal(adapted.visit_counts, native.visit_counts)
  np.testing.assert_allclose(adapted.root_value, native.root_value, atol=1e-6)
  np.testing.assert_array_equal(adapted.stats.transposition_hits,
                                native.stats.transposition_hits)
