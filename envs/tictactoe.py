"""Tic-tac-toe on 9-bit bitboards, with an exact transposition key.

Cells are numbered 0..8 row by row from the top left, as in pgx
`tic_tac_toe`; action `i` marks cell `i`. Player 0 moves first, so
`current_player = ply % 2`.

  position  uint32 bitboard of the player to move
  mask      uint32 bitboard of all marks

Key: lane 0 = `position | mask << 9`, lane 1 = 0. The mask's popcount is the
ply, so the key is exact (board and player to move) and two keys are equal
only at equal depth: the game graph is acyclic by construction. The game has
5478 positions and many transpositions (a position with m marks is reached by
up to (m/2)! (m/2)! move orders), which makes it a small test bed for graph
search. An illegal action (an occupied cell or out of range) ends the game
with a loss for the mover, as in pgx; such a state keeps the previous board
and has bit 31 of lane 1 set in its key.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcgs_jax.envs import base

NUM_CELLS = 9
_LINES = np.array([
    0b000000111, 0b000111000, 0b111000000,    # rows
    0b001001001, 0b010010010, 0b100100100,    # columns
    0b100010001, 0b001010100,                 # diagonals
], np.uint32)
_CELL_BITS = np.uint32(1) << np.arange(NUM_CELLS, dtype=np.uint32)
_ILLEGAL_FLAG = np.uint32(1 << 31)


def _dihedral_sources() -> np.ndarray:
  """int32[8, 9]: for each symmetry of the square, the cell gathered into
  cell i (the inverse of the map that moves cells)."""
  rows, cols = np.divmod(np.arange(NUM_CELLS), 3)
  # Where cell (r, c) goes: the 4 rotations by 90 degrees clockwise, each
  # optionally preceded by the left-right mirror.
  destinations = []
  for mirror in (False, True):
    r, c = rows, (2 - cols if mirror else cols)
    for _ in range(4):
      destinations.append(r * 3 + c)
      r, c = c, 2 - r
  return np.argsort(np.array(destinations), axis=1).astype(np.int32)


_SYMMETRY_SOURCES = _dihedral_sources()


def has_line(stones: jax.Array) -> jax.Array:
  """Whether a 9-bit board holds three in a row.

  Args:
    stones: uint32[...], bit 3 r + c for cell (r, c).

  Returns:
    bool[...].
  """
  stones = jnp.asarray(stones, jnp.uint32)[..., None]
  return jnp.any((stones & _LINES) == _LINES, axis=-1)


def _cells(board: jax.Array) -> jax.Array:
  """uint32[...] -> bool[..., 9]."""
  return (jnp.asarray(board, jnp.uint32)[..., None] & _CELL_BITS) != 0


@chex.dataclass(frozen=True)
class State:
  """One tic-tac-toe position; every field may carry leading batch dims."""
  position: chex.Array    # uint32[...] marks of the player to move
  mask: chex.Array        # uint32[...] all marks
  ply: chex.Array         # int32[...]
  terminated: chex.Array  # bool[...]
  rewards: chex.Array     # f32[..., 2] reward of the last move, per player id
  winner: chex.Array      # int32[...] -1 for none or draw

  @property
  def current_player(self) -> chex.Array:
    """int32[...]: player to move (0, X, moves first)."""
    return self.ply % 2

  @property
  def legal_action_mask(self) -> chex.Array:
    """bool[..., 9]: empty cells; all False once terminated."""
    return ~_cells(self.mask) & ~self.terminated[..., None]

  @property
  def observation(self) -> chex.Array:
    """bool[..., 3, 3, 2] as pgx: channel 0 the mover's marks, 1 the opponent's."""
    own = _cells(self.position)
    other = _cells(self.position ^ self.mask)
    grid = jnp.stack([own, other], axis=-1)
    return grid.reshape(grid.shape[:-2] + (3, 3, 2))

  @property
  def key(self) -> chex.Array:
    """uint32[..., 2]: exact key `position | mask << 9` (+ illegal-end flag)."""
    lo = self.position | (self.mask << 9)
    illegal_end = self.ply != jax.lax.population_count(self.mask).astype(jnp.int32)
    hi = jnp.where(illegal_end, _ILLEGAL_FLAG, jnp.uint32(0))
    return jnp.stack([lo, jnp.broadcast_to(hi, jnp.shape(lo))], axis=-1)


@dataclasses.dataclass(frozen=True)
class TicTacToe(base.Env):
  """Tic-tac-toe; player 0 (X) moves first."""
  id = "tictactoe"
  num_actions = NUM_CELLS  # one action per cell
  max_game_length = NUM_CELLS
  acyclic_keys = True  # every move adds a mark, and the key holds the marks
  alternating_zero_sum = True  # players alternate, only the last move is rewarded
  # The symmetries of the square: 4 rotations, each with or without a mirror.
  num_symmetries = len(_SYMMETRY_SOURCES)

  def _init(self, rng: jax.Array) -> State:
    del rng
    return State(position=jnp.uint32(0), mask=jnp.uint32(0), ply=jnp.int32(0),
                 terminated=jnp.bool_(False), rewards=jnp.zeros(2, jnp.float32),
                 winner=jnp.int32(-1))

  def _step(self, state: State, action: jax.Array) -> State:
    """Marks cell `action` (int32 []) for the player to move in one game."""
    action = jnp.asarray(action, jnp.int32)
    cell = jnp.uint32(1) << jnp.clip(action, 0, NUM_CELLS - 1).astype(jnp.uint32)
    legal = (action >= 0) & (action < NUM_CELLS) & ((state.mask & cell) == 0)
    new_mask = jnp.where(legal, state.mask | cell, state.mask)
    mover_marks = jnp.where(legal, state.position | cell, state.position)
    mover = state.current_player
    ply = state.ply + 1
    won = legal & has_line(mover_marks)
    terminated = ~legal | won | (ply == NUM_CELLS)
    winner = jnp.where(legal, jnp.where(won, mover, -1), 1 - mover)
    rewards = base.rewards_for_winner(winner)
    stepped = State(position=mover_marks ^ new_mask, mask=new_mask, ply=ply,
                    terminated=terminated, rewards=rewards, winner=winner.astype(jnp.int32))
    return base.step_unless_terminated(state, stepped)

  def symmetry(self, index: jax.Array, observation: jax.Array, policy: jax.Array,
               legal_action_mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Symmetry `index` of ONE example; action i is cell i, so the board
    cells, the policy and the legal mask undergo the same permutation.

    Index 0 is the identity, 1..3 the clockwise rotations by 90, 180 and 270
    degrees, 4..7 the left-right mirror followed by those rotations.

    Args:
      index: int32 [] in [0, 8).
      observation: bool[3, 3, 2], as `State.observation`.
      policy: f32[9].
      legal_action_mask: bool[9].

    Returns:
      (observation [3, 3, 2], policy [9], legal_action_mask [9]), transformed.
    """
    base.check_symmetry_index(index, self.num_symmetries)
    observation, policy, legal_action_mask = map(
        jnp.asarray, (observation, policy, legal_action_mask))
    chex.assert_shape(observation, (3, 3, 2))
    chex.assert_shape([policy, legal_action_mask], (NUM_CELLS,))
    sources = jnp.asarray(_SYMMETRY_SOURCES)[index]
    cells = observation.reshape(NUM_CELLS, 2)[sources]
    return cells.reshape(3, 3, 2), policy[sources], legal_action_mask[sources]


def from_moves(moves) -> State:
  """Single state after the cells `moves`, first player first.

  Args:
    moves: a sequence of ints 0..8 (cell 3 r + c).

  Returns:
    A single (unbatched) State.

  Raises:
    ValueError: a move on an occupied cell or after the end of the game.
  """
  env = TicTacToe()
  state = env.init(jax.random.PRNGKey(0))
  for i, cell in enumerate(moves):
    if bool(state.terminated) or not bool(state.legal_action_mask[int(cell)]):
      raise ValueError(f"move {cell} at index {i} of {list(moves)} is not legal")
    state = env.step(state, int(cell))
  return state


def render(state: State) -> str:
  """ASCII board of a single state: X = player 0, O = player 1.

  Args:
    state: one unbatched State.

  Returns:
    Three lines, top row first.
  """
  ply = int(state.ply)
  position, mask = int(state.position), int(state.mask)
  x_marks = position if ply % 2 == 0 else position ^ mask
  rows = []
  for r in range(3):
    row = []
    for c in range(3):
      b = 1 << (3 * r + c)
      row.append("." if not mask & b else ("X" if x_marks & b else "O"))
    rows.append(" ".join(row))
  return "\n".join(rows)
