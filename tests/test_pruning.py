"""Progressive pruning, minimum root visits and the LCB move choice."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import rules
from mcgs_jax import policies
from mcgs_jax import pruning
from mcgs_jax import selection
from tests import invariants
from tests.fake_evals import HashEval, RandomEval

STATIC = ("env", "eval_fn", "config")
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
simulate_jit = jax.jit(mcgs_jax.simulate, static_argnames=STATIC)
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
C4 = envs.make("connect4")


@pytest.mark.parametrize("bad", [
    dict(progressive_pruning="on"), dict(pruning_r_d=-1.0), dict(pruning_min_visits=0),
    dict(pruning_max_visits_per_move=-1), dict(move_choice="value"), dict(lcb_z=-1.0),
    dict(lcb_min_visit_fraction=1.5), dict(move_choice="lcb", visit_temperature=1.0),
    dict(min_root_visit_fraction=1.0), dict(min_root_visit_fraction=-0.1)])
def test_bad_values_are_refused(bad):
  with pytest.raises(ValueError):
    mcgs_jax.SearchConfig(**bad)


def root_graph(config):
  """ONE game's graph: the empty Connect-4 board's root with set statistics:
  move 0 N=200 Q=0.5, move 1 N=200 Q=-0.5, move 2 N=5 Q=-0.9, the rest
  unvisited."""
  state = envs.stack([envs.connect4.from_moves("")])
  graph = init_jit(None, jax.random.PRNGKey(0), state, C4, HashEval(7), config)
  g = jax.tree.map(lambda x: x[0], graph)
  visits = jnp.array([200, 200, 5, 0, 0, 0, 0], jnp.int32)
  return g.replace(edge_visits=g.edge_visits.at[0].set(visits),
                   edge_q=g.edge_q.at[0].set(jnp.array([0.5, -0.5, -0.9, 0, 0, 0, 0.])),
                   visits=g.visits.at[0].set(1 + visits.sum()))


def test_soft_pruning_drops_a_statistically_inferior_move():
  off = mcgs_jax.SearchConfig(num_simulations=8)
  soft = mcgs_jax.SearchConfig(num_simulations=8, progressive_pruning="soft")
  g = root_graph(soft)
  assert np.all(np.isfinite(selection.puct_scores(g, jnp.int32(0), off, rules.of(off))))
  scores = np.asarray(selection.puct_scores(g, jnp.int32(0), soft, rules.of(soft)))
  # [0.5 -+ 0.061] against [-0.5 -+ 0.061]: move 1 goes; move 2 (5 visits) may not.
  assert np.isneginf(scores[1]) and np.isfinite(np.delete(scores, 1)).all()
  # Wide intervals (r_d = 10: +- 0.61) overlap: nothing goes.
  wide = mcgs_jax.SearchConfig(num_simulations=8, progressive_pruning="soft", pruning_r_d=10.0)
  assert np.isfinite(selection.puct_scores(g, jnp.int32(0), wide, rules.of(wide))).all()
  # Above 7 moves * 50 visits the node prunes nothing.
  capped = mcgs_jax.SearchConfig(num_simulations=8, progressive_pruning="soft",
                                 pruning_max_visits_per_move=50)
  assert np.isfinite(selection.puct_scores(g, jnp.int32(0), capped, rules.of(capped))).all()
  # Soft: once move 1 is no longer inferior it comes back.
  back = g.replace(edge_q=g.edge_q.at[0, 1].set(0.45))
  assert np.isfinite(selection.puct_scores(back, jnp.int32(0), soft, rules.of(soft))).all()


def test_hard_pruning_is_for_good_and_never_takes_every_move():
  hard = mcgs_jax.SearchConfig(num_simulations=8, progressive_pruning="hard")
  g = root_graph(hard)
  assert g.enhancements["pruning"].pruned.shape == g.edge_visits.shape
  assert mcgs_jax.SearchConfig().hard_pruning is False
  path = jnp.zeros((hard.max_depth,), jnp.int32)
  allowed = lambda graph, node: rules.allowed_moves(graph, node, hard)
  g = pruning.update_hard_pruning(g, path, jnp.int32(1), allowed, hard)
  pruned = g.enhancements["pruning"].pruned
  np.testing.assert_array_equal(pruned[0], [False, True] + [False] * 5)
  assert pruned[1:].sum() == 0
  back = g.replace(edge_q=g.edge_q.at[0, 1].set(0.45))
  assert np.isneginf(selection.puct_scores(back, jnp.int32(0), hard, rules.of(hard))[1])
  # A mask over every allowed move is ignored.
  only = jnp.zeros(7, bool).at[1].set(True)
  np.testing.assert_array_equal(pruning.keep_unpruned(g, jnp.int32(0), only, hard), only)


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_pruning_searches_keep_the_graph_invariants(mode):
  config = mcgs_jax.SearchConfig(num_simulations=160, progressive_pruning=mode,
                                 pruning_min_visits=4, q_init=0.0)
  state = envs.stack([envs.connect4.from_moves("4433"), envs.connect4.from_moves("")])
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(0), state, C4, RandomEval(7), config))
  for b in range(2):
    invariants.check_graph(out.graph, b, config)
    assert out.stats["simulations"][b] == 160
  if mode == "hard":
    pruned = out.graph.enhancements["pruning"].pruned
    assert pruned.sum() > 0
    # Only moves with enough visits were pruned, and a node keeps a move.
    assert np.all(out.graph.edge_visits[pruned] >= 4)
    legal = out.graph.child != mcgs_jax.graph.ILLEGAL
    assert not np.any(np.all(pruned | ~legal, axis=-1) & legal.any(axis=-1))


def test_min_root_visits_serve_the_starved_moves_first_by_prior():
  # 5% of 200 simulations: every root move needs 10 visits first.
  config = mcgs_jax.SearchConfig(num_simulations=200, min_root_visit_fraction=0.05)
  state = envs.stack([envs.connect4.from_moves("")])
  rng = jax.random.PRNGKey(0)
  graph = init_jit(None, rng, state, C4, HashEval(7), config)
  order = np.argsort(-np.asarray(graph.prior[0, 0]), kind="stable")
  for i in range(10):
    graph, _ = simulate_jit(None, jax.random.fold_in(rng, i), graph, C4, HashEval(7), config)
  visits = np.asarray(graph.edge_visits[0, 0])
  assert visits[order[0]] == 10 and visits.sum() == 10
  for i in range(10, 70):
    graph, _ = simulate_jit(None, jax.random.fold_in(rng, i), graph, C4, HashEval(7), config)
  np.testing.assert_array_equal(graph.edge_visits[0, 0], np.full(7, 10))
  # Without the switch the prior concentrates the search.
  plain = search_jit(None, rng, state, C4, HashEval(7),
                     mcgs_jax.SearchConfig(num_simulations=70))
  assert plain.visit_counts[0].min() < 10


def test_lcb_prefers_a_well_supported_high_value_move():
  visits = jnp.array([[100, 4, 50, 0]], jnp.int32)
  q = jnp.array([[0.3, 0.9, 0.5, -1.0]])
  legal = jnp.array([[True, True, True, False]])
  prior = jnp.full((1, 4), 0.25)
  policy = visits / visits.sum()
  lcb = mcgs_jax.SearchConfig(move_choice="lcb")
  # LCB(0) = 0.3 - 1.96 * 0.954 / 10 = 0.113; LCB(2) = 0.5 - 1.96 * 0.866 / 7.07 = 0.26;
  # move 1 has too few visits (4 < 0.1 * 100).
  assert int(policies.choose_action(None, policy, visits, prior, legal, lcb, q)[0]) == 2
  assert int(policies.choose_action(None, policy, visits, prior, legal,
                                    mcgs_jax.SearchConfig(), q)[0]) == 0
  everyone = mcgs_jax.SearchConfig(move_choice="lcb", lcb_min_visit_fraction=0.0, lcb_z=0.0)
  assert int(policies.choose_action(None, policy, visits, prior, legal, everyone, q)[0]) == 1


def test_lcb_search_plays_the_lcb_move_and_keeps_the_visit_policy():
  state = envs.stack([envs.connect4.from_moves("4433"), envs.connect4.from_moves("")])
  rng = jax.random.PRNGKey(0)
  config = mcgs_jax.SearchConfig(num_simulations=64, move_choice="lcb", lcb_z=1.0)
  out = search_jit(None, rng, state, C4, RandomEval(7), config)
  base = search_jit(None, rng, state, C4, RandomEval(7), mcgs_jax.SearchConfig(num_simulations=64))
  np.testing.assert_allclose(out.action_weights, base.action_weights)
  legal = np.asarray(out.visit_counts) > 0
  expected, _ = policies.lcb_action(out.visit_counts, out.q_values, jnp.asarray(legal), config)
  np.testing.assert_array_equal(out.action, expected)
