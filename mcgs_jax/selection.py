"""Selection: PUCT descent from the root to the edge where a simulation ends.

Acts on ONE game's graph (vmap for a batch). The descent stops at
  - an unexpanded edge (EXPAND: the game model is stepped, then the key looked up),
  - an edge into a terminal state (TERMINAL_EDGE: exact value, no network),
  - an edge into a transposition node whose value has diverged from the edge's
    Q by more than q_eps (CORRECTION: back up the correction, no network),
  - max_depth (DEPTH_LIMIT) or a non-terminal node without legal actions
    (DEAD_END): back up the current estimate of the last edge.
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib

# Why a simulation's descent ended.
RUNNING = 0
EXPAND = 1
TERMINAL_EDGE = 2
CORRECTION = 3
DEPTH_LIMIT = 4
DEAD_END = 5
NO_SIMULATION = 6   # the root has no legal action (terminal): nothing to do


@chex.dataclass(frozen=True)
class Selection:
  path_nodes: chex.Array    # int32[D], nodes from the root
  path_actions: chex.Array  # int32[D], the action taken at each
  length: chex.Array        # int32, number of edges on the path
  kind: chex.Array          # int32, one of the codes above
  value: chex.Array         # f32, value of the last edge (for the free kinds)
  parent: chex.Array        # int32, node of the last edge
  action: chex.Array        # int32, action of the last edge


def exploration_weight(total_visits: chex.Array, config: config_lib.SearchConfig):
  """c(s) = log((n + c_base + 1) / c_base) + c_init (paper eq. 6)."""
  return jnp.log((total_visits + config.c_base + 1.0) / config.c_base) + config.c_init


def puct_scores(graph: graph_lib.Graph, node: chex.Array,
                config: config_lib.SearchConfig) -> chex.Array:
  """Q(s, a) + U(s, a) for every action of `node`; -inf on illegal actions.

  U = c(s) * P(s, a) * sqrt(1 + sum_b N(s, b)) / (1 + N(s, a)) (eq. 3-4).
  The node's own evaluation counts as one visit under the square root (as in
  mctx); without it the first descent through every fresh node would ignore
  the prior and take the lowest legal action.
  """
  edge_visits = graph.edge_visits[node].astype(jnp.float32)
  legal = graph.child[node] != graph_lib.ILLEGAL
  q = jnp.where(edge_visits > 0, graph.edge_q[node], config.q_init)
  total = edge_visits.sum()
  u = (exploration_weight(total, config) * graph.prior[node] * jnp.sqrt(total + 1.0)
       / (1.0 + edge_visits))
  return jnp.where(legal, q + u, -jnp.inf)


def correction_value(edge_visits, edge_q, target, config: config_lib.SearchConfig):
  """The value that pulls Q(s, a) onto `target` in one running-mean update:
  clip(N * (target - Q) + target, V_min, V_max); `target` itself when N = 0."""
  corrected = jnp.clip(edge_visits * (target - edge_q) + target,
                       config.value_min, config.value_max)
  return jnp.where(edge_visits > 0, corrected, target)


def select(graph: graph_lib.Graph, config: config_lib.SearchConfig) -> Selection:
  """Descends from the root of ONE game's graph; see the module docstring."""
  max_depth = config.max_depth
  use_corrections = config.backup == "mcgs"

  def body(carry):
    node, depth, _, _, path_nodes, path_actions = carry[:6]
    scores = puct_scores(graph, node, config)
    action = jnp.argmax(scores).astype(jnp.int32)
    has_move = scores[action] > -jnp.inf
    path_nodes = path_nodes.at[depth].set(node)
    path_actions = path_actions.at[depth].set(action)

    child = graph.child[node, action]
    is_node = child >= 0
    safe_child = jnp.maximum(child, 0)
    target = (graph.edge_reward[node, action] + graph.edge_discount[node, action] *
              graph_lib.node_value(graph.visits[safe_child], graph.value_sum[safe_child]))
    edge_visits = graph.edge_visits[node, action].astype(jnp.float32)
    edge_q = graph.edge_q[node, action]
    diverged = (use_corrections & is_node & (graph.num_parents[safe_child] > 1) &
                (jnp.abs(edge_q - target) > config.q_eps))
    at_limit = is_node & ~diverged & (depth + 1 >= max_depth)

    prev_value = carry[3]
    kind = jnp.select(
        [~has_move & (depth == 0), ~has_move, child == graph_lib.UNEXPANDED,
         child == graph_lib.TERMINAL, diverged, at_limit],
        [NO_SIMULATION, DEAD_END, EXPAND, TERMINAL_EDGE, CORRECTION, DEPTH_LIMIT],
        RUNNING).astype(jnp.int32)
    value = jnp.select(
        [~has_move, child == graph_lib.TERMINAL, diverged],
        [prev_value, graph.edge_reward[node, action],
         correction_value(edge_visits, edge_q, target, config)],
        target)
    descend = kind == RUNNING
    next_node = jnp.where(descend, safe_child, node)
    next_depth = jnp.where(descend, depth + 1, depth)
    # The last edge: at a dead end it is the edge into `node`, one step up.
    length = jnp.where(~has_move, depth, depth + 1)
    return (next_node, next_depth, kind, value, path_nodes, path_actions, length)

  init = (jnp.int32(0), jnp.int32(0), jnp.int32(RUNNING), jnp.float32(0.0),
          jnp.zeros((max_depth,), jnp.int32), jnp.zeros((max_depth,), jnp.int32),
          jnp.int32(0))
  _, _, kind, value, path_nodes, path_actions, length = jax.lax.while_loop(
      lambda carry: carry[2] == RUNNING, body, init)
  last = jnp.maximum(length - 1, 0)
  return Selection(path_nodes=path_nodes, path_actions=path_actions, length=length,
                   kind=kind, value=value, parent=path_nodes[last],
                   action=path_actions[last])
