"""Several leaves per game per step (`leaves_per_step` L), with virtual loss.

With few games, one leaf per game per step leaves the network batch small.
Here each step selects L leaves per game one after another, each steered
away from the earlier ones by virtual losses (every pending leaf counts as a
visit that lost, value_min, on each edge of its path), then runs ONE batched
transition and ONE `eval_fn` call over the L * B leaves, and expands and
backs them up one after another on the real graph.

The virtual losses live in a separate counter array, never in the graph's
statistics: the transposition test of each selection (`|Q - target| > q_eps`)
reads the real Q's, so an earlier leaf's virtual loss cannot make a
transposition look diverged. A leaf selected for a correction is tested
again when it is backed up: if an earlier leaf of the step has already
pulled the edge back onto its node, it is dropped like a collision
(`expansion.expand_and_backup`).
"""

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import expansion
from mcgs_jax import graph as graph_lib
from mcgs_jax import model as model_lib
from mcgs_jax import selection


def add_virtual_visits(virtual_visits: chex.Array, sel: selection.Selection,
                       capacity: int) -> chex.Array:
  """ONE game: one more pending leaf on every edge of `sel`'s path.

  Args:
    virtual_visits: int32[N, A] pending leaves per edge.
    sel: the Selection of the leaf (length 0 when it runs no simulation).
    capacity: N.

  Returns:
    int32[N, A].
  """
  on_path = jnp.arange(sel.path_nodes.shape[0]) < sel.length
  nodes = jnp.where(on_path, sel.path_nodes, capacity)
  # The nodes of a path are distinct: gathered + 1 equals an add.
  return virtual_visits.at[nodes, sel.path_actions].set(
      virtual_visits[sel.path_nodes, sel.path_actions] + 1, mode="drop")


def simulate_leaves(params: Any, step_rng: chex.PRNGKey, eval_rng: chex.PRNGKey,
                    graph: graph_lib.Graph, model: model_lib.Model, eval_fn: Any,
                    config: config_lib.SearchConfig, active: chex.Array):
  """One step of `leaves_per_step` simulations per game.

  A leaf whose edge an earlier leaf of the step has expanded is a collision:
  dropped (counted in `collisions`), as its position is already in the graph.

  Args:
    params: network parameters, for `eval_fn` and the model.
    step_rng: a PRNG key for the selection and the transition.
    eval_rng: a PRNG key for `eval_fn`.
    graph: Graph [B, N, A].
    model: the game `Model`.
    eval_fn: as in `search.search`.
    config: SearchConfig.
    active: bool[B], games still searching.

  Returns:
    (graph, Selection [B] of each game's last leaf).
  """
  num_leaves, batch = config.leaves_per_step, graph.batch_size
  remaining = config.num_simulations - graph.stats.simulations

  def pick(virtual_visits, leaf):
    sel = selection.select_batch(graph, jax.random.fold_in(step_rng, leaf), model, config,
                                 virtual_visits)
    sel = expansion.deactivate(sel, active & (leaf < remaining))
    virtual_visits = jax.vmap(functools.partial(add_virtual_visits, capacity=graph.capacity))(
        virtual_visits, sel)
    return virtual_visits, sel

  _, sels = jax.lax.scan(pick, jnp.zeros_like(graph.edge_visits), jnp.arange(num_leaves))
  # sels: Selection [L, B].
  parents = jax.vmap(lambda parent: graph_lib.gather_nodes(graph.embedding, parent))(sels.parent)
  flat = lambda tree: jax.tree.map(lambda x: x.reshape((num_leaves * batch,) + x.shape[2:]), tree)
  unflat = lambda tree: jax.tree.map(lambda x: x.reshape((num_leaves, batch) + x.shape[1:]), tree)
  trans = model.transition(params, step_rng, flat(parents), flat(sels.action))
  prior, nn_value, nan = expansion.evaluate(params, eval_rng, eval_fn, trans.embedding,
                                            trans.legal, config)
  trans, prior, nn_value, nan = unflat((trans, prior, nn_value, nan))
  graph = graph_lib.add_stats(graph, eval_rows=jnp.full((batch,), num_leaves))
  expand_and_backup = expansion.batched_expand_and_backup(model, config)

  def back(graph, leaf):
    sel, tr, p, v, bad = jax.tree.map(lambda x: x[leaf], (sels, trans, prior, nn_value, nan))
    # Looked up again: an earlier leaf of this step may have stored the key.
    found, free_slot = expansion.lookup(graph.table, tr.key, config)
    return expand_and_backup(graph, sel, tr, found, free_slot, p, v, bad), None

  graph, _ = jax.lax.scan(back, graph, jnp.arange(num_leaves))
  return graph, jax.tree.map(lambda x: x[-1], sels)
