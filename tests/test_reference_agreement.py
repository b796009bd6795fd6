"""The JAX search and the plain-Python reference agree simulation by
simulation: same paths, same visits, Q within 1e-5, same graph shape."""


import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax import graph as graph_lib
from tests import reference_mcgs
from tests.fake_evals import HashEval, hash_eval_py

STATIC = ("env", "eval_fn", "config")
init_jit = jax.jit(mcgs_jax.init, static_argnames=STATIC)
simulate_jit = jax.jit(mcgs_jax.simulate, static_argnames=STATIC)


def python_transition(env):
  model = mcgs_jax.EnvModel(env)

  @jax.jit
  def one(state, action):
    batch = jax.tree.map(lambda x: x[None], state)
    out = model.transition(None, None, batch, action[None])
    return jax.tree.map(lambda x: x[0], out)

  def transition(state, action):
    out = jax.device_get(one(state, jnp.int32(action)))
    return (out.embedding, (int(out.key[0]), int(out.key[1])), float(out.reward),
            float(out.discount), bool(out.terminal), [bool(x) for x in out.legal])
  return transition


def reference_for(env, state, config, eval_fn):
  key = (int(state.key[0]), int(state.key[1]))
  legal = [bool(x) for x in np.asarray(state.legal_action_mask)]
  return reference_mcgs.ReferenceMCGS(
      python_transition(env),
      lambda s, k, l: hash_eval_py(k, l, eval_fn.value_scale, eval_fn.logit_scale),
      state, key, legal, backup=config.backup, c_init=config.c_init,
      c_base=config.c_base, q_init=config.q_init, q_eps=config.q_eps,
      max_depth=config.max_depth, solver=config.solver)


def assert_same_graph(g, b, ref):
  """Walks both graphs from the root in step; checks every node and edge."""
  # One host copy of game b's arrays as Python lists: the walk reads each
  # entry once, and indexing numpy per scalar would dominate the test.
  visits, value_sum = g.visits[b].tolist(), g.value_sum[b].tolist()
  proofs = g.enhancements.get("solver")
  num_parents, child = g.num_parents[b].tolist(), g.child[b].tolist()
  # Without the solver every node is UNKNOWN.
  solved_codes = (proofs.solved[b].tolist() if proofs is not None
                  else [graph_lib.UNKNOWN] * len(num_parents))
  end_in_ply = proofs.end_in_ply[b].tolist() if proofs is not None else [0] * len(num_parents)
  edge_visits, edge_q = g.edge_visits[b].tolist(), g.edge_q[b].tolist()
  solved = {None: graph_lib.UNKNOWN, reference_mcgs.WIN: graph_lib.WIN,
            reference_mcgs.LOSS: graph_lib.LOSS, reference_mcgs.DRAW: graph_lib.DRAW}
  mapping = {}
  stack = [(0, ref.root)]
  while stack:
    index, node = stack.pop()
    if id(node) in mapping:
      assert mapping[id(node)] == index, "one reference node, two JAX nodes"
      continue
    mapping[id(node)] = index
    assert visits[index] == node.visits, (index, visits[index], node.visits)
    assert abs(value_sum[index] - node.value_sum) <= 1e-4 + 1e-7 * abs(node.value_sum), (
        index, value_sum[index], node.value_sum)
    assert num_parents[index] == node.num_parents, (index, num_parents[index], node.num_parents)
    assert solved_codes[index] == solved[node.solved], (index, solved_codes[index], node.solved)
    if node.solved is not None:
      assert end_in_ply[index] == node.end_in_ply, (index, end_in_ply[index], node.end_in_ply)
    for a, code in enumerate(child[index]):
      if a not in node.edges:
        assert code == graph_lib.ILLEGAL, (index, a, code)
        continue
      edge = node.edges[a]
      assert edge_visits[index][a] == edge.n, (index, a, edge_visits[index][a], edge.n)
      if edge.n:
        q = edge_q[index][a]
        assert abs(q - edge.q) <= 1e-5 + 1e-7 * abs(edge.q), (index, a, q, edge.q)
      if edge.terminal:
        assert code == graph_lib.TERMINAL, (index, a, code)
      elif edge.child is None:
        assert code == graph_lib.UNEXPANDED, (index, a, code)
      else:
        assert code >= 0, (index, a, code)
        stack.append((code, edge.child))
  assert len(mapping) == len(ref.nodes) == int(g.nodes_used[b])


