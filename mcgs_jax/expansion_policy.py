"""Node expansion policies (`SearchConfig.expansion_policy`).

A simulation that reaches an unexpanded edge (s, a) whose position is new
(neither terminal nor already in the table) evaluates it; the policy decides
whether that position is also stored as a node (Yajima et al. 2011, "Node-
expansion operators for the UCT algorithm"):

  "all"          always (the plain search);
  "visits"       once the edge has been reached `expansion_threshold` times:
                 N(s, a) + 1 >= threshold, N(s, a) counting the earlier
                 simulations that evaluated it without storing it;
  "probability"  once the edge's transition probability is high enough:
                 max(P(s, a), (N(s, a) + 1) / (n(s) + 1)) >= threshold, with
                 n(s) = sum_b N(s, b): the larger of the prior and the share of
                 s's simulations (this one included) that took the edge, i.e.
                 the selection's empirical probability of the transition.

A position not stored costs no node: its value (reward + discount * the
evaluation) is backed up through the edge, whose N(s, a) and Q(s, a) grow as
for any edge, so selection sees its estimate; the edge stays UNEXPANDED and
the position is evaluated again the next time (`stats.deferred_expansions`).
Transposition links and terminal transitions store no node and are never
deferred.
"""

import chex
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib


def ready(graph: graph_lib.Graph, parent: chex.Array, action: chex.Array, *, policy: str,
          threshold: float) -> chex.Array:
  """Whether a new position reached through (parent, action) is stored now.

  ONE game (see the module doc for the policies).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    parent: int32 scalar, the edge's node.
    action: int32 scalar, the edge's action.
    policy: `SearchConfig.expansion_policy`.
    threshold: `SearchConfig.expansion_threshold`.

  Returns:
    bool scalar.
  """
  visits = graph.edge_visits[parent].astype(jnp.float32)
  reached = visits[action] + 1.0
  if policy == "visits":
    return reached >= threshold
  if policy == "probability":
    share = reached / (visits.sum() + 1.0)
    return jnp.maximum(graph.prior[parent, action], share) >= threshold
  return jnp.bool_(True)


def defers(graph: graph_lib.Graph, parent: chex.Array, action: chex.Array, *, policy: str,
           threshold: float) -> chex.Array:
  """`not ready`: the expansion policy's `plugins.Plugins.defer` hook.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    parent: int32 scalar, the edge's node.
    action: int32 scalar, the edge's action.
    policy: `SearchConfig.expansion_policy`.
    threshold: `SearchConfig.expansion_threshold`.

  Returns:
    bool scalar.
  """
  return ~ready(graph, parent, action, policy=policy, threshold=threshold)
