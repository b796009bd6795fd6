"""The search graph: fixed-capacity node and edge tensors for a batch of games.

Shapes: B games, N node capacity, A actions, T hash-table slots.
Node 0 is the root. Values are from the point of view of the player to move
at the node (`value_sum`, `nn_value`) or at the edge's parent (`edge_q`).

The lowest module of the search: besides the graph's data (its key index's
`HashTable` included; `hash_table` probes it), what several phases read the
same way lives here: `take` and `edge_rows` (a node's rows), `exact_value`
(a proven node's value), `edge_values` (an edge's value through its child,
which selection, pruning and the backup read) and `transposition_diverged`
(Alg. 2's test, which selection and expansion apply), `computed_once` (a
value XLA must compute in one kernel), `select_first`.
"""

import dataclasses
from typing import Any, Sequence

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib

# `child` codes for edges that lead to no node.
UNEXPANDED = -1
TERMINAL = -2   # the transition ends the game; its value is `edge_reward`
ILLEGAL = -3

# `solved` codes (terminal solver): the game-theoretic value of a node for the
# player to move there, once proven.
UNKNOWN = 0
WIN = 1
LOSS = 2
DRAW = 3
# `bounds` of a node the solver knows nothing about: value in [-1, +1].
UNBOUNDED = 2
# Exact value of a proven node for its mover, indexed by the `solved` code.
_EXACT_VALUE = jnp.array([0.0, 1.0, -1.0, 0.0], jnp.float32)   # UNKNOWN, WIN, LOSS, DRAW

# Codes `computed_once` keeps exactly: 0 <= code < CODE_LIMIT.
CODE_LIMIT = 2**22

# Why a simulation's descent ended (`Selection.kind`); the backup
# reads it to pick the value of the last edge.
RUNNING = 0
EXPAND = 1          # an unexpanded edge: the game model is stepped, the key looked up
TERMINAL_EDGE = 2   # an edge into a terminal state: exact value, no network
CORRECTION = 3      # a transposition whose value has diverged: back up the correction
DEPTH_LIMIT = 4     # max_depth: back up the current estimate of the last edge
DEAD_END = 5        # a non-terminal node without legal actions: the current estimate
NO_SIMULATION = 6   # the root has no legal action, is proven, or the game is inactive
SOLVED_EDGE = 7     # an edge into a node proven by the solver: exact value
CYCLE = 8           # an edge back into a node on the path: the current estimate


@chex.dataclass(frozen=True)
class Selection:
  """ONE game's descent: the path and how the simulation ends.

  Made by the descent (`selection.select_batch`), read by expansion and
  the backup. Batched selections carry a leading dimension B on every field.
  The path arrays have D = `SearchConfig.max_depth` entries.
  """
  path_nodes: chex.Array    # int32[D], nodes from the root
  path_actions: chex.Array  # int32[D], the action taken at each
  length: chex.Array        # int32, number of edges on the path
  kind: chex.Array          # int32, one of the codes above
  parent: chex.Array        # int32, node of the last edge
  action: chex.Array        # int32, action of the last edge
  start: chex.Array         # int32, first path edge the backup updates
  explored: chex.Array      # bool, an exploration trajectory
  stale: chex.Array         # int32, deepest path node the solver must re-examine (-1: none)
  path_marks: chex.Array    # bool[N], the nodes of the path, where links can close
                            # cycles (`selection.tracks_cycles`); bool[0] otherwise


