"""Gumbel root search: the golden check against `mctx.gumbel_muzero_policy`
in tree mode, the sequential-halving schedule, the backup modes, reuse and
bad input."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import graph as graph_lib
from mcgs_jax import gumbel
from tests import invariants
from tests.fake_evals import HashEval
from tests.test_search import random_positions
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)


def _recurrent_fn(env, eval_fn):
  """mctx's recurrent_fn for our env and evaluator: illegal moves masked, the
  mover's reward, discount -1 (0 once the game ended)."""
  def recurrent_fn(params, rng, action, state):
    mover = state.current_player
    child = env.step(state, action)
    logits, value = eval_fn(params, rng, child)
    logits = jnp.where(child.legal_action_mask, logits, jnp.finfo(jnp.float32).min)
    reward = jnp.take_along_axis(child.rewards, mover[:, None], axis=1)[:, 0]
    value = jnp.where(child.terminated, 0.0, value)
    discount = jnp.where(child.terminated, 0.0, -1.0)
    return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                  value=value), child
  return recurrent_fn


@functools.partial(jax.jit, static_argnames=("env", "eval_fn", "num_simulations",
                                             "max_considered"))
def _mctx_gumbel(state, env, eval_fn, num_simulations, max_considered):
  logits, value = eval_fn(None, None, state)
  root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
  return mctx.gumbel_muzero_policy(
      None, jax.random.PRNGKey(0), root, _recurrent_fn(env, eval_fn), num_simulations,
      invalid_actions=~state.legal_action_mask, max_num_considered_actions=max_considered,
      gumbel_scale=0.0)


def _max_depth(tree):
  """Deepest node of each game of an mctx tree (the root at depth 0)."""
  parents = np.asarray(tree.parents)
  depths = []
  for b in range(parents.shape[0]):
    depth = {0: 0}
    for node in range(1, parents.shape[1]):
      if parents[b, node] >= 0:
        depth[node] = depth[int(parents[b, node])] + 1
    depths.append(max(depth.values()))
  return np.array(depths)


@pytest.mark.parametrize("game,num_simulations,max_considered,max_moves", [
    ("connect4", 32, 4, 8),
    pytest.param("connect4", 24, 16, 6, marks=pytest.mark.slow),
    pytest.param("tictactoe", 32, 8, 4, marks=pytest.mark.slow),
])
def test_tree_mode_matches_mctx_gumbel(game, num_simulations, max_considered, max_moves):
  """Same network, gumbel_scale 0: the move and the improved policy of our
  tree mode equal mctx's, position by position, with several halving rounds
  and descents below depth 1."""
  env = envs.make(game)
  eval_fn = HashEval(env.num_actions, value_scale=0.5)
  state = random_positions(env, jax.random.PRNGKey(3), 6, max_moves)
  state = jax.tree.map(lambda x: x[~state.terminated], state)
  config = mcgs_jax.SearchConfig(num_simulations=num_simulations, backup="tree",
                                 root_policy="gumbel", max_considered_actions=max_considered,
                                 gumbel_scale=0.0, max_depth=num_simulations)
  ours = search_jit(None, jax.random.PRNGKey(1), state, env, eval_fn, config)
  theirs = _mctx_gumbel(state, env, eval_fn, num_simulations, max_considered)
  np.testing.assert_array_equal(ours.visit_counts, theirs.search_tree.summary().visit_counts)
  np.testing.assert_array_equal(ours.action, theirs.action)
  np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-5)
  # The check is not vacuous: sequential halving left the considered actions
  # with unequal visits, and the descents went below depth 1.
  visits = np.asarray(ours.visit_counts)
  assert np.all((visits > 0).sum(-1) > 1)
  assert np.all(visits.max(-1) > np.where(visits > 0, visits, 10**6).min(-1))
  assert np.all(_max_depth(theirs.search_tree) >= 3)


def test_schedule_matches_mctx():
  from mctx._src import seq_halving  # pylint: disable=g-import-not-at-top
  for m in (1, 2, 3, 4, 7, 16):
    for s in (1, 5, 16, 50, 200):
      assert gumbel.considered_visits(m, s) == seq_halving.get_sequence_of_considered_visits(m, s)


