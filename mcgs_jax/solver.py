"""Terminal solver on the graph: Exact-win-MCTS 2.0 (paper Alg. 3) and,
optionally, score bounds (Cazenave & Saffidine, "Score bounded Monte-Carlo
tree search", Computers and Games 2010).

Values are for the player to move at a node, in {-1 loss, 0 draw, +1 win}.
Every node keeps a pessimistic and an optimistic bound on its value,
pess <= value <= opt ([-1, +1] when nothing is known; packed with
end_in_ply in `SolverState.bounds`, see `pack` / `unpack`). A move's bounds
come through its edge, Q = r + d V(child):

  terminal transition:      low = high = sign(r)            (exact)
  edge to a stored child c: low  = sign(r + min(d pess(c), d opt(c)))
                            high = sign(r + max(d pess(c), d opt(c)))
                            (d = -1 swaps and negates, d = +1 keeps)
  unexpanded legal move:    low = -1, high = +1

and a node's bounds from its legal moves (the mover picks the move):

  pess(s) = max_a low(s, a)        opt(s) = max_a high(s, a)

A node is proven when pess == opt: `SolverState.solved` = WIN (+1), LOSS (-1) or
DRAW (0), with `end_in_ply` = the plies to the game's end along the proof:
  WIN:  1 + min over the proven winning moves (the shortest win),
  LOSS: 1 + max over the legal moves (the longest resistance),
  DRAW: 1 + min over the proven drawing moves;
a terminal transition counts as a move with 0 plies below it. Proofs are
final: a proven node keeps its state.

Two modes (`SearchConfig.solver_bounds`):
  - off (Exact-win): a node stores bounds only once proven ([-1, +1] before),
    so a parent learns only from proven children: a node is a WIN as soon as
    one move wins, a LOSS when every move loses, a DRAW when every move is
    proven, none wins and one draws. Selection prunes the proven losses.
  - on (score bounds): a node also stores partial bounds ([0, +1] "at least
    a draw", [-1, 0] "at most a draw"), which its parents use, so draws get
    proven without every move below being proven. Selection prunes every
    move with high(s, a) <= pess(s) (it cannot improve on what the node is
    already sure of: proven losses, and once a draw is secured, every move
    that cannot win); a node whose moves are all pruned is proven.

The paper keeps an UNKNOWN_CHILDREN_COUNT per node and decrements the
parent's count when a child is solved. In a graph a child has several
parents, and only the one on the current path would hear of it; so a node's
state is always recomputed from all its edges, which makes a node reached
through a transposition link count for every parent the moment any parent
looks at it. After each simulation every node of its path (and the node its
last edge leads to) is up to date, leaf to root, so a proof climbs as far as
it reaches in one backup.

Cost. Proofs and new bounds are rare (a few percent of simulations), so the
solver examines only nodes that can change: selection, which reads every
path node's child bounds anyway for the pruning, flags the deepest path node
whose stored state lags behind its children (`is_stale`: a child proven
through another parent); `solve_path` starts at the deepest of that node,
the last child (when it is a transposition link) and the last parent (when
its last move has bounds: a terminal transition, a proven or bounded
child), skips unchanged nodes, and once a node changes walks every node
above it to the root. A node's bounds and end_in_ply live in one int32 word
(`SolverState.bounds`, see `pack`) so reading a node's children costs one read per
child, done one scalar at a time for up to 32 actions: XLA:CPU runs a small
vector gather inside the search loops several times slower.

Outcomes are read from rewards: the solver assumes rewards only on the
game-ending transition, whose sign says who won (+: the mover), and edge
discounts of +-1 (-1 when the opponent moves next).

The solver's arrays are its own record in the graph (`SolverState`, under
`Graph.enhancements["solver"]`, absent when the solver is off); `rules.of`
hands the phases its hooks (`codes`, `is_stale`, `solve_path`,
`keep_unpruned`).
"""

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import graph as graph_lib

_BIG = jnp.iinfo(jnp.int32).max
# `SolverState.bounds` of a node the solver knows nothing about: [-1, +1].
UNBOUNDED = graph_lib.UNBOUNDED
# The record's name in `Graph.enhancements`.
NAME = "solver"
# Up to this many actions, a node's children are read one scalar at a time:
# XLA:CPU runs a small vector gather inside the search's loops several times
# slower than the same number of scalar reads.
_UNROLL_ACTIONS = 32


