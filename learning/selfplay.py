"""Vmapped self-play: B games played by the search, jitted end to end.

One call of `play` advances every game by `num_moves` moves inside one
`lax.scan`. Each move is one search per game (any `SearchConfig`: mcgs, tree,
tt_cache, solver on or off) on the graph kept from the previous move
(`mcgs_jax.reroot`: the played child's subgraph, or a fresh root), the move
drawn from the search policy with a temperature that depends on the move
number, one batched `env.step`, and finished games reset in place.

Targets. A position's value target is the final outcome of its game from the
view of the player who was to move there, known only once that game ends. A
game still running at the end of a call continues in the next call, so every
call looks back over the last `env.max_game_length` moves of the previous one
(the `history` window, longer than any game): positions whose game ended in
this call are emitted now, positions emitted before are not emitted again,
and no position is lost at a call boundary. The examples come out as a fixed
[M] batch with a `valid` mask (M = (H + num_moves) * B), ready for
`mcgs_jax.learning.replay.add`.

The graph is not kept across calls: the network changes between calls, so
each call starts its games from fresh roots (within a call, reuse is exact).
"""

import dataclasses
from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

import mcgs_jax
from mcgs_jax.envs import base
from mcgs_jax import dual
from mcgs_jax.learning import example as example_lib


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
  """Self-play settings (static: hashable).

  Attributes:
    search: the `SearchConfig` of every move's search, or a
      `mcgs_jax.dual.DualConfig` (then `eval_fn` is a `DualEval` and no
      graph is kept between moves). For self-play give it
      root noise (`dirichlet_fraction`, `dirichlet_alpha`) and, with reuse, a
      node capacity above the simulations (`max_nodes` 2-4x), since the kept
      subgraph takes part of it.
    reuse_graph: keep the played child's subgraph for the next search
      (`mcgs_jax.reroot`); False searches every move from a fresh root.
    temperature: the move is drawn from pi(a)^(1/T) during the first
      `temperature_moves` moves of a game (move numbers 0..temperature_moves-1)
      and with `final_temperature` afterwards; T = 0 plays the argmax of pi.
    temperature_moves: see `temperature`.
    final_temperature: see `temperature`.
    opening_plies: a new game starts after k uniformly random moves, k drawn
      from 0..opening_plies per game (positions never seen by the search
      are not recorded); widens the positions self-play visits. 0 (default)
      starts every game from the initial position.
    outcome_weight: the value target is outcome_weight * z + (1 -
      outcome_weight) * v, z the game's final outcome and v the search's root
      value at the position (both from the mover's view). 1 (default) is
      AlphaZero's z; lower values bootstrap from the search, which is less
      noisy when moves are drawn with a temperature late into the game.
    value_lambda: with < 1, z above is the lambda-return of the search values
      instead of the final outcome: G_t = (1 - lambda) v_t + lambda (r_t +
      G_{t+1}), G_{t+1} seen from the mover at t (negated when the other
      player moves next), ending in the outcome; lambda = 1 (default) is the
      outcome itself. A position n moves before the end gets weight
      lambda^n on the outcome and the rest on the search values of the
      positions after it: targets less noisy than the outcome and less
      tied to the network's own value than v_t alone (TD(lambda); for
      two-player zero-sum games).
    fast_simulations: playout cap randomization (KataGo, Wu 2019): with
      > 0, each move is searched with `search.num_simulations` only with
      probability `full_search_prob` (one draw per move for the whole batch)
      and with `fast_simulations` otherwise; a cheap move is played the same
      way but records no policy target (an all-zero policy, which the losses
      skip), only its value target. 0 (default): every move searched fully.
    full_search_prob: see `fast_simulations`.
    opponent_policy: emit `Example.opponent_policy`, the next position's
      policy target, for an auxiliary head.

  With `search.root_policy == "gumbel"` the played move is the Gumbel
  search's own choice (`SearchOutput.action`: sequential halving over the
  top-k of Gumbel noise + logits, which already samples), not a draw from
  the policy, and the temperature settings are not used; the policy target
  is the improved policy softmax(logits + sigma(completed Q)).
  """
  search: mcgs_jax.SearchConfig = mcgs_jax.SearchConfig(num_simulations=64)
  reuse_graph: bool = True
  temperature: float = 1.0
  temperature_moves: int = 10
  final_temperature: float = 0.0
  outcome_weight: float = 1.0
  value_lambda: float = 1.0
  opening_plies: int = 0
  fast_simulations: int = 0
  full_search_prob: float = 0.25
  opponent_policy: bool = False

  def __post_init__(self):
    if self.opening_plies < 0:
      raise ValueError(f"opening_plies must be >= 0, got {self.opening_plies}")
    if not 0 <= self.outcome_weight <= 1:
      raise ValueError(f"outcome_weight must be in [0, 1], got {self.outcome_weight}")
    if not 0 <= self.value_lambda <= 1:
      raise ValueError(f"value_lambda must be in [0, 1], got {self.value_lambda}")
    if self.temperature < 0 or self.final_temperature < 0 or self.temperature_moves < 0:
      raise ValueError("temperatures and temperature_moves must be >= 0")
    if not 0 <= self.fast_simulations <= getattr(self.search, "num_simulations", 0):
      raise ValueError("fast_simulations must be in [0, search.num_simulations] (and needs a "
                       f"single SearchConfig), got {self.fast_simulations}")
    if not 0 < self.full_search_prob <= 1:
      raise ValueError(f"full_search_prob must be in (0, 1], got {self.full_search_prob}")
    if getattr(self.search, "visit_temperature", 0) != 0:
      raise ValueError("self-play draws moves by its own schedule (temperature, "
                       "temperature_moves, final_temperature); leave "
                       "SearchConfig.visit_temperature at 0")

  @property
  def gumbel(self) -> bool:
    """The move is the Gumbel root search's choice."""
    return getattr(self.search, "root_policy", "puct") == "gumbel"

  @property
  def fast_search(self) -> mcgs_jax.SearchConfig:
    """The cheap search of playout cap randomization (same graph capacity)."""
    return dataclasses.replace(self.search, num_simulations=self.fast_simulations)

  def temperature_at(self, move_number: chex.Array) -> chex.Array:
    """The visit temperature of games at `move_number`.

    Args:
      move_number: int32[...], moves played in each game (e.g. [B]).

    Returns:
      f32[...]: `temperature` for the first `temperature_moves` moves, then
      `final_temperature`.
    """
    return jnp.where(move_number < self.temperature_moves, self.temperature,
                     self.final_temperature).astype(jnp.float32)


