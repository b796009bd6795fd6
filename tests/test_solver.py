"""The terminal solver (Exact-win-MCTS 2.0): agreement with the reference,
proofs against exact game values, the two transposition traps, early stop
and the shortest win."""

import functools
import random

import jax
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import connect4
from mcgs_jax.envs import nim as nim_lib
from mcgs_jax.envs import tictactoe
from mcgs_jax import graph as graph_lib
from mcgs_jax import solver
from mcgs_jax.envs import pons
from mcgs_jax.envs import exhaustive
from tests import invariants
from tests.fake_evals import HashEval
from tests.test_reference_agreement import NIM, run_agreement
from tests import variants

STATIC = ("env", "eval_fn", "config")
search_jit = jax.jit(mcgs_jax.search, static_argnames=STATIC)
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
simulate_jit = jax.jit(mcgs_jax.simulate, static_argnames=STATIC)
TTT = envs.make("tictactoe")
SIGN_OF = {graph_lib.WIN: 1.0, graph_lib.LOSS: -1.0, graph_lib.DRAW: 0.0}


def _key_int(key):
  key = np.asarray(key, np.uint64)
  return int(key[0] | (key[1] << np.uint64(32)))


@pytest.mark.parametrize("backup", variants.slow_unless(["mcgs", "tree", "tt_cache"],
                                                        fast=["mcgs"]))
def test_nim_solver_agrees_with_reference(backup):
  states = [NIM.init(jax.random.PRNGKey(0)), NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]
  config = mcgs_jax.SearchConfig(num_simulations=250, backup=backup, solver=True)
  g, kinds = run_agreement(NIM, states, config, HashEval(NIM.num_actions))
  assert (solver.state(g).solved != graph_lib.UNKNOWN).sum() > 20
  if backup == "mcgs":
    assert "solved" in kinds


def test_tictactoe_solver_agrees_with_reference():
  # Draws, wins and losses all get proven here; one root gets proven early.
  states = [tictactoe.from_moves([4, 0]), tictactoe.from_moves([0, 4, 8])]
  config = mcgs_jax.SearchConfig(num_simulations=250, solver=True)
  g, kinds = run_agreement(TTT, states, config, HashEval(9))
  codes = set(np.unique(solver.state(g).solved).tolist())
  assert {graph_lib.WIN, graph_lib.LOSS, graph_lib.DRAW} <= codes
  assert "solved" in kinds


def _random_positions(env, plies, count, seed):
  rnd = random.Random(seed)
  out = []
  step = jax.jit(env.step)   # one program, not one dispatch per operation
  while len(out) < count:
    state = env.init(jax.random.PRNGKey(0))
    for _ in range(rnd.choice(plies)):
      legal = np.flatnonzero(np.asarray(state.legal_action_mask))
      state = step(state, np.int32(rnd.choice(legal)))
    if not bool(state.terminated):
      out.append(state)
  return out


def _check_proofs(env, positions, config, exact_of):
  """Every root proven, with the exact value; every proven node right."""
  out = search_jit(None, jax.random.PRNGKey(0), envs.stack(positions), env,
                   envs.uniform_eval(env), config)
  g = jax.device_get(out.graph)
  for b, state in enumerate(positions):
    assert out.root_solved[b] != graph_lib.UNKNOWN, f"root {b} not proven"
    assert SIGN_OF[int(out.root_solved[b])] == exact_of(state)
    assert out.root_value[b] == exact_of(state)
    invariants.check_graph(g, b, config)
    used = int(g.nodes_used[b])
    for i in np.flatnonzero(solver.state(g).solved[b, :used] != graph_lib.UNKNOWN):
      assert SIGN_OF[int(solver.state(g).solved[b, i])] == exact_of(g.key[b, i]), f"wrong proof at node {i}"
  # The search stopped once every root was proven.
  assert int(out.stats.simulations.max()) < config.num_simulations
  return out


@pytest.mark.slow
def test_solver_proves_multi_pile_nim():
  env = envs.make("nim-piles:2,3,4,5")
  positions = [nim_lib.state_from_piles(env, piles) for piles in
               [(2, 3, 4, 5), (1, 3, 4, 5), (2, 2, 4, 5), (0, 3, 4, 5), (2, 3, 0, 1),
                (1, 2, 3, 0), (2, 0, 4, 4)]]
  piles_of = {_key_int(s.key): tuple(np.asarray(s.piles).tolist()) for s in positions}
  _, values = exhaustive.solve_game(env, positions[0])

  def exact_of(x):
    key = _key_int(x.key if hasattr(x, "key") else x)
    return values[key] if key in values else (-1.0 if nim_lib.nim_sum_lost(piles_of[key]) else 1.0)

  config = mcgs_jax.SearchConfig(num_simulations=3000, solver=True)
  out = _check_proofs(env, positions, config, exact_of)
  # Nim (1, 3, 5, 7)-style losses last until every stone is gone.
  lost = [b for b, s in enumerate(positions) if exact_of(s) < 0]
  assert lost
  for b in lost:
    assert int(out.root_end_in_ply[b]) == int(np.asarray(positions[b].piles).sum())


