"""All-moves-as-first (AMAF) statistics and RAVE (`SearchConfig.rave`).

AMAF (Bruegmann 1993) credits a simulation's outcome to every move the
player to move at a node played later in that simulation, as if it had been
played first. Per node s and action a the graph keeps N~(s, a) and the
running mean Q~(s, a) (`AmafState`, its record in the graph). After a
simulation with path s_0 -a_0-> s_1 -a_1-> ... s_{L-1} -a_{L-1}->, every node
s_i on it (from the backup's first edge `start`) updates, once per distinct
action, every a_j with j >= i played by s_i's mover (same mover: the product
of the discounts of edges i..j-1 is positive), with the simulation's value
from s_i's mover's view (the leaf value carried up the path by
reward + discount * value, without corrections). The moves of a rollout
inside `eval_fn` are not seen, so only the path's moves count; a simulation
that ends in a correction carries no new outcome and updates nothing.

RAVE (Silver 2009; Gelly and Silver 2011) blends the two estimates in
selection:

  Q_rave(s, a) = (1 - beta) Q(s, a) + beta Q~(s, a),
  beta = N~ / (N + N~ + 4 b^2 N N~),

with N = N(s, a), N~ = N~(s, a) and b = `rave_b`; beta = 0 when N~ = 0 (then
Q, or q_init for an unvisited move), beta = 1 when N = 0 < N~ (pure AMAF).
Since the path's own move counts for AMAF too, N~ >= N, as in the formula's
source. Only meaningful where an action index means the same move at every
depth (Connect-4 columns, Nim moves).
"""

from typing import Any

import chex
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib

# The record's name in `Graph.enhancements`.
NAME = "rave"


@chex.dataclass(frozen=True)
class AmafState(graph_lib.EnhancementState):
  """The AMAF statistics, each [B, N, A] (one game: [N, A]).

  Attributes:
    visits: int32 N~(s, a).
    q: f32 Q~(s, a), running mean from s's mover's view.
  """
  visits: chex.Array
  q: chex.Array

  @classmethod
  def empty(cls, batch_size: int, capacity: int, num_actions: int) -> "AmafState":
    """No statistics: zeros [B, N, A].

    Args:
      batch_size: B.
      capacity: N.
      num_actions: A.

    Returns:
      The record.
    """
    shape = (batch_size, capacity, num_actions)
    return cls(visits=jnp.zeros(shape, jnp.int32), q=jnp.zeros(shape, jnp.float32))


def blend(graph: graph_lib.Graph, node: chex.Array, q: chex.Array, edge_visits: chex.Array,
          rave_b: float) -> chex.Array:
  """Q_rave of every action of `node` of ONE game (see the module doc).

  Args:
    graph: ONE game's graph (with AMAF arrays [N, A]).
    node: int32 node index.
    q: f32[A], the Q selection would use (q_init where unvisited).
    edge_visits: f32[A], N(s, a) as selection counts it.
    rave_b: b (`SearchConfig.rave_b`).

  Returns:
    f32[A].
  """
  amaf = graph.enhancements[NAME]
  amaf_n = amaf.visits[node].astype(jnp.float32)
  denominator = edge_visits + amaf_n + 4.0 * rave_b ** 2 * edge_visits * amaf_n
  beta = jnp.where(amaf_n > 0, amaf_n / jnp.maximum(denominator, 1e-9), 0.0)
  return (1.0 - beta) * q + beta * amaf.q[node]


def update(graph: graph_lib.Graph, path_nodes: chex.Array, path_actions: chex.Array,
           length: chex.Array, leaf_value: chex.Array, start: chex.Array) -> graph_lib.Graph:
  """Adds ONE game's simulation to the AMAF statistics of its path's nodes.

  Args:
    graph: ONE game's graph, after the expansion (the path's edges hold their
      rewards and discounts).
    path_nodes: int32[D], the path's nodes from the root.
    path_actions: int32[D], the action taken at each path node.
    length: int32, edges on the path (0: nothing to do).
    leaf_value: f32, the last edge's value for its parent's mover.
    start: int32, first path node updated.

  Returns:
    The graph with its `AmafState` updated.
  """
  amaf = graph.enhancements[NAME]
  max_depth = path_nodes.shape[0]
  num_actions = amaf.visits.shape[-1]
  depth = jnp.arange(max_depth)
  on_path = depth < length
  reward = graph.edge_reward[path_nodes, path_actions]
  discount = graph.edge_discount[path_nodes, path_actions]
  # value[i] = reward_i + discount_i * value[i + 1], value[L - 1] = leaf_value:
  # a reverse cumulative sum of the rewards weighted by the discount products.
  discount = jnp.where(on_path, discount, 1.0)
  # through[i] = prod_{k < i} discount_k (discounts are +-1 or 0 only on the
  # game's last edge, so these products stay exact).
  through = jnp.concatenate([jnp.ones((1,)), jnp.cumprod(discount)[:-1]])
  last = jnp.maximum(length - 1, 0)
  weighted = jnp.where(on_path & (depth < last), through * reward, 0.0)
  tail = jnp.cumsum(weighted[::-1])[::-1]           # sum_{k >= i, k < L-1} through_k r_k
  leaf = through[last] * leaf_value
  safe = jnp.where(through != 0, through, 1.0)
  value = jnp.where(through != 0, (tail + leaf) / safe, 0.0)
  # Same mover at i and j (i <= j): the discounts between them multiply to > 0.
  sign = jnp.sign(through)
  same_mover = (sign[:, None] * sign[None, :]) > 0
  later = (depth[None, :] >= depth[:, None]) & on_path[None, :] & same_mover
  played = jnp.arange(num_actions)[None, :] == path_actions[:, None]       # [D, A]
  mask = (later.astype(jnp.float32) @ played.astype(jnp.float32)) > 0      # [D, A]
  mask &= (on_path & (depth >= start))[:, None]
  rows = jnp.where(on_path & (depth >= start), path_nodes, graph.capacity)
  old_n = amaf.visits[path_nodes]                                          # [D, A]
  old_q = amaf.q[path_nodes]
  new_n = old_n + mask
  new_q = jnp.where(mask, old_q + (value[:, None] - old_q) / jnp.maximum(new_n, 1), old_q)
  # Path nodes are distinct: gathered-then-set rows equal an add.
  return graph_lib.with_state(graph, NAME, amaf.replace(
      visits=amaf.visits.at[rows].set(new_n, mode="drop"),
      q=amaf.q.at[rows].set(new_q, mode="drop")))


def after_backup(graph: graph_lib.Graph, sel: graph_lib.Selection, length: chex.Array,
                 leaf_value: chex.Array, plugins: Any) -> graph_lib.Graph:
  """RAVE's `plugins.Plugins.after_backup` hook (ONE game): `update` along
  the simulation's path; a correction is no outcome of play and leaves the
  statistics alone.

  Args:
    graph: ONE game's graph, backed up.
    sel: the simulation's Selection.
    length: int32, the path's edges backed up (0: none).
    leaf_value: f32, the last edge's value for its parent's mover.
    plugins: unused.

  Returns:
    The Graph with its `AmafState` updated.
  """
  del plugins
  return update(graph, sel.path_nodes, sel.path_actions,
                jnp.where(sel.kind == graph_lib.CORRECTION, 0, length), leaf_value, sel.start)
