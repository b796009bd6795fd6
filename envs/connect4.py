"""Connect-4 (7 columns x 6 rows) on bitboards, with Pascal Pons' exact key.

Board layout (Pons' solver): bit `col * 7 + row`, row 0 at the bottom; each
column has 7 bits, the top one a sentinel that always stays empty so that
alignment shifts never wrap from one column into the next. The 49 bits are
stored as two uint32 lanes (`uint32[2]`: bits 0..31, then 32..48), see
`mcgs_jax.envs.bits`.

  position  stones of the player to move
  mask      all stones

Player 0 moves first, so `current_player = ply % 2`. Actions are columns
0..6 from the left. An illegal action (full column or out of range) ends the
game with a loss for the mover, as in pgx; the board is left as it was and
the turn passes.

Key: `position + mask` (64-bit add). Since `position` is a subset of `mask`,
the sum determines both words, hence the board and the player to move, so
equal keys mean equal positions. States ended by an illegal move keep the
board of the previous position, so their key additionally has bit 63 set
(bit 31 of lane 1) to keep them apart from real positions.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base
from mcgs_jax.envs import bits

NUM_COLS = 7
NUM_ROWS = 6
_H1 = NUM_ROWS + 1   # bits per column, with the sentinel
NUM_CELLS = NUM_COLS * NUM_ROWS

# Cell (r, c) of the observation, r = 0 the top row as in pgx, is bit
# c * 7 + (5 - r): which lane holds it and where.
_OBS_BIT = np.array([[c * _H1 + (NUM_ROWS - 1 - r) for c in range(NUM_COLS)]
                     for r in range(NUM_ROWS)])
_OBS_IN_HI = _OBS_BIT >= 32
_OBS_SHIFT = (_OBS_BIT % 32).astype(np.uint32)

_ILLEGAL_FLAG = np.uint32(1 << 31)

# Column gathered into column c by each symmetry: the identity, then the
# left-right mirror (gravity rules out the others).
_SYMMETRY_COLUMNS = np.array([np.arange(NUM_COLS), np.arange(NUM_COLS)[::-1]], np.int32)


def _cells(board: jax.Array) -> jax.Array:
  """uint32[..., 2] bitboard -> bool[..., 6, 7] grid, top row first."""
  lo = board[..., 0, None, None]
  hi = board[..., 1, None, None]
  word = jnp.where(_OBS_IN_HI, hi, lo)
  return ((word >> _OBS_SHIFT) & jnp.uint32(1)).astype(jnp.bool_)


def has_four(stones: bits.U64) -> jax.Array:
  """Whether a bitboard holds four aligned stones (Pons' alignment test).

  Args:
    stones: a U64 bitboard (lo, hi), each uint32[...].

  Returns:
    bool[...].
  """
  found = jnp.zeros(jnp.shape(stones[0]), jnp.bool_)
  # 1: vertical, 7: horizontal, 6 and 8: the two diagonals.
  for d in (1, 7, 6, 8):
    m = bits.and_(stones, bits.shr(stones, d))
    found = found | bits.nonzero(bits.and_(m, bits.shr(m, 2 * d)))
  return found


@chex.dataclass(frozen=True)
class State:
  """One Connect-4 position; every field may carry leading batch dims `...`."""
  position: chex.Array    # uint32[..., 2] stones of the player to move
  mask: chex.Array        # uint32[..., 2] all stones
  ply: chex.Array         # int32[...] moves played
  terminated: chex.Array  # bool[...]
  rewards: chex.Array     # f32[..., 2] reward of the last move, per player id
  winner: chex.Array      # int32[...] -1 for none or draw, else player id

  @property
  def current_player(self) -> chex.Array:
    """int32[...]: player to move (0 moves first)."""
    return self.ply % 2

  @property
  def legal_action_mask(self) -> chex.Array:
    """bool[..., 7]: columns that are not full; all False once terminated."""
    top_row = _cells(self.mask)[..., 0, :]
    return ~top_row & ~self.terminated[..., None]

  @property
  def observation(self) -> chex.Array:
    """bool[..., 6, 7, 2] as pgx `connect_four`: row 0 is the top row;
    channel 0 holds the stones of the player to move, channel 1 the
    opponent's."""
    own = self.position
    other = self.position ^ self.mask
    return jnp.stack([_cells(own), _cells(other)], axis=-1)

  @property
  def key(self) -> chex.Array:
    """uint32[..., 2]: position + mask, a 64-bit exact transposition key."""
    pos = bits.unpack(self.position)
    mask = bits.unpack(self.mask)
    lo, hi = bits.add(pos, mask)
    illegal_end = self.ply != bits.popcount(mask)
    hi = hi | jnp.where(illegal_end, _ILLEGAL_FLAG, jnp.uint32(0))
    return bits.pack((lo, hi))


@dataclasses.dataclass(frozen=True)
class Connect4(base.Env):
  """Connect-4 on a 7 x 6 board; player 0 moves first."""
  id = "connect4"
  num_actions = NUM_COLS  # one action per column
  max_game_length = NUM_CELLS
  acyclic_keys = True  # every move adds a stone, and the key holds the stones
  alternating_zero_sum = True  # players alternate, only the last move is rewarded
  num_symmetries = len(_SYMMETRY_COLUMNS)  # the identity and the left-right mirror

  def _init(self, rng: jax.Array) -> State:
    del rng
    return State(
        position=jnp.zeros(2, jnp.uint32),
        mask=jnp.zeros(2, jnp.uint32),
        ply=jnp.int32(0),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        winner=jnp.int32(-1),
    )

  def _step(self, state: State, action: jax.Array) -> State:
    """Drops a stone in column `action` (int32 []) of one game."""
    action = jnp.asarray(action, jnp.int32)
    col = jnp.clip(action, 0, NUM_COLS - 1)
    pos = bits.unpack(state.position)
    mask = bits.unpack(state.mask)

    column_full = bits.nonzero(bits.and_(mask, bits.bit(col * _H1 + NUM_ROWS - 1)))
    legal = (action >= 0) & (action < NUM_COLS) & ~column_full
    # Adding the column's bottom bit carries up to the first empty cell.
    grown = bits.or_(mask, bits.add(mask, bits.bit(col * _H1)))
    new_mask = (jnp.where(legal, grown[0], mask[0]),
                jnp.where(legal, grown[1], mask[1]))
    # The opponent's stones, who is to move next in every case.
    new_pos = bits.xor(pos, mask)
    mover_stones = bits.xor(new_pos, new_mask)

    mover = state.current_player
    ply = state.ply + 1
    won = legal & has_four(mover_stones)
    terminated = ~legal | won | (ply == NUM_CELLS)
    winner = jnp.where(legal, jnp.where(won, mover, -1), 1 - mover)
    rewards = base.rewards_for_winner(winner)
    stepped = State(
        position=bits.pack(new_pos),
        mask=bits.pack(new_mask),
        ply=ply,
        terminated=terminated,
        rewards=rewards,
        winner=winner.astype(jnp.int32),
    )
    return base.step_unless_terminated(state, stepped)

  def _priority(self, state: State) -> jax.Array:
    """bool[7]: columns that win at once or block an immediate win of the
    opponent (constraint-first exploration)."""
    pos = bits.unpack(state.position)
    mask = bits.unpack(state.mask)
    opponent = bits.xor(pos, mask)
    legal = state.legal_action_mask

    def urgent(col):
      # The cell a stone dropped in `col` lands on.
      cell = bits.xor(bits.or_(mask, bits.add(mask, bits.bit(col * _H1))), mask)
      return has_four(bits.or_(pos, cell)) | has_four(bits.or_(opponent, cell))

    return legal & jax.vmap(urgent)(jnp.arange(NUM_COLS))

  def symmetry(self, index: jax.Array, observation: jax.Array, policy: jax.Array,
               legal_action_mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Symmetry `index` (0 identity, 1 mirror) of ONE example.

    The mirror reverses the columns of the board, of the policy and of the
    legal mask: column c becomes column 6 - c.

    Args:
      index: int32 [] in [0, 2).
      observation: bool[6, 7, 2], as `State.observation`.
      policy: f32[7].
      legal_action_mask: bool[7].

    Returns:
      (observation [6, 7, 2], policy [7], legal_action_mask [7]), transformed.
    """
    base.check_symmetry_index(index, self.num_symmetries)
    observation, policy, legal_action_mask = map(
        jnp.asarray, (observation, policy, legal_action_mask))
    chex.assert_shape(observation, (NUM_ROWS, NUM_COLS, 2))
    chex.assert_shape([policy, legal_action_mask], (NUM_COLS,))
    columns = jnp.asarray(_SYMMETRY_COLUMNS)[index]
    return observation[:, columns], policy[columns], legal_action_mask[columns]


def has_four_int(stones: int) -> bool:
  """Whether a Python-int bitboard holds four aligned stones.

  Args:
    stones: the bitboard (Pons' layout, 7 bits per column).

  Returns:
    bool.
  """
  for d in (1, 7, 6, 8):
    m = stones & (stones >> d)
    if m & (m >> (2 * d)):
      return True
  return False


def play_moves(moves: str) -> tuple[int, int, int, bool]:
  """Replays a move string on Python-int bitboards.

  Args:
    moves: columns '1'..'7' from the empty board, first player first (Pons'
      notation); surrounding whitespace is ignored.

  Returns:
    (position, mask, ply, won): the stones of the player to move, all
    stones, the number of moves and whether the last move made four.

  Raises:
    ValueError: on a character other than '1'..'7', a move in a full column,
      or a move after the game has ended.
  """
  moves = moves.strip()
  position, mask, won = 0, 0, False
  for i, ch in enumerate(moves):
    if ch not in "1234567":
      raise ValueError(f"bad move {ch!r} at index {i} of {moves!r}: columns are '1'..'7'")
    if won or i == NUM_CELLS:
      raise ValueError(f"move {ch!r} at index {i} of {moves!r} comes after the end of the game")
    col = int(ch) - 1
    if mask & (1 << (col * _H1 + NUM_ROWS - 1)):
      raise ValueError(f"move {ch!r} at index {i} of {moves!r} plays in a full column")
    position ^= mask
    mask |= mask + (1 << (col * _H1))
    won = has_four_int(position ^ mask)
  return position, mask, len(moves), won


def from_moves(moves: str) -> State:
  """Position after `moves`, Pons' notation: columns '1'..'7', first player first.

  Args:
    moves: e.g. "4455"; surrounding whitespace is ignored.

  Returns:
    A single (unbatched) `State`; `rewards` are those of the last move.

  Raises:
    ValueError: as `play_moves`.
  """
  position, mask, ply, won = play_moves(moves)
  winner = (ply - 1) % 2 if won else -1
  rewards = np.zeros(2, np.float32)
  if winner >= 0:
    rewards[:] = -1.0
    rewards[winner] = 1.0
  return State(
      position=jnp.asarray(bits.from_int(position)),
      mask=jnp.asarray(bits.from_int(mask)),
      ply=jnp.int32(ply),
      terminated=jnp.bool_(won or ply == NUM_CELLS),
      rewards=jnp.asarray(rewards),
      winner=jnp.int32(winner),
  )


def render(state: State) -> str:
  """ASCII board of a single state: X = player 0, O = player 1, top row first.

  Args:
    state: one unbatched State.

  Returns:
    The board, one line per row.
  """
  position = bits.to_int(state.position)
  mask = bits.to_int(state.mask)
  ply = int(state.ply)
  x_stones = position if ply % 2 == 0 else position ^ mask
  lines = []
  for row in reversed(range(NUM_ROWS)):
    cells = []
    for col in range(NUM_COLS):
      b = 1 << (col * _H1 + row)
      cells.append("." if not mask & b else ("X" if x_stones & b else "O"))
    lines.append(" ".join(cells))
  lines.append(" ".join(str(c + 1) for c in range(NUM_COLS)))
  return "\n".join(lines)


# The exact solver depends on this module, not the other way round: `solve`
# and `solve_columns` live in `mcgs_jax.envs.connect4_solver`. The old names here are
# deprecated aliases, resolved on first access so that importing this env
# never loads the solver (or numba).
_MOVED_TO_SOLVER = ("solve", "solve_columns")


def __getattr__(name):
  if name in _MOVED_TO_SOLVER:
    import importlib  # pylint: disable=g-import-not-at-top
    import warnings  # pylint: disable=g-import-not-at-top
    warnings.warn(f"mcgs_jax.envs.connect4.{name} moved to mcgs_jax.envs.connect4_solver.{name}",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module("mcgs_jax.envs.connect4_solver"), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
