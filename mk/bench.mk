# Benchmarks (bench/README.md). `make bench` builds the corpus once into a cache and drives the
# real server over stdio; it is never part of `make test`. Pass arguments through BENCH_ARGS:
#   make bench BENCH_ARGS="--scale 0.1 --quick"
# Its tools: ripgrep (the search baseline) from apt, py-spy (bench.profile) into the venv, pinned,
# and agentsview (the peer of bench.agentsview, a Go binary from PyPI) into the venv, pinned.

BENCH_ARGS ?=
BENCH_PYSPY := py-spy==0.4.3
BENCH_AGENTSVIEW_VERSION := 0.46.1
BENCH_AGENTSVIEW := agentsview==$(BENCH_AGENTSVIEW_VERSION)
export BENCH_ARGS

.PHONY: bench-deps
bench: bench-deps

bench-deps: install
	@command -v rg >/dev/null 2>&1 || $(call apt_install,ripgrep)
	@test -x $(BIN)/py-spy || $(BIN)/python -m pip install -q "$(BENCH_PYSPY)"
	@$(BIN)/python -m pip show agentsview 2>/dev/null | grep -qx "Version: $(BENCH_AGENTSVIEW_VERSION)" || $(BIN)/python -m pip install -q "$(BENCH_AGENTSVIEW)" || echo "agentsview not installed: bench.agentsview will say so"

# dsh-query against agentsview on generated Claude Code + Codex homes (bench/README.md):
#   make bench-agentsview BENCH_ARGS="--sessions 100"
.PHONY: bench-agentsview
bench-agentsview: bench-deps
	$(BIN)/python -m bench.agentsview $(BENCH_ARGS)
