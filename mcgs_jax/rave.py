"""All-moves-as-first (AMAF) statistics and RAVE (`SearchConfig.rave`).

AMAF (Bruegmann 1993) credits a simulation's outcome to every move the
player to move at a node played later in that simulation, as if it had been
played first. Per node s and action a the graph keeps N~(s, a) and the
running mean Q~(s, a) (`Graph.amaf_visits`, `Graph.amaf_q`). After a
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

import chex
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib


def blend(graph: graph_lib.Graph, node: chex.Array, q: chex.Array, edge_visits: chex.Array,
          config: config_lib.SearchConfig) -> chex.Array:
  """Q_rave of every action of `node` of ONE game (see the module doc).

  Args:
    graph: ONE game's graph (with AMAF arrays [N, A]).
    node: int32 node index.
    q: f32[A], the Q selection would use (q_init where unvisited).
    edge_visits: f32[A], N(s, a) as selection counts it.
    config: reads `rave_b`.

  Returns:
    f32[A].
  """
  amaf_n = graph.amaf_visits[node].astype(jnp.float32)
  denominator = edge_visits + amaf_n + 4.0 * config.rave_b ** 2 * edge_visits * amaf_n
  beta = jnp.where(amaf_n > 0, amaf_n / jnp.maximum(denominator, 1e-9), 0.0)
  return (1.0 - beta) * q + beta * graph.amaf_q[node]


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
    The graph with `amaf_visits` and `amaf_q` updated.
  """
  max_depth = path_nodes.shape[0]
  num_actions = graph.amaf_visits.shape[-1]
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
  old_n = graph.amaf_visits[path_nodes]                                    # [D, A]
  old_q = graph.amaf_q[path_nodes]
  new_n = old_n + mask
  new_q = jnp.where(mask, old_q + (value[:, None] - old_q) / jnp.maximum(new_n, 1), old_q)
  # Path nodes are distinct: gathered-then-set rows equal an add.
  return graph.replace(
      amaf_visits=graph.amaf_visits.at[rows].set(new_n, mode="drop"),
      amaf_q=graph.amaf_q.at[rows].set(new_q, mode="drop"),
  )
