"""Batched Monte-Carlo Graph Search: the root, the simulation loop, the search.

One simulation step for all B games (one jitted loop iteration,
`simulation_step`), whatever the search (one leaf per game, several leaves
per game, Dual MCTS's large search), which passes in its selection rule:
  1. select: L leaves per game (a PUCT descent, `selection`; L > 1 with
     virtual losses, `leaves`);
  2. ONE batched `Model.transition` at the selected edges;
  3. ONE batched `eval_fn` call (`expansion.evaluate`), its values
     optionally adjusted by a passed-in rule;
  4. for each leaf: lookup of the child's key in each game's hash table,
     then expand and back up (vmap): link transpositions, store new nodes,
     index them, back the leaf value up the path, corrected in "mcgs" mode
     (`expansion`, `backup`);
then `policies.summarize` reads the move and the policy off the root.
"""

import functools
from typing import Any, Callable

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import expansion
from mcgs_jax import graph as graph_lib
from mcgs_jax import hash_table
from mcgs_jax import leaves
from mcgs_jax import model as model_lib
from mcgs_jax import policies
from mcgs_jax import rules
from mcgs_jax import selection

# Re-exported: the search's outputs and the summary are part of its API.
SearchOutput = policies.SearchOutput
SearchStats = graph_lib.SearchStats
summarize = policies.summarize


def check_rng(rng: chex.PRNGKey) -> None:
  """Raises a ValueError unless `rng` is one PRNG key.

  The search splits one key into whatever it needs for all B games; a batch
  of keys (one per game, `[B, 2]`) would otherwise fail deep inside
  `jax.random` with advice to vmap, which the batched search does not need.

  Args:
    rng: a raw key (uint32 `jax.random.PRNGKey(0)`-shaped) or a scalar typed
      key (`jax.random.key(0)`).

  Raises:
    ValueError: another shape.
  """
  shape = tuple(jnp.shape(rng))
  if jax.dtypes.issubdtype(jnp.asarray(rng).dtype, jax.dtypes.prng_key):
    expected = ()
  else:
    expected = tuple(jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape)
  if shape != expected:
    raise ValueError(
        f"rng must be one PRNG key (shape {expected}), got an array of shape {shape}: the "
        "search is batched and draws every game's randomness from one key; pass e.g. "
        "jax.random.PRNGKey(0), not one key per game")


@chex.dataclass(frozen=True)
class Roots:
  """Each game's evaluated root, before it is written into a graph (`init`,
  `reuse.reroot`). Every field leads with B."""
  key: chex.Array        # uint32[B, 2]
  embedding: Any         # pytree [B, ...]
  prior: chex.Array      # f32[B, A], with the root noise the config asks for
  legal: chex.Array      # bool[B, A], no move at a terminal root
  value: chex.Array      # f32[B], 0 at a terminal root
  terminal: chex.Array   # bool[B]
  nan: chex.Array        # bool[B], the network's output held NaN (replaced)


def evaluate_roots(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
                   config: config_lib.SearchConfig) -> Roots:
  """The network's evaluation of each game's root, as `init` stores it.

  Args:
    params: network parameters, for `eval_fn`.
    rng: a PRNG key; `init`'s key gives `init`'s evaluation and noise.
    state: a batch of states [B].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.

  Returns:
    Roots [B].

  Raises:
    ValueError, RootError: as `init`.
  """
  check_rng(rng)
  check_batch(state)
  model = model_lib.as_model(env)
  model_lib.check_solver(model, rules.of(config).proves)
  root = model.root(state)
  if root.key.ndim != 2 or root.key.shape[-1] != 2 or root.key.dtype != jnp.uint32:
    raise ValueError(f"state.key must be uint32[B, 2], got {root.key.dtype}{list(root.key.shape)}; "
                     "search takes a batch of states (env.init(rng, batch_size=B))")
  batch_size = root.key.shape[0]
  chex.assert_shape(root.legal, (batch_size, model.num_actions))
  chex.assert_shape(root.terminal, (batch_size,))
  expansion.check_roots(root.legal, root.terminal, config)
  legal = root.legal & ~root.terminal[:, None]
  prior, value, nan = expansion.evaluate(params, rng, eval_fn, root.embedding, legal, config)
  prior = policies.noisy_root_prior(jax.random.fold_in(rng, 1), prior, legal, config)
  value = jnp.where(root.terminal, 0.0, value)
  return Roots(key=root.key, embedding=root.embedding, prior=prior, legal=legal, value=value,
               terminal=root.terminal, nan=nan)