@chex.dataclass(frozen=True)
class SearchStats:
  """Per-game counters, each int32[B] (int32 in one game's view).

  The one definition of the search's counters: the graph carries them and
  `SearchOutput.stats` returns them. Indexable by name (`stats["nn_evals"]`).

  Attributes:
    nodes_used: nodes stored (the next free node index)
    simulations: simulations that backed up a value
    nn_evals: leaves that needed the network (incl. the root)
    eval_rows: rows sent to `eval_fn` (incl. the root): with leaves_per_step L, L per step
      whatever they needed
    transposition_hits: new edges linked to an existing node (no network call)
    corrections: simulations stopped early at a diverged transposition
    tt_cache_hits: tt_cache mode: network results copied from the table
    terminal_visits: simulations that ended in a terminal transition
    solved_visits: simulations that ended at a node proven by the solver
    explorations: eps-greedy / constraint-first trajectories
    disconnected: of those, backed up from below the root only
    collisions: leaves_per_step: leaves dropped, edge expanded by an earlier leaf
    node_overflows: leaves not stored: node arrays full
    table_overflows: nodes not indexed: no free slot within max_probes
    depth_overflows: simulations cut at max_depth
    nan_evals: network outputs with NaN, replaced (uniform prior, value 0)
    cycles: keys without the ply: a link that would close a cycle (a fresh, unindexed node
      instead) or a descent back into a node on the path (stopped, current estimate)
    deferred_expansions: expansion_policy: evaluated leaves not stored as nodes
  """
  nodes_used: chex.Array
  simulations: chex.Array
  nn_evals: chex.Array
  eval_rows: chex.Array
  transposition_hits: chex.Array
  corrections: chex.Array
  tt_cache_hits: chex.Array
  terminal_visits: chex.Array
  solved_visits: chex.Array
  explorations: chex.Array
  disconnected: chex.Array
  collisions: chex.Array
  node_overflows: chex.Array
  table_overflows: chex.Array
  depth_overflows: chex.Array
  nan_evals: chex.Array
  cycles: chex.Array
  deferred_expansions: chex.Array

  @property
  def capacity_overflows(self) -> chex.Array:
    """node_overflows + table_overflows."""
    return self.node_overflows + self.table_overflows


STAT_FIELDS = tuple(field.name for field in dataclasses.fields(SearchStats))

# Graph fields held once per game, without a node axis; every other core
# field is indexed [B, N, ...]. An enhancement's record declares its own
# (`EnhancementState.game_fields`).
GAME_FIELDS = ("table", "stats", "enhancements")


class EnhancementState:
  """Base of an enhancement's own state, a record in `Graph.enhancements`.

  Each enhancement that keeps arrays in the graph (the solver's proofs, hard
  pruning's masks, the Gumbel root's noise, RAVE's AMAF statistics) defines
  a frozen `chex.dataclass` subclass in its module. The graph holds the
  records of the enhancements a search runs, and none of one that is off.
  `reuse.advance` moves, compacts and clears every record alike: fields
  indexed [B, N, ...] move with their nodes; `game_fields` (per game, no
  node axis) are reset to `empty`'s; then `rerooted` may adjust the record
  to its new root.
  """
  game_fields: tuple = ()

  @classmethod
  def empty(cls, batch_size: int, capacity: int, num_actions: int) -> "EnhancementState":
    """The record of a graph without nodes (every slot blank).

    Args:
      batch_size: B.
      capacity: N.
      num_actions: A.

    Returns:
      The record, arrays with leading axes [B, N] (game fields [B]).
    """
    raise NotImplementedError

  def rerooted(self, graph: "Graph") -> "EnhancementState":
    """The record after `reuse.advance` moved it to a new root.

    Args:
      graph: the re-rooted Graph [B, N, A] (this record not yet in it).

    Returns:
      The record (itself unless the enhancement keeps root state).
    """
    del graph
    return self