def exploration_plans(rng, config, batch):
  """The engine's epsilon-greedy draws for the simulation step run with `rng`
  (`search.simulate` -> `selection.select_batch`), as the reference takes
  them: per game None, or (wanted depth, draw(candidates) -> action)."""
  step_rng, _ = jax.random.split(rng)
  plan_rng, branch_rng = jax.random.split(jax.random.fold_in(step_rng, 1))
  plans = []
  for b, (plan_key, branch_key) in enumerate(zip(jax.random.split(plan_rng, batch),
                                                  jax.random.split(branch_rng, batch))):
    _, greedy_draw, depth_draw = jax.random.uniform(plan_key, (3,))
    if not greedy_draw < config.eps_greedy:
      plans.append(None)
      continue
    wanted = int(jnp.clip(jnp.floor(-jnp.log2(1.0 - depth_draw) - 1.0).astype(jnp.int32),
                          0, config.max_depth - 2))

    def draw(candidates, key=branch_key):
      return int(jax.random.categorical(key, jnp.where(jnp.array(candidates), 0.0, -jnp.inf)))
    plans.append((wanted, draw))
  return plans


def step_agreement(graph, refs, env, eval_fn, config, num_steps, rng=None):
  """Runs `num_steps` simulation steps in both; compares paths and graphs
  after each. `rng` None: the same key every step (no random draws used),
  else folded with the step. Returns (graph, host graph, Counter of the reference's
  end kinds per game)."""
  kinds = [collections.Counter() for _ in refs]
  g = None
  for i in range(num_steps):
    step_rng = jax.random.PRNGKey(0) if rng is None else jax.random.fold_in(rng, i)
    plans = (exploration_plans(step_rng, config, len(refs)) if config.eps_greedy > 0
             else [None] * len(refs))
    graph, sel = simulate_jit(None, step_rng, graph, env, eval_fn, config)
    g, s = jax.device_get((graph, sel))
    for b, ref in enumerate(refs):
      path, kind = ref.simulate(plans[b])
      kinds[b][kind] += 1
      assert [int(a) for a in s.path_actions[b, :s.length[b]]] == path
      assert_same_graph(g, b, ref)
  for b, ref in enumerate(refs):
    assert int(g.stats["nn_evals"][b]) == ref.nn_evals
  return graph, g, kinds


def start_agreement(env, states, config, eval_fn):
  """(engine graph after `init`, one reference per state)."""
  graph = init_jit(None, jax.random.PRNGKey(0), envs.stack(states), env, eval_fn, config)
  return graph, [reference_for(env, s, config, eval_fn) for s in states]


def run_agreement(env, states, config, eval_fn, rng=None):
  """A whole search in step; returns (host graph, set of end kinds seen)."""
  graph, refs = start_agreement(env, states, config, eval_fn)
  _, g, kinds = step_agreement(graph, refs, env, eval_fn, config, config.num_simulations, rng)
  return g, set().union(*kinds)


NIM = envs.make("nim")


@pytest.mark.parametrize("backup", ["mcgs", "tree", "tt_cache", "katago"])
def test_nim_agrees_with_reference(backup):
  states = [NIM.init(jax.random.PRNGKey(0)),
            NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]   # take 1 from the 7-pile
  config = mcgs_jax.SearchConfig(num_simulations=150, backup=backup)
  g, kinds = run_agreement(NIM, states, config, HashEval(NIM.num_actions))
  if backup in ("mcgs", "katago"):
    assert g.stats["transposition_hits"].min() > 10
  if backup == "mcgs":
    assert reference_mcgs.CORRECTION in kinds
  if backup == "katago":
    assert reference_mcgs.CORRECTION not in kinds and g.stats["corrections"].max() == 0
  assert reference_mcgs.TERMINAL_EDGE in kinds


def test_nim_katago_with_solver_agrees_with_reference():
  """KataGo's backup reads proven children's exact values."""
  states = [NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]
  config = mcgs_jax.SearchConfig(num_simulations=150, backup="katago", solver=True)
  g, _ = run_agreement(NIM, states, config, HashEval(NIM.num_actions))
  solved = g.enhancements["solver"].solved
  assert (solved[0, :int(g.nodes_used[0])] != graph_lib.UNKNOWN).sum() >= 5


@pytest.mark.parametrize("backup", ["mcgs", "tree", "tt_cache"])
def test_connect4_agrees_with_reference(backup):
  c4 = envs.make("connect4")
  states = [envs.connect4.from_moves("3435"), envs.connect4.from_moves("1122")]
  # A flat evaluator and neutral first-play urgency make the search broad, so
  # move orders meet often (with the defaults Connect-4 searches run deep and
  # narrow at this budget and transpose rarely).
  config = mcgs_jax.SearchConfig(num_simulations=150, backup=backup, q_init=0.0)
  g, _ = run_agreement(c4, states, config, HashEval(7, value_scale=0.125, logit_scale=0.25))
  if backup == "mcgs":
    assert g.stats["transposition_hits"].min() >= 5
  if backup == "tt_cache":
    assert g.stats["tt_cache_hits"].min() >= 5