def test_completed_qvalues_matches_mctx_qtransform():
  """sigma(completed Q) of a node with visited and unvisited actions equals
  mctx's `qtransform_completed_by_mix_value` on the same statistics."""
  rng = np.random.default_rng(0)
  num_actions = 6
  logits = rng.normal(size=num_actions).astype(np.float32)
  visits = np.array([3, 0, 5, 1, 0, 0], np.int32)
  q = rng.uniform(-1, 1, size=num_actions).astype(np.float32)
  raw = np.float32(0.3)
  tree = mctx.Tree(
      node_visits=jnp.zeros((1, 2), jnp.int32), raw_values=jnp.array([[raw, 0.0]]),
      node_values=jnp.zeros((1, 2)), parents=jnp.zeros((1, 2), jnp.int32),
      action_from_parent=jnp.zeros((1, 2), jnp.int32),
      children_index=jnp.zeros((1, 2, num_actions), jnp.int32),
      children_prior_logits=jnp.zeros((1, 2, num_actions)).at[0, 0].set(logits),
      children_visits=jnp.zeros((1, 2, num_actions), jnp.int32).at[0, 0].set(visits),
      children_rewards=jnp.zeros((1, 2, num_actions)).at[0, 0].set(q),
      children_discounts=jnp.zeros((1, 2, num_actions)),
      children_values=jnp.zeros((1, 2, num_actions)),
      embeddings=jnp.zeros((1, 2)), root_invalid_actions=jnp.zeros((1, num_actions)),
      extra_data=None)
  theirs = mctx.qtransform_completed_by_mix_value(jax.tree.map(lambda x: x[0], tree), 0)
  config = mcgs_jax.SearchConfig(root_policy="gumbel")
  ours = gumbel.completed_qvalues(jnp.asarray(visits, jnp.float32), jnp.asarray(q),
                                  jax.nn.softmax(logits), raw, config)
  np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
  assert float(jnp.max(ours)) > 0


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree", "tt_cache"],
                                                        fast=["mcgs"]))
def test_every_backup_mode(backup):
  """Gumbel search in every mode: graph invariants hold, the visits go to at
  most max_considered_actions root actions, the weights are a distribution
  over the legal moves, the move is legal and among the most visited."""
  env = envs.make("nim")
  state = random_positions(env, jax.random.PRNGKey(5), 4, 3)
  config = mcgs_jax.SearchConfig(num_simulations=48, backup=backup, root_policy="gumbel",
                                 max_considered_actions=4)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(0), state, env,
                                  HashEval(env.num_actions, value_scale=0.5), config))
  legal = np.asarray(state.legal_action_mask) & ~np.asarray(state.terminated)[:, None]
  for b in range(4):
    invariants.check_graph(out.graph, b, config)
  live = legal.any(-1)
  assert np.all(out.stats.simulations[live] == 48)
  assert np.all((out.visit_counts > 0).sum(-1)[live] <= 4)
  np.testing.assert_allclose(out.action_weights[live].sum(-1), 1.0, rtol=1e-5)
  assert np.all(out.action_weights[~legal] == 0)
  rows = np.arange(4)[live]
  assert np.all(legal[rows, out.action[rows]])
  assert np.all(out.visit_counts[rows, out.action[rows]] == out.visit_counts[rows].max(-1))
  if backup == "mcgs":
    assert out.stats.transposition_hits.sum() > 0


def test_noise_changes_the_considered_actions():
  """gumbel_scale > 0: different rngs consider different root actions (the
  noise is drawn at init), gumbel_scale 0 always the same ones."""
  env = envs.make("connect4")
  state = env.init(jax.random.PRNGKey(0), batch_size=1)
  eval_fn = HashEval(7)
  visited = {}
  for scale in (0.0, 1.0):
    config = mcgs_jax.SearchConfig(num_simulations=8, root_policy="gumbel",
                                   max_considered_actions=2, gumbel_scale=scale)
    visited[scale] = {tuple(np.flatnonzero(search_jit(None, jax.random.PRNGKey(seed), state, env,
                                                      eval_fn, config).visit_counts[0]))
                      for seed in range(4)}
  assert len(visited[0.0]) == 1 and len(visited[1.0]) > 1


