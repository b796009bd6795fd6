"""Terminal solver on the graph (Exact-win-MCTS 2.0, paper Alg. 3).

A node is proven WIN as soon as one move wins (a terminal transition with a
positive reward, or a child proven LOSS for its mover): end_in_ply = min over
the winning moves + 1. It is proven LOSS when every legal move loses
(end_in_ply = max + 1), and DRAW when every move is proven, none wins and at
least one draws (min over the drawing moves + 1). A terminal transition counts
as a proven move with end_in_ply 0 below it.

The paper keeps an UNKNOWN_CHILDREN_COUNT per node and decrements the parent's
count when a child is solved. In a graph a child has several parents, and only
the one on the current path would hear of it; so this module recomputes a
node's state from all its edges instead (the count of unproven children is
`edge_outcomes(...)[1]` summed), which makes a node reached through a
transposition link count as proven for every parent the moment any parent
looks at it. Every simulation re-examines all the nodes on its path, leaf to
root, so a proof propagates as far up as it reaches (the paper's build stopped
at the first unsolved ancestor).

Outcomes are read from rewards: the solver assumes rewards only on the
game-ending transition, whose sign says who won (+: the mover), and edge
discounts of +-1 (-1 when the opponent moves next).
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib

# Exact value of a proven node for its mover, indexed by the `solved` code.
_EXACT_VALUE = jnp.array([0.0, 1.0, -1.0, 0.0], jnp.float32)   # UNKNOWN, WIN, LOSS, DRAW


def exact_value(solved: chex.Array) -> chex.Array:
  """+1 / -1 / 0 for WIN / LOSS / DRAW (0 for UNKNOWN), same shape."""
  return _EXACT_VALUE[solved]


def edge_outcomes(graph: graph_lib.Graph, node: chex.Array, solved=None, end_in_ply=None):
  """The proven outcome of every move of `node` in ONE game's graph.

  `solved` and `end_in_ply` [N] default to the graph's (a caller that is
  updating them passes its own).

  Returns:
    outcome: int32[A], +1 the move wins, -1 loses, 0 draws (for the mover at
      `node`); 0 where not proven.
    proven: bool[A], the move's outcome is known (False on illegal moves).
    end: int32[A], plies to the game's end through the move (1 for a move
      that ends the game).
  """
  solved = graph.solved if solved is None else solved
  end_in_ply = graph.end_in_ply if end_in_ply is None else end_in_ply
  child = graph.child[node]
  safe_child = jnp.maximum(child, 0)
  child_solved = solved[safe_child]
  reward = graph.edge_reward[node]
  terminal = child == graph_lib.TERMINAL
  proven_child = (child >= 0) & (child_solved != graph_lib.UNKNOWN)
  value = jnp.where(terminal, reward,
                    reward + graph.edge_discount[node] * exact_value(child_solved))
  outcome = jnp.where(terminal | proven_child, jnp.sign(value), 0.0).astype(jnp.int32)
  end = jnp.where(terminal, 1, end_in_ply[safe_child] + 1)
  return outcome, terminal | proven_child, end


def node_state(outcome: chex.Array, proven: chex.Array, end: chex.Array,
               legal: chex.Array):
  """(solved code, end_in_ply) of a node from its moves' outcomes [A]."""
  big = jnp.iinfo(jnp.int32).max
  wins = proven & (outcome > 0)
  draws = proven & (outcome == 0)
  all_proven = jnp.all(proven | ~legal) & jnp.any(legal)
  win_end = jnp.min(jnp.where(wins, end, big))
  draw_end = jnp.min(jnp.where(draws, end, big))
  loss_end = jnp.max(jnp.where(legal, end, 0))
  solved = jnp.select([jnp.any(wins), all_proven & jnp.any(draws), all_proven],
                      [graph_lib.WIN, graph_lib.DRAW, graph_lib.LOSS], graph_lib.UNKNOWN)
  end_in_ply = jnp.select([solved == graph_lib.WIN, solved == graph_lib.DRAW,
                           solved == graph_lib.LOSS], [win_end, draw_end, loss_end], 0)
  return solved.astype(jnp.int32), end_in_ply.astype(jnp.int32)


def solve_path(graph: graph_lib.Graph, path_nodes: chex.Array, length: chex.Array,
               last_child: chex.Array) -> graph_lib.Graph:
  """Re-examines ONE game's path from the bottom up: `last_child` (the node
  the last edge leads to, if any) then path_nodes[length - 1], ..., the root.
  A node proven here is visible to its parent's examination right after."""
  legal = graph.child != graph_lib.ILLEGAL

  def examine(node, solved, end_in_ply):
    outcome, proven, end = edge_outcomes(graph, node, solved, end_in_ply)
    state, plies = node_state(outcome, proven, end, legal[node])
    # Proofs are final: a node proven once keeps its state.
    keep = solved[node] != graph_lib.UNKNOWN
    return (solved.at[node].set(jnp.where(keep, solved[node], state)),
            end_in_ply.at[node].set(jnp.where(keep, end_in_ply[node], plies)))

  def body(carry):
    i, solved, end_in_ply = carry
    solved, end_in_ply = examine(path_nodes[i], solved, end_in_ply)
    return i - 1, solved, end_in_ply

  solved, end_in_ply = graph.solved, graph.end_in_ply
  has_child = last_child >= 0
  examined = examine(jnp.maximum(last_child, 0), solved, end_in_ply)
  solved = jnp.where(has_child, examined[0], solved)
  end_in_ply = jnp.where(has_child, examined[1], end_in_ply)
  _, solved, end_in_ply = jax.lax.while_loop(
      lambda carry: carry[0] >= 0, body, (length - 1, solved, end_in_ply))
  return graph.replace(solved=solved, end_in_ply=end_in_ply)


def proven_choice(graph: graph_lib.Graph):
  """The move to play at each proven root [B]: the shortest win, else the
  longest loss, else the most visited draw. Returns (action int32[B],
  is_proven bool[B])."""

  def one(graph):
    outcome, proven, end = edge_outcomes(graph, jnp.int32(0))
    visits = graph.edge_visits[0]
    legal = graph.child[0] != graph_lib.ILLEGAL
    state = graph.solved[0]
    big = jnp.iinfo(jnp.int32).max
    # Ties on the ply count go to the most visited move.
    tie = visits.astype(jnp.float32) / (visits.sum() + 1.0)
    win = jnp.where(proven & (outcome > 0), -end + tie, -big)
    loss = jnp.where(legal, end + tie, -big)
    draw = jnp.where(proven & (outcome == 0), tie, -big)
    score = jnp.select([state == graph_lib.WIN, state == graph_lib.LOSS], [win, loss], draw)
    return jnp.argmax(score).astype(jnp.int32), state != graph_lib.UNKNOWN

  return jax.vmap(one)(graph)


def pruned_moves(graph: graph_lib.Graph, node: chex.Array) -> chex.Array:
  """bool[A]: moves of `node` (ONE game) proven to lose, never selected."""
  outcome, proven, _ = edge_outcomes(graph, node)
  return proven & (outcome < 0)