@chex.dataclass(frozen=True)
class MoveRecord:
  """What one move of one game leaves for the targets (fields [..., B])."""
  observation: chex.Array
  legal_action_mask: chex.Array
  policy: chex.Array       # f32[A], the search policy at the position
  player: chex.Array       # int32, the player to move
  root_value: chex.Array   # f32, the search's value of the position (mover's view)
  rewards: chex.Array      # f32[P], the rewards of the move
  done: chex.Array         # bool, the move ended the game
  filled: chex.Array       # bool, a real move (False: the empty window at start)
  emitted: chex.Array      # bool, already emitted as an example


@chex.dataclass(frozen=True)
class SelfPlayState:
  """The games in progress between calls of `play`.

  Attributes:
    env_state: the env states [B] (the next positions to play).
    move_number: int32[B], moves played so far in each current game.
    history: MoveRecord [H, B], the last H = env.max_game_length moves.
    games_finished: int32[], games ended so far (all calls).
    moves_played: int32[], moves played so far (all calls, all games).
  """
  env_state: Any
  move_number: chex.Array
  history: MoveRecord
  games_finished: chex.Array
  moves_played: chex.Array


@chex.dataclass(frozen=True)
class SelfPlayStats:
  """Sums over the moves of one call of `play` (int32[] or f32[])."""
  moves: chex.Array
  games_finished: chex.Array
  nn_evals: chex.Array          # leaves the network evaluated (SearchStats.nn_evals)
  transposition_hits: chex.Array
  capacity_overflows: chex.Array
  nan_evals: chex.Array
  nodes_kept: chex.Array        # nodes carried into the next search by reuse
  outcome_sum: chex.Array       # f32: sum of player 0's final rewards (finished games)


def _record(env, state, policy, root_value, next_state, filled) -> MoveRecord:
  return MoveRecord(
      observation=env.observe(state),
      legal_action_mask=state.legal_action_mask,
      policy=policy,
      root_value=root_value.astype(jnp.float32),
      player=state.current_player.astype(jnp.int32),
      rewards=next_state.rewards.astype(jnp.float32),
      done=next_state.terminated,
      filled=filled,
      emitted=jnp.zeros_like(filled))


