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

test: system-deps lint typecheck pytest

clean:
	rm -rf $(VENV) .quickdev .mypy_cache .ruff_cache .pytest_cache

# Debian packages the browser, VS Code and attach tests need (root; skipped when present).
SYSTEM_PACKAGES := chromium ripgrep libkrb5-dev gdb
.PHONY: system-deps
system-deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
