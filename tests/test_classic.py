"""Classic MCTS enhancements: AMAF/RAVE, node expansion policies, the
depth-i move choice and the network/rollout value mix."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import evaluators
from mcgs_jax.envs import tictactoe
from mcgs_jax import depth_i
from mcgs_jax import expansion_policy
from mcgs_jax import graph as graph_lib
from mcgs_jax import rave
from tests import fake_evals

ENV = envs.make("tictactoe")
EVAL = fake_evals.HashEval(num_actions=9, value_scale=0.5)


def _states():
  return envs.stack([tictactoe.from_moves([4]), tictactoe.from_moves([0, 8])])


@functools.lru_cache(maxsize=None)
def _search_fn(config, eval_fn=EVAL):
  return jax.jit(functools.partial(mcgs_jax.search, env=ENV, eval_fn=eval_fn, config=config))


def _search(config, seed=0):
  return jax.device_get(_search_fn(config)(None, jax.random.PRNGKey(seed), _states()))


def _one_game_graph(num_nodes, num_actions, amaf=False):
  """An empty graph of ONE game (unbatched view), dummy embedding."""
  graph = graph_lib.empty(1, num_nodes, num_actions, 8, jnp.zeros((1, 1)),
                          [(rave.NAME, rave.AmafState)] if amaf else [])
  return jax.tree.map(lambda x: x[0], graph)


@pytest.mark.parametrize("bad", [
    dict(rave_b=-0.1), dict(expansion_policy="sometimes"),
    dict(expansion_policy="visits", expansion_threshold=0.5),
    dict(expansion_policy="probability", expansion_threshold=0.0),
    dict(expansion_policy="probability", expansion_threshold=1.5),
    dict(depth_i=3), dict(depth_i=-1), dict(depth_i=1, visit_temperature=1.0)])
def test_bad_classic_switches_are_refused(bad):
  with pytest.raises(ValueError):
    mcgs_jax.SearchConfig(**bad)


@pytest.mark.slow
def test_amaf_arrays_exist_only_with_rave():
  plain = _search(mcgs_jax.SearchConfig(num_simulations=8))
  assert rave.NAME not in plain.graph.enhancements
  with_rave = _search(mcgs_jax.SearchConfig(num_simulations=8, rave=True))
  assert _amaf(with_rave.graph).visits.shape == (2, 9, 9)


# ------------------------------------------------------------------ AMAF/RAVE


def _amaf(graph):
  return graph.enhancements[rave.NAME]


def _with_amaf(graph, **fields):
  return graph_lib.with_state(graph, rave.NAME, _amaf(graph).replace(**fields))


def test_amaf_update_credits_the_movers_later_moves_once():
  # Path root -0-> n1 -1-> n2 -2-> n3 -0-> (leaf), players alternate
  # (discount -1); the last move repeats action 0, played by the root's mover.
  graph = _one_game_graph(5, 3, amaf=True)
  nodes = jnp.array([0, 1, 2, 3, 0, 0], jnp.int32)
  actions = jnp.array([0, 1, 2, 0, 0, 0], jnp.int32)
  graph = graph.replace(edge_discount=graph.edge_discount.at[nodes[:4], actions[:4]].set(-1.0))
  # An earlier outcome at the root's action 2: count 1, value -1.
  graph = _with_amaf(graph, visits=_amaf(graph).visits.at[0, 2].set(1),
                     q=_amaf(graph).q.at[0, 2].set(-1.0))
  out = rave.update(graph, nodes, actions, jnp.int32(4), jnp.float32(0.5), jnp.int32(0))
  n, q = np.asarray(_amaf(out).visits), np.asarray(_amaf(out).q)
  # Values along the path for each node's mover: n3 0.5, n2 -0.5, n1 0.5, root -0.5.
  # Root (mover X): X played actions 0 (twice: counted once) and 2.
  np.testing.assert_array_equal(n[0], [1, 0, 2])
  np.testing.assert_allclose(q[0], [-0.5, 0.0, (-1.0 - 0.5) / 2])
  # n1 (mover O): O played 1 and 0 (the last move).
  np.testing.assert_array_equal(n[1], [1, 1, 0])
  np.testing.assert_allclose(q[1], [0.5, 0.5, 0.0])
  # n2 (X): 2 only (the last 0 is O's).  n3 (O): 0.
  np.testing.assert_array_equal(n[2], [0, 0, 1])
  np.testing.assert_allclose(q[2], [0.0, 0.0, -0.5])
  np.testing.assert_array_equal(n[3], [1, 0, 0])
  np.testing.assert_allclose(q[3], [0.5, 0.0, 0.0])
  # A disconnected trajectory (start 2) leaves the nodes above alone.
  out = rave.update(graph, nodes, actions, jnp.int32(4), jnp.float32(0.5), jnp.int32(2))
  np.testing.assert_array_equal(np.asarray(_amaf(out).visits)[:2],
                                np.asarray(_amaf(graph).visits)[:2])


def test_rave_blend_follows_the_beta_schedule():
  graph = _one_game_graph(2, 3, amaf=True)
  graph = _with_amaf(graph, visits=_amaf(graph).visits.at[0].set(jnp.array([0, 4, 6])),
                     q=_amaf(graph).q.at[0].set(jnp.array([0.9, 0.8, -0.4])))
  q = jnp.array([0.3, -1.0, 0.2])
  visits = jnp.array([2.0, 0.0, 3.0])
  out = np.asarray(rave.blend(graph, jnp.int32(0), q, visits, rave_b=0.5))
  beta = 6 / (3 + 6 + 4 * 0.25 * 3 * 6)
  np.testing.assert_allclose(out, [0.3, 0.8, (1 - beta) * 0.2 + beta * -0.4], rtol=1e-6)


def test_rave_search_keeps_amaf_counts_at_least_the_visits_and_changes_selection():
  config = mcgs_jax.SearchConfig(num_simulations=40, backup="tree", rave=True)
  out = _search(config)
  graph = out.graph
  used = graph.nodes_used
  for b in range(2):
    n = int(used[b])
    # The path's own move counts for AMAF: N~ >= N on every edge.
    assert np.all(_amaf(graph).visits[b, :n] >= graph.edge_visits[b, :n])
    assert np.any(_amaf(graph).visits[b, :n] > graph.edge_visits[b, :n])
  plain = _search(mcgs_jax.SearchConfig(num_simulations=40, backup="tree"))
  assert not np.array_equal(plain.visit_counts, out.visit_counts)


@pytest.mark.slow
def test_rave_graph_survives_reuse():
  config = mcgs_jax.SearchConfig(num_simulations=24, rave=True)
  out = _search(config)
  action = jnp.asarray(np.argmax(out.visit_counts, axis=-1), jnp.int32)
  new, kept = jax.device_get(jax.jit(mcgs_jax.advance, static_argnames="config")(
      out.graph, action, config))
  assert np.all(kept)
  for b in range(2):
    child = int(out.graph.child[b, 0, action[b]])
    np.testing.assert_array_equal(_amaf(new).visits[b, 0], _amaf(out.graph).visits[b, child])
    np.testing.assert_array_equal(_amaf(new).q[b, 0], _amaf(out.graph).q[b, child])
    assert np.all(_amaf(new).visits[b, int(new.nodes_used[b]):] == 0)


# ----------------------------------------------------------- node expansion


def test_visit_count_expansion_stores_only_edges_reached_often_enough():
  threshold = 3
  config = mcgs_jax.SearchConfig(num_simulations=60, backup="tree",
                                 expansion_policy="visits", expansion_threshold=threshold)
  out = _search(config)
  plain = _search(mcgs_jax.SearchConfig(num_simulations=60, backup="tree"))
  graph = out.graph
  np.testing.assert_array_equal(out.stats.simulations, [60, 60])
  assert np.all(out.stats.deferred_expansions > 0)
  assert np.all(out.stats.nodes_used < plain.stats.nodes_used)
  # Every evaluation is counted, stored or not (tree mode: no links, no cache).
  np.testing.assert_array_equal(out.stats.nn_evals,
                                out.stats.nodes_used + out.stats.deferred_expansions)
  for b in range(2):
    n = int(graph.nodes_used[b])
    child, visits = graph.child[b, :n], graph.edge_visits[b, :n]
    # A stored child was reached `threshold` times before it was stored.
    assert np.all(visits[child >= 0] >= threshold)
    # An edge evaluated without storing keeps its count and Q.
    assert np.all(visits[child == graph_lib.UNEXPANDED] < threshold)
    assert np.any((child == graph_lib.UNEXPANDED) & (visits > 0))


@pytest.mark.slow
def test_expansion_threshold_one_is_the_plain_search():
  plain = _search(mcgs_jax.SearchConfig(num_simulations=30))
  for policy in ("visits", "probability"):
    out = _search(mcgs_jax.SearchConfig(num_simulations=30, expansion_policy=policy,
                                        expansion_threshold=1.0 if policy == "visits" else 1e-6))
    np.testing.assert_array_equal(out.visit_counts, plain.visit_counts)
    np.testing.assert_array_equal(out.stats.nodes_used, plain.stats.nodes_used)


def test_probability_expansion_rule():
  graph = _one_game_graph(2, 3)
  graph = graph.replace(edge_visits=graph.edge_visits.at[0].set(jnp.array([5, 0, 0])),
                        prior=graph.prior.at[0].set(jnp.array([0.6, 0.1, 0.3])))
  def ready(action, threshold):
    return bool(expansion_policy.ready(graph, jnp.int32(0), jnp.int32(action),
                                       policy="probability", threshold=threshold))
  # Action 1: prior 0.1, share (0 + 1) / (5 + 1) = 1/6.
  assert ready(1, 0.16) and not ready(1, 0.17)
  # Action 2: the prior 0.3 beats the share 1/6.
  assert ready(2, 0.3) and not ready(2, 0.31)
  # Action 0: share 6/6.
  assert ready(0, 1.0)
  config = mcgs_jax.SearchConfig(num_simulations=60, backup="tree",
                                 expansion_policy="probability", expansion_threshold=0.4)
  out = _search(config)
  assert np.all(out.stats.deferred_expansions > 0)
  plain = _search(mcgs_jax.SearchConfig(num_simulations=60, backup="tree"))
  assert np.all(out.stats.nodes_used < plain.stats.nodes_used)


# ------------------------------------------------------------------ depth-i


def _depth_graph():
  """Root 0: a0 -> n1 (10 visits), a1 -> n2 (5 visits).
  n1: V = -0.2; b0 -> n3 (V 0.6), b1 unvisited.
  n2: V = -0.5; b0 -> n4 (V 0.1), b1 a terminal win for n2's mover."""
  graph = graph_lib.empty(1, 5, 2, 8, jnp.zeros((1, 1)))
  g = jax.tree.map(lambda x: np.array(x[0]), graph)
  g.child[:] = graph_lib.UNEXPANDED
  g.edge_discount[:] = -1.0
  def node(i, visits, value):
    g.visits[i], g.value_sum[i] = visits, visits * value
  node(0, 16, 0.0), node(1, 10, -0.2), node(2, 5, -0.5), node(3, 6, 0.6), node(4, 2, 0.1)
  g.child[0] = [1, 2]
  g.edge_visits[0] = [10, 5]
  g.child[1] = [3, graph_lib.UNEXPANDED]
  g.edge_visits[1] = [6, 0]
  g.child[2] = [4, graph_lib.TERMINAL]
  g.edge_visits[2] = [2, 2]
  g.edge_reward[2, 1], g.edge_discount[2, 1] = 1.0, 0.0
  g.prior[:, :] = 0.5
  g = g.replace(stats=g.stats.replace(nodes_used=np.int32(5)))
  return jax.tree.map(lambda x: jnp.asarray(x)[None], g)


