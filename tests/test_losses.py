"""The training losses and the optimizer, against hand-computed values."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mcgs_jax.networks import losses

LN3 = math.log(3.0)
# softmax([0, ln 3]) = [1/4, 3/4]
LOGITS = jnp.array([[0.0, LN3]])


def _components(parts):
  return {k: float(v) for k, v in parts.items()}


def test_alphazero_loss_golden_values():
  total, parts = losses.alphazero_loss(LOGITS, jnp.array([0.5]), jnp.array([[0.5, 0.5]]),
                                       jnp.array([1.0]))
  parts = _components(parts)
  cross_entropy = -(0.5 * math.log(0.25) + 0.5 * math.log(0.75))
  assert parts["policy"] == pytest.approx(cross_entropy, abs=1e-6)
  assert parts["value"] == pytest.approx((0.5 - 1.0) ** 2, abs=1e-6)
  assert parts["kl"] == pytest.approx(cross_entropy - math.log(2.0), abs=1e-6)
  assert parts["entropy"] == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)),
                                           abs=1e-6)
  assert float(total) == pytest.approx(cross_entropy + 0.25, abs=1e-6)


def test_alphazero_loss_gradient_is_softmax_minus_target():
  def total(logits, value):
    return losses.alphazero_loss(logits, value, jnp.array([[0.5, 0.5]]), jnp.array([1.0]))[0]

  grad_logits, grad_value = jax.grad(total, argnums=(0, 1))(LOGITS, jnp.array([0.5]))
  np.testing.assert_allclose(grad_logits, [[0.25 - 0.5, 0.75 - 0.5]], atol=1e-6)
  np.testing.assert_allclose(grad_value, [2 * (0.5 - 1.0)], atol=1e-6)


# Two examples, three actions:
#   softmax([0, ln 3, ln 4]) = [1/8, 3/8, 1/2], target [1/2, 1/2, 0], v 0.0, z -1
#   softmax([0, 0, ln 2])    = [1/4, 1/4, 1/2], target [0, 0, 1],     v -0.5, z 0.5
BATCH = dict(
    logits=jnp.array([[0.0, LN3, math.log(4.0)], [0.0, 0.0, math.log(2.0)]]),
    value=jnp.array([0.0, -0.5]),
    target_policy=jnp.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]),
    target_value=jnp.array([-1.0, 0.5]))
CE = (-(0.5 * math.log(1 / 8) + 0.5 * math.log(3 / 8)), math.log(2.0))
VALUE_ERROR = (1.0, 1.0)
TARGET_ENTROPY = (math.log(2.0), 0.0)


@pytest.mark.parametrize("weights", [None, [1.0, 3.0], [1.0, 0.0], [True, False]])
def test_alphazero_loss_is_a_weighted_mean(weights):
  w = np.ones(2) if weights is None else np.asarray(weights, np.float64)
  _, parts = losses.alphazero_loss(**BATCH, weights=None if weights is None else
                                   jnp.asarray(weights))
  parts = _components(parts)
  assert parts["policy"] == pytest.approx(np.dot(w, CE) / w.sum(), abs=1e-6)
  assert parts["value"] == pytest.approx(np.dot(w, VALUE_ERROR) / w.sum(), abs=1e-6)
  # The one-hot target's 0 log 0 terms vanish: its KL is its cross-entropy.
  kl = np.subtract(CE, TARGET_ENTROPY)
  assert parts["kl"] == pytest.approx(np.dot(w, kl) / w.sum(), abs=1e-6)


def test_masked_examples_do_not_count_and_empty_batch_is_zero():
  garbage = {k: v.at[1].set(1e4) for k, v in BATCH.items()}
  _, masked = losses.alphazero_loss(**garbage, weights=jnp.array([1.0, 0.0]))
  _, alone = losses.alphazero_loss(**{k: v[:1] for k, v in BATCH.items()})
  for key, value in alone.items():
    assert float(masked[key]) == pytest.approx(float(value), abs=1e-6), key
  total, parts = losses.alphazero_loss(**BATCH, weights=jnp.zeros(2))
  assert float(total) == 0.0 and all(float(v) == 0.0 for v in parts.values())


def test_kl_is_cross_entropy_minus_target_entropy():
  rng = np.random.default_rng(0)
  logits = jnp.asarray(rng.normal(size=(5, 6)) * 2, jnp.float32)
  target = rng.dirichlet(np.ones(6), size=5)
  target[:, :2] = 0.0   # moves the search never played
  target /= target.sum(axis=1, keepdims=True)
  value = jnp.asarray(rng.uniform(-1, 1, 5), jnp.float32)
  outcome = jnp.asarray(rng.choice([-1.0, 0.0, 1.0], 5), jnp.float32)
  target_entropy = -np.sum(np.where(target > 0, target * np.log(np.where(target > 0, target, 1)),
                                    0), axis=1)
  _, az = losses.alphazero_loss(logits, value, jnp.asarray(target, jnp.float32), outcome)
  np.testing.assert_allclose(az["kl"], az["policy"] - target_entropy.mean(), atol=1e-5)
  legal = jnp.ones((5, 6), jnp.bool_)
  total, kl = losses.kl_illegal_loss(logits, value, jnp.asarray(target, jnp.float32), outcome,
                                     legal)
  np.testing.assert_allclose(kl["policy"], az["kl"], atol=1e-6)
  np.testing.assert_allclose(kl["illegal"], 0.0, atol=1e-7)
  np.testing.assert_allclose(total, kl["policy"] + kl["value"], atol=1e-6)
  # Same gradient: the target's entropy does not depend on the logits.
  grad_ce = jax.grad(
      lambda x: losses.alphazero_loss(x, value, target, outcome)[1]["policy"])(logits)
  grad_kl = jax.grad(lambda x: losses.kl_illegal_loss(x, value, target, outcome, legal)[0])(logits)
  np.testing.assert_allclose(grad_ce, grad_kl, atol=1e-6)


def test_kl_illegal_loss_golden_values():
  # softmax = [1/4, 3/4] with move 1 illegal; target all on move 0; v = z.
  args = (LOGITS, jnp.array([0.25]), jnp.array([[1.0, 0.0]]), jnp.array([0.25]),
          jnp.array([[True, False]]))
  total, parts = losses.kl_illegal_loss(*args)
  parts = _components(parts)
  assert parts["policy"] == pytest.approx(math.log(4.0), abs=1e-6)
  assert parts["kl"] == pytest.approx(math.log(4.0), abs=1e-6)
  assert parts["illegal"] == pytest.approx(0.75, abs=1e-6)
  assert parts["value"] == pytest.approx(0.0, abs=1e-7)
  assert float(total) == pytest.approx(math.log(4.0) + 10.0 * 0.75, abs=1e-5)
  total, _ = losses.kl_illegal_loss(*args, illegal_weight=2.0)
  assert float(total) == pytest.approx(math.log(4.0) + 2.0 * 0.75, abs=1e-6)
  # d/dx of the illegal mass p1 = p1 (e1 - p): [-p0 p1, p1 (1 - p1)] = [-3/16, 3/16];
  # of the KL -log p0: p - e0 = [-3/4, 3/4].
  grad = jax.grad(lambda x: losses.kl_illegal_loss(x, *args[1:])[0])(LOGITS)
  np.testing.assert_allclose(grad, [[-0.75 - 10 * 3 / 16, 0.75 + 10 * 3 / 16]], atol=1e-5)


def test_masked_logits_give_finite_losses_and_gradients():
  # -inf on a move the target never plays: no 0 * inf = NaN anywhere.
  logits = jnp.array([[0.0, -jnp.inf, LN3]])
  target = jnp.array([[0.25, 0.0, 0.75]])
  legal = jnp.array([[True, False, True]])
  for loss in (lambda x: losses.alphazero_loss(x, jnp.zeros(1), target, jnp.zeros(1)),
               lambda x: losses.kl_illegal_loss(x, jnp.zeros(1), target, jnp.zeros(1), legal)):
    total, parts = loss(logits)
    assert np.isfinite(float(total))
    assert float(parts["kl"]) == pytest.approx(0.0, abs=1e-6)   # softmax equals the target
    assert np.all(np.isfinite(np.asarray(jax.grad(lambda x: loss(x)[0])(logits))))


PARAMS = {"w": jnp.array([1.0, -2.0]), "b": jnp.array([0.5])}
ZERO = jax.tree.map(jnp.zeros_like, PARAMS)


def _step(optimizer, params, grads, state=None):
  state = optimizer.init(params) if state is None else state
  updates, state = optimizer.update(grads, state, params)
  return optax.apply_updates(params, updates), state


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimizer_decays_params_on_a_zero_gradient(kind):
  optimizer = losses.make_optimizer(0.1, weight_decay=0.01, kind=kind)
  params, _ = _step(optimizer, PARAMS, ZERO)
  for name in PARAMS:
    np.testing.assert_allclose(params[name], PARAMS[name] * (1 - 0.1 * 0.01), rtol=1e-6)


def test_sgd_momentum_accumulates_the_decay():
  optimizer = losses.make_optimizer(0.1, weight_decay=0.01, momentum=0.9)
  p1, state = _step(optimizer, PARAMS, ZERO)
  p2, _ = _step(optimizer, p1, ZERO, state)
  # trace_2 = decay * p1 + 0.9 * decay * p0
  for name in PARAMS:
    want = p1[name] - 0.1 * (0.01 * p1[name] + 0.9 * 0.01 * PARAMS[name])
    np.testing.assert_allclose(p2[name], want, rtol=1e-6)


def test_optimizer_schedule_mask_and_clipping():
  grads = {"w": jnp.array([3.0, 4.0]), "b": jnp.array([0.0])}
  # Learning rate 0.1 then 0.2; no decay, no momentum: plain SGD steps.
  optimizer = losses.make_optimizer(lambda count: 0.1 * (count + 1), weight_decay=0.0,
                                    momentum=0.0)
  p1, state = _step(optimizer, PARAMS, grads)
  p2, _ = _step(optimizer, p1, grads, state)
  np.testing.assert_allclose(p2["w"], PARAMS["w"] - 0.3 * grads["w"], rtol=1e-6)
  # The mask spares the bias from decay.
  optimizer = losses.make_optimizer(1.0, weight_decay=0.5, momentum=0.0,
                                    decay_mask={"w": True, "b": False})
  params, _ = _step(optimizer, PARAMS, ZERO)
  np.testing.assert_allclose(params["w"], PARAMS["w"] * 0.5, rtol=1e-6)
  np.testing.assert_array_equal(params["b"], PARAMS["b"])
  # Clipping to global norm 1: the gradient [3, 4] becomes [0.6, 0.8].
  optimizer = losses.make_optimizer(1.0, weight_decay=0.0, momentum=0.0, max_grad_norm=1.0)
  params, _ = _step(optimizer, PARAMS, grads)
  np.testing.assert_allclose(params["w"], PARAMS["w"] - jnp.array([0.6, 0.8]), rtol=1e-6)
  with pytest.raises(ValueError, match="unknown optimizer"):
    losses.make_optimizer(0.1, 0.0, kind="lion")


@pytest.mark.parametrize("loss", ["alphazero", "kl"])
def test_example_without_policy_target_trains_only_the_value(loss):
  """An all-zero target policy (a fast move of playout cap randomization)
  enters the value mean but not the policy means, in both losses."""
  batch = dict(BATCH, target_policy=BATCH["target_policy"].at[1].set(0.0))
  if loss == "alphazero":
    _, parts = losses.alphazero_loss(**batch, weights=jnp.array([1.0, 3.0]))
  else:
    _, parts = losses.kl_illegal_loss(**batch, legal=jnp.ones((2, 3), bool),
                                      weights=jnp.array([1.0, 3.0]))
  parts = _components(parts)
  kl_first = CE[0] - TARGET_ENTROPY[0]
  assert parts["policy"] == pytest.approx(CE[0] if loss == "alphazero" else kl_first, abs=1e-6)
  assert parts["kl"] == pytest.approx(kl_first, abs=1e-6)
  assert parts["value"] == pytest.approx((1.0 * 1.0 + 3.0 * 1.0) / 4.0, abs=1e-6)
  # The policy logits of the second example get no gradient; its value does.
  def total(logits, value):
    return losses.alphazero_loss(logits, value, batch["target_policy"], batch["target_value"])[0]
  grad_logits, grad_value = jax.grad(total, argnums=(0, 1))(batch["logits"], batch["value"])
  np.testing.assert_array_equal(grad_logits[1], 0.0)
  assert float(grad_value[1]) != 0.0


def test_policy_loss_golden_and_skips_rows_without_target():
  """The auxiliary head's loss: the mean cross-entropy over rows with a
  target; the opponent-policy term enters the trainer's total with its weight."""
  from mcgs_jax.learning import example as example_lib  # pylint: disable=g-import-not-at-top
  from mcgs_jax.learning import trainer  # pylint: disable=g-import-not-at-top
  logits = jnp.log(jnp.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]))
  target = jnp.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
  want = (math.log(2) + 0.5 * (math.log(10) + math.log(1.25))) / 2
  np.testing.assert_allclose(losses.policy_loss(logits, target), want, rtol=1e-6)
  np.testing.assert_allclose(losses.policy_loss(logits, target, jnp.array([0.0, 1.0, 1.0])),
                             0.5 * (math.log(10) + math.log(1.25)), rtol=1e-6)
  examples = example_lib.Example(observation=jnp.zeros((3, 1)), legal_action_mask=jnp.ones((3, 3)),
                                 policy=target[jnp.array([1, 0, 1])], player=jnp.zeros(3, jnp.int32),
                                 value=jnp.zeros(3), opponent_policy=target)
  value = jnp.array([0.5, 0.0, -0.5])
  plain, _ = trainer.loss_terms(None, trainer.LossConfig(), (logits, value), examples,
                                jnp.ones(3))
  total, parts = trainer.loss_terms(None, trainer.LossConfig(opponent_policy_weight=0.15),
                                    (logits, value, logits), examples, jnp.ones(3))
  np.testing.assert_allclose(parts["opponent_policy"], want, rtol=1e-6)
  np.testing.assert_allclose(total, plain + 0.15 * want, rtol=1e-6)