def write_roots(graph: graph_lib.Graph, roots: Roots, config: config_lib.SearchConfig,
                rows: chex.Array | None = None) -> graph_lib.Graph:
  """`roots` stored as node 0 of the games' empty graphs, counted in `stats`.

  Args:
    graph: Graph [B, N, A], blank (`graph.empty`) in the games written.
    roots: Roots [B].
    config: SearchConfig. Static.
    rows: optional bool[B], the games to write (all without it); the others
      are left as they are.

  Returns:
    Graph [B, N, A].
  """
  capacity = graph.capacity

  def put_root(graph, roots, row):
    # Without rows every game is written; with them, `where` keeps the others'
    # values (a node index past the capacity writes nothing, `write_node`;
    # a negative slot neither, `hash_table.write`) and `only` their counts.
    where = (lambda new, old: new) if row is None else (lambda new, old: jnp.where(row, new, old))
    only = (lambda x: x) if row is None else (lambda x: row & x)
    graph = graph_lib.write_node(graph, where(jnp.int32(0), capacity), key=roots.key,
                                 embedding=roots.embedding, prior=roots.prior, legal=roots.legal,
                                 value=roots.value)
    if config.uses_table:
      _, free_slot = hash_table.find(graph.table, roots.key, config.max_probes)
      free_slot = where(free_slot, graph_lib.EMPTY)
      table = hash_table.write(graph.table, free_slot, roots.key, jnp.int32(0))
      graph = graph_lib.add_stats(graph.replace(table=table),
                                  table_overflows=only(~(free_slot >= 0)))
    stats = graph.stats
    graph = graph.replace(stats=stats.replace(nodes_used=where(jnp.int32(1), stats.nodes_used)))
    return graph_lib.add_stats(graph, nn_evals=only(~roots.terminal), eval_rows=only(True),
                               nan_evals=only(roots.nan & ~roots.terminal))

  if rows is not None:
    chex.assert_shape(rows, (graph.batch_size,))
  return jax.vmap(put_root)(graph, roots, rows)


def init(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
         config: config_lib.SearchConfig) -> graph_lib.Graph:
  """A graph holding only the evaluated root of each game.

  Args:
    params: network parameters, for `eval_fn`.
    rng: a PRNG key (the network, the root noise).
    state: a batch of states [B] (see `search`).
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.

  Returns:
    Graph [B, N, A] with node 0 the evaluated root (Dirichlet noise on its
    prior with `config.dirichlet_fraction > 0`, its Gumbel noise drawn with
    `config.root_policy == "gumbel"`) and the counters at 0 but for the
    root's evaluation.

  Raises:
    ValueError: (at trace time) when the root keys are not uint32[B, 2] (an
      unbatched state), the state's fields disagree on B (`check_batch`),
      the solver is on and the model's keys are not exact
      (`model.check_solver`), or `rng` is not one PRNG key.
    RootError: a root that is not terminal has no legal move
      (`expansion.check_roots`: at once outside jit, at run time under jit
      with `config.check_evaluator`).
  """
  roots = evaluate_roots(params, rng, state, env, eval_fn, config)
  num_actions = roots.legal.shape[-1]
  graph = graph_lib.empty(roots.key.shape[0], config.node_capacity, num_actions,
                          config.table_capacity, roots.embedding, rules.of(config).states)
  graph = write_roots(graph, roots, config)
  return policies.with_root_gumbel(jax.random.fold_in(rng, 2), graph, roots.legal, config)


def check_batch(state: Any) -> None:
  """Refuses a batch of states whose fields disagree on the batch size B.

  Args:
    state: a pytree of arrays, each leading with B (scalars are left alone).

  Raises:
    ValueError: (at trace time) naming the first field whose B differs from
      the first field's, and both shapes.
  """
  leaves = [(jax.tree_util.keystr(path), leaf) for path, leaf in
            jax.tree_util.tree_flatten_with_path(state)[0] if jnp.ndim(leaf) > 0]
  if not leaves:
    return
  first, reference = leaves[0]
  for name, leaf in leaves[1:]:
    if jnp.shape(leaf)[0] != jnp.shape(reference)[0]:
      raise ValueError(
          f"the batch of states disagrees on its size: state{first} has "
          f"{jnp.shape(reference)[0]} rows (shape {tuple(jnp.shape(reference))}), state{name} "
          f"{jnp.shape(leaf)[0]} (shape {tuple(jnp.shape(leaf))}); every field of a batch leads "
          "with the same B (envs.stack batches single states)")


