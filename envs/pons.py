"""Pascal Pons' Connect-4 test positions and exactly labelled positions.

Pons' six sets ship with the package, in `envs/data/connect4` (`DATA_DIR`,
read through `importlib.resources`, so an installed wheel has them too). Set
names may be given with or without the file prefix: "L2_R1" or "Test_L2_R1".
Scores files hold `MOVES SCORE` lines; `_columns` files hold
`MOVES v1,...,v7`, the score after each column from the opponent's view, 43
for a full column (read as None). See the data folder's README.

`Position` is a position with the exact score of every column;
`load_set` reads one of Pons' sets, `label` scores any position with the
project's exact solver, `generate` draws random-play positions and labels
them.
"""

import dataclasses
import importlib.resources
import pathlib

import numpy as np

from mcgs_jax.envs import connect4

DATA_DIR = pathlib.Path(str(importlib.resources.files(__package__) / "data" / "connect4"))
SETS = ("L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3")
FULL_COLUMN = 43


def path(name: str, columns: bool = False) -> pathlib.Path:
  """The scores file of set `name`, or its `_columns` file.

  Args:
    name: the set, e.g. "L2_R1" or "Test_L2_R1".
    columns: the `_columns` file (a score per column) instead of the scores.

  Returns:
    The path under `DATA_DIR` (it may not exist).
  """
  stem = name if name.startswith("Test_") else f"Test_{name}"
  return DATA_DIR / (stem + ("_columns" if columns else ""))


def _lines(file: pathlib.Path, limit: int | None) -> list[str]:
  if not file.exists():
    raise FileNotFoundError(f"Pons' set file {file} not found (the envs package ships them in "
                            "envs/data/connect4; reinstall the package)")
  return [line for line in file.read_text().splitlines() if line.strip()][:limit]


def read_scores(name: str, limit: int | None = None) -> list[tuple[str, int]]:
  """(moves, score) for the first `limit` (default all) positions of a set.

  Args:
    name: the set, e.g. "L2_R1".
    limit: positions to read; None: all.

  Returns:
    A list of (moves string, Pons score of the side to move).

  Raises:
    FileNotFoundError: the set's file is not under `DATA_DIR`.
  """
  rows = []
  for line in _lines(path(name), limit):
    moves, score = line.split()
    rows.append((moves, int(score)))
  return rows


def split_columns_line(line: str) -> tuple[str, tuple]:
  """Splits a `MOVES v1,...,v7` line.

  Args:
    line: the line.

  Returns:
    (moves, a tuple of seven scores, None for a full column).

  Raises:
    ValueError: not seven scores.
  """
  moves, values = line.split()
  scores = tuple(None if int(v) == FULL_COLUMN else int(v) for v in values.split(","))
  if len(scores) != 7:
    raise ValueError(f"expected 7 column scores in {line!r}")
  return moves, scores


def format_columns_line(moves: str, scores) -> str:
  """The inverse of `split_columns_line` (without the newline).

  Args:
    moves: the moves string.
    scores: seven scores, None for a full column.

  Returns:
    The line.
  """
  return f"{moves} {','.join(str(FULL_COLUMN if v is None else v) for v in scores)}"


def read_columns(name: str, limit: int | None = None) -> list[tuple[str, tuple]]:
  """(moves, column scores) for the first `limit` positions of a set.

  Args:
    name: the set, e.g. "L2_R1".
    limit: positions to read; None: all.

  Returns:
    A list of (moves, seven scores) as `split_columns_line` gives.

  Raises:
    FileNotFoundError: the set's `_columns` file is not under `DATA_DIR`.
  """
  return [split_columns_line(line) for line in _lines(path(name, columns=True), limit)]


@dataclasses.dataclass(frozen=True)
class Position:
  """A position and the exact score of each column (None: full column)."""
  moves: str
  column_scores: tuple   # seven ints or None, from the opponent's view after the move

  @property
  def score(self) -> int:
    """Pons score for the side to move."""
    return -min(v for v in self.column_scores if v is not None)

  def preserves(self, column: int) -> bool:
    """Whether playing `column` (0-based) keeps the outcome (win, draw, loss).

    Args:
      column: the column, 0..6.

    Returns:
      False for a full column.
    """
    value = self.column_scores[column]
    return value is not None and np.sign(-value) == np.sign(self.score)

  def is_optimal(self, column: int) -> bool:
    """Whether playing `column` (0-based) keeps the exact score.

    Args:
      column: the column, 0..6.

    Returns:
      False for a full column.
    """
    value = self.column_scores[column]
    return value is not None and -value == self.score


def parse_columns_line(line: str) -> Position:
  """A `MOVES v1,...,v7` line as a Position.

  Args:
    line: the line.

  Returns:
    The Position.
  """
  return Position(*split_columns_line(line))


def load_set(name: str, limit: int | None = None) -> list[Position]:
  """Positions of a Pons set with scores from its `_columns` file.

  Args:
    name: the set, e.g. "L2_R1".
    limit: positions to read; None: all 1000.

  Returns:
    A list of Positions.
  """
  return [Position(*row) for row in read_columns(name, limit)]


def label(moves: str) -> Position:
  """Scores every column with the project's exact solver.

  Args:
    moves: the position as a moves string (columns 1-7).

  Returns:
    The Position.
  """
  # Imported here: numba compiles the solver on first use.
  from mcgs_jax.envs import connect4_solver  # pylint: disable=g-import-not-at-top
  return Position(moves, tuple(connect4_solver.solve_columns(moves)))


def load_positions(path: str, limit: int | None = None) -> list[Position]:
  """A file of `MOVES [anything]` lines (e.g. a Pons `Test_*` file), labelled
  by the solver; `MOVES v1,...,v7` lines are taken as they are.

  Args:
    path: the file.
    limit: lines to read; None: all.

  Returns:
    A list of Positions.
  """
  positions = []
  for line in pathlib.Path(path).read_text().splitlines()[:limit]:
    parts = line.split()
    if not parts:
      continue
    if len(parts) == 2 and "," in parts[1]:
      positions.append(parse_columns_line(line))
    else:
      positions.append(label(parts[0]))
  return positions


def generate(count: int, min_stones: int, max_stones: int, seed: int) -> list[Position]:
  """Random-play positions with `min_stones..max_stones` stones, not over and
  without an immediate win for the side to move (those are trivial), labelled
  by the solver.

  Args:
    count: positions to make (distinct).
    min_stones: the fewest stones.
    max_stones: the most stones.
    seed: the random seed.

  Returns:
    A list of `count` Positions.
  """
  rng = np.random.default_rng(seed)
  positions, seen = [], set()
  while len(positions) < count:
    target = int(rng.integers(min_stones, max_stones + 1))
    moves = ""
    while len(moves) < target:
      # Python-int bitboards: no device round trip per move.
      _, mask, _, _ = connect4.play_moves(moves)
      top = connect4.NUM_ROWS - 1
      legal = [c for c in range(connect4.NUM_COLS)
               if not mask >> (c * (connect4.NUM_ROWS + 1) + top) & 1]
      candidate = moves + str(int(rng.choice(legal)) + 1)
      _, _, ply, won = connect4.play_moves(candidate)
      if won or ply == connect4.NUM_CELLS:
        break
      moves = candidate
    if len(moves) != target or moves in seen:
      continue
    position = label(moves)
    if position.score == 22 - (len(moves) // 2 + 1):   # wins on this move
      continue
    seen.add(moves)
    positions.append(position)
  return positions
