"""The fault sweep (`experiments.fault_sweep`): its table, and its quick mode
(one trial of every fault, real processes; `make test-slow`)."""

import pytest

from experiments import fault_sweep


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
