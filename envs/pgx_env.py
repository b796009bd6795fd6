"""Any deterministic pgx game in this package's env contract.

`PgxEnv(game_id)` wraps `pgx.make(game_id)`: its `State` holds the pgx state
(made compact, see below) and the transposition `key` the search needs;
`current_player`, `rewards`, `terminated`, `legal_action_mask`, `ply` and
`observation` are read off the pgx state.

Supported games (`DETERMINISTIC_GAMES`), all two-player and zero-sum:
  animal_shogi chess connect_four gardner_chess go_9x9 go_19x19 hex othello
  shogi tic_tac_toe
Their `step` ignores its PRNG key. The only randomness is at `init`, where
pgx draws which player id moves first (colour 0 is player 0 or player 1 with
probability 1/2 each); it is fixed for the rest of the game, so the game
stays deterministic.

Refused (`ValueError`), from pgx's source:
  2048                 a random tile appears after every move (chance nodes).
  backgammon           dice are rolled at every change of turn (chance nodes).
  minatar-*            sticky actions (prob. 0.1) and random spawns in every
                       step; single-agent games that need not end.
  kuhn_poker,          `step` is deterministic, but the cards dealt at init
  leduc_holdem,        are hidden information (sparrow_mahjong: the shuffled
  sparrow_mahjong      wall and hands too): a search over the full state would
                       see the opponents' cards, which is not the game.
  bridge_bidding,      not built by `pgx.make`.
  mahjong

Rules kept from pgx:
  * An illegal action ends the game at once with a loss for the mover
    (reward -1 to the mover, +1 to the other player).
  * Stepping a finished game returns it unchanged with zero rewards (pgx does
    this too; the wrapper enforces it). Unlike pgx, whose mask turns all True
    at the end, `legal_action_mask` is all False once terminated.
  * `terminated` is pgx's `terminated | truncated` (pgx never truncates
    these games; its move limits end them through `terminated`).

Compact embedding (the search stores one state per node): the observation is
not stored (`State.observation` recomputes it with pgx's `observe`; pgx only
ever writes it); chess and shogi also keep their legal-action mask in the game
state `_x`, so the outer copy is dropped too. Everything else pgx keeps
(histories included) is stored as it is, so pgx can step the state unchanged
(`State.to_pgx()` gives back the full pgx state, `PgxEnv.wrap` goes the other
way). Bytes per stored state, and pgx's own state with its observation:
  tic_tac_toe 71 (89), connect_four 201 (285), othello 344 (476), hex 637
  (1121), shogi 2637 (14463), animal_shogi 2898 (12210), gardner_chess 4299
  (15799), go_9x9 4341 (5718), chess 11130 (46266), go_19x19 19181 (25318).
What remains is mostly history: chess keeps a 513 x 2 hash history and 8
boards, go a 2 * size**2 x 2 hash history and 8 boards.

Keys (uint32[2], two 32-bit lanes of a 64-bit hash). Every key hashes the
player to move, the ply (pgx's step count) and the terminated flag, so equal
keys have equal depth and the graph has no cycles. What else goes in depends
on `key_mode`:

  "position" (default): the position as the rules define it, without the
  path's history:
    tic_tac_toe, connect_four  board, colour to move, winner
    othello                    board, colour to move, whether the last move was a pass
    hex                        stones (the sign of pgx's board: pgx labels
                               chains by their last stone, which depends on
                               the move order), swap handled by the ply
    shogi                      board, hands, colour to move (pgx keeps no
                               history: no repetition rule, no history planes)
    go_9x9, go_19x19           stones, ko point, consecutive passes, superko flag
                               (captures are not counted: pgx scores by area)
    chess                      pgx's Zobrist hash (board, side, castling, en
                               passant; `_x.hash_history[0]`) + halfmove clock
    gardner_chess              pgx's `_zobrist_hash` (board, side) + halfmove clock
    animal_shogi               pgx's `_zobrist_hash` (board, hands, side)
  pgx's Zobrist tables are drawn below 2**31, so those hashes carry 62 bits;
  they are folded in as words like the rest.

  "full": every leaf of the stored pgx state except `rewards` (the reward of
  the move that led there): histories, caches, masks and player order too.
  Equal keys then mean identical pgx states (up to 64-bit hash collisions),
  so merging is exact; but a history differs between move orders, so in
  chess, go, gardner_chess and animal_shogi almost nothing merges.

Markov assumption (merging a transposition keeps the first path's state and
network evaluation) with the default "position" keys:
  * tic_tac_toe, connect_four, othello, shogi: merged states are equal in
    everything that affects play and observation. hex: they differ only in
    pgx's chain labels, which do not change play or observation.
  * chess, gardner_chess, animal_shogi: merged states can differ in their
    position history, which decides repetition draws (pgx draws the game when
    the position occurs for the third time; animal_shogi's check compares the
    two hash lanes separately, so it may also fire on a half match) and fills
    the history and repetition planes of the observation. A merged node's
    children follow the first path's history. The halfmove clock is in the
    key, so the 50-move rule is exact; the fullmove count follows the ply.
  * go_9x9, go_19x19: merged states can differ in their board history, which
    decides positional superko (pgx ends the game, the mover losing, when a
    move repeats any earlier board) and fills the 8 history planes of the
    observation.
  * So for those games "position" keys are not `exact_keys`: a terminal
    edge or a legal move found along the first path (a repetition draw, a
    superko loss) is not the same along the others, and the terminal solver
    would spread such a proof to every parent; `mcgs_jax.search` refuses
    `SearchConfig.solver` there (use key_mode="full" to solve).
  * Player ids: positions are only merged under the same id assignment
    (`current_player` is hashed), which is always the case within one search.

Hash: each 32-bit word of the chosen leaves (bools and small ints widened,
floats bitcast, so conversion is exact) is mixed with a salt drawn from its
index, per lane (murmur3's finaliser `bits.mix32`), the mixed words are
summed, and the sum is mixed again with the word count. Two lanes with
independent salts give the 64 bits.

Move limits (`max_game_length`): pgx's own where it has one (chess and shogi
512, gardner_chess and animal_shogi 256, go: 2 * size**2), else the longest
possible game (tic_tac_toe 9, connect_four 42, hex 121 stones + one swap,
othello 60 discs + at most one pass between them and a final double pass).
"""