def test_depth_i_minimax_move():
  graph = _depth_graph()
  allowed = jnp.ones((1, 2), bool)
  # Depth 1: children worth 0.2 (a0) and 0.5 (a1) to the root's mover.
  action, has = depth_i.minimax_action(graph, allowed, mcgs_jax.SearchConfig(depth_i=1))
  assert int(action[0]) == 1 and bool(has[0])
  # Depth 2: after a0 the reply b0 gives the opponent -0.6 (b1 unvisited is
  # left out): worth 0.6; after a1 the opponent wins at once: -1.
  action, _ = depth_i.minimax_action(graph, allowed, mcgs_jax.SearchConfig(depth_i=2))
  assert int(action[0]) == 0
  # Through summarize: the move changes, the policy stays the visit policy.
  for depth, expected in ((0, 0), (1, 1), (2, 0)):
    out = mcgs_jax.summarize(graph, mcgs_jax.SearchConfig(depth_i=depth))
    assert int(out.action[0]) == expected
    np.testing.assert_allclose(out.action_weights[0], [10 / 15, 5 / 15], rtol=1e-6)


def test_depth_i_search_runs():
  out = _search(mcgs_jax.SearchConfig(num_simulations=30, depth_i=2))
  assert np.all(out.visit_counts[np.arange(2), out.action] > 0)