@chex.dataclass(frozen=True)
class SolverState(graph_lib.EnhancementState):
  """The solver's arrays, each [B, N] (one game: [N]).

  Attributes:
    solved: int32, `graph.UNKNOWN` / `WIN` / `LOSS` / `DRAW` for the node's mover.
    end_in_ply: int32, plies to the game's end along the proof.
    bounds: int32, the node's bounds and end_in_ply packed in one word (one
      read per child): see `pack`.
  """
  solved: chex.Array
  end_in_ply: chex.Array
  bounds: chex.Array

  @classmethod
  def empty(cls, batch_size: int, capacity: int, num_actions: int) -> "SolverState":
    """Nothing known: UNKNOWN, 0 plies, bounds [-1, +1].

    Args:
      batch_size: B.
      capacity: N.
      num_actions: A.

    Returns:
      The record.
    """
    del num_actions
    zeros = jnp.zeros((batch_size, capacity), jnp.int32)
    return cls(solved=zeros, end_in_ply=zeros,
               bounds=jnp.full((batch_size, capacity), UNBOUNDED, jnp.int32))


def state(graph: graph_lib.Graph) -> SolverState:
  """The solver's record of `graph` (one game or a batch).

  Args:
    graph: a Graph of a search with the solver on.

  Returns:
    SolverState.
  """
  return graph.enhancements[NAME]


def codes(graph: graph_lib.Graph) -> chex.Array:
  """The solver's codes of `graph`'s nodes (`plugins.Plugins.proofs`).

  Args:
    graph: a Graph of a search with the solver on.

  Returns:
    int32[..., N], `SolverState.solved`.
  """
  return state(graph).solved


def pack(pessimistic, optimistic, end_in_ply):
  """`SolverState.bounds`: a node's bounds and end_in_ply in one int32 word.

  end_in_ply * 16 + (pessimistic + 1) * 4 + (optimistic + 1).

  Args:
    pessimistic: int32 in {-1, 0, 1}, any shape.
    optimistic: int32 in {-1, 0, 1}, same shape.
    end_in_ply: int32 >= 0, same shape.

  Returns:
    int32 of the common shape.
  """
  return end_in_ply * 16 + (pessimistic + 1) * 4 + (optimistic + 1)


def unpack(bounds):
  """The fields of `SolverState.bounds` words (inverse of `pack`).

  Args:
    bounds: int32, any shape.

  Returns:
    (pessimistic, optimistic, end_in_ply), int32 of the shape of `bounds`.
  """
  return (bounds >> 2 & 3) - 1, (bounds & 3) - 1, bounds >> 4


def _take(array: chex.Array, index: chex.Array) -> chex.Array:
  """array[index] for a small int32[A] `index` (see `_UNROLL_ACTIONS`)."""
  if index.shape[0] > _UNROLL_ACTIONS:
    return array[index]
  return jnp.stack([array[index[k]] for k in range(index.shape[0])])


def _bounds_through(child, reward, discount, child_low, child_high, child_end):
  """Bounds on the moves' values [A] from their children's bounds [A]."""
  terminal = child == graph_lib.TERMINAL
  is_node = child >= 0
  through_low = reward + discount * child_low.astype(jnp.float32)
  through_high = reward + discount * child_high.astype(jnp.float32)
  exact = jnp.sign(reward)
  low = jnp.where(terminal, exact,
                  jnp.where(is_node, jnp.sign(jnp.minimum(through_low, through_high)), -1.0))
  high = jnp.where(terminal, exact,
                   jnp.where(is_node, jnp.sign(jnp.maximum(through_low, through_high)), 1.0))
  end = jnp.where(terminal, 1, child_end + 1)
  return low.astype(jnp.int32), high.astype(jnp.int32), end.astype(jnp.int32)


def move_bounds(graph: graph_lib.Graph, node: chex.Array):
  """Bounds on the value of every move of `node` in ONE game's graph.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.

  Returns:
    (low, high, end): low and high int32[A], pessimistic and optimistic value
    of the move for the mover at `node` (-1 / 0 / +1), -1, -1 on illegal
    moves; end int32[A], plies to the game's end through the move when it is
    proven (low == high; 1 for a move that ends the game).
  """
  child = graph.child[node]
  below = unpack(_take(state(graph).bounds, jnp.maximum(child, 0)))
  low, high, end = _bounds_through(child, graph.edge_reward[node], graph.edge_discount[node],
                                   *below)
  legal = child != graph_lib.ILLEGAL
  return jnp.where(legal, low, -1), jnp.where(legal, high, -1), end