import dataclasses
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base
from mcgs_jax.envs import bits

DETERMINISTIC_GAMES = (
    "animal_shogi",
    "chess",
    "connect_four",
    "gardner_chess",
    "go_9x9",
    "go_19x19",
    "hex",
    "othello",
    "shogi",
    "tic_tac_toe",
)

_HIDDEN_INFO = ("imperfect information: the cards dealt at random in init are hidden "
                "from the opponent, and a search over the full state would see them")
_STICKY = ("stochastic: sticky actions (probability 0.1) and random spawns in every "
           "step; a single-agent game that need not end")
UNSUPPORTED_GAMES = {
    "2048": "stochastic: a random tile (2 or 4) is placed after every move",
    "backgammon": "stochastic: dice are rolled at every change of turn",
    "kuhn_poker": _HIDDEN_INFO,
    "leduc_holdem": _HIDDEN_INFO + " (the public card is dealt at init too)",
    "sparrow_mahjong": ("imperfect information: the wall is shuffled at init and the "
                        "hands and wall are hidden; three players"),
    "minatar-asterix": _STICKY,
    "minatar-breakout": _STICKY,
    "minatar-freeway": _STICKY,
    "minatar-seaquest": _STICKY,
    "minatar-space_invaders": _STICKY,
    "bridge_bidding": "not built by pgx.make (needs double-dummy tables); imperfect information",
    "mahjong": "not built by pgx.make; imperfect information",
}

KEY_MODES = ("position", "full")

