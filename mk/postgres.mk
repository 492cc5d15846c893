# PostgreSQL backend (postgres.md §7): the tests start their own PostgreSQL 15 from Debian's
# `postgresql` package (tests/pg_server.py); the system cluster is never used. Idempotent: apt-get
# runs only when pg_ctl is missing (the Makefile's apt_install). psycopg comes with the venv (pyproject + constraints.txt).

PG_BINDIR := /usr/lib/postgresql/15/bin

.PHONY: postgres-deps test-postgres

TEST_DEPS += postgres-deps

postgres-deps:
	@test -x $(PG_BINDIR)/pg_ctl || $(call apt_install,postgresql)

# Only the PostgreSQL tests.
test-postgres: install postgres-deps
	$(BIN)/python -m pytest -q -m postgres $(PYTEST_ARGS)
