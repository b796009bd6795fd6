"""Two searches sharing one decision: MPV-MCTS (Lan et al. 2019) and Dual MCTS.

A small search T_S with budget b_S and a cheap evaluator f_S, and a large
search T_L with budget b_L and an accurate evaluator f_L, both from the same
root, built from the engine's own pieces (`engine.init`, `run_simulations`,
`simulation_step`):

  1. T_S runs its share of b_S simulations with f_S (plain PUCT, any backup:
     "tree" or "mcgs", with its own switches, e.g. the sliding window).
  2. T_L runs its share of b_L simulations, each leaf chosen by priority:
     the state of T_S with the most T_S visits (ties: the older node) that
     T_L does not hold yet and whose T_S path T_L holds down to the last
     edge. T_L steps the model along that path, evaluates the new state with
     f_L and backs up alpha * V_S(s) + (1 - alpha) * f_L(s), V_S(s) the
     state's value in T_S (the small search's look-ahead, mixed in as
     AlphaGo mixed rollouts into its value network; `value_mix` = alpha). A
     simulation without such a state (T_S has none left, or rarely its path
     is not in T_L) selects in T_L by PUCT instead, as Lan et al. do.
  3. Shared states: every state of T_S that T_L holds (same key) takes T_L's
     prior and value (the f_L evaluation, mixed as above), its value sum
     corrected by the difference, so a state common to both searches has
     one policy and one value, and later T_S simulations use them.
  With `rounds` R > 1 the budgets are split into R shares and 1-3 repeat, so
  T_S profits from f_L's priors in the later rounds (the networks take
  turns, as Lan et al. allow). The move, the policy target and the root
  value are T_L's (`policies.summarize`); the counters are both searches'
  sums.

Dual MCTS (the paper) is this search with ONE two-head network (f_S its
small head, f_L the whole network) and, in both searches, the sliding-window
backup (`SearchConfig.backup_window`) with epsilon-greedy exploration that
decays over the search (`eps_greedy`, `eps_decay`); MPV-MCTS is the same
search with two separate networks (`networks.NetworkPair`) and the plain
backup. Every step is batched over the games (one `eval_fn` call per
simulation step) and jitted: `search` takes static `env`, `eval_fn`
(`DualEval`) and `config` (`DualConfig`).
"""

import dataclasses
import functools
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import model as model_lib
from mcgs_jax import policies
from mcgs_jax import rules
from mcgs_jax import selection
# Functions, not the module: the package binds the name `search` to the function.
from mcgs_jax.engine import init as _init
from mcgs_jax.engine import run_simulations as _run_simulations
from mcgs_jax.engine import simulation_step as _simulation_step


@dataclasses.dataclass(frozen=True)
class DualEval:
  """The two evaluators of a dual search, both called with the same params.

  Attributes:
    small: f_S, `(params, rng, state [B]) -> (logits [B, A], value [B])`.
    large: f_L, the same signature.
  """
  small: Any
  large: Any

  def __call__(self, params: Any, rng: chex.PRNGKey, state: Any):
    """f_L: where one evaluator is wanted (the raw policy), the large one.

    Args:
      params: network parameters, passed to `large`.
      rng: a PRNG key.
      state: a batch of env states [B].

    Returns:
      (logits f32[B, A], value f32[B]), `large`'s evaluation.
    """
    return self.large(params, rng, state)


