"""AlphaZero residual networks for board planes (flax.linen).

  ResNet(num_actions)(observation [B, H, W, C], train=False)
      -> (logits f32[B, A], value f32[B])
  SEResNet(num_actions)(...)          same, squeeze-and-excitation blocks
  DualHeadResNet(num_actions)(observation, train=False)
      -> ((small_logits [B, A], small_value [B]), (large_logits [B, A], large_value [B]))
  DualHeadResNet(num_actions)(observation, train=False, small_only=True)
      -> (small_logits [B, A], small_value [B])

Observations are pgx-layout planes [B, H, W, C] (bool, cast to float32):
Connect-4 [B, 6, 7, 2], tic-tac-toe [B, 3, 3, 2], pgx board games. Flat
vectors (Nim, HSR) are refused with a ValueError: they go through
`networks.MLP`. Logits are unmasked (the search masks illegal moves); values
are in [-1, 1] for the player to move.

Every convolution is followed by BatchNorm, which normalises with its running
averages when `train=False` and with the batch's statistics when `train=True`;
training applies the network with `mutable=['batch_stats']` (see
`mcgs_jax.networks.apply`). The variables are {'params', 'batch_stats'}. With
`batch_norm=False` (ResNet, SEResNet) the convolutions carry a bias instead
and the variables are {'params'} (KataGo trains without BatchNorm: cheaper
steps, and self-play and training see the same function).
"""

from typing import Optional

import chex
import flax.linen as nn
import jax.numpy as jnp

# Self-play data drifts as the network improves, so the running averages
# follow the recent batches faster than flax's default 0.99.
_BN_MOMENTUM = 0.9
_BN_EPSILON = 1e-5


def _batch_norm(train: bool, name: Optional[str] = None) -> nn.BatchNorm:
  return nn.BatchNorm(use_running_average=not train, momentum=_BN_MOMENTUM,
                      epsilon=_BN_EPSILON, name=name)


def _conv(features: int, size: int, name: Optional[str] = None,
          use_bias: bool = False) -> nn.Conv:
  # No bias by default: the BatchNorm that follows the convolution has its own.
  return nn.Conv(features, (size, size), padding="SAME", use_bias=use_bias, name=name)


def _conv_norm(x: chex.Array, features: int, size: int, train: bool, conv_name: str,
               norm_name: str, batch_norm: bool) -> chex.Array:
  """Convolution then BatchNorm, or a convolution with a bias alone."""
  if not batch_norm:
    return _conv(features, size, conv_name, use_bias=True)(x)
  return _batch_norm(train, norm_name)(_conv(features, size, conv_name)(x))


def board_planes(observation: chex.Array, network_name: str) -> chex.Array:
  """A batch of pgx-layout planes as float32, checked.

  Args:
    observation: [B, H, W, C] planes.
    network_name: named in the error message.

  Returns:
    f32[B, H, W, C].

  Raises:
    ValueError: a flat observation [B, D] (those need the MLP) or any other
      rank than 4.
  """
  shape = tuple(observation.shape)
  if len(shape) == 2:
    raise ValueError(
        f"{network_name} takes board planes [B, H, W, C], got a flat observation of shape "
        f"{shape}; flat observations (Nim, HSR) need the MLP: mcgs_jax.networks.make('mlp', env)")
  if len(shape) != 4:
    raise ValueError(
        f"{network_name} takes a batch of board planes [B, H, W, C], got shape {shape}")
  return jnp.asarray(observation).astype(jnp.float32)


