"""Keys that leave out the ply can close cycles (an mctx user's `key_fn`, a
position key): a ring game whose positions come back forever."""

import dataclasses

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import selection
from tests import invariants
from tests import random_play
from tests import variants

RING = 5
# The value of each ring position for the player to move, rewards 0, discount
# -1: every value the search can back up lies in [-0.5, 0.5].
VALUES = jnp.array([0.5, -0.25, 0.25, -0.5, 0.125])
STEPS = jnp.array([1, -1, 2])

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
simulate_jit = jax.jit(mcgs_jax.simulate, static_argnames=STATIC)


def ring_recurrent_fn(params, rng, action, position):
  del params, rng
  child = (position + STEPS[action]) % RING
  batch = position.shape[0]
  return mctx.RecurrentFnOutput(
      reward=jnp.zeros(batch), discount=-jnp.ones(batch),
      prior_logits=jnp.zeros((batch, STEPS.shape[0])), value=VALUES[child]), child


def ring_key_fn(position):
  """The position alone: no ply, so a line can come back to its own key."""
  return jnp.stack([position.astype(jnp.uint32), jnp.zeros_like(position, jnp.uint32)], -1)


MODEL, EVAL = mcgs_jax.from_mctx(ring_recurrent_fn, ring_key_fn, STEPS.shape[0])


def ring_root(positions):
  positions = jnp.asarray(positions, jnp.int32)
  return MODEL.make_root(mctx.RootFnOutput(
      prior_logits=jnp.zeros((positions.shape[0], STEPS.shape[0])),
      value=VALUES[positions], embedding=positions))


@pytest.mark.parametrize("max_nn_evals", variants.slow_unless([None, 40], fast=[None]))
def test_ring_values_stay_in_range(max_nn_evals):
  config = mcgs_jax.SearchConfig(num_simulations=120, max_nn_evals=max_nn_evals)
  out = search_jit(None, jax.random.PRNGKey(0), ring_root([0, 3]), MODEL, EVAL, config)
  # Before cycles were handled, game 0's root value was 1.05 at 200
  # simulations (backups running round a cycle).
  assert np.all(np.abs(np.asarray(out.root_value)) <= 0.5 + 1e-6), out.root_value
  assert np.all(np.asarray(out.stats.cycles) > 0)
  g = jax.device_get(out.graph)
  for b in range(2):
    invariants.check_graph(g, b, config)
    used = int(g.nodes_used[b])
    # Every stored node, fresh cycle stand-ins included (free retries pass no
    # network output), holds its own position's value.
    positions = np.asarray(g.embedding.embedding[b, :used])
    np.testing.assert_allclose(g.nn_value[b, :used], np.asarray(VALUES)[positions])
  edge_q = g.edge_q[g.edge_visits > 0]
  assert np.all(np.abs(edge_q) <= 0.5 + 1e-6)


def test_ring_paths_have_distinct_nodes():
  """The backup's assumption: no node twice on a selection path."""
  config = mcgs_jax.SearchConfig(num_simulations=80)
  rng = jax.random.PRNGKey(1)
  graph = init_jit(None, rng, ring_root([0, 2]), MODEL, EVAL, config)
  for i in range(config.num_simulations):
    graph, sel = simulate_jit(None, jax.random.fold_in(rng, i), graph, MODEL, EVAL, config)
    s = jax.device_get(sel)
    for b in range(2):
      path = list(s.path_nodes[b, :s.length[b]])
      assert len(set(path)) == len(path), path
  g = jax.device_get(graph)
  assert np.all(g.stats["cycles"] > 0)
  for b in range(2):
    invariants.check_graph(g, b, config)


def test_ring_model_keeps_the_cycle_test():
  """A model that does not declare acyclic keys (the safe default, as an
  mctx `key_fn` of the position alone) marks its paths."""
  assert not MODEL.acyclic_keys
  config = mcgs_jax.SearchConfig(num_simulations=4)
  assert selection.tracks_cycles(config, MODEL)
  assert not selection.tracks_cycles(dataclasses.replace(config, backup="tree"), MODEL)


@pytest.mark.parametrize("game_id", ["connect4", "tictactoe", "nim-piles:2,3,4", "nim:3,9",
                                     "nim-misere:2,3", "hsr:2,3,7", "pgx:tic_tac_toe"])
def test_acyclic_keys_never_repeat_along_a_line(game_id):
  """The games that declare `acyclic_keys` (the descent then skips the cycle
  test): along random lines of play no key comes back."""
  env = envs.make(game_id)
  assert env.acyclic_keys and mcgs_jax.EnvModel(env).acyclic_keys
  batch = 16
  state = env.init(jax.random.PRNGKey(0), batch_size=batch)
  step = jax.jit(env.step)
  lines = [[tuple(k)] for k in np.asarray(state.key)]
  for moving, state in random_play.random_steps(state, step, jax.random.PRNGKey(1),
                                                env.max_game_length):
    for b in np.flatnonzero(moving):
      lines[b].append(tuple(np.asarray(state.key[b])))
  assert max(len(line) for line in lines) > 3
  for line in lines:
    assert len(set(line)) == len(line), (game_id, line)


class _MarkingModel(mcgs_jax.EnvModel):
  """The same env, its keys taken as possibly cyclic."""
  acyclic_keys = False


@pytest.mark.slow
def test_acyclic_keys_search_as_with_the_cycle_test():
  """Skipping the cycle test changes nothing where no cycle can close: the
  same graph as a search that marks its paths, with links and corrections
  (Nim (3, 4, 5), random rollouts, B=2)."""
  env = envs.make("nim-piles:3,4,5")
  state = env.init(jax.random.PRNGKey(0), batch_size=2)
  config = mcgs_jax.SearchConfig(num_simulations=48, dirichlet_fraction=0.25, q_eps=0.0)
  eval_fn = envs.rollout_eval(env)
  marking = _MarkingModel(env=env)
  assert not selection.tracks_cycles(config, mcgs_jax.EnvModel(env))
  assert selection.tracks_cycles(config, marking)
  outs = []
  for model in (env, marking):
    graph = init_jit(None, jax.random.PRNGKey(3), state, model, eval_fn, config)
    _, sel = simulate_jit(None, jax.random.PRNGKey(4), graph, model, eval_fn, config)
    assert sel.path_marks.shape == ((2, 0) if model is env else (2, config.node_capacity))
    outs.append(jax.device_get(search_jit(None, jax.random.PRNGKey(3), state, model, eval_fn,
                                          config)))
  assert np.all(outs[0].stats.transposition_hits > 0) and np.all(outs[0].stats.corrections > 0)
  for leaf_skip, leaf_mark in zip(jax.tree.leaves(outs[0]), jax.tree.leaves(outs[1])):
    np.testing.assert_array_equal(leaf_skip, leaf_mark)