# Games whose "position" keys leave out history that decides legal moves or
# outcomes (repetition draws, positional superko): not `exact_keys`.
PATH_DEPENDENT_GAMES = ("animal_shogi", "chess", "gardner_chess", "go_9x9", "go_19x19")

_MAX_GAME_LENGTH = {
    "tic_tac_toe": 9,
    "connect_four": 42,
    "hex": 11 * 11 + 1,       # every cell, plus the swap
    "othello": 60 + 61,       # 60 discs, a pass between any two, a final pass
    "go_9x9": 2 * 9 * 9,      # pgx's max_termination_steps
    "go_19x19": 2 * 19 * 19,
    "chess": 512,             # pgx's MAX_TERMINATION_STEPS (AlphaZero's)
    "shogi": 512,
    "gardner_chess": 256,
    "animal_shogi": 256,
}

# Games whose pgx state duplicates the legal mask in `_x`; the outer copy is
# not stored.
_MASK_IN_X = ("chess", "shogi")

# Empty stand-in for dropped fields: a leaf of zero bytes per node.
_DROPPED = np.zeros((0,), np.bool_)

_PGX_ENVS: dict[str, Any] = {}
_SPECS: dict[str, Any] = {}


def _pgx_env(game_id: str):
  """The pgx env of `game_id`, built once per process."""
  if game_id not in _PGX_ENVS:
    # pgx builds module-level arrays on import: they must be concrete even if
    # the first use is inside a jit trace.
    with jax.ensure_compile_time_eval():
      import pgx  # pylint: disable=g-import-not-at-top  (pgx is optional for the rest of envs)
      _PGX_ENVS[game_id] = pgx.make(game_id)
  return _PGX_ENVS[game_id]


def _spec(game_id: str):
  """Shapes and dtypes of one pgx state (no computation)."""
  if game_id not in _SPECS:
    env = _pgx_env(game_id)
    _SPECS[game_id] = jax.eval_shape(env.init, jax.random.key(0))
  return _SPECS[game_id]


def _game_id_of(s: Any) -> str:
  """Game id of a pgx state, from static information only (pgx's Go
  `env_id` computes the board size with jnp, which fails under jit)."""
  module = type(s).__module__.rsplit(".", 1)[-1]
  if module == "go":
    size = math.isqrt(s._x.board.shape[-1])
    return f"go_{size}x{size}"
  return module


def _check_id(game_id: str) -> None:
  if game_id in DETERMINISTIC_GAMES:
    return
  if game_id in UNSUPPORTED_GAMES:
    raise ValueError(f"pgx game {game_id!r} is not supported: {UNSUPPORTED_GAMES[game_id]}. "
                     f"Deterministic pgx games: {', '.join(DETERMINISTIC_GAMES)}")
  raise ValueError(f"unknown pgx game {game_id!r}; deterministic pgx games: "
                   f"{', '.join(DETERMINISTIC_GAMES)}")


# ----------------------------------------------------------------------------
# Hashing.

_LANE_SEEDS = (0x243F6A88, 0x85A308D3)  # digits of pi: two unrelated seeds


def _mix32_np(x: np.ndarray) -> np.ndarray:
  """`bits.mix32` on host uint32 arrays (for constant salts)."""
  x = x.astype(np.uint32)
  with np.errstate(over="ignore"):
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
  return x


def _salts(n: int, seed: int) -> np.ndarray:
  """uint32[n]: a pseudo-random salt per word index, for one lane."""
  with np.errstate(over="ignore"):
    index = np.arange(n, dtype=np.uint32) * np.uint32(0x9E3779B9) + np.uint32(seed)
  return _mix32_np(_mix32_np(index) ^ np.uint32(seed))


