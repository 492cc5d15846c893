# Two commands for a fresh machine: `make demo` and `make test`. Everything they need is
# installed here, idempotently, with pinned versions (constraints.txt, package-lock.json).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=
# Each client (mk/*.mk) adds the system packages and builds its tests need to TEST_DEPS. The
# fragments are read before the rules below, so `test` sees the whole list.
TEST_DEPS :=
.DEFAULT_GOAL := demo
-include mk/*.mk

.PHONY: demo test install test-python bench clean

demo: install
	$(BIN)/dsh-query demo

test: install $(TEST_DEPS)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

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
