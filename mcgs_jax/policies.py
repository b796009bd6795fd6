"""Root policy and move choice: root noise, the policy after the search, the move.

pi(a) = N(root, a) / sum_b N(root, b) (eq. 12 with tau = 1). With Q-value
move selection on (`q_value_weight` > 0), let a_alpha and a_beta be the most
and second most visited actions and Q_delta = Q(a_beta) - Q(a_alpha) (eq. 13):
when Q_delta > 0, pi(a_beta) += q_value_weight * Q_delta * pi(a_alpha)
(eq. 14-15), then pi is renormalised. With the Q-veto (`q_veto_delta` > 0),
when Q_delta > q_veto_delta the two actions swap their weights, so a second
move that has been found clearly better is played at once, as the reference
engine does. The played move is the argmax of pi (ties: higher prior), or a
draw from pi^(1/T) with `visit_temperature` T > 0. With
`move_choice="lcb"` the played move is instead the root move of highest lower
confidence bound Q(a) - lcb_z * sigma(a) / sqrt(N(a)) (Park's AlphaZero
slides, "Play policy"; sigma the Bhatia-Davis bound of `pruning`) among the
moves with N(a) >= lcb_min_visit_fraction * max_b N(b), which always include
the most visited one; `action_weights` stay pi, the training target. With
`root_policy == "gumbel"`, pi is the improved policy softmax(logits +
sigma(completed Q)) and the move the Gumbel choice (`gumbel.root_decision`).

`summarize` reads all of it off the root of each game into a `SearchOutput`.
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import depth_i
from mcgs_jax import graph as graph_lib
from mcgs_jax import pruning
from mcgs_jax import rules
from mcgs_jax import solver


@chex.dataclass(frozen=True)
class SearchOutput:
  """What `search` returns for a batch of B games (A actions).

  Attributes:
    action: int32[B], the played move (see `choose_action`); 0 where the root is
      terminal or has no legal move.
    action_weights: f32[B, A], the root policy: the visit distribution after the
      Q-value corrections, or the Gumbel improved policy; 0 on illegal moves. All
      zeros where the root is terminal or has no legal move (no simulation ran):
      mask such rows out of a policy loss instead of normalising them.
    root_value: f32[B], V(root) from the view of the player to move at the root.
    q_values: f32[B, A], the root edges' Q from the mover's view (`q_init` where
      unvisited, -inf on illegal moves).
    visit_counts: int32[B, A], the root edges' visits.
    root_solved: int32[B], `graph.UNKNOWN`, `WIN`, `LOSS` or `DRAW` (with the solver).
    root_end_in_ply: int32[B], plies to the end of a proven root.
    stats: the search's counters (`SearchStats`), each int32[B].
    graph: the searched graph [B, N, A], for reuse between moves (`advance`,
      `reroot`) and analysis.
  """
  action: chex.Array
  action_weights: chex.Array
  root_value: chex.Array
  q_values: chex.Array
  visit_counts: chex.Array
  root_solved: chex.Array
  root_end_in_ply: chex.Array
  stats: graph_lib.SearchStats
  graph: graph_lib.Graph


def add_dirichlet_noise(rng: chex.PRNGKey, prior: chex.Array, legal: chex.Array,
                        config: config_lib.SearchConfig) -> chex.Array:
  """AlphaZero's root exploration noise.

  Args:
    rng: a PRNG key.
    prior: f32[B, A] root priors.
    legal: bool[B, A].
    config: reads `dirichlet_fraction` f and `dirichlet_alpha`.

  Returns:
    f32[B, A]: (1 - f) prior + f Dir(alpha) over each game's legal actions.
  """
  # Gamma(alpha) draws normalised over the legal actions are Dir(alpha).
  gammas = jnp.where(legal, jax.random.gamma(rng, config.dirichlet_alpha, prior.shape), 0.0)
  total = gammas.sum(axis=-1, keepdims=True)
  noise = jnp.where(total > 0, gammas / jnp.where(total > 0, total, 1.0), 0.0)
  f = config.dirichlet_fraction
  return (1.0 - f) * prior + f * noise


def noisy_root_prior(rng: chex.PRNGKey, prior: chex.Array, legal: chex.Array,
                     config: config_lib.SearchConfig) -> chex.Array:
  """The root prior the search uses: with AlphaZero's noise where the config
  asks for it (`dirichlet_fraction` > 0), else as it is.

  Args:
    rng: a PRNG key (not split where there is no noise).
    prior: f32[B, A] root priors.
    legal: bool[B, A].
    config: reads `dirichlet_fraction` and `dirichlet_alpha`.

  Returns:
    f32[B, A].
  """
  if config.dirichlet_fraction <= 0:
    return prior
  return add_dirichlet_noise(rng, prior, legal, config)


def renoise_roots(rng: chex.PRNGKey, graph: graph_lib.Graph,
                  config: config_lib.SearchConfig,
                  rows: chex.Array | None = None) -> graph_lib.Graph:
  """A kept graph's roots with fresh noise on their priors, where the config
  asks for noise (`noisy_root_prior`; a new root has it from `engine.init`).

  Args:
    rng: a PRNG key.
    graph: Graph [B, N, A] whose node 0 is each game's root.
    config: reads `dirichlet_fraction` and `dirichlet_alpha`.
    rows: optional bool[B], the games whose roots get fresh noise (all
      without it); each game's noise is the same either way.

  Returns:
    The graph, its roots' priors re-noised (the graph itself without noise).
  """
  if config.dirichlet_fraction <= 0:
    return graph
  legal = graph.child[:, 0] != graph_lib.ILLEGAL
  noisy = add_dirichlet_noise(rng, graph.prior[:, 0], legal, config)
  if rows is not None:
    noisy = jnp.where(rows[:, None], noisy, graph.prior[:, 0])
  return graph.replace(prior=graph.prior.at[:, 0].set(noisy))


def with_root_gumbel(rng: chex.PRNGKey, graph: graph_lib.Graph, legal: chex.Array,
                     config: config_lib.SearchConfig) -> graph_lib.Graph:
  """The graph with fresh root state for a search (`plugins.Plugins.root_noise`:
  the Gumbel root's noise, `gumbel.draw_noise`), as it is otherwise.

  Args:
    rng: a PRNG key.
    graph: Graph [B, N, A].
    legal: bool[B, A], the roots' legal actions.
    config: SearchConfig (a PUCT root draws nothing).

  Returns:
    The graph.
  """
  root_noise = rules.of(config).root_noise
  if root_noise is None:
    return graph
  return root_noise(rng, graph, legal)


def root_policy(visits: chex.Array, q_values: chex.Array, legal: chex.Array,
                config: config_lib.SearchConfig) -> chex.Array:
  """Root move distribution after the Q-value corrections.

  Args:
    visits: int32[B, A] root edge visits.
    q_values: f32[B, A] root edge Q from the root mover's view.
    legal: bool[B, A].
    config: reads `q_value_weight` and `q_veto_delta`.

  Returns:
    f32[B, A], sums to 1 over games with visits, zeros otherwise.
  """
  visits = jnp.where(legal, visits, 0).astype(jnp.float32)
  total = visits.sum(axis=-1, keepdims=True)
  pi = jnp.where(total > 0, visits / jnp.maximum(total, 1.0), 0.0)
  if config.q_value_weight <= 0 and config.q_veto_delta <= 0:
    return pi
  num_actions = visits.shape[-1]
  # The two most visited actions (lowest index first among equals).
  first = jnp.argmax(visits, axis=-1)
  others = jnp.where(jnp.arange(num_actions) == first[:, None], -1.0, visits)
  second = jnp.argmax(others, axis=-1)
  take = lambda x, i: jnp.take_along_axis(x, i[:, None], axis=-1)[:, 0]
  has_second = take(others, second) > 0
  q_delta = jnp.where(has_second, take(q_values, second) - take(q_values, first), 0.0)
  pi_first, pi_second = take(pi, first), take(pi, second)
  one_hot = lambda i: jax.nn.one_hot(i, num_actions, dtype=pi.dtype)
  if config.q_value_weight > 0:
    boost = jnp.where(q_delta > 0, config.q_value_weight * q_delta * pi_first, 0.0)
    pi = pi + boost[:, None] * one_hot(second)
    pi_second = pi_second + boost
  if config.q_veto_delta > 0:
    veto = (q_delta > config.q_veto_delta)[:, None]
    swapped = (pi + (pi_second - pi_first)[:, None] * one_hot(first)
               + (pi_first - pi_second)[:, None] * one_hot(second))
    pi = jnp.where(veto, swapped, pi)
  norm = pi.sum(axis=-1, keepdims=True)
  return jnp.where(norm > 0, pi / jnp.where(norm > 0, norm, 1.0), 0.0)


def lcb_action(visits: chex.Array, q_values: chex.Array, legal: chex.Array,
               config: config_lib.SearchConfig):
  """The root move of highest lower confidence bound.

  Args:
    visits: int32[B, A] root edge visits.
    q_values: f32[B, A] root edge Q from the root mover's view.
    legal: bool[B, A].
    config: reads `lcb_z`, `lcb_min_visit_fraction`, the value bounds.

  Returns:
    (action, any): action int32[B], the argmax of Q - z sigma / sqrt(N) over
    the legal moves with N >= fraction * max N and N > 0; any bool[B], whether
    such a move exists.
  """
  n = jnp.where(legal, visits, 0)
  most = jnp.max(n, axis=-1, keepdims=True).astype(jnp.float32)
  eligible = legal & (n > 0) & (n >= config.lcb_min_visit_fraction * most)
  q = jnp.where(eligible, q_values, 0.0)
  bound = q - config.lcb_z * pruning.value_std_bound(q, config) / jnp.sqrt(
      jnp.maximum(n, 1).astype(jnp.float32))
  action = jnp.argmax(jnp.where(eligible, bound, -jnp.inf), axis=-1).astype(jnp.int32)
  return action, jnp.any(eligible, axis=-1)


def choose_action(rng: chex.PRNGKey | None, policy: chex.Array, visits: chex.Array,
                  prior: chex.Array, legal: chex.Array,
                  config: config_lib.SearchConfig,
                  q_values: chex.Array | None = None) -> chex.Array:
  """The move to play in each game.

  The argmax of `policy` (the prior breaks ties, so without visits the
  highest-prior legal action), or a draw from policy^(1/T) when
  `config.visit_temperature` T > 0, or with `move_choice="lcb"` the
  `lcb_action` of `q_values` where a move has visits.

  Args:
    rng: a PRNG key, or None when `config.visit_temperature == 0`.
    policy: f32[B, A] root policy (`root_policy`).
    visits: int32[B, A] root edge visits.
    prior: f32[B, A] root priors (tie-break).
    legal: bool[B, A].
    config: reads `visit_temperature`, `move_choice` and the LCB fields.
    q_values: f32[B, A] root Q, needed with `move_choice="lcb"`.

  Returns:
    int32[B], the chosen action of each game.

  Raises:
    ValueError: (at trace time) `visit_temperature > 0` without `rng`, or
      `move_choice="lcb"` without `q_values`.
  """
  # Visit fractions differ by at least 1 / total unless tied; the prior term
  # (< half of that) only breaks ties.
  total = visits.sum(axis=-1, keepdims=True).astype(jnp.float32)
  score = jnp.where(legal, policy + 0.5 * prior / (total + 1.0), -1.0)
  action = jnp.argmax(score, axis=-1)
  if config.visit_temperature > 0:
    if rng is None:
      raise ValueError("the move is drawn at random when visit_temperature > 0: pass an rng")
    has_policy = policy.sum(axis=-1) > 0
    logits = jnp.where(policy > 0, jnp.log(jnp.maximum(policy, 1e-30))
                       / config.visit_temperature, -jnp.inf)
    drawn = jax.random.categorical(rng, jnp.where(has_policy[:, None], logits, 0.0), axis=-1)
    action = jnp.where(has_policy, drawn, action)
  if config.move_choice == "lcb":
    if q_values is None:
      raise ValueError("move_choice='lcb' reads the root Q: pass q_values")
    best, searched = lcb_action(visits, q_values, legal, config)
    action = jnp.where(searched, best, action)
  return action.astype(jnp.int32)


def summarize(graph: graph_lib.Graph, config: config_lib.SearchConfig,
              rng: chex.PRNGKey | None = None) -> SearchOutput:
  """Reads the move choice and statistics off the root of each game.

  Args:
    graph: Graph [B, N, A] after the simulations.
    config: SearchConfig.
    rng: a PRNG key, needed only with `config.visit_temperature > 0` (the
      move is drawn).

  Returns:
    SearchOutput, fields with leading dimension B.

  Raises:
    ValueError: (at trace time) `config.visit_temperature > 0` and no `rng`.
  """
  visits = graph.edge_visits[:, 0]
  legal = graph.child[:, 0] != graph_lib.ILLEGAL
  q_values = jnp.where(legal, jnp.where(visits > 0, graph.edge_q[:, 0], config.q_init),
                       -jnp.inf)
  root_value = graph_lib.node_value(graph.visits[:, 0], graph.value_sum[:, 0])
  plugins = rules.of(config)
  proves = plugins.proves
  if proves:
    # Proven losses get no weight (unless every move is one).
    pruned = jax.vmap(solver.pruned_moves, in_axes=(0, None))(graph, jnp.int32(0))
    legal &= ~pruned | jnp.all(pruned | ~legal, axis=-1, keepdims=True)
  policy = root_policy(visits, q_values, legal, config)
  # No simulation ran (num_simulations=0, an evaluation budget of 1): the
  # root's prior over its legal moves is the best policy there is, for the
  # move and as a training target.
  prior = jnp.where(legal, graph.prior[:, 0], 0.0)
  prior_total = prior.sum(axis=-1, keepdims=True)
  unsearched = (policy.sum(axis=-1, keepdims=True) <= 0) & (prior_total > 0)
  policy = jnp.where(unsearched, prior / jnp.where(prior_total > 0, prior_total, 1.0), policy)
  action = choose_action(rng, policy, visits, graph.prior[:, 0], legal, config, q_values)
  if config.depth_i:
    minimax, has_minimax = depth_i.minimax_action(graph, legal, config)
    action = jnp.where(has_minimax, minimax, action)
  if plugins.root_decision is not None:
    # The Gumbel root's improved policy, also without simulations (sigma = 0
    # there: the prior).
    action, policy = plugins.root_decision(graph, legal)
  root_solved = jnp.zeros_like(root_value, jnp.int32)
  root_end_in_ply = jnp.zeros_like(root_value, jnp.int32)
  if proves:
    root_solved = solver.state(graph).solved[:, 0]
    root_end_in_ply = solver.state(graph).end_in_ply[:, 0]
    # A proven root plays the shortest win (longest loss) and learns it.
    proven_action, root_proven = solver.proven_choice(graph)
    action = jnp.where(root_proven, proven_action, action)
    policy = jnp.where(root_proven[:, None],
                       jax.nn.one_hot(proven_action, policy.shape[-1]), policy)
    root_value = jnp.where(root_proven, graph_lib.exact_value(root_solved), root_value)
  return SearchOutput(
      action=action,
      action_weights=policy,
      root_value=root_value,
      root_solved=root_solved,
      root_end_in_ply=root_end_in_ply,
      q_values=q_values,
      visit_counts=visits,
      stats=graph.stats,
      graph=graph,
  )
