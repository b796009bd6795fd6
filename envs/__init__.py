"""Games as pure JAX functions, with the transposition key the search needs.

`make(id)` ids:
  "connect4"                 Connect-4 on bitboards (exact Pons key)
  "nim"                      multi-pile Nim (1, 3, 5, 7), normal play
  "nim-piles:2,3,4"          multi-pile Nim with other piles, normal play
  "nim-misere"               (1, 3, 5, 7) misere play; "nim-misere:2,3,4" other piles
  "nim:k,n"                  single-pile subtraction Nim: take 1..k from n, last stone wins
  "hsr:k,q,n"                Highest Safe Rung: k jars, q tests, n possible answers
  "tictactoe"                tic-tac-toe on bitboards (exact key)
  "pgx:<id>"                 any deterministic pgx game, e.g. "pgx:othello" (see envs.pgx_env)
"""

from envs import connect4
from envs import hsr
from envs import nim
from envs import tictactoe
from envs.base import Env, stack
from envs.evaluators import mixed_eval, rollout_eval, uniform_eval

__all__ = ["Env", "connect4", "hsr", "make", "mixed_eval", "nim", "tictactoe", "rollout_eval", "stack", "uniform_eval"]


def _ints(text: str, game_id: str) -> tuple[int, ...]:
  try:
    values = tuple(int(v) for v in text.split(","))
  except ValueError:
    raise ValueError(f"bad numbers in env id {game_id!r}") from None
  return values


def make(game_id: str) -> Env:
  """Builds an env from its id (see the module docstring for the list).

  Args:
    game_id: e.g. "connect4", "nim-piles:2,3,4", "hsr:2,2,10", "pgx:othello".

  Returns:
    The Env (frozen, hashable).

  Raises:
    ValueError: an unknown id or bad numbers in it.
  """
  name, _, args = game_id.partition(":")
  if name == "connect4" and not args:
    return connect4.Connect4()
  if name == "nim":
    if not args:
      return nim.Nim()
    values = _ints(args, game_id)
    if len(values) != 2:
      raise ValueError(f"{game_id!r}: single-pile Nim is 'nim:k,n' (take 1..k from n); "
                       "use 'nim-piles:a,b,...' for several piles")
    k, n = values
    return nim.Nim(piles=(n,), max_take=k)
  if name == "nim-piles" and args:
    return nim.Nim(piles=_ints(args, game_id))
  if name == "nim-misere":
    return nim.Nim(piles=_ints(args, game_id) if args else (1, 3, 5, 7), misere=True)
  if name == "hsr" and args:
    values = _ints(args, game_id)
    if len(values) != 3:
      raise ValueError(f"{game_id!r}: HSR is 'hsr:k,q,n' (jars, tests, rungs)")
    return hsr.HSR(*values)
  if name in ("tictactoe", "tic_tac_toe") and not args:
    return tictactoe.TicTacToe()
  if name == "pgx" and args:
    from envs import pgx_env  # pylint: disable=g-import-not-at-top  (imports pgx lazily)
    return pgx_env.PgxEnv(args)
  raise ValueError(f"unknown env id {game_id!r}; known: connect4, nim, nim:k,n, "
                   "nim-piles:a,b,..., nim-misere[:a,b,...], hsr:k,q,n, tictactoe, pgx:<id>")
