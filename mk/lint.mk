# Lint and type checks: `make lint` runs ruff (lint and format check) and pyright over the
# package, the tests and the benchmarks (configured in pyproject.toml), and the extension's ESLint
# (vscode-extension/eslint.config.mjs). Tools are pinned: ruff and pyright in constraints.txt,
# ESLint in package-lock.json. Not yet part of TEST_DEPS: the lead enables it once every branch of
# issue 13 has merged and the tree is clean.

LINT_PATHS := dsh_query_server tests bench

.PHONY: lint lint-python lint-extension

lint: lint-python lint-extension

lint-python: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/pyright --pythonpath $(BIN)/python $(LINT_PATHS)

# node_modules from the lockfile, as vscode-node-modules (mk/vscode.mk) does, but without the
# browser and headers the end-to-end tests need: linting wants only npm.
lint-extension:
	@command -v npm >/dev/null || { echo "lint-extension needs npm (make vscode-apt)"; exit 1; }
	@want=$$(sha256sum $(VSCODE_DIR)/package-lock.json | cut -d' ' -f1); \
	if [ "$$(cat $(VSCODE_LOCK_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  (cd $(VSCODE_DIR) && npm ci --no-audit --no-fund --ignore-scripts) && echo "$$want" > $(VSCODE_LOCK_STAMP); \
	fi
	cd $(VSCODE_DIR) && npm run --silent lint
