"""The contract between the search and a game.

MCGS must know a state's transposition key before it pays for a network
evaluation, so the game model (`Model.transition`) and the network (`eval_fn`)
are two functions; mctx folds both into one `recurrent_fn`.

  Model.root(state) -> Root(embedding, key, legal, terminal)          batched [B]
  Model.transition(params, rng, embedding, action) -> Transition       batched [B]
  eval_fn(params, rng, embedding) -> (prior_logits [B, A], value [B])  value for the player to move

Values follow mctx: Q(s, a) = reward + discount * V(child), with `reward` to
the player who moved and `discount` -1 when the opponent moves next (two-player
zero-sum), +1 when the same player moves again (single-agent), 0 at the end.

`EnvModel` wraps any env of this project (pgx field names plus `key`);
`from_mctx` wraps an mctx `recurrent_fn` and a `key_fn`.
"""

import dataclasses
from typing import Any, Callable

import chex
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib


@chex.dataclass(frozen=True)
class Root:
  """The root of each game as the search sees it (batched over B games).

  Attributes:
    embedding: a pytree of arrays with leading dimension B, the root states.
    key: uint32[B, 2] transposition key.
    legal: bool[B, A] legal actions.
    terminal: bool[B] whether the root is terminal.
  """
  embedding: Any       # pytree [B, ...]
  key: chex.Array      # uint32[B, 2]
  legal: chex.Array    # bool[B, A]
  terminal: chex.Array  # bool[B]


@chex.dataclass(frozen=True)
class Transition:
  """The result of one action in each of B games.

  Attributes:
    embedding: a pytree of arrays with leading dimension B, the child states.
    key: uint32[B, 2] the children's transposition keys.
    reward: f32[B] reward to the player who moved.
    discount: f32[B] multiplies the child's value: -1 when the opponent moves
      next, +1 when the same player moves again, 0 at a terminal child.
    terminal: bool[B] whether the child is terminal.
    legal: bool[B, A] the child's legal actions (none at a terminal child).
  """
  embedding: Any        # pytree [B, ...], the child state
  key: chex.Array       # uint32[B, 2]
  reward: chex.Array    # f32[B], to the player who moved
  discount: chex.Array  # f32[B], multiplies the child's value
  terminal: chex.Array  # bool[B]
  legal: chex.Array     # bool[B, A], the child's legal actions


class Model:
  """A game as the search sees it (subclasses are frozen, hashable)."""

  num_actions: int
  # Equal keys mean equal futures (legal moves, terminal outcomes) whatever
  # the path; the terminal solver needs it (`check_solver`).
  exact_keys: bool = True
  # No key repeats along a line of play (each implies the ply, or a quantity
  # that only grows), so no link closes a cycle: descents skip the cycle
  # test (`selection.tracks_cycles`). False, the safe default, keeps it.
  acyclic_keys: bool = False
  # Every move into a non-terminal position has reward 0 and discount -1
  # (two players alternate, rewards only at the end), so the search takes
  # those values for the edges inside a path instead of reading them
  # (`selection`'s transposition test, the batched backup). False, the safe
  # default, reads them.
  alternating_zero_sum: bool = False

  def root(self, state: Any) -> Root:
    """The root of each game of a batch of states.

    Args:
      state: the batch of root states, leading dimension B.

    Returns:
      Root, fields with leading dimension B.
    """
    raise NotImplementedError

  def transition(self, params: Any, rng: chex.PRNGKey, embedding: Any,
                 action: chex.Array) -> Transition:
    """Applies one action in each game.

    Args:
      params: the parameters passed to the search (used by learned models).
      rng: a PRNG key.
      embedding: a pytree of arrays with leading dimension B, the states.
      action: int32[B] the action taken in each game.

    Returns:
      Transition, fields with leading dimension B.
    """
    raise NotImplementedError

  def priority(self, embedding: Any, legal: chex.Array) -> chex.Array:
    """The moves constraint-first exploration tries first; none by default.

    Args:
      embedding: a pytree of arrays with leading dimension B, the states.
      legal: bool[B, A] their legal actions.

    Returns:
      bool[B, A], the priority moves.
    """
    del embedding
    return jnp.zeros_like(legal)


