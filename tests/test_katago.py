"""backup="katago": KataGo's graph search (values recomputed from the
children, no corrections); the reference agreement is in
test_reference_agreement.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import graph as graph_lib
from mcgs_jax import rules
from mcgs_jax import selection
from tests import invariants
from tests.fake_evals import RandomEval

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
NIM = envs.make("nim-piles:1,3,5,7")


def test_katago_config_switches():
  config = mcgs_jax.SearchConfig(backup="katago")
  assert config.uses_table and config.links_transpositions and config.recomputes_values
  assert not config.corrects_transpositions and not config.caches_evaluations
  assert not mcgs_jax.SearchConfig().recomputes_values
  with pytest.raises(ValueError, match="backup"):
    mcgs_jax.SearchConfig(backup="kata")


@pytest.mark.slow
def test_katago_uses_at_most_40_percent_of_the_tree_nodes_on_nim():
  state = NIM.init(jax.random.PRNGKey(0), 1)
  eval_fn = envs.uniform_eval(NIM)
  nodes = {}
  for mode in ("tree", "katago"):
    config = mcgs_jax.SearchConfig(num_simulations=400, backup=mode)
    out = search_jit(None, jax.random.PRNGKey(1), state, NIM, eval_fn, config)
    assert int(out.stats["simulations"][0]) == 400
    nodes[mode] = int(out.stats["nodes_used"][0])
  # 120 against 385 when measured.
  assert nodes["katago"] <= 0.4 * nodes["tree"], nodes


def _katago_value(g, b, node, config):
  game = jax.tree.map(lambda x: x[b], g)
  q = np.asarray(graph_lib.edge_values(
      game, jnp.int32(node), game.enhancements["solver"].solved if config.solver else None))
  n = g.edge_visits[b, node].astype(np.float64)
  return (g.nn_value[b, node] + (n * q).sum()) / (1 + n.sum())


@pytest.mark.slow
def test_katago_root_value_is_recomputed_from_its_children():
  """After every backup the root (on every path) holds
  Q = (U + sum_c N(c) Q(c)) / (1 + sum_c N(c)) with the children's current
  values; the graph invariants hold and there are no corrections."""
  config = mcgs_jax.SearchConfig(num_simulations=96, backup="katago")
  state = NIM.init(jax.random.PRNGKey(0), 2)
  out = jax.device_get(search_jit(None, jax.random.PRNGKey(3), state, NIM,
                                  RandomEval(NIM.num_actions), config))
  g = out.graph
  for b in range(2):
    invariants.check_graph(g, b, config)
    assert out.stats["transposition_hits"][b] > 0 and out.stats["corrections"][b] == 0
    root_value = g.value_sum[b, 0] / g.visits[b, 0]
    np.testing.assert_allclose(root_value, _katago_value(g, b, 0, config), atol=1e-5)
    np.testing.assert_allclose(out.root_value[b], root_value, atol=1e-6)
    # Not the running mean of the backed-up values: mcgs's value differs.
  mcgs = jax.device_get(search_jit(None, jax.random.PRNGKey(3), state, NIM,
                                   RandomEval(NIM.num_actions),
                                   mcgs_jax.SearchConfig(num_simulations=96)))
  assert np.abs(mcgs.root_value - out.root_value).max() > 1e-3


@pytest.mark.slow
def test_katago_selection_reads_the_childs_current_value():
  """A child whose value moved through another parent changes its parents'
  Q at once, before they are backed up again."""
  config = mcgs_jax.SearchConfig(num_simulations=32, backup="katago")
  state = NIM.init(jax.random.PRNGKey(0), 1)
  out = search_jit(None, jax.random.PRNGKey(1), state, NIM, envs.uniform_eval(NIM), config)
  g = jax.tree.map(lambda x: x[0], out.graph)
  action = int(jnp.argmax(g.edge_visits[0]))
  child = int(g.child[0, action])
  before = selection.puct_scores(g, jnp.int32(0), config, rules.of(config))
  moved = g.replace(value_sum=g.value_sum.at[child].add(0.5 * g.visits[child]))
  after = selection.puct_scores(moved, jnp.int32(0), config, rules.of(config))
  delta = np.asarray(after - before)
  # V(child) rose by 0.5 for its mover: the parent's Q falls by 0.5 (discount -1).
  np.testing.assert_allclose(delta[action], 0.5 * float(g.edge_discount[0, action]), atol=1e-5)
  others = np.isfinite(np.asarray(before)) & (np.arange(delta.shape[0]) != action)
  np.testing.assert_allclose(delta[others], 0.0, atol=1e-6)