@chex.dataclass(frozen=True)
class Graph:
  """Batched search graph. Every array has a leading batch axis B."""
  # Nodes [B, N].
  visits: chex.Array        # int32, includes the node's own evaluation
  value_sum: chex.Array     # f32, V(s) = value_sum / visits
  nn_value: chex.Array      # f32, the network's (or cache's) value
  prior: chex.Array         # f32[B, N, A], 0 on illegal actions
  # int32[B, N, 1 + P]: the number of edges into the node (root 0,
  # transposition node iff > 1), then the nodes some of them leave, each in
  # a slot of its own (-1 in the free ones), all of them where the count
  # equals the listed ones (`num_parents` reads the count; P `parent_slots`).
  parents: chex.Array
  key: chex.Array           # uint32[B, N, 2]
  embedding: Any            # pytree [B, N, ...]
  # Edges [B, N, A].
  child: chex.Array         # int32 node index or UNEXPANDED/TERMINAL/ILLEGAL
  edge_visits: chex.Array   # int32 N(s, a)
  edge_q: chex.Array        # f32 Q(s, a), running mean; meaningless when N = 0
  edge_reward: chex.Array   # f32 reward of the transition (to the mover)
  edge_discount: chex.Array  # f32, Q = reward + discount * V(child)
  # Hash table [B, T].
  table: "HashTable"
  # Counters [B].
  stats: SearchStats
  # The running enhancements' own state: name -> `EnhancementState` record
  # ("solver", "pruning", "gumbel", "rave"; empty for a default search).
  enhancements: dict

  @property
  def batch_size(self) -> int:
    """B, the number of games."""
    return self.visits.shape[0]

  @property
  def capacity(self) -> int:
    """N, the node capacity per game."""
    return self.visits.shape[-1]

  @property
  def num_actions(self) -> int:
    """A, the number of actions."""
    return self.prior.shape[-1]

  @property
  def num_parents(self) -> chex.Array:
    """int32[B, N]: the edges into each node (root 0; a transposition iff > 1)."""
    return self.parents[..., 0]

  @property
  def nodes_used(self) -> chex.Array:
    """int32[B]: nodes stored, the next free node index."""
    return self.stats.nodes_used


def node_value(visits: chex.Array, value_sum: chex.Array) -> chex.Array:
  """V = value_sum / visits, 0 for empty nodes (guarded division).

  Args:
    visits: int32 node visits, any shape (e.g. [B, N]).
    value_sum: f32 of the same shape.

  Returns:
    f32 of that shape.
  """
  return jnp.where(visits > 0, value_sum / jnp.maximum(visits, 1), 0.0)


def select_first(conditions: Sequence[chex.Array], choices: Sequence[Any],
                 default: Any) -> chex.Array:
  """`jnp.select`: the choice of the first true condition, else `default`.

  As a chain of `where`s, which XLA fuses with the conditions' arithmetic;
  `jnp.select` stacks the conditions and takes their argmax, two kernels of
  their own in every loop iteration that runs it.

  Args:
    conditions: bool arrays (broadcastable to one shape).
    choices: one value per condition (same broadcasting).
    default: the value where no condition holds.

  Returns:
    The broadcast shape, the choices' promoted dtype.
  """
  chex.assert_equal(len(conditions), len(choices))
  result = default
  for condition, choice in zip(reversed(conditions), reversed(choices)):
    result = jnp.where(condition, choice, result)
  return result


def _take_one(array, *indices):
  return array[tuple(jnp.clip(i, 0, size - 1) for i, size in zip(indices, array.shape))]


def _take_batch(axis_size, in_batched, array, *indices):
  """The batched rule: a gather from the flattened array at flat indices.

  XLA compiles a batched gather (`array[b, node, action]` of every game b)
  into a general gather whose every element decodes an index vector; one
  flat index into the flattened array is a simpler gather (about half the
  time in a CPU micro-benchmark of [1024, 65, 7] reads).
  """
  array_batched, indices_batched = in_batched[0], in_batched[1:]
  if not array_batched:
    return _take_one(array, *indices), any(indices_batched)
  # Indices of one game may be arrays (all of one shape): [B, ...] batched.
  index_shape = jnp.broadcast_shapes(*[i.shape[1:] if batched else jnp.shape(i)
                                       for i, batched in zip(indices, indices_batched)])
  indices = [jnp.broadcast_to(i if batched else jnp.asarray(i)[None], (axis_size,) + index_shape)
             for i, batched in zip(indices, indices_batched)]
  flat_index = jnp.arange(axis_size, dtype=jnp.int32).reshape((-1,) + (1,) * len(index_shape))
  for size, index in zip(array.shape[1:], indices):
    flat_index = flat_index * size + jnp.clip(index, 0, size - 1)
  rest = array.shape[1 + len(indices):]
  flat = array.reshape((-1,) + rest)
  return flat.at[flat_index].get(mode="promise_in_bounds"), True


