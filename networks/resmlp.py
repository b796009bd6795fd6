"""Residual MLPs for flat observations (Nim, HSR), with one or two heads.

  ResMLP(num_actions)(observation [B, ...], train=False)
      -> (logits f32[B, A], value f32[B])
  DualHeadResMLP(num_actions)(observation, train=False)
      -> ((small_logits, small_value), (large_logits, large_value))
  DualHeadResMLP(num_actions)(observation, small_only=True)
      -> (small_logits, small_value)

The flat-vector counterpart of `ResNet` / `DualHeadResNet` ("a ResNet of L
layers of W units"): a Dense stem to W units, then L residual layers
x <- relu(x + Dense_W(x)), then a policy head (Dense A) and a value head
(Dense 1, tanh). The two-head version puts a small head after the first
`small_head_after` layers and the large head after all of them, so the
small network is a prefix of the large one (Dual MCTS). No BatchNorm: the
variables are {'params'}.
"""

import chex
import flax.linen as nn
import jax.numpy as jnp


class _Head(nn.Module):
  num_actions: int

  @nn.compact
  def __call__(self, x):
    logits = nn.Dense(self.num_actions, name="policy")(x)
    value = jnp.tanh(nn.Dense(1, name="value")(x))[:, 0]
    return logits, value


def _flat(observation):
  return jnp.reshape(observation, (observation.shape[0], -1)).astype(jnp.float32)


class ResMLP(nn.Module):
  """Stem, `num_layers` residual Dense layers of `width` units, two heads.

  Attributes:
    num_actions: A.
    num_layers: residual layers.
    width: units of the stem and of every layer.
  """
  num_actions: int
  num_layers: int = 4
  width: int = 64

  @nn.compact
  def __call__(self, observation: chex.Array, train: bool = False):
    """Evaluates a batch of observations.

    Args:
      observation: [B, ...] (bool or float), flattened to [B, D].
      train: unused (no BatchNorm); accepted like the other networks.

    Returns:
      (logits f32[B, A] unmasked, value f32[B] in [-1, 1]).
    """
    del train
    x = nn.relu(nn.Dense(self.width, name="stem")(_flat(observation)))
    for i in range(self.num_layers):
      x = nn.relu(x + nn.Dense(self.width, name=f"layer_{i}")(x))
    return _Head(self.num_actions, name="head")(x)


class DualHeadResMLP(nn.Module):
  """`ResMLP` with a small head after the first `small_head_after` layers and
  a large head after all `num_layers`.

  Attributes:
    num_actions, num_layers, width: as in `ResMLP`.
    small_head_after: layers under the small head (0..num_layers).
  """
  num_actions: int
  num_layers: int = 4
  width: int = 64
  small_head_after: int = 2

  @nn.compact
  def __call__(self, observation: chex.Array, train: bool = False, small_only: bool = False):
    """Evaluates a batch of observations with both heads, or the small one.

    Args:
      observation: [B, ...] (bool or float), flattened to [B, D].
      train: unused (no BatchNorm); accepted like the other networks.
      small_only: run only the layers under the small head.

    Returns:
      ((small_logits f32[B, A], small_value f32[B]), (large_logits f32[B, A],
      large_value f32[B])), or (small_logits, small_value) when `small_only`.

    Raises:
      ValueError: (at trace time) `small_head_after` outside 0..num_layers.
    """
    del train
    if not 0 <= self.small_head_after <= self.num_layers:
      raise ValueError(f"DualHeadResMLP needs 0 <= small_head_after <= num_layers, got "
                       f"{self.small_head_after} and {self.num_layers}")
    x = nn.relu(nn.Dense(self.width, name="stem")(_flat(observation)))
    for i in range(self.small_head_after):
      x = nn.relu(x + nn.Dense(self.width, name=f"layer_{i}")(x))
    small = _Head(self.num_actions, name="small_head")(x)
    if small_only:
      return small
    for i in range(self.small_head_after, self.num_layers):
      x = nn.relu(x + nn.Dense(self.width, name=f"layer_{i}")(x))
    return small, _Head(self.num_actions, name="large_head")(x)


class NetworkPair(nn.Module):
  """Two separate networks evaluated side by side (MPV-MCTS's f_S and f_L):
  the same outputs as a two-head network, so the trainer trains both (the
  sum of their losses) and `NetworkEval(head=...)` picks one.

  Attributes:
    small, large: the two networks (any of this package with one head);
      their variables live under 'small' and 'large'.
  """
  small: nn.Module
  large: nn.Module

  @property
  def num_actions(self) -> int:
    return self.large.num_actions

  @nn.compact
  def __call__(self, observation: chex.Array, train: bool = False, small_only: bool = False,
               large_only: bool = False):
    """Evaluates a batch of observations with both networks, or one of them.

    Args:
      observation: [B, ...], as both networks take it.
      train: passed to both networks (BatchNorm statistics).
      small_only: run only the small network.
      large_only: run only the large network (wins over `small_only`).

    Returns:
      ((small_logits f32[B, A], small_value f32[B]), (large_logits f32[B, A],
      large_value f32[B])), or one network's (logits, value) alone with
      `small_only` / `large_only` (the other is not run).
    """
    if large_only:
      return self.large(observation, train=train)
    small = self.small(observation, train=train)
    if small_only:
      return small
    return small, self.large(observation, train=train)
