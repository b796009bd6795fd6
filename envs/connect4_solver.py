"""Exact Connect-4 solver (Pascal Pons' design), compiled with numba.

Scores follow Pons: from the side to move, a win with the k-th own stone is
worth 22 - k, a draw 0, a loss with the opponent's k-th stone -(22 - k).

Algorithm:
  * Bitboards as in `mcgs_jax.envs.connect4`: bit `col * 7 + row`, row 0 at the
    bottom, an always-empty sentinel on top of each column; `position` holds
    the stones of the side to move, `mask` all stones, and
    `key = position + mask` identifies the position exactly (< 2**49).
  * Negamax with alpha-beta. Before searching a node the window is clipped to
    the score bounds that hold anyway: the side to move cannot win on this move
    (checked by the caller) and the opponent cannot win on the next one (only
    non-losing moves are generated), which bounds the score from both sides.
  * Non-losing moves: if the opponent has one playable winning cell, the only
    move is to block it; with two, the node is lost; and a move is never played
    directly below a cell where the opponent would win.
  * Move ordering: by the number of winning cells the move creates for the
    side to move, ties broken centre-first.
  * Transposition table: `TABLE_SIZE` (a prime) slots indexed by
    `key % TABLE_SIZE`, always replaced, each storing the full key, so a hit is
    never a false positive, and one bound: an upper bound when no move raised
    alpha, a lower bound on a beta cut-off. Both are bounds on the exact score,
    whatever window produced them, so the table stays valid across searches
    of different positions and is only cleared on request.
  * Root: an immediate win is scored directly; otherwise the score is found by
    a binary search over [min, max] with null-window searches
    `negamax(med, med + 1)`, biased towards 0 first since short wins and
    losses are cheaper to refute.

Why numba: the search visits up to millions of nodes per position; in pure
Python each node costs ~100x more than compiled code, which would put mid-game
positions at minutes. numba is a widely used, maintained PyPI package that
compiles these functions on first call and caches the machine code on disk
(`cache=True`), so later processes start in well under a second.
"""

import numba
import numpy as np

from mcgs_jax.envs import connect4

