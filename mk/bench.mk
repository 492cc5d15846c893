# Benchmarks (bench/README.md). `make bench` builds the corpus once into a cache and drives the
# real server over stdio; it is never part of `make test`. Pass arguments through BENCH_ARGS:
#   make bench BENCH_ARGS="--scale 0.1 --quick"
# Its tools: ripgrep (the search baseline) from apt, py-spy (bench.profile) into the venv, pinned.

BENCH_ARGS ?=
BENCH_PYSPY := py-spy==0.4.3
export BENCH_ARGS

.PHONY: bench-deps
bench: bench-deps

bench-deps: install
	@command -v rg >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep; }
	@test -x $(BIN)/py-spy || $(BIN)/python -m pip install -q "$(BENCH_PYSPY)"