# -------------------------------------------------------------- value mixing


@pytest.mark.parametrize("lam", [0.0, 0.25, 1.0])
def test_mixed_eval_mixes_network_and_rollout_values(lam):
  env = envs.make("connect4")
  state = envs.stack([envs.connect4.from_moves("4455"), envs.connect4.from_moves("1122")])
  network = fake_evals.HashEval(num_actions=7)
  rollout = envs.rollout_eval(env, num_rollouts=4)
  rng = jax.random.PRNGKey(3)
  logits, value = envs.mixed_eval(network, rollout, lam)(None, rng, state)
  network_rng, rollout_rng = jax.random.split(rng)
  net_logits, net_value = network(None, network_rng, state)
  _, roll_value = rollout(None, rollout_rng, state)
  np.testing.assert_allclose(logits, net_logits)
  np.testing.assert_allclose(value, (1 - lam) * net_value + lam * roll_value, rtol=1e-6,
                             atol=1e-7)
  if lam == 1.0:
    assert not np.allclose(value, net_value)


def test_mixed_eval_checks_lambda_and_is_hashable():
  with pytest.raises(ValueError):
    evaluators.mixed_eval(EVAL, EVAL, 1.5)
  assert hash(evaluators.mixed_eval(EVAL, EVAL, 0.5)) == hash(evaluators.mixed_eval(EVAL, EVAL, 0.5))
