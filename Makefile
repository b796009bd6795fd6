# Quick start: `make demo` and `make test`. Each creates/refreshes .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow bench bench-quick clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m experiments.demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not slow"

test-slow: $(STAMP)
	$(PY) -m pytest -q -n 2 -m slow

bench: $(STAMP)
	$(PY) -m experiments.bench_search

bench-quick: $(STAMP)
	$(PY) -m experiments.bench_search --quick

clean:
	rm -rf $(VENV) results
