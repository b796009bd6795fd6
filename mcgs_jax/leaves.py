"""Several leaves per game per step (`leaves_per_step` L), with virtual loss.

With few games, one leaf per game per step leaves the network batch small.
Here each step selects L leaves per game one after another, each steered
away from the earlier ones by virtual losses (every pending leaf counts as a
visit that lost, value_min, on each edge of its path): `select_leaves`, the
selection rule that `engine.simulation_step` runs before ONE batched
transition and ONE `eval_fn` call over the L * B leaves; the step then
expands and backs them up one after another on the real graph.

The virtual losses live in a separate counter array, never in the graph's
statistics: the transposition test of each selection (`|Q - target| > q_eps`)
reads the real Q's, so an earlier leaf's virtual loss cannot make a
transposition look diverged. A leaf selected for a correction is tested
again when it is backed up: if an earlier leaf of the step has already
pulled the edge back onto its node, it is dropped like a collision
(`expansion.expand_and_backup`), as is a leaf whose edge an earlier leaf of
the step has expanded (counted in `collisions`).
"""

import functools

import chex
import jax
import jax.numpy as jnp

from mcgs_jax import config as config_lib
from mcgs_jax import graph as graph_lib
from mcgs_jax import model as model_lib
from mcgs_jax import rules
from mcgs_jax import selection


def add_virtual_visits(virtual_visits: chex.Array, sel: graph_lib.Selection,
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


def select_leaves(graph: graph_lib.Graph, rng: chex.PRNGKey, model: model_lib.Model,
                  config: config_lib.SearchConfig, active: chex.Array) -> graph_lib.Selection:
  """The selection rule of `leaves_per_step` L leaves per game.

  Leaf i is a PUCT descent with `fold_in(rng, i)` that sees the virtual
  visits of leaves 0..i-1; a game runs no more leaves than it has
  simulations left.

  Args:
    graph: Graph [B, N, A].
    rng: a PRNG key (selection noise).
    model: the game `Model`.
    config: SearchConfig (L is `config.leaves_per_step`).
    active: bool[B], games still searching.

  Returns:
    Selection [L, B] (kind NO_SIMULATION for a leaf that runs no
    simulation), for `engine.simulation_step`.
  """
  remaining = config.num_simulations - graph.stats.simulations

  def pick(virtual_visits, leaf):
    sel = selection.select_batch(graph, jax.random.fold_in(rng, leaf), model,
                                 selection.Settings.of(config), rules.of(config), virtual_visits)
    sel = selection.deactivate(sel, active & (leaf < remaining))
    virtual_visits = jax.vmap(functools.partial(add_virtual_visits, capacity=graph.capacity))(
        virtual_visits, sel)
    return virtual_visits, sel

  _, sels = jax.lax.scan(pick, jnp.zeros_like(graph.edge_visits),
                         jnp.arange(config.leaves_per_step))
  return sels