WIDTH = 7
HEIGHT = 6
_H1 = HEIGHT + 1
NUM_CELLS = WIDTH * HEIGHT
MIN_SCORE = -(NUM_CELLS // 2) + 3   # -18: the fastest loss, by the 4th stone
MAX_SCORE = (NUM_CELLS + 1) // 2 - 3  # 18: the fastest win

# 2**24 + 43, the first prime above 2**24: 128 MiB of 8-byte entries.
TABLE_SIZE = 16777259

_BOTTOM = sum(1 << (c * _H1) for c in range(WIDTH))
_BOARD = _BOTTOM * ((1 << HEIGHT) - 1)
BOTTOM_MASK = np.uint64(_BOTTOM)
BOARD_MASK = np.uint64(_BOARD)
# Centre first, then outwards: 3, 2, 4, 1, 5, 0, 6.
COLUMN_ORDER = np.array([WIDTH // 2 + (1 - 2 * (i % 2)) * (i + 1) // 2 for i in range(WIDTH)],
                        np.int64)
COLUMN_MASKS = np.array([((1 << HEIGHT) - 1) << (c * _H1) for c in range(WIDTH)], np.uint64)

# Table entry, one uint64 so that a probe costs one cache miss:
#   bits 0..48   the key (position + mask < 2**49)
#   bits 49..55  the generation (1..127) that wrote it; `reset()` starts a new
#                one instead of clearing 128 MiB each time
#   bits 56..63  the bound: 1..37 an upper bound (score - MIN_SCORE + 1),
#                38..74 a lower bound (score + MAX_SCORE - 2 * MIN_SCORE + 2)
_GEN_SHIFT = 49
_MAX_GEN = 127
_VALUE_SHIFT = np.uint64(56)
_TAG_BITS = np.uint64((1 << 56) - 1)
_UPPER_TOP = MAX_SCORE - MIN_SCORE + 1


@numba.njit(cache=True, inline="always")
def _popcount(x):
  n = 0
  while x:
    x &= x - np.uint64(1)
    n += 1
  return n


@numba.njit(cache=True)
def _winning_cells(position, mask):
  """Empty cells (sentinels excluded) that would complete four for `position`."""
  one = np.uint64(1)
  # Vertical: three stones below.
  r = (position << one) & (position << np.uint64(2)) & (position << np.uint64(3))
  # Horizontal (7) and the two diagonals (6, 8): a gap at either end or inside.
  for d in (np.uint64(_H1), np.uint64(HEIGHT), np.uint64(HEIGHT + 2)):
    p = (position << d) & (position << (d + d))
    r |= p & (position << (d + d + d))
    r |= p & (position >> d)
    p = (position >> d) & (position >> (d + d))
    r |= p & (position << d)
    r |= p & (position >> (d + d + d))
  return r & (BOARD_MASK ^ mask)


@numba.njit(cache=True, inline="always")
def _possible(mask):
  """The playable cell of every non-full column."""
  return (mask + BOTTOM_MASK) & BOARD_MASK


@numba.njit(cache=True)
def _can_win_next(position, mask):
  return (_winning_cells(position, mask) & _possible(mask)) != np.uint64(0)


@numba.njit(cache=True)
def _non_losing_moves(position, mask):
  """Moves after which the opponent cannot win at once; 0 if there are none.

  Assumes the side to move has no immediate win.
  """
  possible = _possible(mask)
  opponent_win = _winning_cells(position ^ mask, mask)
  forced = possible & opponent_win
  if forced:
    if forced & (forced - np.uint64(1)):
      return np.uint64(0)  # two threats: only one can be blocked
    possible = forced
  # Filling the cell below an opponent's winning cell lets them play there.
  return possible & ~(opponent_win >> np.uint64(1))


@numba.njit(cache=True)
def _negamax(position, mask, moves, alpha, beta, table, gen, counter, order_moves,
             order_scores):
  """Score of a position whose side to move cannot win at once.

  Fail-hard within [alpha, beta]: a result <= alpha is an upper bound, a
  result >= beta a lower bound, anything between is exact.
  """
  counter[0] += 1
  candidates = _non_losing_moves(position, mask)
  if candidates == np.uint64(0):
    return -((NUM_CELLS - moves) // 2)
  if moves >= NUM_CELLS - 2:
    return 0  # neither side can complete four in the last two cells

  # The opponent cannot win on the next move, nor before their 4th stone
  # (which also keeps every stored bound inside the table's encoding).
  lo = max(-((NUM_CELLS - 2 - moves) // 2), MIN_SCORE)
  if alpha < lo:
    alpha = lo
    if alpha >= beta:
      return alpha
  # We cannot win on this move, nor before our 4th stone.
  hi = min((NUM_CELLS - 1 - moves) // 2, MAX_SCORE)
  if beta > hi:
    beta = hi
    if alpha >= beta:
      return beta

  key = position + mask
  slot = np.int64(key % np.uint64(TABLE_SIZE))
  tag = key | gen
  entry = table[slot]
  if (entry & _TAG_BITS) == tag:
    val = np.int64(entry >> _VALUE_SHIFT)
    if val > _UPPER_TOP:
      lower = val + 2 * MIN_SCORE - MAX_SCORE - 2
      if alpha < lower:
        alpha = lower
        if alpha >= beta:
          return alpha
    elif val > 0:
      upper = val + MIN_SCORE - 1
      if beta > upper:
        beta = upper
        if alpha >= beta:
          return beta

  # Insertion sort by score into this depth's scratch row (a per-node
  # allocation would cost more than the node); equal scores keep
  # centre-first order because columns are added outside-in and taken from
  # the end.
  n = 0
  for i in range(WIDTH - 1, -1, -1):
    move = candidates & COLUMN_MASKS[COLUMN_ORDER[i]]
    if move:
      score = _popcount(_winning_cells(position | move, mask))
      j = n
      while j > 0 and order_scores[moves, j - 1] > score:
        order_moves[moves, j] = order_moves[moves, j - 1]
        order_scores[moves, j] = order_scores[moves, j - 1]
        j -= 1
      order_moves[moves, j] = move
      order_scores[moves, j] = score
      n += 1

  for k in range(n - 1, -1, -1):
    move = order_moves[moves, k]
    score = -_negamax(position ^ mask, mask | move, moves + 1, -beta, -alpha,
                      table, gen, counter, order_moves, order_scores)
    if score >= beta:
      table[slot] = tag | (np.uint64(score + MAX_SCORE - 2 * MIN_SCORE + 2) << _VALUE_SHIFT)
      return score
    if score > alpha:
      alpha = score

  table[slot] = tag | (np.uint64(alpha - MIN_SCORE + 1) << _VALUE_SHIFT)
  return alpha


@numba.njit(cache=True, inline="always")
def _half(x):
  """x / 2 rounded towards zero."""
  return -((-x) // 2) if x < 0 else x // 2


@numba.njit(cache=True)
def _solve(position, mask, moves, table, gen, counter):
  """Exact score of a non-terminal position (binary search on null windows)."""
  if _can_win_next(position, mask):
    return (NUM_CELLS + 1 - moves) // 2
  lo = max(-((NUM_CELLS - moves) // 2), MIN_SCORE)
  hi = min((NUM_CELLS + 1 - moves) // 2, MAX_SCORE)
  order_moves = np.zeros((NUM_CELLS + 1, WIDTH), np.uint64)
  order_scores = np.zeros((NUM_CELLS + 1, WIDTH), np.int64)
  while lo < hi:
    med = lo + (hi - lo) // 2
    # Probe closer to 0 first: nearby outcomes are cheaper to settle.
    if med <= 0 and _half(lo) < med:
      med = _half(lo)
    elif med >= 0 and _half(hi) > med:
      med = _half(hi)
    r = _negamax(position, mask, moves, med, med + 1, table, gen, counter,
                 order_moves, order_scores)
    if r <= med:
      hi = r
    else:
      lo = r
  return lo


class Solver:
  """Reusable solver: owns the transposition table (128 MiB, allocated once).

  Table entries are exact bounds, so they are kept from one position to the
  next; `reset()` clears them, e.g. to time positions independently.
  """

  def __init__(self):
    self.table = np.zeros(TABLE_SIZE, np.uint64)
    # Touch every page now rather than at random during the first searches.
    self.table.fill(0)
    self._gen = 1
    self._counter = np.zeros(1, np.int64)

  def reset(self) -> None:
    """Empties the transposition table and the node counter."""
    # Entries of older generations never match, so this is O(1) except for
    # a real clear once the 7-bit generation wraps around.
    self._gen += 1
    if self._gen > _MAX_GEN:
      self.table.fill(0)
      self._gen = 1
    self._counter[0] = 0

  @property
  def nodes(self) -> int:
    """Nodes searched since the last `reset()`."""
    return int(self._counter[0])

  def solve_bits(self, position: int, mask: int, moves: int) -> int:
    """Score of a non-terminal position given as Python-int bitboards.

    Args:
      position: stones of the player to move (Pons' layout).
      mask: all stones.
      moves: the number of stones on the board (the ply).

    Returns:
      int, Pons' score from the side to move (see `solve`); 0 on a full board.
    """
    if moves >= NUM_CELLS:
      return 0
    return int(_solve(np.uint64(position), np.uint64(mask), np.int64(moves),
                      self.table, np.uint64(self._gen << _GEN_SHIFT), self._counter))

  def solve(self, moves: str) -> int:
    """Exact score of the position after `moves`, from the side to move.

    Args:
      moves: columns '1'..'7' from the empty board, first player first.

    Returns:
      int, Pons' score (see the module-level `solve`).

    Raises:
      ValueError: on invalid moves, or if the game is already won. A full
        board without a win scores 0.
    """
    position, mask, n, won = connect4.play_moves(moves)
    if won:
      raise ValueError(f"the game is already over after {moves.strip()!r}")
    return self.solve_bits(position, mask, n)

  def solve_columns(self, moves: str) -> list:
    """Scores after each column, from the viewpoint of the side to move there.

    Args:
      moves: columns '1'..'7' from the empty board, first player first.

    Returns:
      7 entries, None for a full column. A column that wins at once is worth
      -(22 - stones of the winner), a column that fills the board without a
      win 0. The position's score is `-min` of the non-None entries (all are
      None on a full board).

    Raises:
      ValueError: as `solve`.
    """
    position, mask, n, won = connect4.play_moves(moves)
    if won:
      raise ValueError(f"the game is already over after {moves.strip()!r}")
    out = []
    for col in range(WIDTH):
      if mask & (1 << (col * _H1 + HEIGHT - 1)):
        out.append(None)
        continue
      child_mask = mask | (mask + (1 << (col * _H1)))
      if connect4.has_four_int(position | (child_mask ^ mask)):
        out.append(-((NUM_CELLS + 1 - n) // 2))
      else:
        out.append(self.solve_bits(position ^ mask, child_mask, n + 1))
    return out


_SOLVER = None


def default_solver() -> Solver:
  """The process-wide solver, created on first use.

  Returns:
    The shared Solver (its transposition table persists between calls).
  """
  global _SOLVER
  if _SOLVER is None:
    _SOLVER = Solver()
  return _SOLVER


def solve(moves: str) -> int:
  """Exact score of the position after `moves`, from the side to move.

  Pons' convention: a win with the side to move's k-th stone scores 22 - k,
  a draw 0, a loss with the opponent's k-th stone -(22 - k). Uses the
  process-wide solver (`default_solver`), whose transposition table persists
  between calls.

  Args:
    moves: columns '1'..'7' from the empty board, first player first.

  Returns:
    int, the score.

  Raises:
    ValueError: on invalid moves or if the game is already won; a full board
      without a win scores 0.
  """
  return default_solver().solve(moves)


def solve_columns(moves: str) -> list:
  """Score after playing each column, from the side that moves next there.

  Args:
    moves: columns '1'..'7' from the empty board, first player first.

  Returns:
    7 entries, None for a full column; a column that wins at once is worth
    -(22 - stones of the winner). `solve(moves) == -min` of the other entries.

  Raises:
    ValueError: as `solve`.
  """
  return default_solver().solve_columns(moves)
