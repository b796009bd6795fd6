"""experiments.fresh_check: a rerun keeps the earlier rows and measures only what is missing."""

import csv

from experiments import fresh_check


def _row(band, agent, seed=2026, keeps=0.9):
  return dict(band=band, stones="8-14", agent=agent, positions=300, keeps_outcome=keeps,
              low=0.8, high=0.95, seed=seed)


def test_merge_keeps_previous_rows_and_replaces_same_band_agent_seed():
  previous = [{k: str(v) for k, v in _row("early-middle", "a").items()},
              {k: str(v) for k, v in _row("middle", "a").items()},
              {k: str(v) for k, v in _row("middle", "a", seed=7).items()}]
  new = [_row("middle", "a", keeps=0.5), _row("middle", "b")]
  merged = fresh_check.merge_rows(previous, new)
  assert [(r["band"], r["agent"], str(r["seed"])) for r in merged] == [
      ("early-middle", "a", "2026"), ("middle", "a", "7"), ("middle", "a", "2026"),
      ("middle", "b", "2026")]
  assert merged[2]["keeps_outcome"] == 0.5


def test_rerun_skips_contestants_already_in_the_file(tmp_path, monkeypatch):
  measured = []
  monkeypatch.setattr(fresh_check, "contestants",
                      lambda dirs, sims, ref: [("old search 200", "old"), ("new search 200", "new")])
  monkeypatch.setattr(fresh_check, "labelled_positions", lambda band, count, seed: [None] * 4)
  monkeypatch.setattr(fresh_check, "position_states", lambda positions: None)
  monkeypatch.setattr(fresh_check, "kept_count",
                      lambda agent, positions, states, rng: measured.append(agent) or 3)
  path = tmp_path / "fresh_check.csv"
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(_row("x", "y")))
    writer.writeheader()
    writer.writerows([_row(band, "old search 200") for band in fresh_check.BANDS])
  rows = fresh_check.run(["unused"], count=4, seed=2026, simulations=200,
                         reference_simulations=1000, out=str(tmp_path))
  assert measured == ["new"] * len(fresh_check.BANDS)
  assert [r["agent"] for r in rows] == ["new search 200"] * len(fresh_check.BANDS)
  with open(path, newline="") as f:
    written = list(csv.DictReader(f))
  assert [(r["band"], r["agent"]) for r in written] == (
      [(band, "old search 200") for band in fresh_check.BANDS]
      + [(band, "new search 200") for band in fresh_check.BANDS])
  assert written[-1]["keeps_outcome"] == "0.75"
