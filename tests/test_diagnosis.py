"""experiments.diagnosis: the summary keeps every variant's committed curve."""

import os
import shutil

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