def to_words(x: jax.Array) -> jax.Array:
  """One array -> uint32[n], its values converted exactly (bijectively).

  Bools and ints of up to 32 bits are widened (signed ones sign-extended, so
  distinct values stay distinct); floats are bitcast; 64-bit values become
  two words.

  Args:
    x: an array of any shape and of bool, integer or floating dtype.

  Returns:
    uint32[n], n = x.size (2 x.size for 64-bit dtypes).

  Raises:
    TypeError: for any other dtype.
  """
  x = jnp.asarray(x)
  dtype = x.dtype
  if dtype == jnp.bool_:
    x = x.astype(jnp.uint32)
  elif jnp.issubdtype(dtype, jnp.floating):
    if dtype.itemsize == 2:
      x = jax.lax.bitcast_convert_type(x, jnp.uint16).astype(jnp.uint32)
    else:
      x = jax.lax.bitcast_convert_type(x, jnp.uint32)
  elif jnp.issubdtype(dtype, jnp.integer):
    if dtype.itemsize < 4:
      wide = jnp.int32 if jnp.issubdtype(dtype, jnp.signedinteger) else jnp.uint32
      x = x.astype(wide)
    x = jax.lax.bitcast_convert_type(x, jnp.uint32)
  else:
    raise TypeError(f"cannot hash an array of dtype {dtype}")
  return jnp.reshape(x, (-1,))


def hash_leaves(leaves: list[jax.Array]) -> jax.Array:
  """A well-mixed 64-bit hash of the words of `leaves` (one state, no batch).

  Args:
    leaves: arrays of any shape and dtype (see `to_words`); the shapes are
      static, so each word's index identifies its leaf and position.

  Returns:
    uint32[2], two lanes with independent salts.
  """
  words = jnp.concatenate([to_words(x) for x in leaves])
  n = words.shape[0]
  lanes = []
  for seed in _LANE_SEEDS:
    mixed = bits.mix32(words ^ jnp.asarray(_salts(n, seed)))
    total = jnp.sum(mixed, dtype=jnp.uint32)
    lanes.append(bits.mix32(total ^ bits.mix32(jnp.uint32((n + seed) & 0xFFFFFFFF))))
  return jnp.stack(lanes)


# ----------------------------------------------------------------------------
# What identifies a position, per game.


def _sign(board: jax.Array) -> jax.Array:
  return jnp.clip(board, -1, 1).astype(jnp.int32)


def position_fields(game_id: str, s: Any) -> dict[str, jax.Array]:
  """The fields that define the position of a pgx state.

  Apart from the player to move, the ply and `terminated` (see the module
  docstring). For Zobrist games these are the fields pgx hashes, not the hash
  itself.

  Args:
    game_id: the pgx id, e.g. "othello".
    s: one pgx state (stored form, no batch dimension).

  Returns:
    {name: array} of that state's position fields.

  Raises:
    ValueError: for a game without a position definition.
  """
  x = getattr(s, "_x", None)
  if game_id in ("tic_tac_toe", "connect_four"):
    return dict(color=x.color, board=x.board, winner=x.winner)
  if game_id == "othello":
    return dict(turn=x.turn, board=x.board, passed=x.passed)
  if game_id == "hex":
    return dict(stones=_sign(x.board))
  if game_id == "shogi":
    return dict(color=x.color, board=x.board, hand=x.hand)
  if game_id in ("go_9x9", "go_19x19"):
    return dict(stones=_sign(x.board), ko=x.ko, passes=x.consecutive_pass_count,
                is_psk=x.is_psk)
  if game_id == "chess":
    return dict(color=x.color, board=x.board, castling=x.castling_rights,
                en_passant=x.en_passant, halfmove=x.halfmove_count)
  if game_id == "gardner_chess":
    return dict(turn=s._turn, board=s._board, halfmove=s._halfmove_count)
  if game_id == "animal_shogi":
    return dict(turn=s._turn, board=s._board, hand=s._hand)
  raise ValueError(f"no position fields for {game_id!r}")


