# The MCP Inspector CLI (@modelcontextprotocol/inspector, pinned in tests/tools/package-lock.json):
# a client nobody here wrote, driven by tests/mcp/test_mcp_inspector.py (marker `inspector`,
# which `make test` runs and `make check` leaves out). It needs Node >= 22.19, so the lock also
# pins the `node` package (24.21.0, the VS Code tests' Node); both install with `npm ci` into the
# test cache, outside the repository ($(INSPECTOR_CACHE)), from npm's cache when it has them.
# Only `node`'s own install script runs (package.json allowScripts). Reinstalled when
# tests/tools/package.json or its lock changes; `make inspector-test` runs just that test.

INSPECTOR_SRC   := tests/tools
INSPECTOR_CACHE := $(or $(DSH_QUERY_E2E_CACHE),$(HOME)/.cache/dsh-query-e2e)/mcp-inspector
INSPECTOR_STAMP := $(INSPECTOR_CACHE)/.dsh-lock-sha256

TEST_DEPS += inspector-deps

.PHONY: inspector-deps inspector-test

inspector-deps:
	@command -v npm >/dev/null 2>&1 || $(call apt_install,nodejs npm ca-certificates)
	@want=$$(cat $(INSPECTOR_SRC)/package.json $(INSPECTOR_SRC)/package-lock.json | sha256sum | cut -d' ' -f1); \
	if [ "$$(cat $(INSPECTOR_STAMP) 2>/dev/null)" != "$$want" ]; then \
	  mkdir -p $(INSPECTOR_CACHE) \
	  && cp $(INSPECTOR_SRC)/package.json $(INSPECTOR_SRC)/package-lock.json $(INSPECTOR_CACHE)/ \
	  && (cd $(INSPECTOR_CACHE) && npm ci --no-audit --no-fund) \
	  && echo "$$want" > $(INSPECTOR_STAMP); \
	fi

inspector-test: install inspector-deps
	$(BIN)/python -m pytest -q -m inspector tests/mcp/test_mcp_inspector.py $(PYTEST_ARGS)
