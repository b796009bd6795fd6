"""Nim: multi-pile (normal or misere play) and single-pile subtraction Nim(k, n).

Rules. Players alternate; a move takes `take` >= 1 stones from one pile
(at most `max_take`, which is the largest pile for classic Nim and `k` for
subtraction Nim). Under normal play the player who takes the last stone wins;
under misere play that player loses. Rewards are +1 / -1 at the end, 0 before.

Actions: `pile * max_take + (take - 1)`, so A = num_piles * max_take.
An illegal action ends the game with a loss for the mover (as pgx does).

Ground truth: a normal-play position is lost for the mover iff the xor of the
piles (nim-sum) is 0; misere differs only when every pile is <= 1 (then the
mover loses iff the number of non-empty piles is odd). Subtraction Nim(k, n)
is lost for the mover iff n % (k + 1) == 0.

Key: exact. The piles are bit-packed into two uint32 lanes. The ply is left
out by default: values are seen from the player to move and depend only on the
piles, and every move removes stones, so the graph cannot have a cycle even
when equal keys are reached at different depths. `ply_in_key=True` adds it
(then equal keys also have equal depth, as for games that can repeat).
"""

import dataclasses
import itertools

import chex
import jax.numpy as jnp

from mcgs_jax.envs import base
from mcgs_jax.envs import bits

# Observation: each pile in fixed-width binary, so one network shape fits
# every pile size up to 255.
OBS_BITS = 8


