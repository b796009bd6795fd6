"""Training losses of the policy-value networks, and their optimizer.

  alphazero_loss(logits [B, A], value [B], target_policy [B, A],
                 target_value [B], weights [B] | None) -> (total, components)
  kl_illegal_loss(..., legal [B, A], weights=None, illegal_weight=10.0)
      -> (total, components)
  policy_loss(logits [B, A], target_policy [B, A], weights=None) -> scalar
  make_optimizer(learning_rate, weight_decay, momentum=0.9, ...)
      -> optax.GradientTransformation

Both losses are weighted means over the examples: `weights` [B] (default all
1) is the mask of valid examples of a padded batch, or importance weights.
An example whose target policy is all zero has no policy target (a move of
playout cap randomization's cheap searches, `mcgs_jax.learning.selfplay`): it enters
the value term only, and the policy terms are means over the other examples.
`components` maps names to scalars (the same weighted means):
  'policy'   the policy term of the loss (cross-entropy or KL);
  'value'    (value - target_value)^2;
  'kl'       KL(target_policy || softmax(logits)), with 0 log 0 = 0;
  'entropy'  entropy of softmax(logits) (a diagnostic: a collapsing policy
             shows here first);
  'illegal'  (kl_illegal_loss) probability mass softmax(logits) puts on
             illegal moves.

The cross-entropy and the KL differ by the target's entropy, which does not
depend on the network: they have the same gradient, but the KL is 0 at a
perfect fit, so its value is readable across positions.

Weight decay is not a loss term: `make_optimizer` applies it to the
parameters it updates (`variables['params']`, never the BatchNorm averages).
"""

from typing import Any, Optional, Union

import chex
import jax
import jax.numpy as jnp
import optax

Schedule = Union[float, optax.Schedule]


def _weighted_mean(per_example: chex.Array, weights: chex.Array) -> chex.Array:
  """sum(w x) / sum(w); 0 for a batch with no weight (all padding)."""
  total = jnp.sum(weights)
  return jnp.where(total > 0, jnp.sum(weights * per_example) / jnp.where(total > 0, total, 1.0),
                   0.0)


def _xlogy(x: chex.Array, y: chex.Array) -> chex.Array:
  """x * log(y) with 0 log 0 = 0 (and a finite gradient there)."""
  return jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, y, 1.0)), 0.0)


def _policy_terms(logits, target_policy):
  """Per-example cross-entropy, KL(target || p) and entropy of p, each [B]."""
  log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  # Only the target's support enters the cross-entropy: a logit of -inf on a
  # move the target never plays costs nothing (instead of 0 * -inf = NaN).
  cross_entropy = -jnp.sum(jnp.where(target_policy > 0, target_policy * log_probs, 0.0), axis=-1)
  target_entropy = -jnp.sum(_xlogy(target_policy, target_policy), axis=-1)
  probs = jnp.exp(log_probs)
  entropy = -jnp.sum(jnp.where(probs > 0, probs * log_probs, 0.0), axis=-1)
  return cross_entropy, cross_entropy - target_entropy, entropy, probs


def _policy_weights(target_policy: chex.Array, weights: chex.Array) -> chex.Array:
  """`weights` [B], 0 where the example has no policy target (all-zero policy)."""
  return jnp.where(jnp.sum(target_policy, axis=-1) > 0, weights, 0.0)


def policy_loss(logits: chex.Array, target_policy: chex.Array,
                weights: Optional[chex.Array] = None) -> chex.Array:
  """The weighted mean cross-entropy of a policy head (an auxiliary one).

  Args:
    logits: f32[B, A].
    target_policy: f32[B, A]; an all-zero row is no target and is skipped.
    weights: f32[B] or None (all 1).

  Returns:
    The scalar loss (0 when no row has a target).
  """
  chex.assert_equal_shape([logits, target_policy])
  weights = jnp.ones(logits.shape[:1], jnp.float32) if weights is None else weights
  cross_entropy = _policy_terms(logits, target_policy)[0]
  return _weighted_mean(cross_entropy, _policy_weights(target_policy, weights))


def _check_shapes(logits, value, target_policy, target_value, weights):
  batch, num_actions = logits.shape
  chex.assert_shape([value, target_value], (batch,))
  chex.assert_shape(target_policy, (batch, num_actions))
  if weights is None:
    return jnp.ones((batch,), jnp.float32)
  chex.assert_shape(weights, (batch,))
  return jnp.asarray(weights, jnp.float32)