@pytest.mark.slow
def test_solver_proves_tictactoe():
  _, values = exhaustive.solve_game(TTT, TTT.init(jax.random.PRNGKey(0)))
  positions = _random_positions(TTT, plies=[2, 3, 4, 5], count=16, seed=1)
  config = mcgs_jax.SearchConfig(num_simulations=8000, solver=True)
  out = _check_proofs(TTT, positions, config,
                      lambda x: values[_key_int(x.key if hasattr(x, "key") else x)])
  # All three outcomes occur among the roots.
  assert set(np.asarray(out.root_solved).tolist()) == {graph_lib.WIN, graph_lib.LOSS,
                                                      graph_lib.DRAW}


@jax.jit
@jax.jit   # one program, not thousands of dispatches per simulation
def _recomputed(graph):
  """The proof state of every node of game 0, recomputed from its moves."""
  one = jax.tree.map(lambda x: x[0], graph)

  def node(i):
    low, high, end = solver.move_bounds(one, i)
    return solver.node_bounds(low, high, end, one.child[i] != graph_lib.ILLEGAL)[:2]

  return jax.vmap(node)(jax.numpy.arange(one.capacity))


def test_every_node_on_the_path_is_up_to_date_after_each_simulation():
  """Trap 1: a proven node reached through a new transposition link counts for
  its new parent at once. Trap 2: proofs climb the whole path in one backup."""
  # (1, 2, 3, 4): both traps within about 500 simulations.
  env = envs.make("nim-piles:1,2,3,4")
  config = mcgs_jax.SearchConfig(num_simulations=1, max_nodes=400, solver=True)
  eval_fn = envs.uniform_eval(env)
  graph = init_jit(None, jax.random.PRNGKey(0), envs.stack([env.init(jax.random.PRNGKey(0))]),
                   env, eval_fn, config)
  links_to_proven = multi_level = 0
  for i in range(4000):
    before = np.asarray(solver.state(graph).solved[0])
    graph, sel = simulate_jit(None, jax.random.PRNGKey(i), graph, env, eval_fn, config)
    (g, s), (state, plies) = jax.device_get(((graph, sel), _recomputed(graph)))
    length = int(s.length[0])
    if length == 0:
      break   # the root is proven
    last_child = int(g.child[0, s.parent[0], s.action[0]])
    nodes = [int(n) for n in s.path_nodes[0, :length]] + ([last_child] if last_child >= 0 else [])
    for node in nodes:
      assert state[node] == solver.state(g).solved[0, node], f"simulation {i}: node {node} stale"
      if state[node] != graph_lib.UNKNOWN:
        assert plies[node] == solver.state(g).end_in_ply[0, node]
    newly = (solver.state(g).solved[0] != graph_lib.UNKNOWN) & (before == graph_lib.UNKNOWN)
    multi_level += newly.sum() >= 3
    if (s.kind[0] == 1 and last_child >= 0 and before[last_child] != graph_lib.UNKNOWN
        and g.num_parents[0, last_child] > 1):
      links_to_proven += 1
  assert solver.state(g).solved[0, 0] == graph_lib.WIN   # nim-sum of (1, 2, 3, 4) is 4, not 0
  assert links_to_proven > 0 and multi_level > 0, (links_to_proven, multi_level)


def test_proven_losses_are_never_selected_and_shortest_win_is_played():
  # X to move with an immediate win at cell 2 (row 0-1-2) and other winning
  # moves that take longer; O threatens nothing.
  state = tictactoe.from_moves([0, 3, 1, 7])
  config = mcgs_jax.SearchConfig(num_simulations=2000, solver=True)
  out = search_jit(None, jax.random.PRNGKey(0), envs.stack([state]), TTT,
                   envs.uniform_eval(TTT), config)
  assert int(out.root_solved[0]) == graph_lib.WIN
  assert int(out.action[0]) == 2 and int(out.root_end_in_ply[0]) == 1
  np.testing.assert_array_equal(np.asarray(out.action_weights[0]), np.eye(9)[2])
  # A lost position: O to move against X's double threat; X wins next ply.
  lost = tictactoe.from_moves([0, 4, 8, 2, 6])
  out = search_jit(None, jax.random.PRNGKey(0), envs.stack([lost]), TTT,
                   envs.uniform_eval(TTT), config)
  assert int(out.root_solved[0]) == graph_lib.LOSS and float(out.root_value[0]) == -1.0
  assert int(out.root_end_in_ply[0]) == 2


def test_solver_off_changes_nothing():
  state = envs.stack([tictactoe.from_moves([4, 0])])
  off = search_jit(None, jax.random.PRNGKey(0), state, TTT, HashEval(9),
                   mcgs_jax.SearchConfig(num_simulations=100))
  assert "solver" not in off.graph.enhancements
  assert int(off.stats.solved_visits[0]) == 0


@functools.lru_cache(maxsize=None)
def _c4_search(sims):
  env = envs.make("connect4")
  config = mcgs_jax.SearchConfig(num_simulations=sims, solver=True)
  return jax.jit(functools.partial(mcgs_jax.search, env=env,
                                   eval_fn=envs.rollout_eval(env), config=config))