@dataclasses.dataclass(frozen=True)
class EnvModel(Model):
  """Adapts an env whose states have pgx's fields plus `key` uint32[2]."""
  env: Any

  @property
  def num_actions(self) -> int:
    """A, the env's number of actions."""
    return self.env.num_actions

  @property
  def exact_keys(self) -> bool:
    """Whether the env's keys are exact (`env.exact_keys`, True if absent)."""
    return getattr(self.env, "exact_keys", True)

  @property
  def acyclic_keys(self) -> bool:
    """Whether the env's keys never repeat along a line of play
    (`env.acyclic_keys`, False if absent)."""
    return getattr(self.env, "acyclic_keys", False)

  @property
  def alternating_zero_sum(self) -> bool:
    """Whether every move into a non-terminal position has reward 0 and
    discount -1 (`env.alternating_zero_sum`, False if absent)."""
    return getattr(self.env, "alternating_zero_sum", False)

  def root(self, state):
    """The root of each game: the env state itself.

    Args:
      state: env states with leading dimension B (pgx fields plus `key`).

    Returns:
      Root with `embedding` the states.
    """
    return Root(embedding=state, key=state.key, legal=state.legal_action_mask,
                terminal=state.terminated)

  def priority(self, embedding, legal):
    """The env's priority moves (`env.priority`), none if it has none.

    Args:
      embedding: env states with leading dimension B.
      legal: bool[B, A] their legal actions.

    Returns:
      bool[B, A].
    """
    if hasattr(self.env, "priority"):
      return self.env.priority(embedding)
    return jnp.zeros_like(legal)

  def transition(self, params, rng, embedding, action):
    """Steps the env; reward and discount follow the mover and the next mover.

    Args:
      params: unused (the env is exact).
      rng: unused.
      embedding: env states with leading dimension B.
      action: int32[B].

    Returns:
      Transition with the child env states as embedding.
    """
    del params, rng
    child = self.env.step(embedding, action)
    # The end test (Connect-4's four in a row) feeds the legal mask, the
    # softmax over it, the backup and the node write: computed once, not in
    # each of them. Where it is a stored field (this package's games, pgx's
    # own states) the state's legal mask reads the result too.
    terminal = graph_lib.computed_once(child.terminated)
    if "terminated" in getattr(child, "__dataclass_fields__", {}):
      child = dataclasses.replace(child, terminated=terminal)
    mover = embedding.current_player
    reward = jnp.take_along_axis(child.rewards, mover[:, None], axis=1)[:, 0]
    same_player = child.current_player == mover
    discount = jnp.where(terminal, 0.0, jnp.where(same_player, 1.0, -1.0))
    return Transition(embedding=child, key=child.key, reward=reward.astype(jnp.float32),
                      discount=discount.astype(jnp.float32), terminal=terminal,
                      legal=child.legal_action_mask & ~terminal[:, None])


def as_model(env: Any) -> Model:
  """A `Model` as it is, anything else wrapped as an env.

  Args:
    env: a `Model`, or an env with pgx-style states (wrapped in `EnvModel`).

  Returns:
    The Model.
  """
  return env if isinstance(env, Model) else EnvModel(env)


# ----------------------------------------------------------------------------
# mctx adapter.

# mctx users mask illegal actions by giving them a (very) negative logit.
ILLEGAL_LOGIT = -1e30


@chex.dataclass(frozen=True)
class MctxState:
  """What the adapter stores per node: the user's embedding and the network
  output its `recurrent_fn` produced for it."""
  embedding: Any
  prior_logits: chex.Array  # f32[B, A]
  value: chex.Array         # f32[B]
  key: chex.Array           # uint32[B, 2]
  terminal: chex.Array      # bool[B]


@dataclasses.dataclass(frozen=True)
class MctxModel(Model):
  """Runs an mctx `recurrent_fn(params, rng, action, embedding) ->
  (mctx.RecurrentFnOutput, embedding)` under MCGS.

  The network is called inside `recurrent_fn`, so transpositions save no
  network time here (they still merge statistics and save memory). Keys come
  from `key_fn(embedding) -> uint32[B, 2]`; a child is terminal when its
  discount is 0; actions with logits <= -1e30 count as illegal.
  """
  recurrent_fn: Callable
  key_fn: Callable
  num_actions: int
  exact_keys: bool = True
  acyclic_keys: bool = False
  alternating_zero_sum: bool = False

  def root(self, state: MctxState) -> Root:
    """The root of each game, legal actions read off the prior logits.

    Args:
      state: an MctxState from `make_root`, leading dimension B.

    Returns:
      Root with `embedding` the MctxState.
    """
    return Root(embedding=state, key=state.key,
                legal=(state.prior_logits > ILLEGAL_LOGIT) & ~state.terminal[:, None],
                terminal=state.terminal)

  def make_root(self, root_output: Any, invalid_actions: chex.Array | None = None,
                terminal: chex.Array | None = None) -> MctxState:
    """Builds the search's root state from an `mctx.RootFnOutput`.

    Args:
      root_output: an `mctx.RootFnOutput` with prior_logits f32[B, A],
        value f32[B] and embedding (a pytree with leading dimension B).
      invalid_actions: optional bool[B, A], actions to mask out (mctx's
        convention: True is invalid).
      terminal: optional bool[B], roots that are terminal; None: none.

    Returns:
      MctxState, leading dimension B; pass it as `state` to `mcgs_jax.search`.
    """
    logits = root_output.prior_logits
    if invalid_actions is not None:
      logits = jnp.where(invalid_actions, 2 * ILLEGAL_LOGIT, logits)
    batch = logits.shape[0]
    if terminal is None:
      terminal = jnp.zeros((batch,), bool)
    return MctxState(embedding=root_output.embedding, prior_logits=logits,
                     value=root_output.value, key=self.key_fn(root_output.embedding),
                     terminal=terminal)

  def transition(self, params, rng, embedding, action):
    """Calls `recurrent_fn`; the network output is cached on the child.

    Args:
      params: passed to `recurrent_fn`.
      rng: passed to `recurrent_fn`.
      embedding: MctxState, leading dimension B.
      action: int32[B].

    Returns:
      Transition whose embedding is the child MctxState (its prior logits and
      value are what `MctxEval` returns).
    """
    output, child = self.recurrent_fn(params, rng, action, embedding.embedding)
    terminal = output.discount == 0
    state = MctxState(embedding=child, prior_logits=output.prior_logits,
                      value=output.value, key=self.key_fn(child), terminal=terminal)
    return Transition(embedding=state, key=state.key, reward=output.reward,
                      discount=output.discount, terminal=terminal,
                      legal=(output.prior_logits > ILLEGAL_LOGIT) & ~terminal[:, None])


