"""Depth-i move choice (`SearchConfig.depth_i`, Bouzy et al. 2004).

The depth-i enhancement enumerates the positions i moves below the root,
scores each by its Monte-Carlo average and plays the minimax move. Here the
averages are the search's own: after the simulations, the played move is

  argmax_a  W_{i-1}(root, a)   over the root moves with N(root, a) > 0,

  W_k(s, a) = r(s, a) + d(s, a) * M_k(child)   for a stored child node,
            = r(s, a)                           for a terminal transition,
            = Q(s, a)                           for an edge whose position is
                                                not stored (expansion_policy),
  M_0(s) = V(s),
  M_k(s) = max over s's moves b with N(s, b) > 0 of W_{k-1}(s, b),
           V(s) when s has no visited move,

values from each node's mover's view (r + d * V turns the child's view into
the parent's, as everywhere in the search). A node proven by the solver
counts with its exact value instead of V. Unvisited moves have no average
and are left out (at the root too); a root without visited moves keeps the
usual choice. Ties go to the more visited move. Depth 1 plays the best child
value; depth 2 the best value after the opponent's best visited reply.
`action_weights` stay the visit policy (the training target is unchanged).
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import rules


def _node_value(graph, node, config):
  """f32[...]: V of nodes (exact value where proven, with the solver)."""
  value = graph_lib.node_value(graph.visits[node], graph.value_sum[node])
  plugins = rules.of(config)
  if plugins.proves:
    solved = plugins.proofs(graph)[node]
    value = jnp.where(solved != graph_lib.UNKNOWN, graph_lib.exact_value(solved), value)
  return value


def _edge_values(graph, node, depth, config):
  """W_depth of every move of `node` (int32[...]) of ONE game: f32[..., A],
  and bool[..., A] the moves that count (visited)."""
  child = graph.child[node]                        # [..., A]
  visited = (graph.edge_visits[node] > 0) & (child != graph_lib.ILLEGAL)
  safe = jnp.maximum(child, 0)
  below = _best_value(graph, safe, depth, config)  # [..., A]
  value = jnp.select(
      [child >= 0, child == graph_lib.TERMINAL],
      [graph.edge_reward[node] + graph.edge_discount[node] * below, graph.edge_reward[node]],
      graph.edge_q[node])
  return value, visited


def _best_value(graph, node, depth, config):
  """M_depth of nodes (int32[...]) of ONE game."""
  if depth == 0:
    return _node_value(graph, node, config)
  value, visited = _edge_values(graph, node, depth - 1, config)
  best = jnp.max(jnp.where(visited, value, -jnp.inf), axis=-1)
  return jnp.where(jnp.any(visited, axis=-1), best, _node_value(graph, node, config))


def minimax_action(graph: graph_lib.Graph, allowed: chex.Array,
                   config: config_lib.SearchConfig):
  """The depth-`config.depth_i` move of every game.

  Args:
    graph: Graph [B, N, A] after the search.
    allowed: bool[B, A], root moves that may be played (legal, not pruned).
    config: reads `depth_i`, `solver`.

  Returns:
    (action int32[B], has bool[B]: the game has a visited allowed root move).
  """
  def one(graph, allowed):
    value, visited = _edge_values(graph, jnp.int32(0), config.depth_i - 1, config)
    visited &= allowed
    visits = graph.edge_visits[0].astype(jnp.float32)
    # Ties (exact equal values) go to the more visited move.
    score = jnp.where(visited, value, -jnp.inf)
    top = jnp.max(score)
    action = jnp.argmax(jnp.where(visited & (score >= top), visits, -1.0))
    return action.astype(jnp.int32), jnp.any(visited)

  return jax.vmap(one)(graph, allowed)
