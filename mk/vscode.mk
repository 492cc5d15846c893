# VS Code extension (vscode-extension/): what tests/editors/vscode/test_vscode_extension.py and
# tests/editors/vscode/test_vscode_e2e.py need, installed idempotently and fast when already there.
#
#   - Debian packages: chromium (driven by Playwright, no browser download), and the headers
#     code-server's native modules build against (libkrb5-dev libxkbfile-dev libsecret-1-dev);
#     nodejs/npm (and ca-certificates, which apt would only recommend) and a compiler only if the
#     machine has none (the Makefile's apt_install);
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
# node-gyp must not download Node headers (no network but the registries, and it would keep them
# in ~/.cache/node-gyp): use the system ones.
VSCODE_NODEDIR      := $(if $(wildcard /usr/include/node/node.h),--nodedir=/usr,)
# code-server writes a default config (with a password) to ~/.config/code-server/config.yaml and a
# log folder to ~/.local/share/code-server on every start, `--version` included: it gets a home
# of its own in the cache. (The E2E tests give it one in their temporary directory.)
CODE_SERVER_HOME    := $(CODE_SERVER_DIR)/home
CODE_SERVER_ENV     := HOME=$(CODE_SERVER_HOME) XDG_CONFIG_HOME=$(CODE_SERVER_HOME)/.config \
  XDG_DATA_HOME=$(CODE_SERVER_HOME)/.local/share XDG_CACHE_HOME=$(CODE_SERVER_HOME)/.cache \
  XDG_STATE_HOME=$(CODE_SERVER_HOME)/.local/state

TEST_DEPS += vscode-deps

.PHONY: vscode-deps vscode-apt vscode-playwright vscode-node-modules vscode-code-server vscode-code-server-version vscode-test vscode-e2e

vscode-deps: vscode-apt vscode-playwright vscode-node-modules vscode-code-server

vscode-apt:
	@missing=""; \
	for p in $(VSCODE_APT); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm libnode-dev ca-certificates"; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing build-essential"; \
	command -v make >/dev/null 2>&1 || missing="$$missing make"; \
	command -v pkg-config >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  $(call apt_install,$$missing); \
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
	@$(MAKE) --no-print-directory vscode-code-server-version
	touch $@

# The installed code-server answers (run with the home above; tests/editors/vscode checks it).
vscode-code-server-version:
	umask 077 && env $(CODE_SERVER_ENV) PATH="$(VSCODE_NODE_BIN):$$PATH" $(CODE_SERVER_DIR)/node_modules/.bin/code-server --version

# Just the extension's tests: `make vscode-test`, or only the end-to-end one: `make vscode-e2e`.
vscode-test: install vscode-deps
	$(BIN)/python -m pytest -q tests/editors/vscode $(PYTEST_ARGS)

vscode-e2e: install vscode-deps
	$(BIN)/python -m pytest -q -m e2e tests/editors/vscode/test_vscode_e2e.py tests/editors/vscode/test_vscode_e2e_imported.py $(PYTEST_ARGS)
