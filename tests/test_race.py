"""The peer recipe (`mcgs-jax peer-recipe`) and the race (`mcgs-jax race`) on
tiny shapes, run as processes: one peer run serves as both sides."""

import csv
import os

import pytest

from mcgs_jax.learning import checkpoint
from mcgs_jax.learning import ground_truth
from mcgs_jax.learning import names
from tests import commands

SETS = tuple(ground_truth.C4_SETS)


def _read(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def peer_run(tmp_path_factory):
  directory = str(tmp_path_factory.mktemp("peer"))
  commands.run("peer-recipe", ["--out", directory, "--quick", "--iterations", "1"])
  # Rerunning with a larger budget resumes from the checkpoint.
  commands.run("peer-recipe", ["--out", directory, "--quick", "--iterations", "2"])
  return directory


@pytest.mark.slow
def test_peer_run_resumes_and_is_loadable(peer_run):
  rows = _read(os.path.join(peer_run, "metrics.csv"))
  assert [r["iteration"] for r in rows] == ["1", "2"]
  assert {r["agent"] for r in rows} == {"peer"}
  assert float(rows[1]["wall_s"]) > float(rows[0]["wall_s"]) > 0
  for row in rows:
    for kind in ("search", "policy"):
      for s in SETS:
        assert 0.0 <= float(row[f"{kind}_c4_error_{s}"]) <= 1.0
  env, _, params = checkpoint.load_agent(peer_run)
  assert env.num_actions == 7 and params


@pytest.mark.slow
def test_race_writes_curves_final_figures_and_elo(peer_run, tmp_path):
  out = str(tmp_path / "race")
  argv = ["--ours", peer_run, "--peer", peer_run, "--out", out, "--games", "2",
          "--simulations", "4", "--baseline-simulations", "8", "--positions", "3"]
  # Our side first (while the peer still trains), then the rest.
  commands.run("race", argv + ["--agents", "ours"])
  assert [r["agent"] for r in _read(os.path.join(out, "race_final.csv"))] == ["ours"]
  assert {(g["a"], g["b"]) for g in _read(os.path.join(out, "race_games.csv"))} == {
      ("ours", "rollout")}
  commands.run("race", argv)
  curves = _read(os.path.join(out, "peer_recipe.csv"))
  assert [r["agent"] for r in curves] == ["ours", "ours", "peer", "peer"]
  for column in ["wall_s", "iteration"] + [f"search_{s}" for s in SETS] + \
      [f"policy_{s}" for s in SETS]:
    assert all(r[column] != "" for r in curves), column
  assert os.path.getsize(os.path.join(out, "peer_recipe.png")) > 0
  final = _read(os.path.join(out, "race_final.csv"))
  assert [(r["agent"], r["positions"], r["iteration"]) for r in final] == [
      ("ours", "3", "2"), ("peer", "3", "2")]
  for row in final:
    errors = [float(row[f"search_{s}"]) for s in SETS]
    # 3 positions per set: every rate is a multiple of 1/3.
    assert all(round(3 * e, 6) == round(3 * e) for e in errors)
    assert float(row["search_mean"]) == pytest.approx(sum(errors) / len(errors))
  # The same network on both sides, the same positions: the same figures.
  assert final[0]["search_mean"] == final[1]["search_mean"]
  games = _read(os.path.join(out, "race_games.csv"))
  assert sorted({(g["a"], g["b"]) for g in games}) == [
      ("ours", "peer"), ("ours", "rollout"), ("peer", "rollout")]
  assert len(games) == 6 and all(g["score"] in ("0.0", "0.5", "1.0") for g in games)
  elo = {r["player"]: r for r in _read(os.path.join(out, "race_elo.csv"))}
  assert set(elo) == {"ours", "peer", "rollout"} and float(elo["rollout"]["elo"]) == 0.0
  for row in elo.values():
    assert float(row["elo_low"]) <= float(row["elo"]) <= float(row["elo_high"])
  # A rerun plays no new games and evaluates nothing again.
  commands.run("race", argv)
  assert len(_read(os.path.join(out, "race_games.csv"))) == 6
  assert len(_read(os.path.join(out, "race_final.csv"))) == 2


@pytest.mark.slow
def test_race_names_label_both_runs(peer_run, tmp_path):
  out = str(tmp_path / "named")
  argv = ["--ours", peer_run, "--peer", peer_run, "--out", out, "--games", "2",
          "--simulations", "4", "--baseline-simulations", "8", "--positions", "0",
          "--names", "new", "old"]
  commands.run("race", argv + ["--agents", "new"])
  assert {(g["a"], g["b"]) for g in _read(os.path.join(out, "race_games.csv"))} == {
      ("new", "rollout")}
  commands.run("race", argv)
  assert {r["agent"] for r in _read(os.path.join(out, "peer_recipe.csv"))} == {"new", "old"}
  assert sorted({(g["a"], g["b"]) for g in _read(os.path.join(out, "race_games.csv"))}) == [
      ("new", "old"), ("new", "rollout"), ("old", "rollout")]
  assert {r["player"] for r in _read(os.path.join(out, "race_elo.csv"))} == {
      "new", "old", "rollout"}
  for bad in (["--names", "a", "a"], ["--names", "a", "rollout"], ["--agents", "ours"]):
    refused = commands.run("race", argv + bad, check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, (
        bad, refused.stderr)




def test_the_peer_command_offers_every_field_of_its_config():
  import dataclasses  # pylint: disable=g-import-not-at-top
  from mcgs_jax.learning import peer  # pylint: disable=g-import-not-at-top
  fields = {f.name: type(f.default) for f in dataclasses.fields(peer.PeerConfig)}
  del fields["network_kwargs"]   # --network-kwargs, a JSON object
  assert {name: kind for name, (kind, _) in names.PEER_FLAGS.items()} == fields
