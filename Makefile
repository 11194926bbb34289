# Two entry points for a fresh machine with Python 3.11+, pip and make:
#   make demo   create .venv, install vacuumlab, run the churn study (demo preset, ~4 min) on the
#               embedded PostgreSQL 18 and print the report's path
#   make test   create .venv, install with dev extras, lint, type-check and run the tests
#   make scenarios  the advisor's scenario suite (real workloads on the sandbox, slow)
# Filters: make test PYTEST_ARGS='-k snapshot'   ·   slow tests too: make test-all (CI does)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# Test processes, each with an embedded server of its own, one per core: most slow tests
# wait on a workload or an interval, but the studies' measurements (vacuum's sleeps, who
# wrote which page) went wrong under three on two cores. A file's tests stay in one process
# (--dist loadfile): its module fixtures (a study run) run once. The files go out in the order
# tests/conftest.py gives them, the slow ones first (--no-loadscope-reorder: by default xdist
# sends the files with the most tests first, which left the one-test TOAST preset, 150 s, last).
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=5

.PHONY: demo test test-all scenarios lint bench clean venv-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@ $(VENV)/.installed

venv-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/vacuumlab run churn --preset demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy bench/*.py
	$(BIN)/lint-imports --no-cache

# pytest exits 5 when a filter selects no test: that is not a failure.
# Tests marked slow run only in CI (CI=true) and in test-all.
test: lint
	$(PYTEST) $(if $(CI),,-m 'not slow') $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-all: lint
	$(PYTEST) $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The advisor's scenario suite: real workloads on the sandbox, each with the findings that must
# appear and those that must not (slow; CI runs them with the rest).
scenarios: $(VENV)/.installed-dev
	$(PYTEST) tests/scenarios

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/against_start.py
	$(BIN)/python bench/snapshot_scale.py
	$(BIN)/python bench/churn_overhead.py
	$(BIN)/python bench/advise_scale.py
	$(BIN)/python bench/simulate_scale.py
	$(BIN)/python bench/watch_refresh.py
	$(BIN)/python bench/watch_screen.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