take = jax.custom_batching.custom_vmap(_take_one)
take.def_vmap(_take_batch)
take.__doc__ = """`array[indices]` for ONE game; vmapped, a flat-index gather.

  Args:
    array: ONE game's array, e.g. [N, A] or [N].
    *indices: int32 scalars or arrays of one shape, one per leading axis
      indexed (clamped to the axis, negative ones to 0).

  Returns:
    `array[indices]`: elements or rows, of the indices' shape.
  """


@chex.dataclass(frozen=True)
class EdgeRows:
  """The edge rows of one node of ONE game (`edge_rows`)."""
  child: chex.Array     # int32[A], `Graph.child`
  visits: chex.Array    # int32[A], `Graph.edge_visits`
  q: chex.Array         # f32[A], `Graph.edge_q`
  prior: chex.Array     # f32[A], `Graph.prior`
  pending: Any          # int32[A], the pending leaves through each edge, or None
  buffer: Any           # the `edge_rows_buffer` the rows were written to, or None


def edge_rows_buffer(num_actions: int, pending: bool = False) -> chex.Array:
  """A buffer for `edge_rows` to write one node's rows into (ONE game).

  Args:
    num_actions: A.
    pending: whether the rows will include pending leaves.

  Returns:
    int32[R + 1, A] zeros, R = 4 rows (5 with `pending`) and one spare row,
    which keeps the write a partial update (XLA replaces an update of a
    whole buffer by the update itself, a kernel it may split again).
  """
  return jnp.zeros((6 if pending else 5, num_actions), jnp.int32)


def edge_rows(graph: Graph, node: chex.Array, virtual_visits: chex.Array | None = None,
              buffer: chex.Array | None = None) -> EdgeRows:
  """`node`'s child, visit, Q and prior rows (and pending leaves), read
  together, for ONE game.

  The rows are gathered by one kernel (vmapped), and every later use reads
  its small output. XLA's CPU backend splits a kernel that gathers from
  arrays as large as a batch's [B, N, A] edge arrays over threads (its cost
  model counts the whole array as read), and on a busy machine each such
  hand-off costs more than the read itself: a descent step whose scores,
  chosen child and transposition test gathered their own rows paid for
  several split kernels at every step. The backend never splits a kernel
  that updates a slice of a buffer in place, so with `buffer` (carried by
  the caller from one call to the next: `edge_rows_buffer`, then the
  returned `EdgeRows.buffer`) the rows are written into it and the read is
  not split either.

  Args:
    graph: ONE game's graph.
    node: int32 node index, or a Python int (e.g. 0, the root).
    virtual_visits: optional int32[N, A], pending leaves of this step
      (`leaves_per_step`).
    buffer: optional `edge_rows_buffer(A, virtual_visits is not None)`.

  Returns:
    EdgeRows, `pending` None without `virtual_visits`, `buffer` None
    without `buffer`.
  """
  if isinstance(node, int):
    read = lambda x: x[node]   # a static slice (vmapped too)
  else:
    read = lambda x: take(x, node)
  to_int = lambda x: jax.lax.bitcast_convert_type(x, jnp.int32)
  rows = [read(graph.child), read(graph.edge_visits), to_int(read(graph.edge_q)),
          to_int(read(graph.prior))]
  if virtual_visits is not None:
    rows.append(read(virtual_visits))
  rows = jnp.stack([r.astype(jnp.int32) for r in rows])
  if buffer is None:
    # The barrier keeps XLA from fusing the reads back into their users.
    rows = jax.lax.optimization_barrier(rows)
  else:
    chex.assert_shape(buffer, (rows.shape[0] + 1, rows.shape[1]))
    buffer = jax.lax.dynamic_update_slice(buffer, rows, (0, 0))
    rows = buffer[:-1]
  to_float = lambda x: jax.lax.bitcast_convert_type(x, jnp.float32)
  return EdgeRows(child=rows[0], visits=rows[1], q=to_float(rows[2]), prior=to_float(rows[3]),
                  pending=rows[4] if virtual_visits is not None else None, buffer=buffer)


