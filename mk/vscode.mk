# VS Code extension (vscode-extension/): what tests/editors/vscode/test_vscode_extension.py and
# tests/editors/vscode/test_vscode_e2e.py need, installed idempotently and fast when already there.
#
#   - Debian packages: chromium (driven by Playwright, no browser download), and the headers
#     code-server's native modules build against (libkrb5-dev libxkbfile-dev libsecret-1-dev);
#     nodejs/npm and a compiler only if the machine has none;
#   - playwright (pinned) in the venv;
#   - vscode-extension/node_modules from package-lock.json (npm ci);
#   - Node $(VSCODE_NODE_VERSION) and code-server $(CODE_SERVER_VERSION) from the npm registry in a cache
#     folder outside the repository ($(VSCODE_E2E_CACHE)); about 2 minutes the first time.
#
# The E2E cache can be moved with DSH_QUERY_E2E_CACHE (the tests read the same variable).

CODE_SERVER_VERSION := 4.139.1
VSCODE_NODE_VERSION := 24.21.0
PLAYWRIGHT_VERSION  := 1.65.2
VSCODE_DIR          := vscode-extension
VSCODE_E2E_CACHE    := $(or $(DSH_QUERY_E2E_CACHE),$(HOME)/.cache/dsh-query-e2e)
CODE_SERVER_DIR     := $(VSCODE_E2E_CACHE)/code-server-$(CODE_SERVER_VERSION)
CODE_SERVER_STAMP   := $(CODE_SERVER_DIR)/.installed-node-$(VSCODE_NODE_VERSION)
VSCODE_NODE_BIN     := $(CODE_SERVER_DIR)/node_modules/node/bin
VSCODE_LOCK_STAMP   := $(VSCODE_DIR)/node_modules/.dsh-lock-sha256
VSCODE_APT          := chromium libkrb5-dev libxkbfile-dev libsecret-1-dev
# node-gyp must not download Node headers (no network but the registries): use the system ones.
VSCODE_NODEDIR      := $(if $(wildcard /usr/include/node/node.h),--nodedir=/usr,)

TEST_DEPS += vscode-deps

.PHONY: vscode-deps vscode-apt vscode-playwright vscode-node-modules vscode-code-server vscode-test vscode-e2e

vscode-deps: vscode-apt vscode-playwright vscode-node-modules vscode-code-server

vscode-apt:
	@missing=""; \
	for p in $(VSCODE_APT); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm libnode-dev"; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing build-essential"; \
	command -v make >/dev/null 2>&1 || missing="$$missing make"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

vscode-playwright: install
	@$(BIN)/python -c "import importlib.metadata as m, sys; sys.exit(m.version('playwright') != '$(PLAYWRIGHT_VERSION)')" 2>/dev/null \
	  || $(BIN)/python -m pip install -q 'playwright==$(PLAYWRIGHT_VERSION)'

vscode-node-modules: vscode-apt
	@want=$$(sha256sum $(VSCODE_DIR)/package-lock.json | cut -d' ' -f1); \
	if [ "$$(cat $(VSCODE_LOCK_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  (cd $(VSCODE_DIR) && npm ci --no-audit --no-fund --ignore-scripts) && echo "$$want" > $(VSCODE_LOCK_STAMP); \
	fi

vscode-code-server: $(CODE_SERVER_STAMP)

$(CODE_SERVER_STAMP): | vscode-apt
	mkdir -p $(CODE_SERVER_DIR)
	cd $(CODE_SERVER_DIR) && { [ -f package.json ] || echo '{"name": "dsh-query-e2e", "private": true}' > package.json; }
	cd $(CODE_SERVER_DIR) && npm install --no-audit --no-fund --save-exact node@$(VSCODE_NODE_VERSION)
	cd $(CODE_SERVER_DIR) && PATH="$(VSCODE_NODE_BIN):$$PATH" npm install --no-audit --no-fund --save-exact \
	  $(VSCODE_NODEDIR) code-server@$(CODE_SERVER_VERSION)
	PATH="$(VSCODE_NODE_BIN):$$PATH" $(CODE_SERVER_DIR)/node_modules/.bin/code-server --version
	touch $@

# Just the extension's tests: `make vscode-test`, or only the end-to-end one: `make vscode-e2e`.
vscode-test: install vscode-deps
	$(BIN)/python -m pytest -q tests/editors/vscode $(PYTEST_ARGS)

vscode-e2e: install vscode-deps
	$(BIN)/python -m pytest -q -m e2e tests/editors/vscode/test_vscode_e2e.py tests/editors/vscode/test_vscode_e2e_imported.py $(PYTEST_ARGS)
