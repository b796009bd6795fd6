"""Highest Safe Rung HSR(k, q, n) as an asymmetric two-player game.

A ladder has rungs 0..n-1; the highest safe rung (the answer) is one of the n
rungs 0..n-1 (rung 0 is the ground, always safe). The tester (player 0) has k
jars and q tests; the adversary (player 1) decides, consistently with all
earlier answers, where the jars break. Xu and Lieberherr's HSR game, in the
version used here:

  * State: the interval [lo, hi] of answers still possible (initially
    [0, n-1]), jars left, tests left.
  * Tester's move: test rung r with lo < r <= hi (action r - 1, so actions
    0..n-2). This costs one test. Any other action is illegal and loses.
  * Adversary's move: action 0 "holds" (the answer is >= r: lo = r) or
    action 1 "breaks" (the answer is < r: hi = r - 1, one jar lost). Both
    answers are always consistent with the interval.
  * The game ends after an answer: the tester wins (+1, adversary -1) as soon
    as one answer is left (lo == hi); the adversary wins when more than one
    is left and the tester has no test or no jar left.

The two sides have different action sets in one action space of
`max(n - 1, 2)` actions; the legal mask says whose set applies. Players
alternate, tester first, so `current_player = ply % 2`. With t tests and j
jars the tester can tell apart at most f(j, t) = f(j - 1, t - 1) + f(j, t - 1)
answers (f(0, t) = f(j, 0) = 1), i.e. f(k, q) = sum_{i=0..k} C(q, i), so the
tester can force a win iff n <= f(k, q) (`tester_wins`). HSR(4, 4, 16) is the
narrowest such win: n == f(4, 4) == 16, and one wrong test loses it.

Key (exact): lane 0 = lo | hi << 16, lane 1 = jars | tests << 8 | rung under
test << 16, bit 31 of lane 1 set after an illegal move. Tests left and the
rung under test give the ply, so the key implies the depth and the game graph
is acyclic. Transpositions are frequent: "holds at r, breaks at r'" and
"breaks at r', holds at r" reach the same interval with the same resources.
"""

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp

from mcgs_jax.envs import base

HOLDS = 0
BREAKS = 1
_ILLEGAL_FLAG = 1 << 31


def max_answers(jars: int, tests: int) -> int:
  """f(k, q) = sum_{i=0..k} C(q, i): answers the tester can tell apart.

  Args:
    jars: k.
    tests: q.

  Returns:
    int.
  """
  return sum(math.comb(tests, i) for i in range(min(jars, tests) + 1))


def tester_wins(jars: int, tests: int, answers: int) -> bool:
  """Closed form: the tester can force a win in HSR(jars, tests, answers).

  Args:
    jars: k.
    tests: q.
    answers: n.

  Returns:
    bool, n <= f(k, q).
  """
  return answers <= max_answers(jars, tests)


@chex.dataclass(frozen=True)
class State:
  """One HSR position; every field may carry leading batch dims."""
  lo: chex.Array          # int32[...] lowest answer still possible
  hi: chex.Array          # int32[...] highest answer still possible
  jars: chex.Array        # int32[...] jars left
  tests: chex.Array       # int32[...] tests left
  rung: chex.Array        # int32[...] rung under test (adversary to answer), else 0
  ply: chex.Array         # int32[...]
  terminated: chex.Array  # bool[...]
  rewards: chex.Array     # f32[..., 2] reward of the last move, per player id
  winner: chex.Array      # int32[...] -1 while the game runs
  # bool[..., A]: stored (as pgx does) because its size comes from the env.
  legal_action_mask: chex.Array

  @property
  def current_player(self) -> chex.Array:
    """int32[...]: 0 the tester, 1 the adversary."""
    return self.ply % 2

  @property
  def key(self) -> chex.Array:
    """uint32[..., 2]: exact key (see the module docstring)."""
    u32 = lambda x: jnp.asarray(x).astype(jnp.uint32)
    lo = u32(self.lo) | (u32(self.hi) << 16)
    hi = u32(self.jars) | (u32(self.tests) << 8) | (u32(self.rung) << 16)
    # Legal play keeps "a rung is under test" in step with an odd ply; an
    # illegal move advances the ply but not the position.
    illegal_end = (self.rung > 0) == (self.ply % 2 == 0)
    hi = hi | jnp.where(illegal_end, jnp.uint32(_ILLEGAL_FLAG), jnp.uint32(0))
    return jnp.stack([lo, hi], axis=-1)


