"""The phase-profile benchmark runs and writes one row per phase and mode."""

import csv

import pytest

from experiments import bench_phases
from experiments import compare_engines


@pytest.mark.slow
def test_bench_phases_writes_its_rows(tmp_path):
  path = tmp_path / "phases.csv"
  bench_phases.main(["--batch", "2", "--sims", "4", "--hidden", "8", "--backups", "mcgs",
                     "--repeats", "1", "--csv", str(path)])
  rows = list(csv.DictReader(open(path)))
  names = [r["row"] for r in rows]
  assert names == ["network+env only", "search mcgs", "phase selection", "phase transition",
                   "phase lookup", "phase evaluation", "phase expansion+backup", "phase step"]
  assert all(float(r["median_ms"]) > 0 for r in rows)
  assert float(rows[-1]["share_of_step"]) == 1.0


def test_profile_search_phase_of_scopes():
  from experiments import profile_search
  search = "jit(search)/while/body/"
  assert profile_search.phase_of(search + "descend/select/while/body/vmap()/gather") == (
      "descend/select")
  assert profile_search.phase_of(search + "descend/lookup/vmap()/and") == "descend/lookup"
  assert profile_search.phase_of(search + "evaluate/MLP/Dense_0/dot_general") == "evaluate"
  eb = search + "expand_and_backup/"
  assert profile_search.phase_of(eb + "vmap(write_node)/scatter") == "expand: write_node"
  assert profile_search.phase_of(eb + "vmap(backup)/while/body/select_n") == "expand: backup"
  assert profile_search.phase_of(eb + "vmap()/add") == "expand: other"
  assert profile_search.phase_of("jit(search)/vmap()/broadcast_in_dim") == "other"


@pytest.mark.slow
def test_profile_search_attributes_kernels_to_phases():
  from experiments import profile_search
  rows = profile_search.profile("mcgs", batch=2, sims=4, repeats=1)
  phases = {row["phase"]: row for row in rows}
  # Every simulation selects, steps the env, looks up, evaluates and backs up.
  for phase in ("descend/select", "descend/transition", "descend/lookup", "evaluate",
                "expand: backup", "expand: write_node"):
    assert phases[phase]["launches_per_sim"] >= 1, phase
  assert abs(sum(row["share"] for row in rows) - 1.0) < 0.01


@pytest.mark.slow
def test_profile_search_on_nim_with_an_evaluation_budget():
  from experiments import profile_search
  from learning import benchmarks
  assert benchmarks.evaluation_budget(8) == dict(max_nn_evals=8, max_nodes=9)
  assert benchmarks.evaluation_budget(None) == dict(max_nn_evals=None, max_nodes=None)
  env, state, params, eval_fn = benchmarks.profiled_game("nim", 2)
  assert params is None and state.observation.shape[0] == 2 and env.id == "nim-piles:1,3,5,7"
  rows = profile_search.profile("katago", batch=2, sims=8, repeats=1, game="nim", evals=4)
  phases = {row["phase"] for row in rows}
  assert {"descend/select", "evaluate", "expand: backup"} <= phases
  assert abs(sum(row["share"] for row in rows) - 1.0) < 0.01


def test_compare_engines_pairs_each_round():
  """Ratios pair the two calls of a round: [1, 10, 10] over [2, 5, 30] is
  0.5 (rounds: 0.5, 2, 1/3), where the ratio of the medians would be 2."""
  assert compare_engines.paired_ratio([1, 10, 10], [2, 5, 30]) == (
      "0.500 (middle half 0.333-2.000)")
  assert compare_engines.paired_ratio([1, 2, 4, 8], [2, 4, 8, 16]) == (
      "0.500 (middle half 0.500-0.500)")