def edge_rows_direct(graph: Graph, node: chex.Array,
                     virtual_visits: chex.Array | None = None) -> EdgeRows:
  """`edge_rows` as plain gathers, each fused into its users by XLA.

  The PUCT descent reads a node's rows this way: its scores are a few
  elementwise operations that XLA fuses with the gathers, where the one
  stacked read of `edge_rows` (made for the Gumbel root's larger scoring)
  adds a kernel and a copy of the rows at every descent step.

  Args:
    graph: ONE game's graph.
    node: int32 node index.
    virtual_visits: optional int32[N, A], pending leaves of this step.

  Returns:
    EdgeRows (`buffer` None).
  """
  return EdgeRows(child=take(graph.child, node), visits=take(graph.edge_visits, node),
                  q=take(graph.edge_q, node), prior=take(graph.prior, node),
                  pending=None if virtual_visits is None else take(virtual_visits, node),
                  buffer=None)


def gather_nodes(tree: Any, index: chex.Array) -> Any:
  """One node per game.

  Args:
    tree: a pytree of arrays [B, N, ...] (node fields of a Graph).
    index: int32[B], the node of each game.

  Returns:
    The pytree with arrays [B, ...].
  """
  return jax.tree.map(lambda x: jax.vmap(lambda row, i: row[i])(x, index), tree)


def parent_slots(num_actions: int) -> int:
  """P, the parents each node lists beside its parent count (`Graph.parents`).

  Re-rooting follows the listed parents where every node lists all of its
  (`reuse.advance`), else the edges (the same nodes, slower). Each slot
  costs every node a word in every pass over the graph, so wide rows pay
  where nodes are wide: 7 slots from 16 actions on, 3 below. Measured in
  self-play (B=256, S=64, graph reuse): 7 slots instead of 3 made Nim
  (1,3,5,7) (28 actions, nodes of up to 7 parents) 1.5-2% faster and
  Connect-4 (7 actions, rarely more than 3) 2% slower.

  Args:
    num_actions: A.

  Returns:
    int, 3 or 7.
  """
  return 7 if num_actions >= 16 else 3


