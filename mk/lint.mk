# Lint and type checks: `make lint` runs ruff (lint and format check) and pyright over the
# package, the tests and the benchmarks (configured in pyproject.toml), and the extension's ESLint
# (vscode-extension/eslint.config.mjs). Tools are pinned: ruff and pyright in constraints.txt,
# ESLint in package-lock.json. `make test` runs it (TEST_DEPS) before the tests.

LINT_PATHS := dsh_query_server tests bench
# What `make check` type-checks: all of it but the editor tests, whose Playwright is installed only
# by vscode-playwright (a system-level install `make check` does not make).
CHECK_PYRIGHT_PATHS := dsh_query_server bench $(wildcard tests/*.py) $(filter-out tests/editors/,$(wildcard tests/*/))

TEST_DEPS += lint

.PHONY: lint lint-python lint-extension

lint: lint-python lint-extension

# vscode-playwright: tests/editors/vscode/test_vscode_e2e.py imports playwright, which pyright must resolve.
lint-python: install vscode-playwright
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/pyright --pythonpath $(BIN)/python $(LINT_PATHS)

# node_modules from the lockfile through vscode-node-modules (mk/vscode.mk), which installs npm
# first on a fresh machine (vscode-apt).
lint-extension: vscode-node-modules
	cd $(VSCODE_DIR) && npm run --silent lint