@pytest.mark.slow
def test_reroot_redraws_noise_and_rebases_the_schedule():
  """A kept root gets fresh noise and its old visits as the schedule's base:
  the next search gives its considered actions sequential-halving visits on
  top of the old ones."""
  env = envs.make("connect4")
  eval_fn = HashEval(7, value_scale=0.5)
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  config = mcgs_jax.SearchConfig(num_simulations=32, root_policy="gumbel",
                                 max_considered_actions=4)
  out = search_jit(None, jax.random.PRNGKey(0), state, env, eval_fn, config)
  next_state = env.step(state, out.action)
  reroot = jax.jit(mcgs_jax.reroot, static_argnames=STATIC)
  graph = reroot(None, jax.random.PRNGKey(1), out.graph, out.action, next_state, env,
                 eval_fn, config)
  own, before = graph.enhancements["gumbel"], out.graph.enhancements["gumbel"]
  base = np.asarray(own.base_visits)
  assert base.sum() > 0
  np.testing.assert_array_equal(base, graph.edge_visits[:, 0])
  assert not np.allclose(own.noise, before.noise)
  legal = np.asarray(graph.child[:, 0] != graph_lib.ILLEGAL)
  assert np.all(np.asarray(own.noise)[legal] != 0)
  # One program each, not op-by-op dispatch (most of this test's time).
  run = jax.jit(lambda *a: mcgs_jax.summarize(mcgs_jax.run_simulations(*a), config),
                static_argnums=(3, 4, 5))
  after = run(None, jax.random.PRNGKey(2), graph, env, eval_fn, config)
  added = np.asarray(after.visit_counts) - base
  assert np.all(added.sum(-1) == 32)
  # Sequential halving over 4 considered actions, 32 simulations:
  # 4 x 4, then 2 x 8 more visits.
  assert sorted(added[0][added[0] > 0].tolist()) == [4, 4, 12, 12]
  advanced, _ = jax.jit(mcgs_jax.advance, static_argnums=2)(out.graph, out.action, config)
  assert np.all(np.asarray(advanced.enhancements["gumbel"].noise) == 0)
  np.testing.assert_array_equal(advanced.enhancements["gumbel"].base_visits,
                                advanced.edge_visits[:, 0])


def test_leaves_per_step_follow_the_schedule():
  """With several leaves per step the pending leaves count as visits, so one
  step's leaves take successive entries of the schedule."""
  env = envs.make("connect4")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  config = mcgs_jax.SearchConfig(num_simulations=32, root_policy="gumbel", gumbel_scale=0.0,
                                 max_considered_actions=4, leaves_per_step=4)
  out = search_jit(None, jax.random.PRNGKey(0), state, env, HashEval(7, value_scale=0.5), config)
  visits = np.asarray(out.visit_counts)
  for b in range(2):
    assert sorted(visits[b][visits[b] > 0].tolist()) == [4, 4, 12, 12], visits[b]


def test_bad_gumbel_config():
  with pytest.raises(ValueError, match="root_policy"):
    mcgs_jax.SearchConfig(root_policy="sampled")
  with pytest.raises(ValueError, match="max_considered_actions"):
    mcgs_jax.SearchConfig(max_considered_actions=0)
  with pytest.raises(ValueError, match="gumbel_scale"):
    mcgs_jax.SearchConfig(gumbel_scale=-1.0)
  with pytest.raises(ValueError, match="value_scale"):
    mcgs_jax.SearchConfig(value_scale=0.0)
  with pytest.raises(ValueError, match="maxvisit_init"):
    mcgs_jax.SearchConfig(maxvisit_init=-1.0)
  with pytest.raises(ValueError, match="visit_temperature"):
    mcgs_jax.SearchConfig(root_policy="gumbel", visit_temperature=1.0)


