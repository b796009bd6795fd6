"""Games as pure JAX functions, with the transposition key the search needs.

`make(id)` ids:
  "connect4"                 Connect-4 on bitboards (exact Pons key)
  "nim"                      multi-pile Nim (1, 3, 5, 7), normal play
  "nim-piles:2,3,4"          multi-pile Nim with other piles, normal play
  "nim-misere"               (1, 3, 5, 7) misere play; "nim-misere:2,3,4" other piles
  "nim:k,n"                  single-pile subtraction Nim: take 1..k from n, last stone wins
  "hsr:k,q,n"                Highest Safe Rung: k jars, q tests, n possible answers
  "tictactoe"                tic-tac-toe on bitboards (exact key)
  "pgx:<id>"                 any deterministic pgx game, e.g. "pgx:othello" (see mcgs_jax.envs.pgx_env)
"""

import difflib
import importlib
from typing import TYPE_CHECKING

# Public name -> its module; imported on first use, so that checking an env id
# (`check`, the command lines' `--env`) costs no jax import.
_EXPORTS = {
    "Env": "base", "stack": "base",
    "mixed_eval": "evaluators", "rollout_eval": "evaluators", "uniform_eval": "evaluators",
}

__all__ = ["Env", "check", "connect4", "hsr", "make", "mixed_eval", "nim", "tictactoe",
           "rollout_eval", "stack", "uniform_eval"]

if TYPE_CHECKING:
  from mcgs_jax.envs import connect4, hsr, nim, tictactoe
  from mcgs_jax.envs.base import Env, stack
  from mcgs_jax.envs.evaluators import mixed_eval, rollout_eval, uniform_eval


def __getattr__(name: str):
  if name in _EXPORTS:
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
  if not name.startswith("__"):
    try:
      return importlib.import_module(f"{__name__}.{name}")   # a game module: envs.connect4
    except ModuleNotFoundError as error:
      if error.name != f"{__name__}.{name}":
        raise
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The games' names in an env id (before any ":").
GAMES = ("connect4", "nim", "nim-piles", "nim-misere", "hsr", "tictactoe", "pgx")


def _ints(text: str, game_id: str) -> tuple[int, ...]:
  try:
    values = tuple(int(v) for v in text.split(","))
  except ValueError:
    raise ValueError(f"bad numbers in env id {game_id!r}") from None
  return values


def check(game_id: str) -> tuple[str, tuple[int, ...] | str]:
  """Reads an env id without building the env (nor importing jax).

  Args:
    game_id: e.g. "connect4", "nim-piles:2,3,4", "hsr:2,2,10", "pgx:othello".

  Returns:
    (game, arguments): the game's name (connect4, nim, nim-piles,
    nim-misere, hsr, tictactoe, pgx) and its numbers (the pgx game's name
    for "pgx").

  Raises:
    ValueError: an unknown id or bad numbers in it.
  """
  if not isinstance(game_id, str):
    raise TypeError(f"an env id is a string, got {type(game_id).__name__}")
  name, _, args = game_id.partition(":")
  if name == "connect4" and not args:
    return name, ()
  if name == "nim":
    if not args:
      return name, ()
    values = _ints(args, game_id)
    if len(values) != 2:
      raise ValueError(f"{game_id!r}: single-pile Nim is 'nim:k,n' (take 1..k from n); "
                       "use 'nim-piles:a,b,...' for several piles")
    return name, values
  if name == "nim-piles" and args:
    return name, _ints(args, game_id)
  if name == "nim-misere":
    return name, _ints(args, game_id) if args else ()
  if name == "hsr" and args:
    values = _ints(args, game_id)
    if len(values) != 3:
      raise ValueError(f"{game_id!r}: HSR is 'hsr:k,q,n' (jars, tests, rungs)")
    return name, values
  if name in ("tictactoe", "tic_tac_toe") and not args:
    return "tictactoe", ()
  if name == "pgx" and args:
    return name, args
  close = difflib.get_close_matches(name, GAMES, n=1)
  hint = f" (did you mean {close[0]!r}?)" if close and close[0] != name else ""
  raise ValueError(f"unknown env id {game_id!r}{hint}; known: connect4, nim, nim:k,n, "
                   "nim-piles:a,b,..., nim-misere[:a,b,...], hsr:k,q,n, tictactoe, pgx:<id>")


def make(game_id: str) -> "Env":
  """Builds an env from its id (see the module docstring for the list).

  Args:
    game_id: e.g. "connect4", "nim-piles:2,3,4", "hsr:2,2,10", "pgx:othello".

  Returns:
    The Env (frozen, hashable).

  Raises:
    ValueError: an unknown id or bad numbers in it.
  """
  # pylint: disable=g-import-not-at-top  (a game's module, and jax, load with it)
  game, args = check(game_id)
  if game == "connect4":
    from mcgs_jax.envs import connect4
    return connect4.Connect4()
  if game == "tictactoe":
    from mcgs_jax.envs import tictactoe
    return tictactoe.TicTacToe()
  if game == "hsr":
    from mcgs_jax.envs import hsr
    return hsr.HSR(*args)
  if game == "pgx":
    from mcgs_jax.envs import pgx_env   # imports pgx
    return pgx_env.PgxEnv(args)
  from mcgs_jax.envs import nim
  if game == "nim" and args:
    k, n = args
    return nim.Nim(piles=(n,), max_take=k)
  if game == "nim-misere":
    return nim.Nim(piles=args or (1, 3, 5, 7), misere=True)
  return nim.Nim(piles=args) if args else nim.Nim()
