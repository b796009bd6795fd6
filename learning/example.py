"""One training example: a position seen in self-play and its targets."""

from typing import Optional

import chex


@chex.dataclass(frozen=True)
class Example:
  """A position and its training targets (fields carry any batch dims [...]).

  Attributes:
    observation: the network input of the position (`env.observe(state)`),
      e.g. bool[..., 6, 7, 2] for Connect-4, bool[..., D] for Nim and HSR.
    legal_action_mask: bool[..., A], the moves legal in the position.
    policy: f32[..., A], the search policy (`SearchOutput.action_weights`),
      0 on illegal moves, summing to 1.
    player: int32[...], the player to move.
    value: f32[...], the final outcome of the game from `player`'s view
      (+1 win, 0 draw, -1 loss; the sum of that player's rewards from this
      position to the end of the game).
    opponent_policy: f32[..., A] or None: the policy target of the next
      position of the same game (the opponent's reply), all zero after the
      game's last move; only for the auxiliary head of
      `TrainConfig.opponent_policy_weight` (None otherwise).
  """
  observation: chex.Array
  legal_action_mask: chex.Array
  policy: chex.Array
  player: chex.Array
  value: chex.Array
  opponent_policy: Optional[chex.Array] = None