def new_games(rng: chex.PRNGKey, env: Any, batch_size: int, opening_plies: int = 0) -> Any:
  """B initial states, each after k ~ U{0..opening_plies} random legal moves.

  A game that random play ends is restarted from the initial position.

  Args:
    rng: a PRNG key.
    env: the env. Static.
    batch_size: B.
    opening_plies: the most random moves per opening; 0: initial states.

  Returns:
    The env states, leading dimension B.
  """
  init_rng, count_rng, moves_rng = jax.random.split(rng, 3)
  initial = env.init(init_rng, batch_size=batch_size)
  if opening_plies == 0:
    return initial
  plies = jax.random.randint(count_rng, (batch_size,), 0, opening_plies + 1)

  def random_move(ply, state):
    action = base.random_legal_action(jax.random.fold_in(moves_rng, ply),
                                      state.legal_action_mask)
    moved = env.step(state, action)
    play = (ply < plies) & ~state.terminated
    return _where(play, moved, state)

  # A loop, not unrolled plies: XLA fuses the unrolled chain of steps and
  # selects into kernels that recompute it, exponentially in the plies
  # (16 plies of Connect-4: minutes to compile, seconds per call).
  state = jax.lax.fori_loop(0, opening_plies, random_move, initial)
  return _where(state.terminated, initial, state)


# Jitted for `init`, which runs eagerly (fresh runs, checkpoint templates): an
# eager `fori_loop` over a new closure would compile its loop on every call.
_new_games = jax.jit(new_games, static_argnames=("env", "batch_size", "opening_plies"))


def _where(condition, a, b):
  """Per game: `a` where condition [B], else `b`."""
  return jax.tree.map(
      lambda x, y: jnp.where(condition.reshape(condition.shape + (1,) * (x.ndim - 1)), x, y),
      a, b)


def init(rng: chex.PRNGKey, env: Any, batch_size: int, opening_plies: int = 0) -> SelfPlayState:
  """B new games (see `new_games`) and an empty history window.

  Args:
    rng: a PRNG key.
    env: the env. Static.
    batch_size: B.
    opening_plies: the most random opening moves per game.

  Returns:
    SelfPlayState with history MoveRecord [H, B], H = env.max_game_length.
  """
  state = _new_games(rng, env, batch_size, opening_plies)
  num_actions = env.num_actions
  empty_policy = jnp.zeros((batch_size, num_actions), jnp.float32)
  blank = _record(env, state, empty_policy, jnp.zeros((batch_size,), jnp.float32), state,
                  jnp.zeros((batch_size,), jnp.bool_))
  history = jax.tree.map(
      lambda x: jnp.zeros((env.max_game_length,) + x.shape, x.dtype), blank)
  return SelfPlayState(env_state=state, move_number=jnp.zeros((batch_size,), jnp.int32),
                       history=history, games_finished=jnp.int32(0),
                       moves_played=jnp.int32(0))


def example_like(env: Any, opponent_policy: bool = False) -> example_lib.Example:
  """Shapes and dtypes of one example of `env` (for `replay.init`).

  Args:
    env: the env.
    opponent_policy: include `Example.opponent_policy` [A].

  Returns:
    Example of `jax.ShapeDtypeStruct`s, without a batch dimension:
    observation [*obs_shape], legal_action_mask [A], policy [A], player [],
    value [].
  """
  def fields():
    state = env.init(jax.random.PRNGKey(0))
    return env.observe(state), state.legal_action_mask

  observation, legal = jax.eval_shape(fields)
  return example_lib.Example(
      observation=observation, legal_action_mask=legal,
      policy=jax.ShapeDtypeStruct((env.num_actions,), jnp.float32),
      player=jax.ShapeDtypeStruct((), jnp.int32), value=jax.ShapeDtypeStruct((), jnp.float32),
      opponent_policy=(jax.ShapeDtypeStruct((env.num_actions,), jnp.float32)
                       if opponent_policy else None))


def _draw_action(rng, policy, temperature):
  """int32[B]: argmax of `policy` [B, A] where T = 0, else a draw from
  policy^(1/T)."""
  greedy = jnp.argmax(policy, axis=-1)
  safe_t = jnp.where(temperature > 0, temperature, 1.0)[:, None]
  logits = jnp.where(policy > 0, jnp.log(jnp.maximum(policy, 1e-30)) / safe_t, -jnp.inf)
  drawn = jax.random.categorical(rng, logits, axis=-1)
  return jnp.where(temperature > 0, drawn, greedy).astype(jnp.int32)