def node_bounds(low: chex.Array, high: chex.Array, end: chex.Array, legal: chex.Array):
  """A node's solver state from its moves' bounds (see the module docstring).

  Args:
    low: int32[A], the moves' pessimistic values (`move_bounds`).
    high: int32[A], their optimistic values.
    end: int32[A], plies to the end through each proven move.
    legal: bool[A].

  Returns:
    (solved code, end_in_ply, pessimistic, optimistic), int32 scalars.
  """
  any_legal = jnp.any(legal)
  pess = jnp.where(any_legal, jnp.max(jnp.where(legal, low, -1)), -1)
  opt = jnp.where(any_legal, jnp.max(jnp.where(legal, high, -1)), 1)
  win, loss, draw = pess == 1, opt == -1, (pess == 0) & (opt == 0)
  solved = jnp.select([win, loss, draw], [graph_lib.WIN, graph_lib.LOSS, graph_lib.DRAW],
                      graph_lib.UNKNOWN)
  win_end = jnp.min(jnp.where(legal & (low == 1), end, _BIG))
  draw_end = jnp.min(jnp.where(legal & (low == 0) & (high == 0), end, _BIG))
  loss_end = jnp.max(jnp.where(legal, end, 0))
  end_in_ply = jnp.select([win, loss, draw], [win_end, loss_end, draw_end], 0)
  return (solved.astype(jnp.int32), end_in_ply.astype(jnp.int32), pess.astype(jnp.int32),
          opt.astype(jnp.int32))


def _settle(state, old, bounds: bool):
  """The state to store: a proven node keeps its old state; without
  `bounds` an unproven node stores no partial bounds."""
  solved, end_in_ply, pess, opt = state
  if not bounds:
    proven = solved != graph_lib.UNKNOWN
    pess, opt = jnp.where(proven, pess, -1), jnp.where(proven, opt, 1)
  keep = old[0] != graph_lib.UNKNOWN
  return tuple(jnp.where(keep, o, n) for o, n in zip(old, (solved, end_in_ply, pess, opt)))


def is_stale(graph: graph_lib.Graph, node: chex.Array, bounds: bool = False) -> chex.Array:
  """Whether the stored state of `node` (ONE game) lags behind its moves.

  A child was proven, or bounded, through another parent. Selection flags
  such nodes on its path, so `solve_path` re-examines them.

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    bounds: partial bounds are stored (score-bounded search).

  Returns:
    bool scalar.
  """
  low, high, end = move_bounds(graph, node)
  own = state(graph)
  pess, opt, _ = unpack(own.bounds[node])
  fresh = _settle(node_bounds(low, high, end, graph.child[node] != graph_lib.ILLEGAL),
                  (own.solved[node], own.end_in_ply[node], pess, opt), bounds)
  return (fresh[2] != pess) | (fresh[3] != opt)


