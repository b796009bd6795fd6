"""The exact Connect-4 solver against Pascal Pons' benchmark positions.

Fast tests check an evenly spaced sample of every set; the `slow` ones check
every position's score, and the column files (the opening ones sampled).
"""

import ast
import pathlib
import subprocess
import sys

import pytest

from mcgs_jax.envs import connect4_solver
from mcgs_jax.envs import pons

SETS = tuple(f"Test_{name}" for name in pons.SETS)
# Positions per set in the fast tests. Test_L1_R2 takes ~0.15 s a position and
# Test_L1_R3 ~10 s, so those get only their lightest few.
FAST_SAMPLE = {"Test_L3_R1": 20, "Test_L2_R1": 20, "Test_L2_R2": 15,
               "Test_L1_R1": 15, "Test_L1_R2": 8, "Test_L1_R3": 3}
FAST_COLUMNS = {"Test_L3_R1": 5, "Test_L2_R1": 5, "Test_L2_R2": 3,
                "Test_L1_R1": 2, "Test_L1_R2": 2, "Test_L1_R3": 1}


def _scores(name: str) -> list[tuple[str, int]]:
  if not pons.path(name).exists():
    pytest.skip(f"benchmark data not found at {pons.DATA_DIR}")
  return pons.read_scores(name)


def _columns(name: str) -> list[tuple[str, list]]:
  if not pons.path(name, columns=True).exists():
    pytest.skip(f"benchmark data not found at {pons.DATA_DIR}")
  return [(m, list(v)) for m, v in pons.read_columns(name)]


def _sample(rows: list, count: int) -> list:
  step = max(1, len(rows) // count)
  return rows[::step][:count]


def _deepest_first(rows: list, name: str) -> list:
  if name.startswith("Test_L1"):
    # Search sizes in the opening sets vary by orders of magnitude; the
    # positions with the most stones are the cheapest and still need real
    # search. (A column's child can be much harder than its parent.)
    rows = sorted(rows, key=lambda r: -len(r[0]))[:20]
  return rows


def _fast_rows(name: str) -> list:
  rows = _scores(name)
  if name == "Test_L1_R3":
    rows = _deepest_first(rows, name)
  return _sample(rows, FAST_SAMPLE[name])


def test_golden_examples():
  assert connect4_solver.solve("4455") == 18
  assert connect4_solver.solve("44455554221") == -15


@pytest.mark.parametrize("name", SETS)
def test_sample_scores(name):
  for moves, score in _fast_rows(name):
    assert connect4_solver.solve(moves) == score, moves


@pytest.mark.parametrize("name", [n for n in SETS if FAST_COLUMNS[n]])
def test_sample_columns(name):
  for moves, values in _sample(_deepest_first(_columns(name), name), FAST_COLUMNS[name]):
    got = connect4_solver.solve_columns(moves)
    assert got == values, moves
    assert connect4_solver.solve(moves) == -min(v for v in got if v is not None)


def test_immediate_win_column_value():
  # 32 stones, first player to move; columns 1 and 2 each complete four with
  # their 17th stone: worth -(22 - 17) to the opponent, who would move next.
  moves = "27431475612667316366545723354545"
  values = connect4_solver.solve_columns(moves)
  assert values[:2] == [-5, -5]
  assert values[4:6] == [None, None]
  assert connect4_solver.solve(moves) == 5


# A 42-move game without four in a row (found by a seeded random playout).
DRAWN_GAME = "472424756645422154157737216635626711335331"


def test_full_board_and_last_move():
  assert connect4_solver.solve(DRAWN_GAME) == 0
  assert connect4_solver.solve(DRAWN_GAME[:-1]) == 0
  last = connect4_solver.solve_columns(DRAWN_GAME[:-1])
  assert [v for v in last if v is not None] == [0]
  assert last.count(None) == 6
  assert connect4_solver.solve_columns(DRAWN_GAME) == [None] * 7


@pytest.mark.parametrize("moves", ["0", "8", "4a", "44 4", "4444444", "1212121", "12121214"])
def test_invalid_moves(moves):
  with pytest.raises(ValueError):
    connect4_solver.solve(moves)
  with pytest.raises(ValueError):
    connect4_solver.solve_columns(moves)


def test_kept_table_matches_fresh_solver():
  # Table entries are window-independent bounds, so results must not depend
  # on what was solved before.
  rows = _sample(_scores("Test_L2_R2"), 10)
  kept = connect4_solver.Solver()
  for moves, score in rows + rows[::-1]:
    assert kept.solve(moves) == score
  fresh = connect4_solver.Solver()
  for moves, score in rows:
    fresh.reset()
    assert fresh.solve(moves) == score


# Measured on one core: all of Test_L3_R1, Test_L2_R1, Test_L2_R2, Test_L1_R1
# and Test_L1_R2 take ~3 min together (Test_L1_R2 ~170 s); Test_L1_R3 averages
# ~10 s a position, ~2.5 h for the set (deselect with -k "not L1_R3").
@pytest.mark.slow
@pytest.mark.parametrize("name", SETS)
def test_all_scores(name):
  for moves, score in _scores(name):
    assert connect4_solver.solve(moves) == score, moves


# Seven searches a line, and a column's child is often harder than its
# parent. Measured on one core: the late sets take ~15 s in all, but the
# opening sets 0.5-2 s a line (Test_L1_R1, Test_L1_R2: 10-35 min a file) and
# Test_L1_R3 far more, so those are sampled (~90 s).
COLUMN_LINES = {"Test_L3_R1": None, "Test_L2_R1": None, "Test_L2_R2": None,
                "Test_L1_R1": 50, "Test_L1_R2": 50, "Test_L1_R3": 4}


@pytest.mark.slow
@pytest.mark.parametrize("name", SETS)
def test_columns_files(name):
  rows = _columns(name)
  if COLUMN_LINES[name] is not None:
    rows = _sample(_deepest_first(rows, name) if name == "Test_L1_R3" else rows,
                   COLUMN_LINES[name])
  for moves, values in rows:
    assert connect4_solver.solve_columns(moves) == values, moves


def test_env_does_not_depend_on_the_solver():
  # The dependency runs one way: connect4_solver imports connect4, and
  # importing the env loads neither the solver nor numba.
  root = pathlib.Path(__file__).resolve().parents[1]
  tree = ast.parse((root / "envs" / "connect4.py").read_text())
  imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
              for alias in node.names}
  imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
  assert "connect4_solver" not in imported and "mcgs_jax.envs.connect4_solver" not in imported
  code = ("import sys, envs, mcgs_jax.envs.connect4; "
          "print('mcgs_jax.envs.connect4_solver' in sys.modules, 'numba' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                       text=True, check=True)
  assert out.stdout.split() == ["False", "False"], out.stdout


def test_old_names_forward_with_a_deprecation_warning():
  from mcgs_jax.envs import connect4  # pylint: disable=g-import-not-at-top
  with pytest.warns(DeprecationWarning, match="connect4_solver.solve"):
    assert connect4.solve("4455") == 18
  with pytest.warns(DeprecationWarning, match="connect4_solver.solve_columns"):
    # A late position: seven children solved in milliseconds, not seconds.
    assert connect4.solve_columns("444444333333") == connect4_solver.solve_columns("444444333333")
  with pytest.raises(AttributeError):
    connect4.no_such_name  # pylint: disable=pointless-statement