def _position_key_leaves(game_id: str, s: Any) -> list[jax.Array]:
  """What the "position" key hashes, besides player, ply and terminated."""
  if game_id == "chess":
    # hash_history[0] is the current position's Zobrist hash.
    return [s._x.hash_history[0], s._x.halfmove_count]
  if game_id == "gardner_chess":
    return [s._zobrist_hash, s._halfmove_count]
  if game_id == "animal_shogi":
    return [s._zobrist_hash]
  return list(position_fields(game_id, s).values())


def _full_key_leaves(s: Any) -> list[jax.Array]:
  """Every stored leaf but the rewards (dropped fields have no words)."""
  return jax.tree.leaves(s.replace(rewards=_DROPPED))


# ----------------------------------------------------------------------------
# The env.


@chex.dataclass(frozen=True)
class State:
  """One pgx game as the search sees it; every field may carry batch dims `...`.

  Attributes:
    pgx_state: the pgx state with its observation dropped (and, in chess and
      shogi, the outer legal mask, a copy of `_x.legal_action_mask`).
    key: uint32[..., 2] transposition key (module docstring).
  """
  pgx_state: Any
  key: chex.Array

  @property
  def game_id(self) -> str:
    """The pgx id of the wrapped state's game."""
    return _game_id_of(self.pgx_state)

  @property
  def ply(self) -> chex.Array:
    """int32[...]: moves played (pgx's step count; illegal moves count)."""
    return self.pgx_state._step_count

  @property
  def current_player(self) -> chex.Array:
    """int32[...]: pgx player id to move (pgx draws which id moves first)."""
    return self.pgx_state.current_player

  @property
  def rewards(self) -> chex.Array:
    """f32[..., 2]: reward of the last move, per player id."""
    return self.pgx_state.rewards

  @property
  def terminated(self) -> chex.Array:
    """bool[...]: the game is over (pgx terminated or truncated)."""
    return self.pgx_state.terminated | self.pgx_state.truncated

  @property
  def legal_action_mask(self) -> chex.Array:
    """bool[..., A]: pgx's legal actions; all False once terminated."""
    if self.game_id in _MASK_IN_X:
      mask = self.pgx_state._x.legal_action_mask
    else:
      mask = self.pgx_state.legal_action_mask
    return mask & ~self.terminated[..., None]

  @property
  def observation(self) -> chex.Array:
    """pgx's observation for the player to move, recomputed: [..., *obs_shape]."""
    env = _pgx_env(self.game_id)
    fn = lambda s: env.observe(_expand(s))
    for _ in range(jnp.ndim(self.ply)):
      fn = jax.vmap(fn)
    return fn(self.pgx_state)

  def to_pgx(self) -> Any:
    """The full pgx state (observation and mask restored), as pgx returns it.

    Returns:
      The pgx state, batched as this State.
    """
    env = _pgx_env(self.game_id)

    def restore(s):
      full = _expand(s)
      full = full.replace(legal_action_mask=jnp.where(
          full.terminated, True, full.legal_action_mask))
      return full.replace(observation=env.observe(full))

    fn = restore
    for _ in range(jnp.ndim(self.ply)):
      fn = jax.vmap(fn)
    return fn(self.pgx_state)


def _compact(s: Any) -> Any:
  """pgx state -> stored form (one state)."""
  # Some pgx inits leave Python scalars (othello's turn): make every leaf a
  # strongly typed array so that init and step states have the same types.
  s = jax.tree.map(lambda x: jnp.asarray(x, jnp.asarray(x).dtype), s)
  s = s.replace(observation=_DROPPED)
  if _game_id_of(s) in _MASK_IN_X:
    s = s.replace(legal_action_mask=_DROPPED)
  return s


def _expand(s: Any) -> Any:
  """Stored form -> a pgx state that pgx can step (one state). The
  observation is zeros: pgx only writes it."""
  spec = _spec(_game_id_of(s))
  s = s.replace(observation=jnp.zeros(spec.observation.shape, spec.observation.dtype))
  if _game_id_of(s) in _MASK_IN_X:
    s = s.replace(legal_action_mask=s._x.legal_action_mask)
  return s


