"""The fault sweep (`mcgs_jax.benchmarks.fault_sweep`): its table, and its quick mode
(one trial of every fault, real processes; `make test-slow`)."""

import json

import pytest

from mcgs_jax.benchmarks import fault_sweep


def test_messages_leave_out_xla_logs_and_the_bar():
  stderr = ("W0000 00:00 something from XLA\ntrain tictactoe:  50%|#####| it 3\n"
            "warning: checkpoint x is unreadable\n\n")
  assert fault_sweep._messages(stderr) == ["warning: checkpoint x is unreadable"]


def test_the_table_counts_every_fault():
  rows = [dict(fault="kill", trials=3, survived=3, nothing_lost=2, one_line=3, messages=[]),
          dict(fault="truncate-step", trials=3, survived=3, nothing_lost=3, one_line=3,
               messages=["warning: checkpoint <path> is unreadable"])]
  table = fault_sweep.markdown(rows).splitlines()
  assert table[2] == "| kill | 3 | 3 | 2 | 3 | nothing |"
  assert table[3].endswith("| `warning: checkpoint <path> is unreadable` |")


@pytest.mark.slow
def test_the_quick_sweep_survives_every_fault():
  rows = fault_sweep.sweep(fault_sweep.FAULTS, trials=1, seed=0)
  assert [r["fault"] for r in rows] == list(fault_sweep.FAULTS)
  for row in rows:
    assert row["survived"] == row["nothing_lost"] == row["one_line"] == 1, row


def test_a_resumed_sweep_keeps_the_logged_trials_and_runs_none_again(tmp_path, monkeypatch):
  log = tmp_path / "sweep.jsonl"
  records = [dict(fault="kill", index=0, survived=True, nothing_lost=True, one_line=True,
                  message=""),
             dict(fault="kill", index=1, survived=True, nothing_lost=False, one_line=True,
                  message="warning: x")]
  log.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"fault": "ki')  # torn

  def no_process(*args, **kwargs):
    raise AssertionError("a logged trial ran again")
  monkeypatch.setattr(fault_sweep, "_train", no_process)
  monkeypatch.setattr(fault_sweep, "trial", no_process)
  rows = fault_sweep.sweep(["kill"], trials=2, seed=0, log=str(log))
  assert rows == [dict(fault="kill", trials=2, survived=2, nothing_lost=1, one_line=2,
                       messages=["warning: x"])]