@dataclasses.dataclass(frozen=True)
class MctxEval:
  """The eval_fn of the mctx adapter: the cached `recurrent_fn` output."""

  def __call__(self, params, rng, state: MctxState):
    """Returns the network output cached by `MctxModel.transition`.

    Args:
      params: unused.
      rng: unused.
      state: MctxState, leading dimension B.

    Returns:
      (prior_logits f32[B, A], value f32[B]).
    """
    del params, rng
    return state.prior_logits, state.value


def from_mctx(recurrent_fn: Callable, key_fn: Callable, num_actions: int,
              exact_keys: bool = True, acyclic_keys: bool = False,
              alternating_zero_sum: bool = False) -> tuple["MctxModel", Callable]:
  """Lets an mctx user keep their `recurrent_fn`.

  Args:
    recurrent_fn: mctx-style `(params, rng, action [B], embedding) ->
      (mctx.RecurrentFnOutput, embedding)`. It must be hashable (a module-level
      function or a frozen dataclass) to be a static jit argument.
    key_fn: `embedding -> uint32[B, 2]` transposition key of each state.
    num_actions: A.
    exact_keys: whether equal keys mean equal futures (the same legal moves,
      rewards and terminal states) whatever path led there. True (default)
      takes `key_fn` at its word, as transpositions already do; pass False
      when the key leaves out path-dependent rules (repetition, ko), which
      makes `search` refuse `SearchConfig.solver`.
    acyclic_keys: whether no key can repeat along a line of play (`key_fn`
      hashes the ply, or a quantity that only grows). True lets descents
      skip the test for links that close cycles; False (default) keeps it,
      which a key of the position alone needs in games where positions recur.
    alternating_zero_sum: whether every step into a non-terminal state has
      reward 0 and discount -1 (two players alternate, rewards only at the
      end). True lets the search skip reading those values inside a path;
      False (default) reads them.

  Returns:
    (model, eval_fn): pass them as `env` and `eval_fn` to `mcgs_jax.search`,
    with `model.make_root(mctx.RootFnOutput(...), invalid_actions)` as state.
  """
  return MctxModel(recurrent_fn=recurrent_fn, key_fn=key_fn, num_actions=num_actions,
                   exact_keys=exact_keys, acyclic_keys=acyclic_keys,
                   alternating_zero_sum=alternating_zero_sum), MctxEval()


def check_solver(model: Model, solver_on: bool) -> None:
  """Refuses the terminal solver on a model whose keys are not exact.

  A proof (a repetition draw, a superko loss, a legal move) found along the
  path that stored a node would spread to every path that links to it.

  Args:
    model: the Model.
    solver_on: the search runs the terminal solver (`rules.of(config).proves`).

  Raises:
    ValueError: (at trace time) the solver is on and
      `model.exact_keys` is False.
  """
  if solver_on and not model.exact_keys:
    name = repr(model.env) if isinstance(model, EnvModel) else type(model).__name__
    raise ValueError(
        f"SearchConfig(solver=True) needs exact keys, but {name} has exact_keys=False: "
        "its keys leave out path-dependent rules (repetition, superko), so a proof along "
        "one path would be taken for every path to the same key. Use solver=False, or keys "
        "that identify the whole state (pgx: PgxEnv(..., key_mode='full'); mctx: "
        "from_mctx(..., exact_keys=True) once key_fn covers the history).")