def alphazero_loss(logits: chex.Array, value: chex.Array, target_policy: chex.Array,
                   target_value: chex.Array, weights: Optional[chex.Array] = None
                   ) -> tuple[chex.Array, dict[str, chex.Array]]:
  """AlphaZero's loss: policy cross-entropy plus value squared error.

  Per example: -sum_a pi(a) log softmax(logits)(a) + (value - z)^2.

  Args:
    logits: f32[B, A], the network's policy logits.
    value: f32[B], the network's value.
    target_policy: f32[B, A], pi, the search policy (sums to 1; all 0: no
      policy target for this example).
    target_value: f32[B], z, the game's outcome for the player to move.
    weights: f32[B] or bool[B] (mask of valid examples); None: all 1.

  Returns:
    (total loss, components): scalars, weighted means over the examples
    (see the module docstring for the components).

  Raises:
    AssertionError: (chex, at trace time) shapes that do not match [B, A]
      and [B].
  """
  weights = _check_shapes(logits, value, target_policy, target_value, weights)
  cross_entropy, kl, entropy, _ = _policy_terms(logits, target_policy)
  value_error = jnp.square(value.astype(jnp.float32) - target_value)
  policy_weights = _policy_weights(target_policy, weights)
  components = {
      "policy": _weighted_mean(cross_entropy, policy_weights),
      "value": _weighted_mean(value_error, weights),
      "kl": _weighted_mean(kl, policy_weights),
      "entropy": _weighted_mean(entropy, policy_weights),
  }
  return components["policy"] + components["value"], components


def kl_illegal_loss(logits: chex.Array, value: chex.Array, target_policy: chex.Array,
                    target_value: chex.Array, legal: chex.Array,
                    weights: Optional[chex.Array] = None, illegal_weight: float = 10.0
                    ) -> tuple[chex.Array, dict[str, chex.Array]]:
  """KL policy loss with a penalty on illegal moves, plus value squared error.

  Per example: KL(pi || p) + illegal_weight * sum_{a illegal} p(a)
  + (value - z)^2, with p = softmax(logits) and 0 log 0 = 0. The penalty
  teaches the network the rules, so its unmasked prior is usable as is.

  Args:
    logits: f32[B, A], the network's policy logits.
    value: f32[B], the network's value.
    target_policy: f32[B, A], pi, the search policy (sums to 1).
    target_value: f32[B], z, the game's outcome for the player to move.
    legal: bool[B, A], the legal moves of each position.
    weights: f32[B] or bool[B] (mask of valid examples); None: all 1.
    illegal_weight: the weight of the illegal probability mass.

  Returns:
    (total loss, components) as in `alphazero_loss`, 'policy' being the KL
    and 'illegal' the illegal probability mass (before `illegal_weight`).

  Raises:
    AssertionError: (chex, at trace time) shapes that do not match [B, A]
      and [B].
  """
  weights = _check_shapes(logits, value, target_policy, target_value, weights)
  chex.assert_shape(legal, logits.shape)
  _, kl, entropy, probs = _policy_terms(logits, target_policy)
  illegal_mass = jnp.sum(jnp.where(legal, 0.0, probs), axis=-1)
  value_error = jnp.square(value.astype(jnp.float32) - target_value)
  policy_weights = _policy_weights(target_policy, weights)
  components = {
      "policy": _weighted_mean(kl, policy_weights),
      "value": _weighted_mean(value_error, weights),
      "kl": _weighted_mean(kl, policy_weights),
      "entropy": _weighted_mean(entropy, policy_weights),
      "illegal": _weighted_mean(illegal_mass, weights),
  }
  total = components["policy"] + illegal_weight * components["illegal"] + components["value"]
  return total, components


def make_optimizer(learning_rate: Schedule, weight_decay: float = 1e-4, momentum: float = 0.9,
                   kind: str = "sgd", nesterov: bool = False, b1: float = 0.9,
                   b2: float = 0.999, decay_mask: Any = None,
                   max_grad_norm: Optional[float] = None) -> optax.GradientTransformation:
  """The optimizer of `variables['params']`, weight decay included.

  'sgd': SGD with momentum on grad + weight_decay * params (AlphaZero's L2
  term, which the momentum accumulates). 'adam': Adam with decoupled decay
  (AdamW: the decay is added after Adam's normalisation, which would
  otherwise shrink it where gradients are large). Either way one step on a
  zero gradient multiplies the parameters by 1 - lr * weight_decay.

  Args:
    learning_rate: a float or an optax schedule (step -> rate).
    weight_decay: the decay coefficient; 0 turns it off.
    momentum: SGD momentum (ignored by 'adam').
    kind: 'sgd' or 'adam'.
    nesterov: Nesterov momentum for 'sgd'.
    b1: Adam's first moment decay.
    b2: Adam's second moment decay.
    decay_mask: optional pytree of bools (or a function of the params
      returning one) selecting the parameters to decay, e.g. to spare
      biases and BatchNorm scales; None decays all.
    max_grad_norm: clip the gradient to this global norm first; None: no
      clipping.

  Returns:
    The optax GradientTransformation.

  Raises:
    ValueError: unknown `kind`.
  """
  if kind == "sgd":
    steps = [optax.add_decayed_weights(weight_decay, mask=decay_mask),
             optax.sgd(learning_rate, momentum=momentum or None, nesterov=nesterov)]
  elif kind == "adam":
    steps = [optax.scale_by_adam(b1=b1, b2=b2),
             optax.add_decayed_weights(weight_decay, mask=decay_mask),
             optax.scale_by_learning_rate(learning_rate)]
  else:
    raise ValueError(f"unknown optimizer kind {kind!r}; known: 'sgd', 'adam'")
  if max_grad_norm is not None:
    steps.insert(0, optax.clip_by_global_norm(max_grad_norm))
  return optax.chain(*steps)