def _outcomes(records: MoveRecord) -> tuple[chex.Array, chex.Array]:
  """Value targets of the records [T, B] and whether they are known.

  G_t = r_t + G_{t+1} (for every player), restarted where a game ended at t;
  the target of move t is G_t[player_t]. It is known iff the game of move t
  ended at or after t within the window.
  """
  def back(carry, record):
    returns, known = carry
    returns = record.rewards + jnp.where(record.done[:, None], 0.0, returns)
    known = record.done | known
    value = jnp.take_along_axis(returns, record.player[:, None], axis=-1)[:, 0]
    return (returns, known), (value, known)

  batch, num_players = records.rewards.shape[1:]
  carry = (jnp.zeros((batch, num_players), jnp.float32), jnp.zeros((batch,), jnp.bool_))
  _, (values, known) = jax.lax.scan(back, carry, records, reverse=True)
  return values, known


def _lambda_returns(records: MoveRecord, value_lambda: float) -> chex.Array:
  """The lambda-returns of the records [T, B] (`SelfPlayConfig.value_lambda`).

  G_t = (1 - lambda) v_t + lambda (r_t[p_t] + s_t G_{t+1}), with s_t = 1 when
  p_{t+1} = p_t and -1 otherwise, and G_{t+1} = 0 where the game ended at t.
  Valid where `_outcomes` says the outcome is known.
  """
  def back(carry, record):
    following, next_player = carry
    reward = jnp.take_along_axis(record.rewards, record.player[:, None], axis=-1)[:, 0]
    sign = jnp.where(next_player == record.player, 1.0, -1.0)
    tail = reward + jnp.where(record.done, 0.0, sign * following)
    value = (1 - value_lambda) * record.root_value + value_lambda * tail
    return (value, record.player), value

  batch = records.player.shape[1]
  carry = (jnp.zeros((batch,), jnp.float32), jnp.zeros((batch,), jnp.int32))
  _, values = jax.lax.scan(back, carry, records, reverse=True)
  return values


def _next_policies(records: MoveRecord) -> chex.Array:
  """f32[T, B, A]: the policy target of the move after each record in the
  same game; zero where the game ended (or the window does).
  """
  following = jnp.concatenate([records.policy[1:], jnp.zeros_like(records.policy[:1])])
  return jnp.where(records.done[..., None], 0.0, following)


def _search(params, rng, graph, env, eval_fn, search_config):
  """Runs the simulations on `graph`; (SearchOutput, graph)."""
  graph = mcgs_jax.run_simulations(params, rng, graph, env, eval_fn, search_config)
  return mcgs_jax.summarize(graph, search_config), graph


class MoveSearch(NamedTuple):
  """How `play` searches each move, chosen once from the search config.

  Attributes:
    start: (rng, env_state [B]) -> the carried graph (None: none carried).
    search: (rng, graph, env_state) -> (SearchOutput, graph, full): `full`
      bool scalar, whether the move got the full search (None: always).
    after_move: (rng, graph, action [B], env_state [B] after the move and
      the resets, done bool[B] the games the move ended) -> (graph, nodes
      kept int32).
  """
  start: Callable
  search: Callable
  after_move: Callable


def _one_graph(params, env, eval_fn, config: SelfPlayConfig) -> MoveSearch:
  """One `mcgs_jax` graph per game, kept between moves (`reuse_graph`) or
  built anew; playout cap randomization with `fast_simulations`."""
  search_config = config.search

  def start(rng, env_state):
    return mcgs_jax.init(params, rng, env_state, env, eval_fn, search_config)

  def search(rng, graph, env_state):
    del env_state   # the graph's root is the position
    if not config.fast_simulations:
      # No cheap searches: no conditional (its other branch would be traced
      # and compiled for nothing).
      out, graph = _search(params, rng, graph, env, eval_fn, search_config)
      return out, graph, None
    full = jax.random.uniform(jax.random.fold_in(rng, 1)) < config.full_search_prob
    out, graph = jax.lax.cond(
        full, lambda g: _search(params, rng, g, env, eval_fn, search_config),
        lambda g: _search(params, rng, g, env, eval_fn, config.fast_search), graph)
    return out, graph, full

  def after_move(rng, graph, action, env_state, done):
    if config.reuse_graph:
      with jax.named_scope("reroot"):
        graph = mcgs_jax.reroot(params, rng, graph, action, env_state, env, eval_fn,
                                search_config)
      return graph, jnp.where(done, 0, graph.nodes_used).sum()
    return mcgs_jax.init(params, rng, env_state, env, eval_fn, search_config), jnp.int32(0)

  return MoveSearch(start, search, after_move)


def _two_graphs(params, env, eval_fn, config: SelfPlayConfig) -> MoveSearch:
  """A dual search (`mcgs_jax.dual`): each move builds its own two graphs,
  none carried between moves."""
  def search(rng, graph, env_state):
    del graph
    out = dual.search(params, rng, env_state, env, eval_fn, config.search)
    return out, out.graph, None

  return MoveSearch(start=lambda rng, env_state: None, search=search,
                    after_move=lambda rng, graph, action, env_state, done: (None, jnp.int32(0)))


