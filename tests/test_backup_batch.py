"""The batch-level vmap rule of the backup equals the per-game code."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcgs_jax
from mcgs_jax import backup
from mcgs_jax import graph as graph_lib


def _random_graph(rng, b, n, a):
  graph = graph_lib.empty(b, n, a, 16, jnp.zeros((b, 1)))
  solved = jnp.asarray(rng.choice([graph_lib.UNKNOWN] * 3 + [graph_lib.WIN], (b, n)), jnp.int32)
  return solved, graph.replace(
      visits=jnp.asarray(rng.integers(1, 20, (b, n)), jnp.int32),
      value_sum=jnp.asarray(rng.normal(size=(b, n)), jnp.float32),
      parents=graph.parents.at[..., 0].set(jnp.asarray(rng.integers(1, 3, (b, n)), jnp.int32)),
      child=jnp.asarray(rng.integers(-1, n, (b, n, a)), jnp.int32),
      edge_visits=jnp.asarray(rng.integers(0, 10, (b, n, a)), jnp.int32),
      edge_q=jnp.asarray(rng.uniform(-1, 1, (b, n, a)), jnp.float32),
      edge_reward=jnp.asarray(rng.uniform(-.1, .1, (b, n, a)), jnp.float32),
      edge_discount=jnp.asarray(rng.choice([-1., 1.], (b, n, a)), jnp.float32))


@pytest.mark.parametrize("mode,solver,starts", [
    ("mcgs", False, (0, 0, 2, 0, 5, 0)), ("mcgs", True, (0, 0, 2, 0, 5, 0)),
    ("tree", False, (0, 0, 2, 0, 5, 0)), ("mcgs", False, (9, 3, 9, 10, 12, 20))])
def test_batch_rule_matches_per_game_backup(mode, solver, starts):
  # Lengths up to the full depth cross the rule's chunks (backup._CHUNK = 8
  # slots); starts (all in a chunk above the first in the last case) and
  # stopping kinds vary per game.
  assert backup._CHUNK == 8
  rng = np.random.default_rng(0)
  b, n, a, depth = 6, 40, 3, 32
  config = mcgs_jax.SearchConfig(num_simulations=8, backup=mode, solver=solver, max_depth=depth)
  solved, graph = _random_graph(rng, b, n, a)
  nodes = jnp.asarray(np.stack([rng.permutation(n)[:depth] for _ in range(b)]), jnp.int32)
  actions = jnp.asarray(rng.integers(0, a, (b, depth)), jnp.int32)
  length = jnp.asarray([0, 1, 7, 16, 17, 32], jnp.int32)
  start = jnp.asarray(starts, jnp.int32)
  leaf = jnp.asarray(rng.uniform(-1, 1, b), jnp.float32)
  kind = jnp.asarray([graph_lib.RUNNING, backup.LINKED, graph_lib.CORRECTION,
                      graph_lib.TERMINAL_EDGE, graph_lib.RUNNING, graph_lib.DEPTH_LIMIT],
                     jnp.int32)
  one = functools.partial(backup.backup_stop, config=config)
  # The solver's codes (`plugins.Plugins.proofs`), None without it.
  codes = solved if solver else None
  batched, batched_leaf = jax.jit(jax.vmap(
      lambda g, p, x, l, v, s, k, c: one(g, p, x, l, v, start=s, kind=k, solved=c)))(
          graph, nodes, actions, length, leaf, start, kind, codes)
  for i in range(b):
    game = jax.tree.map(lambda x: x[i], graph)
    single, single_leaf = jax.jit(
        lambda g, p, x, l, v, s, k, c: one(g, p, x, l, v, start=s, kind=k, solved=c))(
            game, nodes[i], actions[i], length[i], leaf[i], start[i], kind[i],
            None if codes is None else codes[i])
    np.testing.assert_array_equal(batched_leaf[i], single_leaf)
    for field in ("visits", "value_sum", "edge_visits", "edge_q"):
      np.testing.assert_array_equal(getattr(batched, field)[i], getattr(single, field), field)