def empty(batch_size: int, capacity: int, num_actions: int, table_size: int,
          embedding: Any, states: Sequence[tuple[str, type]] = ()) -> Graph:
  """A graph with no nodes.

  Args:
    batch_size: B.
    capacity: N, nodes per game.
    num_actions: A.
    table_size: T, hash-table slots per game.
    embedding: one batch of states, a pytree of arrays [B, ...]; only its
      structure, shapes and dtypes are used (the node embeddings are
      [B, N, ...] zeros).
    states: (name, `EnhancementState` subclass) of each enhancement whose
      record the graph holds (`plugins.Plugins.states`).

  Returns:
    Graph [B, N, A] with every edge UNEXPANDED, every counter 0.
  """
  b, n, a = batch_size, capacity, num_actions

  def zeros(shape, dtype):
    return jnp.zeros((b,) + shape, dtype)

  table = jax.vmap(lambda _: empty_table(table_size))(jnp.arange(b))
  return Graph(
      visits=zeros((n,), jnp.int32),
      value_sum=zeros((n,), jnp.float32),
      nn_value=zeros((n,), jnp.float32),
      prior=zeros((n, a), jnp.float32),
      parents=jnp.concatenate([zeros((n, 1), jnp.int32),
                               jnp.full((b, n, parent_slots(a)), -1, jnp.int32)], axis=-1),
      key=zeros((n, 2), jnp.uint32),
      embedding=jax.tree.map(
          lambda x: jnp.zeros((b, n) + x.shape[1:], x.dtype), embedding),
      child=jnp.full((b, n, a), UNEXPANDED, jnp.int32),
      edge_visits=zeros((n, a), jnp.int32),
      edge_q=zeros((n, a), jnp.float32),
      edge_reward=zeros((n, a), jnp.float32),
      edge_discount=zeros((n, a), jnp.float32),
      table=table,
      stats=SearchStats(**{name: zeros((), jnp.int32) for name in STAT_FIELDS}),
      enhancements={name: kind.empty(b, n, a) for name, kind in states},
  )


def state_types(graph: Graph) -> tuple[tuple[str, type], ...]:
  """The (name, record class) of each enhancement record `graph` holds, as
  `empty` takes them.

  Args:
    graph: Graph.

  Returns:
    tuple of (str, `EnhancementState` subclass).
  """
  return tuple((name, type(record)) for name, record in sorted(graph.enhancements.items()))


def with_state(graph: Graph, name: str, record: EnhancementState) -> Graph:
  """`graph` with enhancement `name`'s record replaced.

  Args:
    graph: Graph (one game or a batch).
    name: the record's name in `Graph.enhancements`.
    record: the new record.

  Returns:
    The Graph.
  """
  return graph.replace(enhancements={**graph.enhancements, name: record})


def node_leaves(graph: Graph) -> list:
  """Every array of `graph` indexed [B, N, ...]: the core node and edge
  fields and the records' node fields.

  Args:
    graph: Graph [B, N, A].

  Returns:
    list of arrays.
  """
  leaves = []
  for field in dataclasses.fields(graph):
    if field.name not in GAME_FIELDS:
      leaves += jax.tree.leaves(getattr(graph, field.name))
  for record in graph.enhancements.values():
    for field in dataclasses.fields(record):
      if field.name not in record.game_fields:
        leaves += jax.tree.leaves(getattr(record, field.name))
  return leaves


def bytes_per_game(graph: Graph) -> int:
  """Bytes of search state one game holds (all node, edge and table arrays).

  Args:
    graph: Graph [B, N, A].

  Returns:
    int, the bytes of all its arrays divided by B.
  """
  leaves = jax.tree.leaves(graph)
  return sum(x.size * x.dtype.itemsize for x in leaves) // graph.batch_size


def write_node(graph: Graph, index: chex.Array, *, key, embedding, prior, legal,
               value) -> Graph:
  """Stores a freshly evaluated node at `index` of ONE game's graph.

  Unbatched view (under vmap): the fields below carry no B axis. An index
  >= capacity writes nothing.

  Args:
    graph: Graph [N, A] of one game.
    index: int32 scalar, the node slot.
    key: uint32[2], the node's key.
    embedding: a pytree of arrays, the node's state (no N axis).
    prior: f32[A], the prior (0 on illegal actions).
    legal: bool[A]; illegal edges are written ILLEGAL, the others UNEXPANDED.
    value: f32 scalar, the evaluation (the node's first visit).

  Returns:
    The Graph with the node written (visits 1). Its other fields (its
    parents, which the expansion writes with the edge into it, its edge
    statistics, the enhancements' records) keep the blank values of `empty`:
    nodes are only appended at `nodes_used`, and `advance` rebuilds the graph
    from `empty`, so a slot is blank until it is written (one scatter kernel
    per array per simulation saved).
  """
  def put(array, x):
    return array.at[index].set(x, mode="drop")
  return graph.replace(
      visits=put(graph.visits, 1),
      value_sum=put(graph.value_sum, value),
      nn_value=put(graph.nn_value, value),
      prior=put(graph.prior, prior),
      key=put(graph.key, key),
      embedding=jax.tree.map(put, graph.embedding, embedding),
      child=put(graph.child, jnp.where(legal, UNEXPANDED, ILLEGAL)),
  )


