"""Epsilon-greedy and constraint-first exploration: disconnected backups
leave the line above the branch node untouched; priority moves come first."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import connect4
from tests import invariants
from tests.fake_evals import HashEval
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
simulate_jit = jax.jit(mcgs_jax.simulate, static_argnames=STATIC)
C4 = envs.make("connect4")
NIM = envs.make("nim-piles:1,3,5,7")


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree", "tt_cache"],
                                                        fast=["mcgs"]))
def test_disconnected_backup_leaves_the_line_above_alone(backup):
  config = mcgs_jax.SearchConfig(num_simulations=1, max_nodes=300, backup=backup,
                                 eps_greedy=0.5)
  eval_fn = HashEval(NIM.num_actions)
  graph = init_jit(None, jax.random.PRNGKey(0), envs.stack([NIM.init(jax.random.PRNGKey(0))]),
                   NIM, eval_fn, config)
  starts = []
  for i in range(250):
    before = jax.device_get(graph)
    graph, sel = simulate_jit(None, jax.random.PRNGKey(i), graph, NIM, eval_fn, config)
    g, s = jax.device_get((graph, sel))
    start, length = int(s.start[0]), int(s.length[0])
    starts.append(start)
    path = [(int(n), int(a)) for n, a in zip(s.path_nodes[0, :length], s.path_actions[0, :length])]
    for depth, (node, action) in enumerate(path):
      moved = g.edge_visits[0, node, action] - before.edge_visits[0, node, action]
      assert moved == (depth >= start), (i, depth, start)
      if depth < start:
        assert g.visits[0, node] == before.visits[0, node]
        assert g.value_sum[0, node] == before.value_sum[0, node]
  invariants.check_graph(g, 0, config)
  explorations = int(g.stats["explorations"][0])
  assert 80 < explorations < 170          # about half of 250
  disconnected = int(g.stats["disconnected"][0])
  assert disconnected == sum(x > 0 for x in starts) and disconnected > 5
  # Branch depths: the root 3/4 of the time (where the line is long enough).
  assert disconnected < 0.5 * explorations


def test_exploration_off_is_deterministic_and_on_is_not():
  state = envs.stack([NIM.init(jax.random.PRNGKey(0))])
  off = mcgs_jax.SearchConfig(num_simulations=60, max_nodes=200)
  on = dataclasses.replace(off, eps_greedy=0.3)
  eval_fn = HashEval(NIM.num_actions)
  a = search_jit(None, jax.random.PRNGKey(0), state, NIM, eval_fn, off)
  b = search_jit(None, jax.random.PRNGKey(1), state, NIM, eval_fn, off)
  np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
  assert int(a.stats.explorations[0]) == 0
  c = search_jit(None, jax.random.PRNGKey(0), state, NIM, eval_fn, on)
  d = search_jit(None, jax.random.PRNGKey(1), state, NIM, eval_fn, on)
  assert int(c.stats.explorations[0]) > 0
  assert not np.array_equal(c.visit_counts, d.visit_counts)


def test_connect4_priority_marks_wins_and_blocks():
  cases = {
      "112233": [0, 0, 0, 1, 0, 0, 0],   # X wins in column 4
      "1122337": [0, 0, 0, 1, 0, 0, 0],  # O must block column 4 (or wins there: no)
      "4455": [0] * 7,
      "121212": [1, 0, 0, 0, 0, 0, 0],   # X wins in 1, O threatens 2: both urgent
  }
  cases["121212"][1] = 1
  for moves, expected in cases.items():
    np.testing.assert_array_equal(np.asarray(C4.priority(connect4.from_moves(moves))),
                                  np.array(expected, bool), err_msg=moves)
  batch = envs.stack([connect4.from_moves(m) for m in cases])
  np.testing.assert_array_equal(np.asarray(C4.priority(batch)),
                                np.array(list(cases.values()), bool))


@dataclasses.dataclass(frozen=True)
class HidesColumn:
  """A flat evaluator that gives one column almost no prior."""
  column: int

  def __call__(self, params, rng, state):
    del params, rng
    batch = state.ply.shape[0]
    logits = jnp.zeros((batch, 7)).at[:, self.column].set(-12.0)
    return logits, jnp.zeros(batch)


def test_constraint_first_tries_the_winning_move_at_once():
  # X to move wins in column 4, which the evaluator hides; q_init 0 makes
  # PUCT spread over the other columns first.
  state = envs.stack([connect4.from_moves("112233")])
  eval_fn = HidesColumn(3)
  base = mcgs_jax.SearchConfig(num_simulations=6, q_init=0.0)
  plain = search_jit(None, jax.random.PRNGKey(0), state, C4, eval_fn, base)
  assert int(plain.visit_counts[0, 3]) == 0
  constrained = search_jit(None, jax.random.PRNGKey(0), state, C4, eval_fn,
                           dataclasses.replace(base, eps_constraint=1.0))
  assert int(constrained.visit_counts[0, 3]) >= 1
  assert int(constrained.stats.explorations[0]) == 6


@pytest.mark.slow
def test_exploration_with_solver_and_budget_keeps_invariants():
  config = mcgs_jax.SearchConfig(num_simulations=6000, max_nodes=400, solver=True,
                                 max_nn_evals=384, eps_greedy=0.05, eps_constraint=0.05)
  out = search_jit(None, jax.random.PRNGKey(0), envs.stack([NIM.init(jax.random.PRNGKey(0))]),
                   NIM, envs.uniform_eval(NIM), config)
  invariants.check_graph(jax.device_get(out.graph), 0, config)
  assert int(out.root_solved[0]) == mcgs_jax.graph.LOSS
