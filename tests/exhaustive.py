"""Exact game values by full enumeration: the solver lives in `envs.exhaustive`
(the learning package's ground truth uses it too); the tests import it from
here."""

from envs.exhaustive import enumerate_game, game_table, solve_game  # noqa: F401  (re-exports)