def add_stats(graph: Graph, **increments) -> Graph:
  """Adds int/bool increments to the named counters.

  Args:
    graph: Graph of one game (increments scalars), or a batch (increments
      scalars or of shape [B]).
    **increments: counter name (a `SearchStats` field) -> increment.

  Returns:
    The Graph with the counters incremented.
  """
  stats = graph.stats
  return graph.replace(stats=stats.replace(**{
      name: stats[name] + jnp.asarray(inc, jnp.int32) for name, inc in increments.items()}))


def exact_value(solved: chex.Array) -> chex.Array:
  """The value of a `solved` code for the player to move at the node.

  Args:
    solved: int32, UNKNOWN/WIN/LOSS/DRAW codes, any shape.

  Returns:
    f32 of that shape: +1 / -1 / 0 for WIN / LOSS / DRAW (0 for UNKNOWN).
  """
  return _EXACT_VALUE[solved]


# Values read off the graph's statistics: what selection, pruning and the
# backup all read (an edge's value through its child, the transposition test).


def transposition_diverged(graph: Graph, node: chex.Array, action: chex.Array,
                           child: chex.Array, config: config_lib.SearchConfig,
                           alternating: bool, edge_q: chex.Array | None = None) -> chex.Array:
  """The transposition test of ONE game's edge (Alg. 2): the edge leads to a
  node with several parents whose value the edge's Q no longer matches,
  |Q(s, a) - (r + discount V(child))| > q_eps.

  Args:
    graph: ONE game's graph [N, A] (a vmapped batch: the gathers are flat).
    node: int32, the edge's node.
    action: int32, the edge's action.
    child: int32, `graph.child[node, action]` (a code < 0: not a node).
    config: SearchConfig (`q_eps`).
    alternating: the model's `alternating_zero_sum`: reward 0 and discount
      -1 without reading them.
    edge_q: optional f32, the edge's Q where already read.

  Returns:
    bool.
  """
  is_node = child >= 0
  safe_child = jnp.maximum(child, 0)
  # V(child) with the visits read once (a stored node has visits > 0, an
  # empty one value_sum 0): read twice, XLA gives the read a kernel of its own.
  child_value = (take(graph.value_sum, safe_child)
                 / jnp.maximum(take(graph.visits, safe_child), 1).astype(jnp.float32))
  if alternating:
    target = -child_value
  else:
    target = (take(graph.edge_reward, node, action) + take(graph.edge_discount, node, action) *
              child_value)
  if edge_q is None:
    edge_q = take(graph.edge_q, node, action)
  return (is_node & (take(graph.num_parents, safe_child) > 1) &
          (jnp.abs(edge_q - target) > config.q_eps))


def edge_values(graph: Graph, node: chex.Array, solved: chex.Array | None = None) -> chex.Array:
  """Every edge's value for the mover at `node` of ONE game, read off its child.

  Used in "katago" mode: reward + discount * V(child), the exact value of a
  child proven by the solver, the reward of a terminal edge, and the stored
  Q of an edge without a stored child (unexpanded; a leaf not stored for lack
  of capacity).

  Args:
    graph: Graph [N, A] of one game (unbatched view).
    node: int32 scalar.
    solved: int32[N], the solver's codes of the nodes (`plugins.Plugins.proofs`):
      a proven child's value is its exact value; None without the solver.

  Returns:
    f32[A].
  """
  child = take(graph.child, node)
  safe = jnp.maximum(child, 0)
  return edge_values_from(child, take(graph.edge_reward, node), take(graph.edge_discount, node),
                         take(graph.edge_q, node), take(graph.visits, safe),
                         take(graph.value_sum, safe),
                         None if solved is None else take(solved, safe))