def _select_one(graph: graph_lib.Graph, rng: chex.PRNGKey, model: model_lib.Model,
                config: config_lib.SearchConfig, active: chex.Array) -> graph_lib.Selection:
  """The selection rule of one leaf per game: a PUCT descent in every game.

  Args:
    graph: Graph [B, N, A].
    rng: a PRNG key (selection noise).
    model: the Model.
    config: SearchConfig.
    active: bool[B]; inactive games run no simulation.

  Returns:
    Selection [1, B] (`selection.select_batch`, kind NO_SIMULATION where not
    `active`).
  """
  sel = selection.deactivate(selection.select_batch(graph, rng, model,
                                                    selection.Settings.of(config),
                                                    rules.of(config)), active)
  return jax.tree.map(lambda x: x[None], sel)


def simulate(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
             eval_fn: Any, config: config_lib.SearchConfig, active: chex.Array | None = None
             ) -> tuple[graph_lib.Graph, graph_lib.Selection]:
  """Runs one simulation step in every game (in every game where `active`).

  `simulation_step` with one PUCT descent per game, or with
  `config.leaves_per_step` L > 1 L descents steered apart by virtual losses
  (`leaves.select_leaves`). With `config.max_nn_evals` set, a simulation
  that needs no network call backs up at once and its game selects again
  (see `simulation_step`).

  Args:
    params: network parameters, for `eval_fn` and the model.
    rng: a PRNG key for this step.
    graph: Graph [B, N, A].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.
    active: optional bool[B]; inactive games run no simulation. None: all.

  Returns:
    (graph, sel): the updated Graph [B, N, A] and the `graph.Selection`
    (fields with leading dimension B) of each game's last simulation (its
    last leaf with `config.leaves_per_step > 1`).

  Raises:
    ValueError: (at trace time) the solver on with inexact model keys.
  """
  model = model_lib.as_model(env)
  plugins = rules.of(config)
  model_lib.check_solver(model, plugins.proves)
  if active is None:
    active = jnp.ones((graph.batch_size,), bool)
  rule = leaves.select_leaves if plugins.several_leaves else _select_one
  select = functools.partial(rule, model=model, config=config, active=active)
  graph, sel = simulation_step(params, rng, graph, model, eval_fn, config, select)
  return graph, jax.tree.map(lambda x: x[-1], sel)


def simulation_step(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph,
                    model: model_lib.Model, eval_fn: Any, config: config_lib.SearchConfig,
                    select: Callable[[graph_lib.Graph, chex.PRNGKey], graph_lib.Selection],
                    adjust_value: Callable[[chex.Array], chex.Array] | None = None):
  """One simulation step: L leaves in each of B games, one `eval_fn` call.

  The selection rule and the value rule are passed in; every search of the
  library (`simulate`, several leaves per step, Dual MCTS's large search)
  runs its steps here:
    1. select: `select` picks L leaves per game;
    2. transition: ONE `Model.transition` over the L * B selected edges;
       with `config.max_nn_evals`, a simulation that needs no network call
       is backed up now and its game selects again (`_back_up_free`);
    3. evaluate: ONE `eval_fn` call over the L * B children, whose values
       `adjust_value` may then change;
    4. for each leaf in turn: lookup of its child's key (an earlier leaf of
       the step may have stored it), then expand and back up
       (`expansion.expand_and_backup`).
  One PRNG key drives steps 1-2, another `eval_fn`.

  Args:
    params: network parameters, for `eval_fn` and the model.
    rng: a PRNG key, split into the key of the selection and the transition
      and the key of `eval_fn`.
    graph: Graph [B, N, A].
    model: the Model.
    eval_fn: as in `search`.
    config: SearchConfig.
    select: the selection rule, `(graph [B, N, A], rng) -> Selection` with
      leading dimensions [L, B] (kind NO_SIMULATION for a leaf that runs no
      simulation).
    adjust_value: optional `(value f32[L, B]) -> f32[L, B]`, applied to the
      network's values before they are backed up; None: none.

  Returns:
    (graph, sel): the Graph [B, N, A] after the step and the Selection
    [L, B] of the leaves it expanded and backed up.
  """
  step_rng, eval_rng = jax.random.split(rng)
  # 1-2. The leaves and the transitions along their edges.
  with jax.named_scope("descend"):
    sel, trans = _descend(params, step_rng, graph, model, select)
  num_leaves = sel.kind.shape[0]
  looked_up = None   # the leaves' (found, free_slot), where already looked up
  if config.max_nn_evals is not None and config.free_retries > 0:
    graph, sel, trans, looked_up = _back_up_free(params, step_rng, graph, sel, trans, model,
                                                 config, select)
  # 3. One network call for every leaf of every game.
  with jax.named_scope("evaluate"):
    prior, value, nan = expansion.evaluate(params, eval_rng, eval_fn, _rows(trans.embedding),
                                           _rows(trans.legal), config)
  prior, value, nan = _by_leaf((prior, value, nan), num_leaves)
  if adjust_value is not None:
    value = adjust_value(value)
  graph = graph_lib.add_stats(graph, eval_rows=jnp.full((graph.batch_size,), num_leaves,
                                                        jnp.int32))
  # 4. The leaves one after another, each on the graph the earlier ones wrote.
  expand_and_backup = expansion.batched_expand_and_backup(model, config, rules.of(config))

  def expand_leaf(graph, leaf):
    sel, trans, prior, value, nan, looked_up = leaf
    if looked_up is None:
      # Counted with the descent, the phase it completes.
      with jax.named_scope("descend"), jax.named_scope("lookup"):
        looked_up = expansion.lookup(graph.table, trans.key, config)
    with jax.named_scope("expand_and_backup"):
      return expand_and_backup(graph, sel, trans, *looked_up, prior, value, nan)

  by_leaf = (sel, trans, prior, value, nan, looked_up)
  if num_leaves == 1:
    graph = expand_leaf(graph, jax.tree.map(lambda x: x[0], by_leaf))
  else:
    graph, _ = jax.lax.scan(lambda graph, leaf: (expand_leaf(graph, leaf), None), graph,
                            by_leaf)
  return graph, sel


