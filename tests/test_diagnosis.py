"""experiments.diagnosis: the summary keeps every variant's committed curve."""

import os
import shutil

import pytest

from experiments import diagnosis
from learning import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = os.path.join(ROOT, "docs", "learning", "diagnosis")


def test_summarize_keeps_variants_whose_run_folder_is_gone(tmp_path):
  docs, root = tmp_path / "docs", tmp_path / "runs"
  docs.mkdir()
  shutil.copyfile(os.path.join(COMMITTED, "base.csv"), docs / "base.csv")
  (root / "combo_b").mkdir(parents=True)
  shutil.copyfile(os.path.join(COMMITTED, "combo_b.csv"), root / "combo_b" / "metrics.csv")
  rows = {r["variant"]: r for r in diagnosis.summarize(str(root), str(docs))}
  assert sorted(rows) == ["base", "combo_b"]
  # base from its committed copy, combo_b copied from its run folder.
  assert (docs / "combo_b.csv").read_text() == (root / "combo_b" / "metrics.csv").read_text()
  evals = diagnosis.evaluations(diagnosis.read_rows(os.path.join(COMMITTED, "base.csv")))
  assert rows["base"]["search_mean"] == evals[-1]["search_mean"]
  assert rows["combo_b"]["search_mean"] < rows["base"]["search_mean"]
  assert (docs / "summary.csv").exists() and (docs / "diagnosis_cpu.png").exists()


def test_every_variant_is_a_valid_train_config():
  base = config_lib.TrainConfig(**{k: v for k, v in diagnosis.BASE.items()
                                   if k != "network_kwargs"})
  for name in diagnosis.VARIANTS:
    config = config_lib.replace(base, **diagnosis.config_of(name))
    assert config.env == "connect4", name
  resmlp = config_lib.replace(base, **diagnosis.config_of("combo_b_resmlp"))
  assert resmlp.network == "resmlp" and dict(resmlp.network_kwargs) == {"num_layers": 4,
                                                                        "width": 256}
  assert resmlp.root_policy == "gumbel" and resmlp.outcome_weight == 0.5


@pytest.mark.slow
def test_snapshot_curve_evaluates_every_snapshot_like_the_value_curve(tmp_path):
  import json  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  from learning import checkpoint  # pylint: disable=g-import-not-at-top
  from learning import evaluation  # pylint: disable=g-import-not-at-top
  config = config_lib.replace(config_lib.default_config("connect4"),
                              network_kwargs={"num_layers": 1, "width": 8}, eval_simulations=4)
  (tmp_path / checkpoint.CONFIG).write_text(json.dumps(config.to_json()))
  env, network, _ = checkpoint.build_network(config)
  (tmp_path / "snapshots").mkdir()
  for seed, iteration in ((0, 7), (1, 3)):
    checkpoint.write_variables(evaluation.snapshot_path(str(tmp_path), iteration),
                               checkpoint.init_variables(network, env, jax.random.PRNGKey(seed)))
  out = tmp_path / "curve.csv"
  rows = diagnosis.snapshot_curve(str(tmp_path), str(out), positions=3)
  assert [r["iteration"] for r in rows] == [3, 7]
  assert len(diagnosis.read_rows(str(out))) == 2
  for row in rows:
    for kind in ("search", "policy", "value", "value_sign"):
      errors = [row[f"{kind}_{s}"] for s in diagnosis.SETS]
      assert all(0 <= e <= 1 for e in errors)
      assert abs(row[f"{kind}_mean"] - sum(errors) / len(errors)) < 1e-9
  # The value columns are the value curve's on the same positions.
  values = diagnosis.value_curve(str(tmp_path), str(tmp_path / "value.csv"), positions=3)
  assert [v["value_sign_mean"] for v in values] == [r["value_sign_mean"] for r in rows]
  assert [v["value_mean"] for v in values] == [r["value_mean"] for r in rows]
