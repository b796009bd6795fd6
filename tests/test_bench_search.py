"""The search benchmark with a trained agent reports descent depths per cell."""

import csv
import types

import numpy as np
import pytest

from mcgs_jax.benchmarks import search_speed
from tests import commands


def test_depth_figures_and_mctx_tree_depths():
  # Two games; simulation i adds node i + 1. Game 0 is a chain (depths 1, 2,
  # 3), game 1 a star (depth 1 every time).
  tree = types.SimpleNamespace(parents=np.array([[-1, 0, 1, 2], [-1, 0, 0, 0]]))
  depths = search_speed.mctx_tree_depths(tree)
  np.testing.assert_array_equal(depths, [[1, 1], [2, 1], [3, 1]])
  mean, maximum, batch_max = search_speed.depth_figures(depths)
  assert (mean, maximum, batch_max) == (9 / 6, 3.0, 2.0)
  # A game that ran no simulation (0) is left out of the mean.
  assert search_speed.depth_figures(np.array([[2, 0], [4, 0]]))[:2] == (3.0, 4.0)


@pytest.mark.slow
def test_agent_cells_have_depth_columns(tmp_path):
  path = tmp_path / "bench.csv"
  commands.run("bench-search", ["--agent", "networks/pretrained/connect4", "--batch", "2",
                                 "--sims", "8", "--contestants", "mctx", "mcgs", "--repeats", "1",
                                 "--opening-plies", "3", "--csv", path])
  rows = list(csv.DictReader(open(path)))
  assert [r["contestant"] for r in rows] == ["mctx", "mcgs"]
  for row in rows:
    assert row["status"] == "ok"
    mean, maximum, batch_max = (float(row[k]) for k in
                                ("depth_mean", "depth_max", "depth_batch_max_mean"))
    assert mean >= 1 and batch_max >= 1
    assert maximum >= batch_max >= mean
    assert maximum <= 8   # at most one new edge deeper per simulation
    assert min(float(row[k]) for k in ("net_ms", "net_cpu_ms", "cpu_ms")) > 0
  assert float(rows[0]["ratio_vs_mctx"]) == 1.0
  assert rows[0]["descent_cpu_ms"] == "nan"   # ours only
  assert float(rows[1]["descent_cpu_ms"]) > 0 and 1 <= float(rows[1]["descent_steps"]) <= 9


def test_openings_differ_per_game_and_match_in_both_envs():
  import jax
  import pgx

  from mcgs_jax import envs
  moves = search_speed.opening_moves(4, 3)
  assert moves.shape == (3, 4) and len({tuple(m) for m in np.asarray(moves).T}) > 1
  ours = search_speed.play_opening(envs.make("connect4"),
                                   envs.make("connect4").init(jax.random.key(0), batch_size=4),
                                   moves)
  theirs_env = pgx.make("connect_four")
  theirs = search_speed.play_opening(
      theirs_env, jax.vmap(theirs_env.init)(jax.random.split(jax.random.key(0), 4)), moves)
  np.testing.assert_array_equal(ours.observation, theirs.observation)
  assert not np.asarray(ours.terminated).any()