def _rows(tree: Any) -> Any:
  """Arrays [L, B, ...] -> [L * B, ...]: the leaves as rows of one batch."""
  return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), tree)


def _by_leaf(tree: Any, num_leaves: int) -> Any:
  """Arrays [L * B, ...] -> [L, B, ...], the inverse of `_rows`."""
  return jax.tree.map(lambda x: x.reshape((num_leaves, x.shape[0] // num_leaves) + x.shape[1:]),
                      tree)


def _descend(params, rng, graph, model, select):
  """Steps 1-2: (Selection [L, B] of `select(graph, rng)`, the Transition
  [L, B] along the selected edges, drawn with the same `rng`)."""
  with jax.named_scope("select"):
    sel = select(graph, rng)
  num_leaves = sel.kind.shape[0]
  with jax.named_scope("transition"):
    if num_leaves == 1:
      # One gather over [B]: vmapped over a leaf axis of 1, XLA compiles it
      # into kernels of its own.
      parents = graph_lib.gather_nodes(graph.embedding, sel.parent[0])
    else:
      parents = _rows(jax.vmap(lambda parent: graph_lib.gather_nodes(graph.embedding, parent))(
          sel.parent))
    trans = model.transition(params, rng, parents, _rows(sel.action))
  return sel, _by_leaf(trans, num_leaves)


def _back_up_free(params, step_rng, graph, sel, trans, model, config, select):
  """`max_nn_evals`, one leaf per game: free simulations back up now.

  A simulation that ends without a network call (terminal, correction,
  transposition link, cached result, proven node) is backed up at once and
  its game selects again (retry r with `fold_in(step_rng, r)`), up to
  `config.free_retries` times, so the step's one `eval_fn` call is spent on
  new leaves.

  `select` picks one leaf per game; `sel` and `trans` [1, B] are the step's
  first descent. Returns (graph, sel [1, B], trans [1, B], (found,
  free_slot) int32[1, B]): each game's last leaf, looked up in the returned
  graph."""
  expand_and_backup = expansion.batched_expand_and_backup(model, config, rules.of(config))
  first = lambda tree: jax.tree.map(lambda x: x[0], tree)
  sel, trans = first((sel, trans))
  with jax.named_scope("descend"), jax.named_scope("lookup"):
    found, free_slot = expansion.lookup(graph.table, trans.key, config)

  def is_free(graph, sel, trans, found):
    return ((sel.kind != selection.NO_SIMULATION) & ~expansion.needs_eval(sel, trans, found, config)
            & (graph.stats.simulations < config.num_simulations))

  def cond(carry):
    retry, graph, sel, trans, found, _ = carry
    return (retry < config.free_retries) & jnp.any(is_free(graph, sel, trans, found))

  def body(carry):
    retry, graph, sel, trans, found, free_slot = carry
    free = is_free(graph, sel, trans, found)
    # Free simulations need no network output: zeros stand in for it.
    no_eval = jnp.zeros((graph.batch_size, graph.num_actions), jnp.float32)
    with jax.named_scope("expand_and_backup"):
      graph = expand_and_backup(graph, selection.deactivate(sel, free), trans, found, free_slot,
                                no_eval, no_eval[:, 0], jnp.zeros_like(free))
    with jax.named_scope("descend"):
      new_sel, new_trans = first(_descend(params, jax.random.fold_in(step_rng, retry + 1),
                                          graph, model, select))
      with jax.named_scope("lookup"):
        new_found, new_slot = expansion.lookup(graph.table, new_trans.key, config)
    # A game that has just used up its simulations selects nothing more.
    new_sel = selection.deactivate(new_sel, graph.stats.simulations < config.num_simulations)
    # The games that backed up take their new descent; the others keep theirs.
    pick = lambda new, old: jax.tree.map(
        lambda x, y: jnp.where(free.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), new, old)
    sel, trans, found, free_slot = pick((new_sel, new_trans, new_found, new_slot),
                                        (sel, trans, found, free_slot))
    return retry + 1, graph, sel, trans, found, free_slot

  _, graph, sel, trans, found, free_slot = jax.lax.while_loop(
      cond, body, (jnp.int32(0), graph, sel, trans, found, free_slot))
  expand = lambda tree: jax.tree.map(lambda x: x[None], tree)
  return graph, expand(sel), expand(trans), expand((found, free_slot))


def _active(graph, config):
  """bool[B]: games still searching (budget left, root not proven)."""
  active = graph.stats.simulations < config.num_simulations
  if config.max_nn_evals is not None:
    active &= graph.stats.nn_evals < config.max_nn_evals
  plugins = rules.of(config)
  if plugins.proves:
    active &= plugins.proofs(graph)[:, 0] == graph_lib.UNKNOWN
  return active


def run_simulations(params: Any, rng: chex.PRNGKey, graph: graph_lib.Graph, env: Any,
                    eval_fn: Any, config: config_lib.SearchConfig) -> graph_lib.Graph:
  """Runs up to `config.num_simulations` simulations per game on a graph.

  The graph comes from `init`, or is one re-rooted by `mcgs_jax.advance`,
  whose counters start again at 0. A game stops early once its root is
  proven (solver) or its network evaluations reach `config.max_nn_evals`;
  the loop ends when every game has stopped.

  Args:
    params: network parameters, for `eval_fn` and the model.
    rng: a PRNG key; simulation i uses `fold_in(rng, i)`.
    graph: Graph [B, N, A].
    env: the env or `mcgs_jax.Model`. Static.
    eval_fn: as in `search`. Static.
    config: SearchConfig. Static.

  Returns:
    The Graph [B, N, A] after the simulations.

  Raises:
    ValueError: (at trace time) the solver on with inexact model keys.
  """
  budgeted = config.stops_early

  # The games still searching are carried, computed at the end of each step:
  # read at the start of the next, the root's `solved` would be read by fused
  # consumers after that step's in-place writes, which makes XLA copy the
  # array every simulation.
  def cond(carry):
    i, _, active = carry
    running = i < config.num_simulations
    if budgeted:
      running &= jnp.any(active)
    return running

  def body(carry):
    i, graph, active = carry
    graph, _ = simulate(params, jax.random.fold_in(rng, i), graph, env, eval_fn, config,
                        active if budgeted else None)
    return i + 1, graph, _active(graph, config)

  _, graph, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), graph, _active(graph, config)))
  return graph