def play(params: Any, rng: chex.PRNGKey, state: SelfPlayState, env: Any, eval_fn: Any,
         config: SelfPlayConfig, num_moves: int):
  """Plays `num_moves` moves in every game.

  Args:
    params: network parameters for `eval_fn`.
    rng: a PRNG key.
    state: `SelfPlayState` [B] from `init` or the previous call.
    env: the env. Static.
    eval_fn: `(params, rng, env_state [B]) -> (logits [B, A], value [B])`. Static.
    config: `SelfPlayConfig`. Static.
    num_moves: moves per game in this call. Static.

  Returns:
    (state, examples, valid, stats): the new `SelfPlayState`; `Example`
    [M], M = (H + num_moves) * B, and bool[M], the rows whose game ended
    (each position is valid in exactly one call); `SelfPlayStats`.
    Jit with `static_argnames=("env", "eval_fn", "config", "num_moves")`.
  """
  batch = state.move_number.shape[0]
  init_rng, moves_rng = jax.random.split(rng)
  moves = (_two_graphs if isinstance(config.search, dual.DualConfig) else _one_graph)(
      params, env, eval_fn, config)
  graph = moves.start(init_rng, state.env_state)

  def move(carry, move_rng):
    env_state, move_number, graph = carry
    search_rng, action_rng, reset_rng, reroot_rng = jax.random.split(move_rng, 4)
    out, graph, full = moves.search(search_rng, graph, env_state)
    # A search without simulations leaves no visits: fall back to its prior.
    has_policy = out.action_weights.sum(axis=-1, keepdims=True) > 0
    policy = jnp.where(has_policy, out.action_weights, graph.prior[:, 0])
    if config.gumbel:
      action = out.action
    else:
      action = _draw_action(action_rng, policy, config.temperature_at(move_number))
    next_state = env.step(env_state, action)
    if full is not None:
      # A cheap search's policy is no target (all zero: the losses skip it).
      policy = jnp.where(full, policy, 0.0)
    record = _record(env, env_state, policy, out.root_value, next_state,
                     jnp.ones((batch,), jnp.bool_))
    done = next_state.terminated
    fresh = new_games(reset_rng, env, batch, config.opening_plies)
    env_state = _where(done, fresh, next_state)
    move_number = jnp.where(done, 0, move_number + 1)
    graph, nodes_kept = moves.after_move(reroot_rng, graph, action, env_state, done)
    stats = SelfPlayStats(
        moves=jnp.int32(batch),
        games_finished=done.sum(dtype=jnp.int32),
        nn_evals=out.stats.nn_evals.sum(),
        transposition_hits=out.stats.transposition_hits.sum(),
        capacity_overflows=out.stats.capacity_overflows.sum(),
        nan_evals=out.stats.nan_evals.sum(),
        nodes_kept=nodes_kept,
        outcome_sum=jnp.where(done, next_state.rewards[:, 0], 0.0).sum())
    return (env_state, move_number, graph), (record, stats)

  (env_state, move_number, _), (records, per_move) = jax.lax.scan(
      move, (state.env_state, state.move_number, graph),
      jax.random.split(moves_rng, num_moves))
  stats = jax.tree.map(lambda x: x.sum(axis=0), per_move)

  window = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), state.history, records)
  values, known = _outcomes(window)
  if config.value_lambda < 1:
    values = _lambda_returns(window, config.value_lambda)
  valid = window.filled & known & ~window.emitted
  if config.outcome_weight < 1:
    values = (config.outcome_weight * values
              + (1 - config.outcome_weight) * window.root_value)
  examples = example_lib.Example(
      observation=window.observation, legal_action_mask=window.legal_action_mask,
      policy=window.policy, player=window.player, value=values,
      opponent_policy=_next_policies(window) if config.opponent_policy else None)
  history_length = state.history.done.shape[0]
  window = window.replace(emitted=window.emitted | (window.filled & known))
  history = jax.tree.map(lambda x: x[-history_length:], window)
  flat = lambda x: x.reshape((-1,) + x.shape[2:])
  new_state = SelfPlayState(
      env_state=env_state, move_number=move_number, history=history,
      games_finished=state.games_finished + stats.games_finished,
      moves_played=state.moves_played + stats.moves)
  return new_state, jax.tree.map(flat, examples), flat(valid), stats
