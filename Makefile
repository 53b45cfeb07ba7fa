# One place for set-up and checks; CI runs `make test` too.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCK := requirements/dev.lock
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean

# Everything a fresh machine needs for the Python side: a venv with the pinned packages.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(LOCK) -e '.[dev]'
	touch $@

venv: $(STAMP)

# Runs the main job on the bundled example and prints what it found.
demo: $(STAMP)
	$(BIN)/quickdev run examples/train_loop.py --runs-dir .quickdev/runs

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .quickdev .mypy_cache .ruff_cache .pytest_cache
