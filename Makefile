# One place for set-up and checks; CI (.ci/run) runs `make demo`, then `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCK := requirements/dev.lock
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean compat

# Everything a fresh machine needs for the Python side: a venv with the pinned packages.
$(STAMP): pyproject.toml $(LOCK)
	@echo "Setting up $(VENV) with the pinned packages (torch, Lightning, the checkers): a few minutes the first time, silent while pip works"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(LOCK) -e '.[dev]'
	touch $@

venv: $(STAMP)

# Runs the main job on the bundled example and prints what it found. quickdev's own options
# go before the script: what follows the script is the script's (tests/test_demo.py).
DEMO_RUNS_DIR ?= .quickdev/runs
demo: $(STAMP)
	$(BIN)/quickdev run --runs-dir $(DEMO_RUNS_DIR) examples/train_loop.py

# What the editor and the docs take from the option table (python_backend/quickdev/rundir/
# option_table.py): package.json's settings and launch attributes, extension/common/optionTable.ts,
# protocol.md's rows, the limits table. tests/test_option_table.py fails when one is stale.
.PHONY: options
options: $(STAMP)
	$(BIN)/python tools/option_table.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest

test: system-deps lint typecheck pytest ext-check e2e

clean:
	rm -rf $(VENV) .quickdev .mypy_cache .ruff_cache .pytest_cache

# The smoke suite on every torch release of the tested range (docs/compat.md), each in a
# venv of its own under .compat/ where the project is installed as a user installs it.
# Not part of `make test`: each torch is a download of several GB. COMPAT_ARGS passes
# options on (`--torch 2.11.0`, `--prune`, `--ref COMMIT`; see tools/compat/compat.py).
COMPAT_ARGS ?=
compat: $(STAMP)
	$(BIN)/python tools/compat/compat.py $(COMPAT_ARGS)

# Debian packages the browser, VS Code and attach tests need (root; skipped when present).
SYSTEM_PACKAGES := chromium ripgrep libkrb5-dev gdb
.PHONY: system-deps
system-deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# --- VS Code extension (package.json, extension/) ---
# The VSIX the end-to-end tests install: `make vsix` builds it from a clean clone.
EXT_VERSION = $(shell node -p "require('./package.json').version")
VSIX = dist/torch-quickdev-$(EXT_VERSION).vsix
NODE_STAMP := node_modules/.installed
# The language server's libraries, pinned in the lock, shipped inside the VSIX.
BUNDLED_LIBS := attrs cattrs debugpy lsprotocol pygls typing_extensions
.PHONY: ext-check ext-lint ext-format ext-build bundle vsix

# npm ci keeps the lock and package.json in step; only the lock says what to install.
$(NODE_STAMP): package-lock.json
	npm ci --no-audit --no-fund
	touch $@

node_modules: $(NODE_STAMP)

ext-build: $(NODE_STAMP)
	node esbuild.config.mjs

# The extension's TypeScript: ESLint (eslint.config.mjs), zero warnings allowed, and Prettier's
# formatting (.prettierrc.json); `make ext-format` rewrites the files Prettier would change.
PRETTIER_FILES := "extension/**/*.ts" "tests/extension/**/*.ts" eslint.config.mjs esbuild.config.mjs
ext-lint: $(NODE_STAMP)
	node_modules/.bin/eslint --max-warnings 0 extension tests/extension
	node_modules/.bin/prettier --check $(PRETTIER_FILES)

ext-format: $(NODE_STAMP)
	node_modules/.bin/prettier --write $(PRETTIER_FILES)

# Lint, type checks (strict tsc) and unit tests of the extension's pure parts. out/ is rebuilt whole
# so a moved or deleted test leaves no compiled copy behind; node --test searches every subfolder.
ext-check: ext-build ext-lint
	rm -rf out
	node_modules/.bin/tsc -p .
	node --test out/tests/extension/

bundle: $(STAMP)
	rm -rf bundled
	mkdir -p bundled/tool build
	grep -iE '^($(shell echo $(BUNDLED_LIBS) | tr ' ' '|'))==' $(LOCK) > build/bundled-requirements.txt
	test "$$(wc -l < build/bundled-requirements.txt)" -eq "$(words $(BUNDLED_LIBS))"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
	  --target bundled/libs -r build/bundled-requirements.txt
	cp -r python_backend/quickdev bundled/tool/quickdev
	rm -rf bundled/libs/bin
	find bundled -name __pycache__ -prune -exec rm -rf {} +

# The README links to docs/ and shows docs/images/ by relative paths, which the VSIX carries
# (.vscodeignore): with no repository to point them at, vsce is told to leave them as they are.
vsix: ext-build bundle
	node_modules/.bin/vsce package --no-dependencies --skip-license --allow-missing-repository \
	  --no-rewrite-relative-links --out $(VSIX)
	@echo "built $(VSIX)"

# End-to-end tests in a real VS Code: code-server (pinned, installed under .tools/) driven by
# Playwright with Debian's Chromium; screenshots and logs land in tests/e2e/artifacts/.
CODE_SERVER_STAMP := .tools/code-server/.installed
E2E_NODE_STAMP := tests/e2e/node_modules/.installed
.PHONY: code-server e2e

$(CODE_SERVER_STAMP): tools/code-server/package-lock.json tools/code-server/install.sh
	tools/code-server/install.sh

code-server: system-deps $(CODE_SERVER_STAMP)

$(E2E_NODE_STAMP): tests/e2e/package.json tests/e2e/package-lock.json
	cd tests/e2e && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

e2e: system-deps $(STAMP) code-server $(E2E_NODE_STAMP) vsix
	cd tests/e2e && QUICKDEV_VSIX=$(abspath $(VSIX)) node --test --test-concurrency=1 journey.test.mjs

# The README's pictures: the same journey, saving the parts of the editor it shows as
# docs/images/*.png (tests/e2e/lib/docImages.mjs).
.PHONY: e2e-images
e2e-images: export QUICKDEV_E2E_DOC_IMAGES = 1
e2e-images: e2e

# The memory forecast's examples in docs/forecast.md, from real runs (minutes: each runs the
# script's first training step on this machine).
.PHONY: docs-forecast
docs-forecast: $(STAMP)
	$(BIN)/python tools/forecast_examples.py