@dataclasses.dataclass(frozen=True)
class HSR(base.Env):
  """HSR(k, q, n): k jars, q tests, n possible answers (rungs 0..n-1)."""
  jars: int = 4
  tests: int = 4
  answers: int = 16
  acyclic_keys = True  # the key implies the ply (tests left, the rung under test)
  alternating_zero_sum = True  # players alternate, only the last move is rewarded

  def __post_init__(self):
    if not 2 <= self.answers <= 1 << 15:
      raise ValueError(f"HSR needs 2 <= n <= 32768 possible answers, got n={self.answers}")
    if not (1 <= self.jars <= 255 and 1 <= self.tests <= 255):
      raise ValueError(f"HSR needs 1..255 jars and tests, got k={self.jars}, q={self.tests}")
    base.set_constants(
        self, id=f"hsr:{self.jars},{self.tests},{self.answers}",
        # The tester's rungs, the adversary's two answers.
        num_actions=max(self.answers - 1, 2),
        # Each test takes a tester move and an answer.
        max_game_length=2 * self.tests)

  @property
  def observation_size(self) -> int:
    """2 n + k + q + 3, the length of `observation`."""
    return 2 * self.answers + self.jars + self.tests + 3

  def observation(self, state: State) -> jax.Array:
    """The network input of a state (flat).

    Args:
      state: a State, leading dimensions [...].

    Returns:
      bool[..., 2n + k + q + 3]: answers still possible [n], rung under test
      one-hot [n], jars left one-hot [k+1], tests left one-hot [q+1], player.
    """
    rungs = jnp.arange(self.answers, dtype=jnp.int32)
    possible = (rungs >= state.lo[..., None]) & (rungs <= state.hi[..., None])
    testing = (rungs == state.rung[..., None]) & (state.rung[..., None] > 0)
    jars = state.jars[..., None] == jnp.arange(self.jars + 1)
    tests = state.tests[..., None] == jnp.arange(self.tests + 1)
    player = (state.current_player == 1)[..., None]
    return jnp.concatenate([possible, testing, jars, tests, player], axis=-1)

  def observe(self, state: State) -> jax.Array:
    """The network input: `observation(state)`.

    Args:
      state: a State, leading dimensions [...].

    Returns:
      bool[..., 2n + k + q + 3].
    """
    return self.observation(state)

  def _legal(self, lo, hi, ply, terminated) -> jax.Array:
    """bool[A]: tester: rungs lo+1..hi (action rung - 1); adversary: HOLDS
    and BREAKS; none once terminated."""
    actions = jnp.arange(self.num_actions, dtype=jnp.int32)
    tester = (actions >= lo) & (actions < hi)
    adversary = actions <= BREAKS
    return jnp.where(ply % 2 == 0, tester, adversary) & ~jnp.asarray(terminated, jnp.bool_)

  def _init(self, rng: jax.Array) -> State:
    del rng
    i32 = jnp.int32
    return State(lo=i32(0), hi=i32(self.answers - 1), jars=i32(self.jars),
                 tests=i32(self.tests), rung=i32(0), ply=i32(0),
                 terminated=jnp.bool_(False), rewards=jnp.zeros(2, jnp.float32),
                 winner=i32(-1),
                 legal_action_mask=self._legal(0, self.answers - 1, 0, False))

  def _step(self, state: State, action: jax.Array) -> State:
    """One move of one game: a test by the tester or an answer by the adversary."""
    action = jnp.asarray(action, jnp.int32)
    tester_moves = state.current_player == 0
    in_range = (action >= 0) & (action < self.num_actions)
    legal = in_range & state.legal_action_mask[jnp.clip(action, 0, self.num_actions - 1)]
    breaks = ~tester_moves & (action == BREAKS)
    answered = ~tester_moves & legal
    lo = jnp.where(answered & ~breaks, state.rung, state.lo)
    hi = jnp.where(answered & breaks, state.rung - 1, state.hi)
    jars = state.jars - (answered & breaks).astype(jnp.int32)
    tests = state.tests - (tester_moves & legal).astype(jnp.int32)
    rung = jnp.where(tester_moves & legal, action + 1, 0)
    tester_won = answered & (lo == hi)
    adversary_won = answered & (lo < hi) & ((tests == 0) | (jars == 0))
    mover = state.current_player
    winner = jnp.where(~legal, 1 - mover,
                       jnp.where(tester_won, 0, jnp.where(adversary_won, 1, -1)))
    rewards = base.rewards_for_winner(winner)
    # An illegal move keeps the position and ends the game (as in pgx).
    lo, hi = jnp.where(legal, lo, state.lo), jnp.where(legal, hi, state.hi)
    stepped = state.replace(
        lo=lo, hi=hi, jars=jars, tests=tests, rung=jnp.where(legal, rung, state.rung),
        ply=state.ply + 1, terminated=winner >= 0, rewards=rewards,
        winner=winner.astype(jnp.int32),
        legal_action_mask=self._legal(lo, hi, state.ply + 1, winner >= 0))
    return base.step_unless_terminated(state, stepped)