@dataclasses.dataclass(frozen=True)
class DualConfig:
  """Hyperparameters of a dual search (static, hashable).

  Attributes:
    small: SearchConfig of T_S; `num_simulations` is b_S.
    large: SearchConfig of T_L; `num_simulations` is b_L.
    value_mix: alpha, the weight of T_S's value of a state in the value T_L
      backs up for it: alpha V_S(s) + (1 - alpha) f_L(s).
    rounds: R, turns of the two searches (budgets split evenly).
  """
  small: config_lib.SearchConfig = config_lib.SearchConfig(num_simulations=50)
  large: config_lib.SearchConfig = config_lib.SearchConfig(num_simulations=35)
  value_mix: float = 0.5
  rounds: int = 1

  def __post_init__(self):
    if not 0 <= self.value_mix <= 1:
      raise ValueError(f"value_mix must be in [0, 1], got {self.value_mix}")
    if self.rounds < 1:
      raise ValueError(f"rounds must be >= 1, got {self.rounds}")
    for name, config in (("small", self.small), ("large", self.large)):
      if not config.plain_descent:
        raise ValueError(
            f"the {name} search of a dual search must run its whole budget with PUCT and "
            "store every leaf: no solver, max_nn_evals, leaves_per_step > 1, Gumbel root "
            "or deferred expansion")
      if config.visit_temperature > 0 and name == "small":
        raise ValueError("the small search's move is never played: leave its "
                         "visit_temperature at 0")

  @property
  def num_simulations(self) -> int:
    """b_S + b_L."""
    return self.small.num_simulations + self.large.num_simulations

  @property
  def visit_temperature(self) -> float:
    """T_L's `visit_temperature` (the played move is T_L's)."""
    return self.large.visit_temperature


def _share(total: int, rounds: int, r: int) -> int:
  """Round r's share of `total` simulations (the remainder goes first)."""
  return total // rounds + (r < total % rounds)


def _round_config(config: config_lib.SearchConfig, share: int) -> config_lib.SearchConfig:
  # The graph keeps the whole search's capacity across rounds.
  return dataclasses.replace(config, num_simulations=share, max_nodes=config.node_capacity,
                             table_size=config.table_capacity)