def solve_path(graph: graph_lib.Graph, path_nodes: chex.Array, length: chex.Array,
               last_child: chex.Array, stale: chex.Array | int = -1,
               bounds: bool = False) -> graph_lib.Graph:
  """Brings ONE game's path up to date after a simulation, from the bottom up.

  `last_child` (the node the last edge leads to, if any), then
  path_nodes[length - 1], ..., the root; a node updated here is visible to
  its parent's examination right after.

  Only nodes that can change are examined: the last child when it has
  expanded moves (a transposition link), the last parent when its last move
  has bounds (a terminal transition, a proven or bounded child), the nodes
  at and above `stale`, and, once any node has changed, every node above it.

  Args:
    graph: ONE game's graph [N, A], after the simulation's expansion.
    path_nodes: int32[D], the path's nodes from the root.
    length: int32, the number of path edges (0: no simulation).
    last_child: int32, see above; -1 for none.
    stale: int32, the deepest index into `path_nodes` (or `length`, the last
      child) of a node found stale by selection (`is_stale`); -1 for none.
    bounds: store partial bounds (score-bounded search), see the module doc.

  Returns:
    The Graph with its `SolverState` [N] updated.
  """
  own = state(graph)
  stale = jnp.where(length > 0, stale, -1)
  # Slot `length` holds the last child: the walk goes down the slots.
  nodes = jnp.concatenate([path_nodes, jnp.zeros((1,), jnp.int32)]).at[length].set(
      jnp.maximum(last_child, 0))
  safe_last = jnp.maximum(last_child, 0)
  # A fresh leaf (no expanded move) and a move into one change nothing.
  last_moves = graph.child[safe_last]
  linked = (last_child >= 0) & jnp.any((last_moves >= 0) | (last_moves == graph_lib.TERMINAL))
  bounded_move = (last_child == graph_lib.TERMINAL) | (
      (last_child >= 0) & (own.bounds[safe_last] != UNBOUNDED))

  def needed(i):
    return (((i == length) & linked) | ((i == length - 1) & bounded_move) | (i <= stale))

  # The walk keeps the states it computes in per-slot arrays [D + 1] and writes
  # them to the graph once, after the loop: a loop that carried the [N] node
  # arrays would, once vmapped, select and copy them whole on every iteration.
  # `held[j]` is the node whose new state slot j holds (-1: none; a node
  # examined twice, the last child of a cycle, keeps only its latest slot).
  def current(held, values, nodes_, array):
    """The states of `nodes_` (int32[...]) as updated so far by the walk."""
    match = nodes_[..., None] == held
    return jnp.where(jnp.any(match, axis=-1), jnp.sum(jnp.where(match, values, 0), axis=-1),
                     array[nodes_] if nodes_.ndim == 0 else _take(array, nodes_))

  def examine(i, walk):
    held, solved, end_in_ply, packed = walk
    node = nodes[i]
    child = graph.child[node]
    below = unpack(current(held, packed, jnp.maximum(child, 0), own.bounds))
    moves = _bounds_through(child, graph.edge_reward[node], graph.edge_discount[node], *below)
    pess, opt, _ = unpack(current(held, packed, node, own.bounds))
    old = (current(held, solved, node, own.solved), current(held, end_in_ply, node,
                                                           own.end_in_ply), pess, opt)
    new = _settle(node_bounds(*moves, child != graph_lib.ILLEGAL), old, bounds)
    changed = (new[2] != pess) | (new[3] != opt)
    held = jnp.where(held == node, -1, held).at[i].set(node)
    return changed, (held, solved.at[i].set(new[0]), end_in_ply.at[i].set(new[1]),
                     packed.at[i].set(pack(new[2], new[3], new[1])))

  def body(carry):
    i, changed, walk = carry
    now, walk = examine(i, walk)
    changed |= now
    # Nothing changed so far: skip down to the stale slots.
    i = jnp.where(changed | needed(i - 1), i - 1, jnp.minimum(i - 1, stale))
    return i, changed, walk

  start = jnp.maximum(jnp.minimum(stale, length),
                      jnp.maximum(jnp.where(linked, length, -1),
                                  jnp.where(bounded_move, length - 1, -1)))
  slots = nodes.shape[0]
  walk = (jnp.full((slots,), -1, jnp.int32),) + (jnp.zeros((slots,), jnp.int32),) * 3
  _, _, (held, solved, end_in_ply, packed) = jax.lax.while_loop(
      lambda carry: carry[0] >= 0, body, (start, jnp.bool_(False), walk))
  rows = jnp.where(held >= 0, held, graph.capacity)
  return graph_lib.with_state(graph, NAME, own.replace(
      solved=own.solved.at[rows].set(solved, mode="drop"),
      end_in_ply=own.end_in_ply.at[rows].set(end_in_ply, mode="drop"),
      bounds=own.bounds.at[rows].set(packed, mode="drop")))


def proven_choice(graph: graph_lib.Graph):
  """The move to play at each proven root.

  The shortest win, else the longest loss, else the most visited draw.

  Args:
    graph: Graph [B, N, A].

  Returns:
    (action int32[B], is_proven bool[B]).
  """

  def one(graph):
    low, high, end = move_bounds(graph, jnp.int32(0))
    visits = graph.edge_visits[0]
    legal = graph.child[0] != graph_lib.ILLEGAL
    root = codes(graph)[0]
    # Ties on the ply count go to the most visited move.
    tie = visits.astype(jnp.float32) / (visits.sum() + 1.0)
    win = jnp.where(low == 1, -end + tie, -_BIG)
    loss = jnp.where(legal, end + tie, -_BIG)
    draw = jnp.where(legal & (low == 0) & (high == 0), tie, -_BIG)
    score = jnp.select([root == graph_lib.WIN, root == graph_lib.LOSS], [win, loss], draw)
    return jnp.argmax(score).astype(jnp.int32), root != graph_lib.UNKNOWN

  return jax.vmap(one)(graph)


def pruned_moves(graph: graph_lib.Graph, node: chex.Array, bounds: bool = False) -> chex.Array:
  """The moves of `node` (ONE game) that selection never takes.

  The proven losses; with `bounds`, every move whose optimistic value is at
  most the node's pessimistic bound (max over its moves' pessimistic values).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    bounds: score-bounded search (`SearchConfig.solver_bounds`).

  Returns:
    bool[A].
  """
  low, high, _ = move_bounds(graph, node)
  legal = graph.child[node] != graph_lib.ILLEGAL
  if bounds:
    return legal & (high <= jnp.max(low))
  return legal & (high < 0)


def keep_unpruned(graph: graph_lib.Graph, node: chex.Array, allowed: chex.Array,
                  bounds: bool = False) -> chex.Array:
  """`allowed` without `pruned_moves` (a `plugins.Plugins.move_filters` entry).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    allowed: bool[A], the moves kept so far.
    bounds: score-bounded search.

  Returns:
    bool[A].
  """
  return allowed & ~pruned_moves(graph, node, bounds=bounds)
