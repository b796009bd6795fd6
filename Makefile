# Quick start: `make demo` and `make test`. Each creates/refreshes .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MCGS := $(VENV)/bin/mcgs-jax

BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: docs demo play train train-connect4 test test-slow bench bench-quick bench-envs bench-device device-session fault-sweep bench-compare accuracy clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,docs,tensorboard]"
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e ".[test,bench]"
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(MCGS) demo

# A game against the shipped Connect-4 agent in the terminal.
play: $(STAMP)
	$(MCGS) play

# AlphaZero training with MCGS; rerun the same command to resume.
# `make train ENV=connect4`, `make train ENV=nim:3,20`, ... (runs/<env>/).
ENV ?= tictactoe
train: $(STAMP)
	$(MCGS) train --env $(ENV) --out runs/$(subst :,_,$(subst $(comma),_,$(ENV)))

comma := ,

# The Connect-4 recipe from scratch: 18000 CPU s of overlapped self-play and
# training (about 2.9 hours of the idle 2-core machine, evaluations included);
# rerun to resume. The shipped agent (networks/pretrained/connect4) is its v7 run.
train-connect4: $(STAMP)
	$(MCGS) train --env connect4 --out runs/connect4_recipe --cpu-budget 18000

# --dist loadfile: a test file's tests run in one worker, so they share its
# module fixtures and the programs jax compiled for them. --no-loadscope-reorder:
# the files go out in collection order, the longest first (tests/conftest.py).
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow"

# The full Test_L1_R3 solver check takes hours; run it with
# `.venv/bin/python -m pytest -m slow -k "all_scores and L1_R3"`.
test-slow: $(STAMP)
	$(PY) -m pytest -q -n 2 -m slow -k "not (all_scores and L1_R3)"

bench: $(STAMP)
	$(MCGS) bench-search

bench-quick: $(STAMP)
	$(MCGS) bench-search --quick

bench-envs: $(STAMP)
	$(MCGS) bench-envs

# The accelerator report of whatever device JAX sees: $(OUT)/device/<device>.md
# and its CSVs (about 8 minutes on an H100; `--quick` is the CPU smoke run).
# OUT=docs refreshes the shipped pages; the default writes under results/.
OUT ?= results
bench-device: $(STAMP)
	$(MCGS) device-report --out $(OUT)/device

# One lent accelerator, one command (about 9 minutes): the accelerator report,
# then the Connect-4 recipe trained for the rest of the time; writes
# $(OUT)/device/ and $(OUT)/learning/gpu/gpu_session/ (run state under runs/).
# `make device-session QUICK=1`: the CPU smoke run (under 3 minutes).
device-session: $(STAMP)
	$(MCGS) device-session $(if $(QUICK),--quick --out results/device_session,--out $(OUT))

# Training runs hit by faults at random points (SIGKILL, damaged files, a full
# disk, a second process), 20 trials each (about 4 hours on 2 cores, resumable):
# the table of docs/reliability.md, into results/.
fault-sweep: $(STAMP)
	$(MCGS) fault-sweep --log results/fault_sweep.jsonl --csv results/reliability.csv --md results/fault_sweep.md

# The hot paths of the working tree against BASE, interleaved on this machine:
# `make bench-compare BASE=HEAD~1` (a few minutes).
BASE ?= HEAD
bench-compare: $(STAMP)
	$(MCGS) bench-compare --base $(BASE)

accuracy: $(BENCH_STAMP)
	$(MCGS) connect4-accuracy

# The documentation site, into site/ (warnings are errors), with the API
# reference from the docstrings (mkdocs.yml, scripts/docs_layout.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) results site build