@chex.dataclass(frozen=True)
class State:
  """One Nim position; every field may carry leading batch dims `...`.

  Attributes:
    piles: int32[..., P] stones per pile.
    ply: int32[...] moves played.
    terminated: bool[...].
    rewards: f32[..., 2] reward of the last move, per player id.
    legal_action_mask: bool[..., A], A = P * take_limit.
    key: uint32[..., 2] transposition key.
  """
  piles: chex.Array              # int32[P]
  ply: chex.Array                # int32
  terminated: chex.Array         # bool
  rewards: chex.Array            # f32[2], reward of the last move per player
  legal_action_mask: chex.Array  # bool[A]
  key: chex.Array                # uint32[2]

  @property
  def current_player(self) -> chex.Array:
    """int32[...]: player to move (0 moves first)."""
    return self.ply % 2

  @property
  def observation(self) -> chex.Array:
    """f32[..., P * 8]: the piles in binary, least significant bit first."""
    planes = (self.piles[..., None] >> jnp.arange(OBS_BITS)) & 1
    return planes.reshape(planes.shape[:-2] + (-1,)).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class Nim(base.Env):
  """Nim with initial `piles`; `max_take` None means any number of stones."""
  piles: tuple[int, ...] = (1, 3, 5, 7)
  max_take: int | None = None
  misere: bool = False
  ply_in_key: bool = False
  acyclic_keys = True  # every move takes a stone, and the key holds the piles
  alternating_zero_sum = True  # players alternate, only the last move is rewarded

  def __post_init__(self):
    if not self.piles or any(p < 0 or p > 255 for p in self.piles):
      raise ValueError(f"piles must be 1..255 stones each, got {self.piles}")
    if self.max_take is not None and self.max_take < 1:
      raise ValueError(f"max_take must be >= 1, got {self.max_take}")
    if self.max_take is not None and len(self.piles) == 1:
      env_id = f"nim:{self.max_take},{self.piles[0]}"
    else:
      name = "nim-misere" if self.misere else "nim-piles"
      env_id = f"{name}:{','.join(map(str, self.piles))}"
    base.set_constants(self, id=env_id, num_actions=len(self.piles) * self.take_limit,
                       max_game_length=sum(self.piles))  # a move takes a stone or more

  @property
  def take_limit(self) -> int:
    """The most stones one move takes: `max_take`, or the largest pile."""
    return self.max_take if self.max_take is not None else max(self.piles)

  def _legal(self, piles):
    takes = jnp.arange(1, self.take_limit + 1)
    return (takes[None, :] <= piles[:, None]).reshape(-1)

  def _key(self, piles, ply):
    """Packs the piles (and ply) into two uint32 lanes, exactly."""
    pile_bits = max(max(self.piles), 1).bit_length()
    ply_bits = max(self.max_game_length, 1).bit_length()
    lanes = [jnp.uint32(0), jnp.uint32(0)]
    offsets = [0, ply_bits]   # lane 1 starts with the ply
    if self.ply_in_key:
      lanes[1] = ply.astype(jnp.uint32)
    for i in range(len(self.piles)):
      lane = 0 if offsets[0] + pile_bits <= 32 else 1
      if offsets[lane] + pile_bits > 32:
        return _hash_piles(piles, ply if self.ply_in_key else jnp.zeros_like(ply))
      lanes[lane] = lanes[lane] | (piles[i].astype(jnp.uint32) << offsets[lane])
      offsets[lane] += pile_bits
    return jnp.stack(lanes)

  def _state(self, piles, ply, terminated, rewards) -> State:
    """A state whose legal mask and key follow from its piles and ply."""
    return State(piles=piles, ply=ply, terminated=terminated, rewards=rewards,
                 legal_action_mask=self._legal(piles) & ~terminated,
                 key=self._key(piles, ply))

  def _init(self, rng):
    del rng
    return self._state(jnp.asarray(self.piles, jnp.int32), jnp.int32(0),
                       jnp.bool_(False), jnp.zeros(2, jnp.float32))

  def _step(self, state, action):
    limit = self.take_limit
    pile = jnp.clip(action // limit, 0, len(self.piles) - 1)
    take = action % limit + 1
    in_range = (action >= 0) & (action < self.num_actions)
    legal = in_range & state.legal_action_mask[jnp.clip(action, 0, self.num_actions - 1)]
    active = ~state.terminated
    piles = jnp.where(active & legal, state.piles.at[pile].add(-take), state.piles)
    emptied = piles.sum() == 0
    mover = state.current_player
    # +1 for the mover when it wins; misere flips the last-stone outcome.
    mover_result = jnp.where(legal, jnp.where(emptied, -1.0 if self.misere else 1.0, 0.0), -1.0)
    terminated = state.terminated | (active & (emptied | ~legal))
    mover_result = jnp.where(active, mover_result, 0.0)
    rewards = jnp.zeros(2, jnp.float32).at[mover].set(mover_result).at[1 - mover].set(-mover_result)
    return self._state(piles, state.ply + active.astype(jnp.int32), terminated, rewards)


def _hash_piles(piles, ply):
  """Well-mixed 64-bit hash for pile sets too large to pack exactly."""
  lo = jnp.uint32(0x9E3779B9) ^ ply.astype(jnp.uint32)
  hi = jnp.uint32(0x85EBCA6B)
  for i in range(piles.shape[0]):
    salt = jnp.uint32((i * 0x27D4EB2F) & 0xFFFFFFFF)
    lo = bits.mix32(lo ^ (piles[i].astype(jnp.uint32) + salt))
    hi = bits.mix32(hi + lo)
  return jnp.stack([lo, hi])


def nim_sum_lost(piles, misere: bool = False) -> bool:
  """Host-side ground truth of multi-pile Nim: is the position lost for the mover?

  Args:
    piles: a sequence of ints, stones per pile.
    misere: misere play (the last stone loses).

  Returns:
    bool.
  """
  xor = 0
  for p in piles:
    xor ^= p
  if misere and all(p <= 1 for p in piles):
    return sum(piles) % 2 == 1
  return xor == 0


def lost_for_mover(env: Nim, piles) -> bool:
  """Host-side ground truth for any Nim variant of `env`.

  Args:
    env: the Nim env (its variant: piles, subtraction or misere).
    piles: a sequence of ints, stones per pile.

  Returns:
    bool, whether the position is lost for the player to move.
  """
  if env.max_take is not None and len(env.piles) == 1:
    return piles[0] % (env.max_take + 1) == 0
  return nim_sum_lost(piles, env.misere)


@dataclasses.dataclass(frozen=True)
class ExactEval:
  """Perfect evaluator: value +1 if the player to move wins with best play,
  -1 if it loses (closed forms in the module docstring); uniform prior."""
  env: Nim

  def __call__(self, params, rng, state):
    """Exact values, uniform prior (zero logits).

    Args:
      params: unused.
      rng: unused.
      state: a batch of Nim States, leading dimensions [...] (e.g. [B]).

    Returns:
      (prior_logits f32[..., A] zeros, value f32[...] in {-1, 0, +1}, 0 at
      terminal states).
    """
    del params, rng
    piles = state.piles
    if self.env.max_take is not None and len(self.env.piles) == 1:
      lost = piles[..., 0] % (self.env.max_take + 1) == 0
    else:
      xor = piles[..., 0]
      for i in range(1, piles.shape[-1]):
        xor = xor ^ piles[..., i]
      lost = xor == 0
      if self.env.misere:
        small = jnp.all(piles <= 1, axis=-1)
        lost = jnp.where(small, piles.sum(-1) % 2 == 1, lost)
    value = jnp.where(lost, -1.0, 1.0)
    value = jnp.where(state.terminated, 0.0, value)
    return jnp.zeros(state.legal_action_mask.shape, jnp.float32), value.astype(jnp.float32)


def all_positions(env: Nim) -> list[tuple[int, ...]]:
  """Every pile configuration with at most the starting stones per pile.

  Host side; this is every position reachable from the start.

  Args:
    env: the Nim env.

  Returns:
    A list of tuples of ints (stones per pile).
  """
  return list(itertools.product(*[range(p + 1) for p in env.piles]))


def state_from_piles(env: Nim, piles) -> State:
  """A state with the given piles, player 0 to move (ply 0).

  Args:
    env: the Nim env.
    piles: a sequence of ints, stones per pile (as many piles as `env`).

  Returns:
    A single (unbatched) State.
  """
  return env._state(jnp.asarray(piles, jnp.int32), jnp.int32(0),
                    jnp.bool_(sum(piles) == 0), jnp.zeros(2, jnp.float32))