@dataclasses.dataclass(frozen=True)
class PgxEnv(base.Env):
  """A deterministic pgx game (`DETERMINISTIC_GAMES`).

  Attributes:
    game_id: pgx id, e.g. "othello".
    key_mode: "position" (default) or "full", see the module docstring.
  """
  game_id: str
  key_mode: str = "position"
  acyclic_keys = True  # every key hashes the ply (pgx's step count)
  # pgx's two-player board games alternate (a pass is a move) and reward only
  # the last move.
  alternating_zero_sum = True

  def __post_init__(self):
    _check_id(self.game_id)
    if self.key_mode not in KEY_MODES:
      raise ValueError(f"key_mode must be one of {KEY_MODES}, got {self.key_mode!r}")
    base.set_constants(
        self, id=f"pgx:{self.game_id}",
        num_actions=_spec(self.game_id).legal_action_mask.shape[-1],
        num_players=self.pgx_env.num_players,
        max_game_length=_MAX_GAME_LENGTH[self.game_id],
        # "position" keys of path-dependent games leave out the history that
        # decides repetition draws and superko; "full" keys are exact.
        exact_keys=self.key_mode == "full" or self.game_id not in PATH_DEPENDENT_GAMES)

  @property
  def pgx_env(self):
    """The wrapped `pgx.Env`."""
    return _pgx_env(self.game_id)

  @property
  def observation_shape(self) -> tuple[int, ...]:
    """pgx's observation shape of one state, e.g. (8, 8, 2) for othello."""
    return tuple(_spec(self.game_id).observation.shape)

  def _key(self, s: Any) -> jax.Array:
    """uint32[2] key of one stored pgx state."""
    if self.key_mode == "full":
      leaves = _full_key_leaves(s)
    else:
      leaves = _position_key_leaves(self.game_id, s)
    common = [s.current_player, s._step_count, s.terminated | s.truncated]
    return hash_leaves(common + leaves)

  def key_fn(self, pgx_state: Any) -> jax.Array:
    """The transposition keys of this game's pgx states, as the env keys its own.

    The `key_fn` of `mcgs_jax.from_mctx` for an mctx search whose embeddings
    are pgx states: `from_mctx(recurrent_fn, PgxEnv("connect_four").key_fn,
    num_actions=7, acyclic_keys=True)` (the keys hash the ply).

    Args:
      pgx_state: a state of this game's `pgx.Env`, leading dimensions [...].

    Returns:
      uint32[..., 2].

    Raises:
      ValueError: a state of another pgx game.
    """
    return self.wrap(pgx_state).key

  def _wrap_one(self, s: Any) -> State:
    s = _compact(s)
    return State(pgx_state=s, key=self._key(s))

  def wrap(self, pgx_state: Any) -> State:
    """A pgx state of this game (single or batched) as a `State`.

    Args:
      pgx_state: a state from this game's `pgx.Env`, leading dimensions [...].

    Returns:
      State with the same leading dimensions.

    Raises:
      ValueError: a state of another pgx game.
    """
    if _game_id_of(pgx_state) != self.game_id:
      raise ValueError(f"a {_game_id_of(pgx_state)!r} state given to {self.id}")
    fn = self._wrap_one
    for _ in range(jnp.ndim(pgx_state._step_count)):
      fn = jax.vmap(fn)
    return fn(pgx_state)

  def _init(self, rng: jax.Array) -> State:
    return self._wrap_one(self.pgx_env.init(rng))

  def _step(self, state: State, action: jax.Array) -> State:
    """Plays `action` (int32 []) in one game; a no-op once it has ended."""
    stepped = self._wrap_one(self.pgx_env.step(_expand(state.pgx_state), action))
    finished = state.replace(pgx_state=state.pgx_state.replace(
        rewards=jnp.zeros_like(state.pgx_state.rewards)))
    return base.step_unless_terminated(state, stepped, finished)
