"""Pascal Pons' Connect-4 test positions (`../shared/data/connect4`).

Set names may be given with or without the file prefix: "L2_R1" or
"Test_L2_R1". Scores files hold `MOVES SCORE` lines; `_columns` files hold
`MOVES v1,...,v7`, the score after each column from the opponent's view, 43
for a full column (read as None). See the data folder's README.
"""

import pathlib

DATA_DIR = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "connect4"
SETS = ("L3_R1", "L2_R1", "L2_R2", "L1_R1", "L1_R2", "L1_R3")
FULL_COLUMN = 43


def path(name: str, columns: bool = False) -> pathlib.Path:
  """The scores file of set `name`, or its `_columns` file."""
  stem = name if name.startswith("Test_") else f"Test_{name}"
  return DATA_DIR / (stem + ("_columns" if columns else ""))


def _lines(file: pathlib.Path, limit: int | None) -> list[str]:
  if not file.exists():
    raise FileNotFoundError(f"{file} not found (Pons' sets live in ../shared/data/connect4)")
  return [line for line in file.read_text().splitlines() if line.strip()][:limit]


def read_scores(name: str, limit: int | None = None) -> list[tuple[str, int]]:
  """(moves, score) for the first `limit` (default all) positions of a set."""
  rows = []
  for line in _lines(path(name), limit):
    moves, score = line.split()
    rows.append((moves, int(score)))
  return rows


def parse_columns_line(line: str) -> tuple[str, tuple]:
  """`MOVES v1,...,v7` -> (moves, seven scores, None for a full column)."""
  moves, values = line.split()
  scores = tuple(None if int(v) == FULL_COLUMN else int(v) for v in values.split(","))
  if len(scores) != 7:
    raise ValueError(f"expected 7 column scores in {line!r}")
  return moves, scores


def format_columns_line(moves: str, scores) -> str:
  """The inverse of `parse_columns_line` (without the newline)."""
  return f"{moves} {','.join(str(FULL_COLUMN if v is None else v) for v in scores)}"


def read_columns(name: str, limit: int | None = None) -> list[tuple[str, tuple]]:
  """(moves, column scores) for the first `limit` positions of a set."""
  return [parse_columns_line(line) for line in _lines(path(name, columns=True), limit)]
