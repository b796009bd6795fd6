"""Search enhancements that shape priors and the move choice: node
temperature, root Dirichlet noise, visit-count temperature, Q-value move
selection (paper eq. 13-15) and the Q-veto."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import tictactoe
from mcgs_jax import policies
from tests import fake_evals

ENV = envs.make("tictactoe")
EVAL = fake_evals.HashEval(num_actions=9)


def _root_state():
  return envs.stack([tictactoe.from_moves([4]), tictactoe.from_moves([0, 8])])


@functools.lru_cache(maxsize=None)
def _init_fn(config):
  return jax.jit(functools.partial(mcgs_jax.init, env=ENV, eval_fn=EVAL, config=config))


def _root_prior(config, seed=0):
  graph = _init_fn(config)(None, jax.random.PRNGKey(seed), _root_state())
  return np.asarray(graph.prior[:, 0])


def _softmax_over_legal(logits, legal):
  z = np.where(legal, logits, -np.inf)
  w = np.exp(z - z.max(-1, keepdims=True))
  return w / w.sum(-1, keepdims=True)


def test_node_temperature_sharpens_and_flattens_the_prior():
  state = _root_state()
  logits, _ = EVAL(None, None, state)
  legal = np.asarray(state.legal_action_mask)
  for temperature in (0.5, 1.0, 3.0):
    prior = _root_prior(mcgs_jax.SearchConfig(num_simulations=4, node_temperature=temperature))
    expected = _softmax_over_legal(np.asarray(logits) / temperature, legal)
    np.testing.assert_allclose(prior, expected, rtol=1e-5, atol=1e-7)
  # p^(1/T) renormalised: the T = 1 prior raised to 1/T gives the same.
  p1 = _root_prior(mcgs_jax.SearchConfig(num_simulations=4))
  p2 = _root_prior(mcgs_jax.SearchConfig(num_simulations=4, node_temperature=0.5))
  np.testing.assert_allclose(p2, p1 ** 2 / (p1 ** 2).sum(-1, keepdims=True), rtol=1e-5)


def test_node_temperature_applies_at_every_node():
  config = mcgs_jax.SearchConfig(num_simulations=30, node_temperature=0.25)
  search = jax.jit(functools.partial(mcgs_jax.search, env=ENV, eval_fn=EVAL, config=config))
  out = search(None, jax.random.PRNGKey(0), _root_state())
  graph = jax.device_get(out.graph)
  checked = 0
  for b in range(2):
    for node in range(1, int(graph.nodes_used[b])):
      state = jax.tree.map(lambda x: x[b, node], graph.embedding)
      batch = envs.stack([state])
      logits, _ = EVAL(None, None, batch)
      expected = _softmax_over_legal(np.asarray(logits) / 0.25,
                                     np.asarray(batch.legal_action_mask))[0]
      np.testing.assert_allclose(graph.prior[b, node], expected, rtol=1e-5, atol=1e-7)
      checked += 1
  assert checked > 20


def test_dirichlet_noise_mixes_the_root_prior_only():
  base = mcgs_jax.SearchConfig(num_simulations=4)
  prior = _root_prior(base)
  legal = np.asarray(_root_state().legal_action_mask)
  noisy = [_root_prior(mcgs_jax.SearchConfig(num_simulations=4, dirichlet_fraction=0.25,
                                             dirichlet_alpha=0.3), seed) for seed in range(200)]
  noisy = np.stack(noisy)                        # [runs, B, A]
  np.testing.assert_allclose(noisy.sum(-1), 1.0, rtol=1e-5)
  assert np.all(noisy[:, ~legal] == 0)
  # Every draw keeps 75% of the network prior, and the noise differs by rng.
  assert np.all(noisy >= 0.75 * prior[None] - 1e-6)
  assert not np.allclose(noisy[0], noisy[1])
  # Dir(alpha) has mean 1/#legal on each legal action.
  noise = (noisy - 0.75 * prior[None]) / 0.25
  expected = legal / legal.sum(-1, keepdims=True)
  np.testing.assert_allclose(noise.mean(0), expected, atol=0.05)
  # Fraction 0 is off: the prior is the network's exactly.
  np.testing.assert_array_equal(
      _root_prior(mcgs_jax.SearchConfig(num_simulations=4, dirichlet_fraction=0.0)), prior)


def test_visit_temperature_draws_moves_in_proportion_to_visits():
  config = mcgs_jax.SearchConfig(num_simulations=60)
  search = jax.jit(functools.partial(mcgs_jax.search, env=ENV, eval_fn=EVAL, config=config))
  out = search(None, jax.random.PRNGKey(0), _root_state())
  visits = np.asarray(out.visit_counts, np.float64)
  for temperature in (1.0, 2.0):
    hot = mcgs_jax.SearchConfig(num_simulations=60, visit_temperature=temperature)
    draw = jax.jit(jax.vmap(lambda r: mcgs_jax.summarize(out.graph, hot, r).action))
    actions = np.asarray(draw(jax.random.split(jax.random.PRNGKey(1), 4000)))
    for b in range(2):
      freq = np.bincount(actions[:, b], minlength=9) / len(actions)
      expected = visits[b] ** (1 / temperature)
      np.testing.assert_allclose(freq, expected / expected.sum(), atol=0.03)
  # Temperature 0 is the most visited move; a temperature without rng is an error.
  assert np.all(np.asarray(out.action) == visits.argmax(-1))
  with pytest.raises(ValueError):
    mcgs_jax.summarize(out.graph, mcgs_jax.SearchConfig(visit_temperature=1.0))


def test_bad_enhancement_settings_raise():
  for kwargs in (dict(node_temperature=0.0), dict(dirichlet_fraction=1.5),
                 dict(dirichlet_alpha=0.0), dict(visit_temperature=-1.0)):
    with pytest.raises(ValueError):
      mcgs_jax.SearchConfig(**kwargs)


def _policy(visits, q, **kwargs):
  config = mcgs_jax.SearchConfig(**kwargs)
  visits = jnp.asarray([visits], jnp.int32)
  legal = jnp.ones_like(visits, bool)
  policy = policies.root_policy(visits, jnp.asarray([q], jnp.float32), legal, config)
  action = policies.choose_action(None, policy, visits, jnp.full(visits.shape, 0.25),
                                        legal, config)
  return np.asarray(policy[0]), int(action[0])


def test_q_value_move_selection_golden_values():
  visits, q = [10, 6, 0, 4], [0.1, 0.4, -1.0, 0.0]
  policy, action = _policy(visits, q)
  np.testing.assert_allclose(policy, [0.5, 0.3, 0.0, 0.2])
  assert action == 0
  # Eq. 13-15: Q_delta = 0.3, boost = 2 * 0.3 * 0.5 = 0.3, then renormalise.
  policy, action = _policy(visits, q, q_value_weight=2.0)
  np.testing.assert_allclose(policy, np.array([0.5, 0.6, 0.0, 0.2]) / 1.3, rtol=1e-6)
  assert action == 1
  policy, action = _policy(visits, q, q_value_weight=0.5)   # boost 0.075: not enough
  np.testing.assert_allclose(policy, np.array([0.5, 0.375, 0.0, 0.2]) / 1.075, rtol=1e-6)
  assert action == 0
  # The second move is worse: nothing changes.
  policy, _ = _policy(visits, [0.4, 0.1, -1.0, 0.0], q_value_weight=2.0)
  np.testing.assert_allclose(policy, [0.5, 0.3, 0.0, 0.2])
  # A single visited move: nothing to compare.
  policy, action = _policy([5, 0, 0, 0], [0.0, 0.9, 0.9, 0.9], q_value_weight=2.0)
  np.testing.assert_allclose(policy, [1.0, 0.0, 0.0, 0.0])
  assert action == 0


def test_q_veto_swaps_the_two_best_moves():
  visits, q = [10, 6, 0, 4], [0.1, 0.4, -1.0, 0.0]
  policy, action = _policy(visits, q, q_veto_delta=0.2)
  np.testing.assert_allclose(policy, [0.3, 0.5, 0.0, 0.2], rtol=1e-6)
  assert action == 1
  policy, action = _policy(visits, q, q_veto_delta=0.5)      # gap 0.3 < 0.5
  np.testing.assert_allclose(policy, [0.5, 0.3, 0.0, 0.2], rtol=1e-6)
  assert action == 0


def test_q_switches_reach_the_search_output():
  config = mcgs_jax.SearchConfig(num_simulations=40, q_value_weight=2.0, q_veto_delta=0.1)
  search = jax.jit(functools.partial(mcgs_jax.search, env=ENV, eval_fn=EVAL, config=config))
  out = search(None, jax.random.PRNGKey(0), _root_state())
  expected = policies.root_policy(out.visit_counts, out.q_values,
                                        _root_state().legal_action_mask, config)
  np.testing.assert_allclose(out.action_weights, expected, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(out.action_weights).sum(-1), 1.0, rtol=1e-6)
  np.testing.assert_array_equal(out.action, np.argmax(np.asarray(expected), -1))
