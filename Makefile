# Two commands for a fresh machine: `make demo` and `make test`. Everything they need is
# installed here, idempotently, with pinned versions (constraints.txt, package-lock.json).
# `make check` is the fast loop while working: lint and the unit and wire tests side by side (no
# system packages, no PostgreSQL, no editors; tests/conftest.py says what each marker means).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=
# System packages (mk/*.mk): `$(call apt_install,<packages>)` installs them from the package lists
# the machine has, and runs `apt-get update` only when that fails; --no-upgrade leaves a package
# that is installed already as it is, and --no-install-recommends adds only what the named
# packages depend on. (A dependency that must be newer than the installed one is still upgraded:
# apt has no other way; fresh lists make that likelier, hence no update unless needed.)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade --no-install-recommends
apt_install = { $(APT_INSTALL) $(1) 2>/dev/null || { $(SUDO) apt-get update -qq && $(APT_INSTALL) $(1); }; }
# Nothing is written outside the repository but into caches named ~/.cache/dsh-query-*: pip's
# and npm's go there too (npm would use ~/.npm, pip ~/.cache/pip), and npm checks for no update.
export PIP_CACHE_DIR ?= $(HOME)/.cache/dsh-query-pip
export npm_config_cache ?= $(HOME)/.cache/dsh-query-npm
export npm_config_update_notifier := false
# Each client (mk/*.mk) adds the system packages and builds its tests need to TEST_DEPS. The
# fragments are read before the rules below, so `test` sees the whole list.
TEST_DEPS :=
.DEFAULT_GOAL := demo
-include mk/*.mk

.PHONY: demo test check install bench clean

demo: install
	$(BIN)/dsh-query demo

# The suite in two pytest processes at once, one per core (as `check` does), each with its own
# temporary HOME, XDG folders, hub directory, PostgreSQL and ports (tests/conftest.py): the first
# runs TEST_FIRST, which mostly waits on other processes (code-server and Chromium, Neovim, the
# CLI, hubs and MCP servers), the second everything else, so that a new test folder lands there
# without being named here. Measured on 2 cores: 592 s and 685 s (export/ then in the second),
# 11.5 min for the whole suite, where one process took 24 min before (load 3-5 both; that
# figure also before hub_helpers.alive stopped waiting for PID 1 to reap an exited hub).
# Each prints its report when it ends, the first usually first; either failing fails `make test`.
# PYTEST_ARGS go to both: options (-x, -k, -m), not paths (`$(BIN)/python -m pytest PATH` for
# those); a half they select nothing in passes. No cache provider: two writers would race for it.
TEST_PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
TEST_FIRST  := tests/editors tests/cli tests/export tests/hub tests/mcp
TEST_EMPTY  := $(if $(PYTEST_ARGS),|| [ $$? = 5 ])
test: install $(TEST_DEPS)
	@$(MAKE) --no-print-directory -j2 -k --output-sync=target test-first test-second

.PHONY: test-first test-second
test-first:
	$(TEST_PYTEST) $(TEST_FIRST) $(PYTEST_ARGS) $(TEST_EMPTY)

test-second:
	$(TEST_PYTEST) tests $(addprefix --ignore=,$(TEST_FIRST)) $(PYTEST_ARGS) $(TEST_EMPTY)

# Lint (mk/lint.mk's Python half) and, at the same time, the unit tests and the wire tests in two
# pytest processes (one per core), with the `check` Hypothesis profile (fewer examples) and
# without the tests marked slow (nor those that need a client `make test` installs: the MCP
# Inspector, mk/inspector.mk). `make test` runs everything at full strength.
CHECK_PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider --hypothesis-profile=check
CHECK_WIRE   := -m "wire and not postgres and not editor and not slow and not inspector"
check: install
	@$(MAKE) --no-print-directory -j3 --output-sync=target check-lint check-unit check-wire

.PHONY: check-lint check-unit check-wire
check-lint:
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/pyright --pythonpath $(BIN)/python $(CHECK_PYRIGHT_PATHS)

check-unit:
	$(CHECK_PYTEST) -m "unit and not slow" $(PYTEST_ARGS)

check-wire:
	$(CHECK_PYTEST) $(CHECK_WIRE) $(PYTEST_ARGS)

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	touch $@

# Bytecode first: the bench times `dsh-query` commands, and an installed wheel ships compiled
# bytecode, where an editable checkout under PYTHONDONTWRITEBYTECODE recompiles on every start.
bench: install
	$(BIN)/python -m compileall -q dsh_query_server bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