def test_connect4_proofs_match_exact_scores():
  """Pons' end-game set with random rollouts: every proven root has the sign
  of its exact score, and a proven win plays a winning move no slower than
  the proof says (end_in_ply bounds the exact distance from above)."""
  if not pons.path("L3_R1", columns=True).exists():
    pytest.skip(f"{pons.DATA_DIR} not found")
  rows = pons.read_columns("L3_R1", limit=32)
  states = envs.stack([connect4.from_moves(moves) for moves, _ in rows])
  out = jax.device_get(_c4_search(1000)(None, jax.random.PRNGKey(0), states))
  proven = 0
  for b, (moves, scores) in enumerate(rows):
    code = int(out.root_solved[b])
    if code == graph_lib.UNKNOWN:
      continue
    proven += 1
    score = -min(v for v in scores if v is not None)
    assert SIGN_OF[code] == np.sign(score), moves
    if code == graph_lib.WIN:
      mover_score = -scores[int(out.action[b])]
      assert mover_score > 0, moves
      plies = 2 * (22 - mover_score - len(moves) // 2) - 1
      assert plies <= int(out.root_end_in_ply[b]), moves
  assert proven >= len(rows) // 4


def _bounds_search(positions, sims, bounds=True):
  config = mcgs_jax.SearchConfig(num_simulations=sims, solver=True, solver_bounds=bounds)
  return search_jit(None, jax.random.PRNGKey(0), envs.stack(positions), TTT,
                    envs.uniform_eval(TTT), config)


@pytest.mark.slow
def test_score_bounds_prove_draws_sooner():
  """X center, O corner, X opposite corner (and the mirror order): draws.
  Score bounds prove them in 300 simulations (230-250); Exact-win, which
  needs every move below proven, takes 600-850."""
  positions = [tictactoe.from_moves([4, 0, 8]), tictactoe.from_moves([0, 4, 8])]
  out = _bounds_search(positions, 300)
  np.testing.assert_array_equal(np.asarray(out.root_solved), [graph_lib.DRAW] * 2)
  assert int(out.stats.simulations.max()) < 300
  np.testing.assert_array_equal(np.asarray(out.root_value), [0.0, 0.0])
  # The played move is a proven draw.
  g = jax.device_get(out.graph)
  for b in range(2):
    child = int(g.child[b, 0, int(out.action[b])])
    assert child >= 0 and solver.state(g).solved[b, child] == graph_lib.DRAW


@pytest.mark.slow
def test_score_bounds_prove_the_empty_tictactoe_board_a_draw():
  out = _bounds_search([TTT.init(jax.random.PRNGKey(0))], 10000)
  assert int(out.root_solved[0]) == graph_lib.DRAW
  assert int(out.stats.simulations[0]) < 10000


def test_score_bounds_hold_the_exact_values():
  """Every node's [pessimistic, optimistic] holds its exact value, so every
  proven node (and every partial bound) is right."""
  _, values = exhaustive.solve_game(TTT, TTT.init(jax.random.PRNGKey(0)))
  positions = _random_positions(TTT, plies=[1, 2, 3, 4], count=8, seed=3)
  out = _bounds_search(positions, 600)
  g = jax.device_get(out.graph)
  pess, opt, end = (np.asarray(x) for x in solver.unpack(solver.state(g).bounds))
  partial = 0
  for b in range(len(positions)):
    used = int(g.nodes_used[b])
    for i in range(used):
      exact = values[_key_int(g.key[b, i])]
      assert pess[b, i] <= exact <= opt[b, i], (b, i, pess[b, i], opt[b, i], exact)
      if solver.state(g).solved[b, i] != graph_lib.UNKNOWN:
        assert SIGN_OF[int(solver.state(g).solved[b, i])] == exact and pess[b, i] == opt[b, i] == exact
        assert end[b, i] == solver.state(g).end_in_ply[b, i]
      else:
        assert pess[b, i] < opt[b, i]
        partial += (pess[b, i], opt[b, i]) != (-1, 1)
    invariants.check_graph(g, b, mcgs_jax.SearchConfig(num_simulations=600, solver=True,
                                                       solver_bounds=True))
  assert partial > 0   # the bounds did more than the proofs


def test_exact_win_stores_no_partial_bounds():
  out = _bounds_search([tictactoe.from_moves([4, 0])], 300, bounds=False)
  g = jax.device_get(out.graph)
  pess, opt, _ = (np.asarray(x) for x in solver.unpack(solver.state(g).bounds))
  unproven = solver.state(g).solved[0] == graph_lib.UNKNOWN
  assert np.all(pess[0][unproven] == -1) and np.all(opt[0][unproven] == 1)
  assert np.any(~unproven[:int(g.nodes_used[0])])


def test_solver_bounds_needs_the_solver():
  with pytest.raises(ValueError, match="solver_bounds"):
    mcgs_jax.SearchConfig(solver_bounds=True)