class SqueezeExcitation(nn.Module):
  """Per-channel gate and bias computed from the block's global average
  (the SE layer of the Leela / MantisShrimp SE-ResNets).

  Attributes:
    channels: C, the channels of the block.
    ratio: the squeeze layer has max(1, C // ratio) units.
  """
  channels: int
  ratio: int = 4

  @nn.compact
  def __call__(self, x: chex.Array) -> chex.Array:
    """Gates and biases each channel from its global average.

    Args:
      x: f32[B, H, W, C].

    Returns:
      f32[B, H, W, C], sigmoid(gate) * x + bias with gate and bias [B, 1, 1, C].
    """
    pooled = jnp.mean(x, axis=(1, 2))
    squeezed = nn.relu(nn.Dense(max(1, self.channels // self.ratio), name="squeeze")(pooled))
    gate, bias = jnp.split(nn.Dense(2 * self.channels, name="excite")(squeezed), 2, axis=-1)
    return nn.sigmoid(gate)[:, None, None, :] * x + bias[:, None, None, :]


class ResidualBlock(nn.Module):
  """conv3x3-BN-relu-conv3x3-BN (+ SE), added to the input, relu.

  Attributes:
    channels: C, input and output channels.
    se_ratio: squeeze-and-excitation ratio; None for a plain block.
    batch_norm: False: biased convolutions, no BatchNorm.
  """
  channels: int
  se_ratio: Optional[int] = None
  batch_norm: bool = True

  @nn.compact
  def __call__(self, x: chex.Array, train: bool) -> chex.Array:
    """Applies the block.

    Args:
      x: f32[B, H, W, C].
      train: BatchNorm uses batch statistics (and updates its averages).

    Returns:
      f32[B, H, W, C].
    """
    y = nn.relu(_conv_norm(x, self.channels, 3, train, "conv_1", "bn_1", self.batch_norm))
    y = _conv_norm(y, self.channels, 3, train, "conv_2", "bn_2", self.batch_norm)
    if self.se_ratio is not None:
      y = SqueezeExcitation(self.channels, self.se_ratio, name="se")(y)
    return nn.relu(x + y)


class PolicyValueHead(nn.Module):
  """AlphaZero's two heads on a trunk's features.

  Policy: 1x1 conv (`policy_channels` filters, 2 in AlphaZero), BN, relu,
  flatten, Dense A.
  Value: 1x1 conv (`value_channels` filters, 1 in AlphaZero), BN, relu,
  flatten, Dense `value_hidden`, relu, Dense 1, tanh.

  Attributes:
    num_actions: A.
    value_hidden: units of the value head's hidden layer.
    batch_norm: False: biased convolutions, no BatchNorm.
    value_channels: filters of the value head's 1x1 convolution.
    policy_channels: filters of the policy head's 1x1 convolution.
  """
  num_actions: int
  value_hidden: int = 64
  batch_norm: bool = True
  value_channels: int = 1
  policy_channels: int = 2

  @nn.compact
  def __call__(self, x: chex.Array, train: bool) -> tuple[chex.Array, chex.Array]:
    """Applies both heads.

    Args:
      x: f32[B, H, W, C], the trunk's features.
      train: BatchNorm uses batch statistics (and updates its averages).

    Returns:
      (logits f32[B, A], value f32[B] in [-1, 1]).
    """
    batch = x.shape[0]
    policy = nn.relu(_conv_norm(x, self.policy_channels, 1, train, "policy_conv", "policy_bn",
                                self.batch_norm))
    logits = nn.Dense(self.num_actions, name="policy")(jnp.reshape(policy, (batch, -1)))
    value = nn.relu(_conv_norm(x, self.value_channels, 1, train, "value_conv", "value_bn",
                               self.batch_norm))
    value = jnp.reshape(value, (batch, -1))
    value = nn.relu(nn.Dense(self.value_hidden, name="value_hidden")(value))
    value = jnp.tanh(nn.Dense(1, name="value")(value))[:, 0]
    return logits, value


def _stem(observation: chex.Array, channels: int, train: bool, network_name: str,
          batch_norm: bool = True) -> chex.Array:
  """3x3 conv + BN + relu on the planes; called inside a compact method, so
  its layers belong to the calling network."""
  x = board_planes(observation, network_name)
  return nn.relu(_conv_norm(x, channels, 3, train, "stem_conv", "stem_bn", batch_norm))


def _blocks(x: chex.Array, first: int, stop: int, channels: int, se_ratio: Optional[int],
            train: bool, batch_norm: bool = True) -> chex.Array:
  """Residual blocks first..stop-1, named by their index in the trunk."""
  for i in range(first, stop):
    x = ResidualBlock(channels, se_ratio, batch_norm, name=f"block_{i}")(x, train)
  return x


class ResNet(nn.Module):
  """The AlphaZero network: stem, `num_blocks` residual blocks, two heads.

  Attributes:
    num_actions: A.
    num_blocks: residual blocks in the trunk.
    channels: channels of every convolution in the trunk.
    value_hidden: units of the value head's hidden layer.
    batch_norm: False: biased convolutions, no BatchNorm (variables
      {'params'} only).
    value_channels, policy_channels: filters of the heads' 1x1
      convolutions (AlphaZero: 1 and 2).
    opponent_policy: a third head, trained only: the logits of the
      opponent's reply (KataGo's auxiliary policy target; same layers as the
      policy head). Its parameters exist from `init` on; a call returns it
      only with `auxiliary=True`, so the search's evaluations skip it.
  """
  num_actions: int
  num_blocks: int = 6
  channels: int = 64
  value_hidden: int = 64
  batch_norm: bool = True
  value_channels: int = 1
  policy_channels: int = 2
  opponent_policy: bool = False

  @nn.compact
  def __call__(self, observation: chex.Array, train: bool = False,
               auxiliary: bool = False) -> tuple[chex.Array, ...]:
    """Evaluates a batch of observations.

    Args:
      observation: pgx-layout planes [B, H, W, C] (bool or float).
      train: BatchNorm uses batch statistics (and updates its averages).
      auxiliary: also return the opponent-policy logits (needs
        `opponent_policy`).

    Returns:
      (logits f32[B, A] unmasked, value f32[B] in [-1, 1]); with `auxiliary`,
      (logits, value, opponent_logits f32[B, A]).

    Raises:
      ValueError: (at trace time) an observation that is not [B, H, W, C],
        or `auxiliary` without `opponent_policy`.
    """
    if auxiliary and not self.opponent_policy:
      raise ValueError("auxiliary=True needs a ResNet built with opponent_policy=True")
    x = _stem(observation, self.channels, train, type(self).__name__, self.batch_norm)
    x = _blocks(x, 0, self.num_blocks, self.channels, None, train, self.batch_norm)
    logits, value = PolicyValueHead(self.num_actions, self.value_hidden, self.batch_norm,
                                    self.value_channels, self.policy_channels,
                                    name="head")(x, train)
    if not self.opponent_policy:
      return logits, value
    opponent = nn.relu(_conv_norm(x, self.policy_channels, 1, train, "opponent_conv",
                                  "opponent_bn", self.batch_norm))
    opponent_logits = nn.Dense(self.num_actions, name="opponent_policy")(
        jnp.reshape(opponent, (x.shape[0], -1)))
    if auxiliary:
      return logits, value, opponent_logits
    return logits, value


class SEResNet(nn.Module):
  """`ResNet` whose every block ends with squeeze-and-excitation.

  Attributes:
    num_actions: A.
    num_blocks: residual blocks in the trunk.
    channels: channels of every convolution in the trunk.
    value_hidden: units of the value head's hidden layer.
    se_ratio: the SE squeeze layer has channels // se_ratio units.
    batch_norm: False: biased convolutions, no BatchNorm.
    value_channels, policy_channels: filters of the heads' 1x1
      convolutions (AlphaZero: 1 and 2).
  """
  num_actions: int
  num_blocks: int = 6
  channels: int = 64
  value_hidden: int = 64
  se_ratio: int = 4
  batch_norm: bool = True
  value_channels: int = 1
  policy_channels: int = 2

  @nn.compact
  def __call__(self, observation: chex.Array,
               train: bool = False) -> tuple[chex.Array, chex.Array]:
    """Evaluates a batch of observations.

    Args:
      observation: pgx-layout planes [B, H, W, C] (bool or float).
      train: BatchNorm uses batch statistics (and updates its averages).

    Returns:
      (logits f32[B, A] unmasked, value f32[B] in [-1, 1]).

    Raises:
      ValueError: (at trace time) an observation that is not [B, H, W, C].
    """
    x = _stem(observation, self.channels, train, type(self).__name__, self.batch_norm)
    x = _blocks(x, 0, self.num_blocks, self.channels, self.se_ratio, train, self.batch_norm)
    return PolicyValueHead(self.num_actions, self.value_hidden, self.batch_norm,
                           self.value_channels, self.policy_channels, name="head")(x, train)


class DualHeadResNet(nn.Module):
  """One trunk, two policy-value heads: a small head after the first
  `small_head_after` blocks and a large head after all `num_blocks`.

  The small head has AlphaZero's head layout with a narrower value layer
  (`small_value_hidden` units): a cheap evaluator whose cost is dominated by
  the first blocks, for a search that calls it many times; the large head is
  the full network's evaluator. `small_only=True` runs the stem, the first
  `small_head_after` blocks and the small head alone.

  Attributes:
    num_actions: A.
    num_blocks: residual blocks in the trunk.
    channels: channels of every convolution in the trunk.
    small_head_after: k, the blocks under the small head (0..num_blocks).
    value_hidden: units of the large value head's hidden layer.
    small_value_hidden: units of the small value head's hidden layer.
    se_ratio: squeeze-and-excitation ratio of the blocks; None (default)
      for plain blocks.
  """
  num_actions: int
  num_blocks: int = 6
  channels: int = 64
  small_head_after: int = 2
  value_hidden: int = 64
  small_value_hidden: int = 16
  se_ratio: Optional[int] = None

  @nn.compact
  def __call__(self, observation: chex.Array, train: bool = False, small_only: bool = False):
    """Evaluates a batch of observations [B, H, W, C].

    Args:
      observation: pgx-layout planes [B, H, W, C].
      train: BatchNorm uses batch statistics (and updates its averages).
      small_only: run only the first `small_head_after` blocks and the small
        head.

    Returns:
      ((small_logits f32[B, A], small_value f32[B]),
       (large_logits f32[B, A], large_value f32[B])),
      or only (small_logits, small_value) when `small_only`.

    Raises:
      ValueError: (at trace time) `small_head_after` outside [0, num_blocks],
        or an observation that is not [B, H, W, C].
    """
    if not 0 <= self.small_head_after <= self.num_blocks:
      raise ValueError(f"DualHeadResNet needs 0 <= small_head_after <= num_blocks, got "
                       f"small_head_after={self.small_head_after}, num_blocks={self.num_blocks}")
    k = self.small_head_after
    x = _stem(observation, self.channels, train, type(self).__name__)
    x = _blocks(x, 0, k, self.channels, self.se_ratio, train)
    small = PolicyValueHead(self.num_actions, self.small_value_hidden, name="small_head")(x, train)
    if small_only:
      return small
    x = _blocks(x, k, self.num_blocks, self.channels, self.se_ratio, train)
    large = PolicyValueHead(self.num_actions, self.value_hidden, name="large_head")(x, train)
    return small, large