def parents(graph: graph_lib.Graph) -> tuple[chex.Array, chex.Array]:
  """ONE game's parent pointers, the lowest-index parent edge of each node.

  Lower indices are older nodes, so following them reaches the root.

  Args:
    graph: ONE game's Graph (node tensors [N, ...], child int32[N, A]).

  Returns:
    (node, action): node int32[N] and action int32[N] of each node's
    lowest-index parent edge, -1 for the root and free nodes.
  """
  num_nodes, num_actions = graph.child.shape
  code = (jnp.arange(num_nodes, dtype=jnp.int32)[:, None] * num_actions
          + jnp.arange(num_actions, dtype=jnp.int32)[None, :])
  target = jnp.where(graph.child >= 0, graph.child, num_nodes)
  none = num_nodes * num_actions
  best = jnp.full((num_nodes,), none, jnp.int32).at[target.ravel()].min(code.ravel(),
                                                                          mode="drop")
  found = best < none
  return jnp.where(found, best // num_actions, -1), jnp.where(found, best % num_actions, -1)


def key_match(small: graph_lib.Graph, large: graph_lib.Graph) -> tuple[chex.Array, chex.Array]:
  """ONE game: for each node of `small`, a stored node of `large` with its key.

  Args:
    small: ONE game's T_S (key uint32[N_S, 2]).
    large: ONE game's T_L (key uint32[N_L, 2]).

  Returns:
    (found, index): found bool[N_S], whether a used node of `large` has the
    same key; index int32[N_S], the lowest such node of `large` (0 where none).
  """
  used = jnp.arange(large.visits.shape[0]) < large.stats.nodes_used
  same = jnp.all(small.key[:, None, :] == large.key[None, :, :], axis=-1) & used[None, :]
  return jnp.any(same, axis=1), jnp.argmax(same, axis=1).astype(jnp.int32)


def guided_selection(small: graph_lib.Graph, large: graph_lib.Graph, parent_node: chex.Array,
                     parent_action: chex.Array, tried: chex.Array,
                     config: config_lib.SearchConfig, tracks: bool):
  """ONE game: the large search's next leaf by the small search's priority.

  Args:
    small, large: ONE game's T_S and T_L.
    parent_node, parent_action: T_S's `parents`.
    tried: bool[N_S], T_S nodes already chosen in this phase.
    config: the large search's SearchConfig (reads `max_depth`, D, the
      length of the path arrays).
    tracks: whether the path is marked for the cycle test
      (`selection.tracks_cycles`), as the large search's descents are.

  Returns:
    (selection, ok, target): the Selection of the edge of T_L that leads to
    the target's state, whether it is usable (a target exists, its path is in
    T_L down to an unexpanded last edge), and the target (T_S node index).
  """
  max_depth = config.max_depth
  num_nodes = small.visits.shape[0]
  index = jnp.arange(num_nodes, dtype=jnp.int32)
  in_large, _ = key_match(small, large)
  candidate = (index > 0) & (index < small.stats.nodes_used) & ~in_large & ~tried
  # Most visits first; among equal visits the older node (a parent before
  # its child).
  score = jnp.where(candidate, small.visits.astype(jnp.float32) - index / (num_nodes + 1.0),
                    -jnp.inf)
  target = jnp.argmax(score).astype(jnp.int32)
  has_target = candidate[target]

  def up(carry):
    node, depth, actions = carry
    return parent_node[node], depth + 1, actions.at[depth].set(parent_action[node])

  top, length, reversed_actions = jax.lax.while_loop(
      lambda c: (c[0] > 0) & (c[1] < max_depth) & (parent_node[c[0]] >= 0), up,
      (target, jnp.int32(0), jnp.zeros((max_depth,), jnp.int32)))
  steps = jnp.arange(max_depth)
  path_actions = jnp.where(steps < length,
                           reversed_actions[jnp.clip(length - 1 - steps, 0, max_depth - 1)], 0)

  def down(carry):
    k, node, ok, path_nodes = carry
    path_nodes = path_nodes.at[k].set(node)
    child = large.child[node, path_actions[k]]
    last = k == length - 1
    ok &= jnp.where(last, child == graph_lib.UNEXPANDED, child >= 0)
    return k + 1, jnp.where(last, node, jnp.maximum(child, 0)), ok, path_nodes

  _, parent, ok, path_nodes = jax.lax.while_loop(
      lambda c: (c[0] < length) & c[2], down,
      (jnp.int32(0), jnp.int32(0), jnp.bool_(True), jnp.zeros((max_depth,), jnp.int32)))
  ok &= has_target & (top == 0) & (length > 0)
  last = jnp.maximum(length - 1, 0)
  sel = graph_lib.Selection(
      path_nodes=path_nodes, path_actions=path_actions, length=length,
      kind=jnp.int32(graph_lib.EXPAND), parent=parent, action=path_actions[last],
      start=jnp.int32(0), explored=jnp.bool_(False), stale=jnp.int32(-1),
      path_marks=selection.mark_path(path_nodes, length, large.capacity, tracks))
  return sel, ok, target


def share_states(small: graph_lib.Graph, large: graph_lib.Graph) -> graph_lib.Graph:
  """ONE game: the nodes of T_S whose state T_L holds take T_L's evaluation.

  The shared-state rule: such a node takes T_L's prior and value, and its
  value sum moves by the change of its own evaluation.

  Args:
    small: ONE game's T_S [N_S, A].
    large: ONE game's T_L [N_L, A].

  Returns:
    T_S [N_S, A] with `prior`, `nn_value` and `value_sum` updated on the
    nodes `key_match` finds in T_L.
  """
  found, match = key_match(small, large)
  value = jnp.where(found, large.nn_value[match], small.nn_value)
  return small.replace(
      prior=jnp.where(found[:, None], large.prior[match], small.prior),
      value_sum=small.value_sum + jnp.where(found & (small.visits > 0),
                                            value - small.nn_value, 0.0),
      nn_value=value)


def _large_phase(params, rng, small, large, model, eval_fn, config: DualConfig, count: int):
  """`count` simulations of T_L, leaves by T_S's priority (see the module
  docstring); PUCT where no prioritised leaf is usable. Simulation i is a
  `engine.simulation_step` with `fold_in(rng, i)`, this selection rule and
  the value mix."""
  large_config = config.large
  parent_node, parent_action = jax.vmap(parents)(small)
  guide = jax.vmap(functools.partial(guided_selection, config=large_config,
                                     tracks=selection.tracks_cycles(large_config, model)))

  def body(i, carry):
    large, tried = carry
    guided, ok, target = guide(small, large, parent_node, parent_action, tried)

    def select(graph, rng):   # T_S's priority where usable, else PUCT; Selection [1, B]
      puct = selection.select_batch(graph, rng, model, selection.Settings.of(large_config),
                                    rules.of(large_config))
      pick = lambda a, b: jnp.where(ok.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
      return jax.tree.map(lambda a, b: pick(a, b)[None], guided, puct)

    small_value = jax.vmap(lambda g, n: graph_lib.node_value(g.visits[n], g.value_sum[n]))(
        small, target)

    def mix(value):   # alpha V_S(s) + (1 - alpha) f_L(s) at a prioritised leaf; f32[1, B]
      return jnp.where(ok, config.value_mix * small_value + (1 - config.value_mix) * value,
                       value)

    large, _ = _simulation_step(params, jax.random.fold_in(rng, i), large, model, eval_fn,
                                large_config, select, mix)
    # A target whose path T_L lacks is not retried (PUCT took the simulation).
    tried = jax.vmap(lambda t, n: t.at[n].set(True))(tried, target)
    return large, tried

  tried = jnp.zeros(small.visits.shape, jnp.bool_)
  large, _ = jax.lax.fori_loop(0, count, body, (large, tried))
  return large


def run(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: DualEval,
        config: DualConfig) -> tuple[graph_lib.Graph, graph_lib.Graph]:
  """Both searches from the batch of states [B] (see the module docstring).

  Args:
    params: network parameters, passed to both evaluators (and the model).
    rng: a PRNG key.
    state: a batch of env states (pgx fields plus `key` uint32[B, 2]).
    env: an env of this project or a `mcgs_jax.Model`. Static (hashable).
    eval_fn: `DualEval`, f_S and f_L. Static (hashable).
    config: `DualConfig`. Static.

  Returns:
    (small, large): the Graphs of T_S and T_L, each [B, N, A] (N the node
    capacity of its own SearchConfig).

  Raises:
    ValueError: (at trace time) an unbatched state (see `engine.init`).
  """
  model = model_lib.as_model(env)
  small_rng, large_rng, sims_rng = jax.random.split(rng, 3)
  small = _init(params, small_rng, state, model, eval_fn.small, config.small)
  large = _init(params, large_rng, state, model, eval_fn.large, config.large)
  small = jax.vmap(share_states)(small, large)
  for r in range(config.rounds):
    round_rng = jax.random.fold_in(sims_rng, r)
    small_share = _share(config.small.num_simulations, config.rounds, r)
    large_share = _share(config.large.num_simulations, config.rounds, r)
    small = _run_simulations(params, jax.random.fold_in(round_rng, 0), small, model,
                                       eval_fn.small, _round_config(config.small, small_share))
    large = _large_phase(params, jax.random.fold_in(round_rng, 1), small, large, model,
                         eval_fn.large, config, large_share)
    small = jax.vmap(share_states)(small, large)
  return small, large


def search(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: DualEval,
           config: DualConfig) -> policies.SearchOutput:
  """A dual search from every state of the batch [B] (see the module docstring).

  Jit with `static_argnames=("env", "eval_fn", "config")`.

  Args:
    params: network parameters, passed to both evaluators (and the model).
    rng: a PRNG key.
    state: a batch of env states (pgx fields plus `key` uint32[B, 2]).
    env: an env of this project or a `mcgs_jax.Model`. Static (hashable).
    eval_fn: `DualEval`, f_S and f_L, each `(params, rng, state [B]) ->
      (logits [B, A], value [B])`. Static (hashable).
    config: `DualConfig`. Static.

  Returns:
    SearchOutput of T_L (its move, policy and values; `graph` is T_L), the
    counters summed over both searches; fields with leading dimension B.

  Raises:
    ValueError: (at trace time) an unbatched state (see `engine.init`).
  """
  run_rng, out_rng = jax.random.split(rng)
  small, large = run(params, run_rng, state, env, eval_fn, config)
  out = policies.summarize(large, config.large, out_rng)
  return out.replace(stats=jax.tree.map(jnp.add, small.stats, large.stats))


def window_for(num_states: float, minimum: int = 2) -> int:
  """The sliding window for a game of S states.

  The Dual MCTS paper's "small for Nim, growing with the logarithm of the state
  space"; the base is this library's choice.

  Args:
    num_states: S, the number of states of the game.
    minimum: the smallest window returned.

  Returns:
    max(minimum, ceil(log10 S)).
  """
  return max(minimum, math.ceil(math.log10(max(num_states, 1.0))))
