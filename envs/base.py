"""The game contract shared by every env in this package.

Envs are frozen (hashable) dataclasses, so they can be static arguments of
`jax.jit`. States are `chex` dataclasses whose fields follow pgx's names
(`current_player`, `rewards`, `terminated`, `legal_action_mask`, `observation`)
plus the transposition `key`. A state carries no batch dimension by itself;
`init(rng, batch_size=B)` returns a batch of B states and `step` accepts a
single state or a batch (it vmaps when the state is batched).

What the search relies on (see `mcgs_jax.EnvModel`):
  state.key                 uint32[..., 2]  transposition key (identifies the value)
  state.current_player      int32[...]      whose turn it is
  state.rewards             f32[..., P]     reward of the last transition, per player
  state.terminated          bool[...]
  state.legal_action_mask   bool[..., A]    all False once terminated
  env.step(state, action)   -> state        stepping a terminated state is a no-op
  env.exact_keys            bool            equal keys have equal futures (solver)
  env.acyclic_keys          bool            no key repeats along a line of play
  env.alternating_zero_sum  bool            non-terminal moves: reward 0, turn passes
"""

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Env:
  """Base class: subclasses implement `_init(rng)` and `_step(state, action)`
  for ONE game and set its constants.

  The constants are plain attributes, not dataclass fields (equality and
  hashing, which make envs static `jax.jit` arguments, stay those of the
  fields). A game with fixed rules sets them as class attributes; a game with
  parameters computes them once in `__post_init__` with `set_constants`.

  Attributes:
    id: str, the env's id as `mcgs_jax.envs.make` takes it (e.g. "connect4"). No
      default.
    num_actions: int, A, the number of actions. No default.
    num_players: int, the number of players; default 2.
    max_game_length: int, an upper bound on the number of moves of one game
      (for rollouts). No default.
    exact_keys: bool, whether equal keys mean equal futures: the same legal
      moves and terminal outcomes whatever path led there. False for keys
      that leave out path-dependent rules (repetition draws, superko): then a
      proof found along one path may not hold along another, and `mcgs_jax`
      refuses `SearchConfig.solver`. Default True, as for the games of this
      package.
    acyclic_keys: bool, whether no key can repeat along a line of play (the
      key implies the ply, or a quantity that only grows), so that no
      transposition link closes a cycle and `mcgs_jax` skips its cycle test.
      Default False, which is always safe; each game of this package that
      qualifies says so.
    alternating_zero_sum: bool, whether every move into a non-terminal
      position gives reward 0 to both players and passes the turn to the
      other player (two players alternate, rewards only at the end), so that
      `mcgs_jax` takes reward 0 and discount -1 for the edges inside a path
      instead of reading them. Default False, which is always safe; each game
      of this package that qualifies says so.
    num_symmetries: int, how many symmetries `symmetry` knows, the identity
      (index 0) included. A symmetry maps positions to positions of equal
      value, moves to moves, so training examples can be augmented with it.
      Default 1, the identity only.
  """
  id: ClassVar[str]
  num_actions: ClassVar[int]
  num_players: ClassVar[int] = 2
  max_game_length: ClassVar[int]
  exact_keys: ClassVar[bool] = True
  acyclic_keys: ClassVar[bool] = False
  alternating_zero_sum: ClassVar[bool] = False
  num_symmetries: ClassVar[int] = 1

  def _init(self, rng: jax.Array) -> Any:
    raise NotImplementedError

  def _step(self, state: Any, action: jax.Array) -> Any:
    raise NotImplementedError

  def init(self, rng: jax.Array, batch_size: int | None = None) -> Any:
    """Initial state; a batch of `batch_size` states when it is given.

    Args:
      rng: a PRNG key.
      batch_size: B, or None for one unbatched state.

    Returns:
      The state, with leading dimension B when `batch_size` is given.
    """
    if batch_size is None:
      return self._init(rng)
    return jax.vmap(self._init)(jax.random.split(rng, batch_size))

  def step(self, state: Any, action: jax.Array) -> Any:
    """Plays `action` in `state` (single or batched).

    Args:
      state: one state, or a batch with leading dimension B.
      action: int32 [] for one state, [B] for a batch.

    Returns:
      The next state, batched as `state`; stepping a terminated state is a
      no-op with zero rewards.
    """
    return _per_game(self._step, state)(state, jnp.asarray(action, jnp.int32))

  def observe(self, state: Any) -> jax.Array:
    """The network input of `state` (single or batched).

    pgx-layout planes for board games, a flat vector for Nim and HSR. Defaults
    to `state.observation`; envs whose observation needs the env's constants
    override it.

    Args:
      state: one state, or a batch with leading dimensions [...].

    Returns:
      f32[..., *observation_shape].
    """
    return state.observation

  def priority(self, state: Any) -> jax.Array:
    """Moves worth trying first (constraint-first exploration).

    Used by `SearchConfig.eps_constraint`; games override `_priority`.

    Args:
      state: one state, or a batch with leading dimensions [...].

    Returns:
      bool[..., A].
    """
    return _per_game(self._priority, state)(state)

  def _priority(self, state: Any) -> jax.Array:
    del state
    return jnp.zeros((self.num_actions,), jnp.bool_)

  def symmetry(self, index: jax.Array, observation: jax.Array, policy: jax.Array,
               legal_action_mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Applies symmetry `index` to ONE example (vmap it for a batch).

    The value of the position is unchanged by a symmetry, so it is not an
    argument. Games with symmetries override this (and set `num_symmetries`).

    Args:
      index: int32 [] in [0, num_symmetries); 0 is the identity. A traced
        index out of range is clamped to the last symmetry (gather semantics).
      observation: the network input of one position (`observe(state)`).
      policy: f32[A], a distribution over the moves of that position.
      legal_action_mask: bool[A].

    Returns:
      (observation, policy, legal_action_mask) of the transformed position:
      the policy and mask permuted as the moves are.

    Raises:
      ValueError: if `index` is not an integer scalar, or is concrete and out
        of range.
    """
    check_symmetry_index(index, self.num_symmetries)
    return observation, policy, legal_action_mask


def _per_game(fn, state):
  """`fn` of ONE game, vmapped over the batch dimensions of `state`."""
  for _ in range(batch_ndim(state)):
    fn = jax.vmap(fn)
  return fn


# The names of the per-game constants (the annotations of `Env`, all ClassVar).
CONSTANTS = tuple(Env.__annotations__)


def set_constants(env: Env, **constants: Any) -> None:
  """Sets the constants of a parametrized env, from its `__post_init__`.

  Envs are frozen dataclasses, so this writes past `__setattr__`. The values
  become instance attributes, not fields: equality and hashing stay those of
  the fields, and `dataclasses.replace` computes them again.

  Args:
    env: the env being built.
    **constants: values of names in `CONSTANTS` (see `Env`).

  Raises:
    ValueError: a name that is not one of `CONSTANTS`.
  """
  unknown = sorted(set(constants) - set(CONSTANTS))
  if unknown:
    raise ValueError(f"not env constants: {unknown}; known: {CONSTANTS}")
  for name, value in constants.items():
    object.__setattr__(env, name, value)


# Up to this many actions `random_legal_action` unrolls its rank search.
_UNROLL_ACTIONS = 32


def random_legal_action(rng: jax.Array, legal: jax.Array) -> jax.Array:
  """A uniformly random legal action per game.

  Draws one 32-bit integer per game and takes the (r mod #legal)-th legal
  action: several times cheaper than `jax.random.categorical`, which draws
  and logs A Gumbel variables per game (it dominated the cost of random
  playouts). The modulo bias is below #legal / 2^32. Games without a legal
  action get action 0.

  Args:
    rng: a PRNG key.
    legal: bool[..., A].

  Returns:
    int32[...].
  """
  legal = jnp.asarray(legal, jnp.bool_)
  num_actions = legal.shape[-1]
  count = legal.sum(axis=-1, dtype=jnp.int32)
  draw = jax.random.bits(rng, count.shape, jnp.uint32)
  rank = (draw % jnp.maximum(count, 1).astype(jnp.uint32)).astype(jnp.int32)
  if num_actions > _UNROLL_ACTIONS:
    # The chosen action is the first one with `rank + 1` legal actions up to it.
    before = jnp.cumsum(legal, axis=-1, dtype=jnp.int32)
    return jnp.argmax(before > rank[..., None], axis=-1).astype(jnp.int32)
  # Few actions: a running count, elementwise over the batch (XLA's CPU
  # cumsum over a short axis costs more than the whole Connect-4 step).
  chosen = jnp.zeros_like(rank)
  seen = jnp.zeros_like(rank)
  for a in range(num_actions):
    is_legal = legal[..., a]
    chosen = jnp.where(is_legal & (seen == rank), a, chosen)
    seen = seen + is_legal.astype(jnp.int32)
  return chosen


def rewards_for_winner(winner: jax.Array) -> jax.Array:
  """Rewards of one two-player game from its winner.

  Args:
    winner: int32 scalar, the winning player, or < 0 while the game runs or
      when it is drawn.

  Returns:
    f32[2]: +1 to `winner`, -1 to the other player, zeros when `winner` < 0.
  """
  player_ids = jnp.arange(2, dtype=jnp.int32)
  return jnp.where(winner < 0, 0.0, jnp.where(player_ids == winner, 1.0, -1.0)).astype(
      jnp.float32)


def step_unless_terminated(state: Any, stepped: Any, finished: Any = None) -> Any:
  """`stepped`, or `finished` if `state` (one game) had already ended.

  Args:
    state: the state of ONE game before the step.
    stepped: the state after the step (same structure).
    finished: what an ended game becomes; defaults to `state` with zero
      `rewards`: stepping an ended game is a no-op that pays nothing, as in
      pgx.

  Returns:
    A state of the same structure.
  """
  if finished is None:
    finished = state.replace(rewards=jnp.zeros_like(state.rewards))
  return jax.tree.map(lambda a, b: jnp.where(state.terminated, a, b), finished, stepped)


def batch_ndim(state: Any) -> int:
  """Number of leading batch dimensions of a state (via its `ply` field).

  Args:
    state: a state, single (ply int32 []) or batched (ply int32[...]).

  Returns:
    int, the number of batch dimensions.
  """
  return jnp.ndim(state.ply)


def check_symmetry_index(index: Any, num_symmetries: int) -> None:
  """Checks a symmetry index.

  Args:
    index: the index (a Python int or a JAX integer scalar, maybe traced).
    num_symmetries: the env's number of symmetries.

  Raises:
    ValueError: `index` is not an integer scalar, or is concrete and outside
      [0, num_symmetries) (a traced value cannot be checked).
  """
  if jnp.ndim(index) != 0 or not jnp.issubdtype(jnp.result_type(index), jnp.integer):
    raise ValueError(f"symmetry index must be an integer scalar, got {index!r}")
  if isinstance(index, jax.core.Tracer):
    return
  if not 0 <= int(index) < num_symmetries:
    raise ValueError(f"symmetry index {int(index)} is out of range [0, {num_symmetries})")


def stack(states: list[Any]) -> Any:
  """A batch from a list of single states.

  Args:
    states: a list of B states of ONE game each (same structure).

  Returns:
    The batched state, every array with leading dimension B.
  """
  return jax.tree.map(lambda *xs: jnp.stack(xs), *states)