def search(params: Any, rng: chex.PRNGKey, state: Any, env: Any, eval_fn: Any,
           config: config_lib.SearchConfig) -> policies.SearchOutput:
  """Searches from every state of the batch `state` [B].

  Jit with `static_argnames=("env", "eval_fn", "config")`.

  Args:
    params: network parameters, passed to `eval_fn` (and to the model).
    rng: a PRNG key.
    state: a batch of env states (pgx fields plus `key` uint32[B, 2]), or the
      root state of a custom `Model` (e.g. `MctxModel.make_root(...)`).
    env: an env of this project, any env with the same state fields, or a
      `mcgs_jax.Model`. Static (hashable).
    eval_fn: `(params, rng, state [B]) -> (prior_logits [B, A], value [B])`,
      the value for the player to move. Static (hashable).
    config: `SearchConfig`. Static.

  Returns:
    SearchOutput, fields with leading dimension B (see `policies.SearchOutput`).

  Raises:
    ValueError: (at trace time) an unbatched state, `config.solver` on
      with inexact model keys (see `init`), or `rng` not one PRNG key (the
      search draws the games' keys from it; see `check_rng`).
  """
  check_rng(rng)
  init_rng, sim_rng = jax.random.split(rng)
  graph = init(params, init_rng, state, env, eval_fn, config)
  graph = run_simulations(params, sim_rng, graph, env, eval_fn, config)
  return policies.summarize(graph, config, jax.random.fold_in(rng, 2))