def edge_values_from(child, reward, discount, stored_q, child_visits, child_value_sum,
                     child_solved):
  """`edge_values` from a node's rows and its children's statistics.

  Args:
    child: int32[A], the node's child row.
    reward: f32[A], its edges' rewards.
    discount: f32[A], its edges' discounts.
    stored_q: f32[A], its edges' stored Q (kept where no child is stored).
    child_visits: int32[A], the children's visits.
    child_value_sum: f32[A], the children's value sums.
    child_solved: int32[A], the children's solver codes; None without the
      solver (no child is proven).

  Returns:
    f32[A].
  """
  value = node_value(child_visits, child_value_sum)
  if child_solved is not None:
    value = jnp.where(child_solved != UNKNOWN, exact_value(child_solved), value)
  return select_first([child >= 0, child == TERMINAL], [reward + discount * value, reward],
                      stored_q)


# The key index's data (`hash_table` holds its probing, lookup and insertion).
# A free slot, or a key not found.
EMPTY = -1

# Lanes of a table entry: the key's two lanes, then the node index's bits.
_NODE_LANE = 2


@chex.dataclass(frozen=True)
class HashTable:
  """One game's table of T slots (T a power of two).

  A slot's key and node index share one row, so a lookup reads one run of
  memory per game rather than one per array: on a CPU with the graph's
  arrays around it, each such read waits for memory.

  Attributes:
    entries: uint32[T, 3], the stored key's two lanes, then the stored node
      index's bits (EMPTY where free). `stored_keys` and `nodes` read them.
  """
  entries: chex.Array

  @property
  def stored_keys(self) -> chex.Array:
    """uint32[..., T, 2]: the key stored in each slot (0 where free)."""
    return self.entries[..., :_NODE_LANE]

  @property
  def nodes(self) -> chex.Array:
    """int32[..., T]: the node index stored in each slot, EMPTY where free."""
    return self.entries[..., _NODE_LANE].view(jnp.int32)


def table_entry(key: chex.Array, node: chex.Array) -> chex.Array:
  """A table entry: the key's lanes, then the node index's bits.

  Args:
    key: uint32[..., 2].
    node: int32[...], a node index or EMPTY.

  Returns:
    uint32[..., 3].
  """
  node_bits = jnp.asarray(node, jnp.int32).view(jnp.uint32)
  return jnp.concatenate([key, node_bits[..., None]], axis=-1)


def empty_table(size: int) -> HashTable:
  """A table of `size` slots, all free.

  Args:
    size: T, the number of slots (a power of two).

  Returns:
    HashTable with entries uint32[T, 3].
  """
  return HashTable(entries=table_entry(jnp.zeros((size, 2), jnp.uint32),
                                       jnp.full((size,), EMPTY, jnp.int32)))


def computed_once(code: chex.Array) -> chex.Array:
  """`code` (bool, or int32 in [0, 2^22)), computed in a kernel of its own.

  XLA fuses a cheap producer into each of its consumers, so a value that
  several consumers read (a descent step's end code: the next node, depth,
  path length and code all follow from it) is recomputed in each of them,
  every gather behind it included, and the gathers feeding several such
  kernels get kernels of their own. XLA never duplicates a producer that
  ends in an operation it deems expensive (a square root): the value gets
  one kernel, with the gathers behind it fused in, and its consumers read
  the result. round(sqrt(k)^2) = k exactly for 0 <= k < 2^22.

  Args:
    code: bool or int32 array of small non-negative codes.

  Returns:
    The same values, dtype and shape.
  """
  root = jnp.sqrt(code.astype(jnp.float32))
  return jnp.round(root * root).astype(code.dtype)
