"""Ground truth for training: exact move values of small games, Connect-4
error rates on Pons' sets, and the agents they are measured on."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcgs_jax import envs
import mcgs_jax
from mcgs_jax.envs import connect4
from mcgs_jax.envs import connect4_solver
from mcgs_jax.envs import exhaustive
from mcgs_jax.envs import nim
from mcgs_jax.benchmarks import accuracy
from mcgs_jax.envs import pons
from mcgs_jax.learning import agents
from mcgs_jax.learning import ground_truth

RNG = jax.random.PRNGKey(0)
TTT = envs.make("tictactoe")
NIM_3_20 = envs.make("nim:3,20")


class _LowestMoveSpy(agents.Agent):
  """Plays the lowest legal action (a host agent) and records the piles it saw."""
  name = "spy"

  def __init__(self):
    self.seen_piles = []

  def act(self, rng, states):
    del rng
    self.seen_piles.append(np.asarray(states.piles)[:, 0])
    return np.argmax(np.asarray(states.legal_action_mask), axis=1).astype(np.int32)


# ----------------------------------------------------------------- the table


def test_nim_table_matches_the_closed_form_for_every_position_and_move():
  env = envs.make("nim-piles:2,3,4")
  table = exhaustive.game_table(env)
  # Every pile configuration but the empty one is a reachable non-terminal position.
  assert len(table) == 3 * 4 * 5 - 1
  for row in range(len(table)):
    piles = tuple(int(p) for p in table.states.piles[row])
    assert table.values[row] == (-1.0 if nim.lost_for_mover(env, piles) else 1.0)
    for action in range(env.num_actions):
      pile, take = divmod(action, env.take_limit)
      if take + 1 > piles[pile]:
        assert table.move_values[row, action] == -np.inf
        continue
      after = list(piles)
      after[pile] -= take + 1
      # The move wins iff it leaves the opponent lost (or takes the last stone).
      wins = sum(after) == 0 or nim.lost_for_mover(env, after)
      assert table.move_values[row, action] == (1.0 if wins else -1.0)


def test_table_rows_refuse_unknown_positions():
  table = exhaustive.game_table(TTT)
  won = envs.stack([envs.tictactoe.from_moves([0, 3, 1, 4, 2])])   # X has the top row
  with pytest.raises(ValueError, match="not in the table"):
    table.rows(won.key)


# ---------------------------------------------------------------- small games


def test_perfect_tictactoe_player_keeps_every_value():
  figures = ground_truth.evaluate(TTT, agents.ExactAgent(TTT), RNG)
  assert figures == {"keeps_value": 1.0, "wins_kept": 1.0, "critical_kept": 1.0,
                     "draws_kept": 1.0}


def test_random_tictactoe_player_loses_value():
  figures = ground_truth.evaluate(TTT, agents.RandomAgent(), RNG)
  table = exhaustive.game_table(TTT)
  lost_share = np.mean(table.values < 0)
  # Lost positions are kept by any move; elsewhere random play often blunders.
  assert lost_share < figures["keeps_value"] < 0.8
  assert figures["critical_kept"] < figures["keeps_value"]
  assert 0.0 < figures["wins_kept"] < 0.8 and 0.0 < figures["draws_kept"] < 0.8


def test_lowest_move_policy_scores_exactly_on_subtraction_nim():
  # Uniform logits: the policy takes one stone. From n stones (n = 1..20) that
  # keeps the value where n % 4 == 0 (lost anyway) or n % 4 == 1 (wins);
  # with one stone left no move loses value, so 14 positions are critical.
  policy = agents.PolicyAgent(envs.uniform_eval(NIM_3_20))
  figures = ground_truth.evaluate(NIM_3_20, policy, RNG, chunk_size=8)
  assert figures == pytest.approx({"keeps_value": 10 / 20, "wins_kept": 5 / 15,
                                   "critical_kept": 4 / 14})


def test_max_positions_takes_a_random_subset():
  spy = _LowestMoveSpy()
  figures = ground_truth.evaluate(NIM_3_20, spy, RNG, max_positions=7, chunk_size=7)
  seen = np.concatenate(spy.seen_piles)
  assert len(seen) == 7 and len(set(seen.tolist())) == 7
  # The same rule as the policy above, on the positions actually seen.
  kept = (seen % 4 == 0) | (seen % 4 == 1)
  assert figures["keeps_value"] == pytest.approx(kept.mean())


def test_search_with_the_exact_nim_evaluator_keeps_every_value():
  search = agents.SearchAgent(NIM_3_20, nim.ExactEval(NIM_3_20), None,
                              mcgs_jax.SearchConfig(num_simulations=16))
  assert ground_truth.evaluate(NIM_3_20, search, RNG, chunk_size=32)["keeps_value"] == 1.0
  classic = envs.make("nim")
  figures = ground_truth.evaluate(classic, agents.ExactAgent(classic), RNG)
  assert figures == {"keeps_value": 1.0, "wins_kept": 1.0, "critical_kept": 1.0}


def test_bad_requests_are_refused():
  with pytest.raises(ValueError, match="no ground truth"):
    ground_truth.evaluate(object(), agents.RandomAgent(), RNG)
  with pytest.raises(ValueError, match="max_positions"):
    ground_truth.evaluate(NIM_3_20, agents.RandomAgent(), RNG, max_positions=0)
  with pytest.raises(ValueError, match="unknown Pons set"):
    ground_truth.connect4_error_rates(agents.RandomAgent(), RNG, sets=("L9_R9",))
  with pytest.raises(ValueError, match="batch"):
    agents.RandomAgent().act(RNG, NIM_3_20.init(RNG))


# ------------------------------------------------------------------ Connect-4


def test_solver_agent_column_scores_match_the_move_string_solver():
  # Positions with many stones (early ones take the solver seconds to minutes):
  # immediate wins and full columns, a board-filling last move, mid-game.
  for moves in ["27431475612667316366545723354545", "47242475664542215415773721663562671133533",
                "2252576253462244111563365343671351441", "5554224333234511764415115"]:
    state = connect4.from_moves(moves)
    scores = agents.solver_column_scores(state.position, state.mask, int(state.ply))
    assert scores == connect4_solver.solve_columns(moves)


def test_solver_agent_makes_no_error_and_random_play_does():
  solver = ground_truth.evaluate(envs.make("connect4"), agents.Connect4SolverAgent(), RNG,
                                 c4_sets=("L3_R1", "L2_R1"), positions_per_set=10)
  assert solver == {"c4_error_L3_R1": 0.0, "c4_error_L2_R1": 0.0}
  random = ground_truth.connect4_error_rates(agents.RandomAgent(), RNG, sets=("L3_R1",),
                                             positions_per_set=50)
  assert random["c4_error_L3_R1"] > 0.1


def test_connect4_error_is_one_minus_the_benchmarks_preserving_rate():
  # Uniform logits: the raw policy plays the leftmost free column.
  policy = agents.PolicyAgent(envs.uniform_eval(envs.make("connect4")))
  figures = ground_truth.connect4_error_rates(policy, RNG, sets=("Test_L2_R1",),
                                              positions_per_set=40, chunk_size=16)
  positions = accuracy.load_set("L2_R1", 40)
  leftmost = [next(c for c, v in enumerate(p.column_scores) if v is not None)
              for p in positions]
  expected = accuracy.score_moves(positions, np.array(leftmost))
  assert figures["c4_error_L2_R1"] == pytest.approx(1.0 - expected["preserving"], abs=1e-4)
  assert 0.0 < figures["c4_error_L2_R1"] < 1.0


def test_a_missing_connect4_set_is_an_error_naming_its_file(tmp_path, monkeypatch):
  monkeypatch.setattr(pons, "DATA_DIR", tmp_path)
  with pytest.raises(FileNotFoundError, match="Test_L3_R1_columns"):
    ground_truth.connect4_error_rates(agents.RandomAgent(), RNG, sets=("L3_R1",))


@pytest.mark.slow
def test_search_agent_error_rate_on_end_games():
  c4 = envs.make("connect4")
  search = agents.rollout_baseline(c4, num_simulations=200)
  figures = ground_truth.evaluate(c4, search, RNG, c4_sets=("L3_R1",), positions_per_set=48,
                                  chunk_size=16)
  random = ground_truth.evaluate(c4, agents.RandomAgent(), RNG, c4_sets=("L3_R1",),
                                 positions_per_set=48, chunk_size=16)
  # End games: 200 simulations with rollouts keep the outcome in nearly all
  # of them (all 48 here), random play misses it in about one in five.
  assert figures["c4_error_L3_R1"] <= 0.1 and random["c4_error_L3_R1"] >= 0.15


@pytest.mark.parametrize("value", [0.0, 0.9, -0.5])
def test_connect4_value_errors_read_outcome_bands(value):
  """A constant value reads as one outcome everywhere (draw at 0, win at 0.9,
  loss at -0.5): its error is the share of positions with another outcome."""
  env = envs.make("connect4")

  def constant(params, rng, state):
    del params, rng
    batch = state.legal_action_mask.shape[:-1]
    return jnp.zeros(batch + (env.num_actions,)), jnp.full(batch, value)

  figures = ground_truth.connect4_value_errors(constant, None, RNG, sets=("L3_R1", "L2_R2"),
                                               positions_per_set=60, chunk_size=32)
  outcome = 0 if value == 0 else int(np.sign(value))
  for name in ("L3_R1", "L2_R2"):
    truth = np.sign([p.score for p in pons.load_set(name, 60)])
    assert figures[f"c4_error_{name}"] == pytest.approx(np.mean(truth != outcome))
    assert 0.0 < figures[f"c4_error_{name}"] < 1.0
    decisive = truth[truth != 0]
    assert figures[f"c4_sign_error_{name}"] == pytest.approx(np.mean(np.sign(value) != decisive))