# Connect-4 positions with four full side columns (1, 2, 6, 7): few moves, so
# move orders meet often, and the transposition nodes they meet at are
# revisited through stale edges (corrections).
C4_NARROW = ("126661117716122277276267", "112711666627227276771126")


def test_connect4_corrections_agree():
  c4 = envs.make("connect4")
  states = [envs.connect4.from_moves(m) for m in C4_NARROW]
  config = mcgs_jax.SearchConfig(num_simulations=150, q_init=0.0)
  graph, refs = start_agreement(c4, states, config, HashEval(7, value_scale=0.125,
                                                              logit_scale=0.25))
  _, g, kinds = step_agreement(graph, refs, c4, HashEval(7, value_scale=0.125, logit_scale=0.25),
                               config, config.num_simulations)
  for b in range(len(states)):
    assert int(g.stats["corrections"][b]) == kinds[b][reference_mcgs.CORRECTION] > 0


def test_eps_greedy_agrees_with_reference():
  """Epsilon-greedy trajectories: the reference takes the engine's draws
  (mode, branch depth, branch move) and follows the line, branches and
  backs up (disconnected) on its own."""
  states = [NIM.init(jax.random.PRNGKey(0)), NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]
  config = mcgs_jax.SearchConfig(num_simulations=80, eps_greedy=0.5)
  graph, refs = start_agreement(NIM, states, config, HashEval(NIM.num_actions))
  _, g, _ = step_agreement(graph, refs, NIM, HashEval(NIM.num_actions), config,
                           config.num_simulations, rng=jax.random.PRNGKey(3))
  assert np.all(g.stats["explorations"] > 10)
  assert np.all(g.stats["disconnected"] > 0)


def test_max_nn_evals_with_free_retries_agrees():
  """An evaluation budget: a game stops at `max_nn_evals` network calls, and
  simulations without one (terminal, link, correction) are retried within
  the step, at most `free_retries` times."""
  states = [NIM.init(jax.random.PRNGKey(0)), NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]
  eval_fn = HashEval(NIM.num_actions)
  config = mcgs_jax.SearchConfig(num_simulations=200, max_nn_evals=40, free_retries=3)
  graph, refs = start_agreement(NIM, states, config, eval_fn)
  graph = jax.jit(mcgs_jax.run_simulations, static_argnames=STATIC)(
      None, jax.random.PRNGKey(0), graph, NIM, eval_fn, config)
  g = jax.device_get(graph)
  for b, ref in enumerate(refs):
    simulations = 0
    while simulations < config.num_simulations and ref.nn_evals < config.max_nn_evals:
      for _ in range(config.free_retries + 1):   # one step
        before = ref.nn_evals
        ref.simulate()
        simulations += 1
        if ref.nn_evals > before or simulations >= config.num_simulations:
          break
    assert int(g.stats["simulations"][b]) == simulations
    assert int(g.stats["nn_evals"][b]) == ref.nn_evals == config.max_nn_evals
    assert simulations > ref.nn_evals   # free simulations happened
    assert_same_graph(g, b, ref)


@pytest.mark.parametrize("backup", ["mcgs", "tree"])
def test_advance_agrees_with_reference(backup):
  """Search, re-root at a child (`advance`), search again."""
  states = [NIM.init(jax.random.PRNGKey(0)), NIM.step(NIM.init(jax.random.PRNGKey(0)), 15)]
  eval_fn = HashEval(NIM.num_actions)
  config = mcgs_jax.SearchConfig(num_simulations=60, backup=backup, max_nodes=128)
  graph, refs = start_agreement(NIM, states, config, eval_fn)
  graph, g, _ = step_agreement(graph, refs, NIM, eval_fn, config, config.num_simulations)
  # The most visited root move of each game.
  action = np.argmax(g.edge_visits[:, 0], axis=-1)
  graph, kept = jax.jit(mcgs_jax.advance, static_argnames="config")(
      graph, jnp.asarray(action, jnp.int32), config)
  assert np.all(np.asarray(kept))
  for b, ref in enumerate(refs):
    ref.advance(int(action[b]))
    assert_same_graph(jax.device_get(graph), b, ref)
  step_agreement(graph, refs, NIM, eval_fn, config, 40)
