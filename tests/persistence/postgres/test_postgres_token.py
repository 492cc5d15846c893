"""The listing's token statement run through libpq (postgres.md §3.2, §4) against the psycopg
statement it replaced, on a real PostgreSQL 15: equal tokens whatever happened in between
(writes, deletes, deallocated statements, terminated connections), the retry once on a
connection that breaks under it, and its statement timeout."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import Connection
from psycopg import sql as pgsql

from dsh_query_server.cancel import CancelToken
from dsh_query_server.persistence.postgres import (
    PostgresBackend,
    PostgresUnavailableError,
    open_postgres,
)
from dsh_query_server.persistence.postgres.listing import (
    _TOKEN_NAME,  # pyright: ignore[reportPrivateUsage]
)
from tests.persistence.postgres.test_postgres import (
    assert_lists_as_fresh,
    header,
    sql,
    store_step,
    turn_start,
)
from tests.pg_server import PgDatabase, hold_table_lock

_SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]


def _tokens(backend: PostgresBackend) -> tuple[object, object]:
    """(the libpq token statement's answer, the psycopg statement's), read back to back."""
    listings, pool = backend._listings, backend._pool  # pyright: ignore[reportPrivateUsage]
    probed = listings.probed_token(CancelToken())
    found = pool.statement(listings._token, CancelToken())  # pyright: ignore[reportPrivateUsage]
    return probed, None if found is None else (found[0], found[1])


def _terminate(db: PgDatabase, application: str) -> None:
    sql(
        db,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        application,
    )


def _deallocate_token(conn: Connection[tuple[object, ...]]) -> None:
    """What psycopg's own DEALLOCATE ALL (after a ROLLBACK) does to the token statement on one
    pooled connection. Only that statement: a DEALLOCATE ALL behind psycopg's back would also
    drop the statements psycopg prepared itself (at the 5th run) and still believes it has."""
    name = _TOKEN_NAME.decode()
    found = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_prepared_statements WHERE name = %s", (name,), prepare=False
    ).fetchone()
    if found is not None:
        conn.execute(pgsql.SQL("DEALLOCATE {}").format(pgsql.Identifier(name)), prepare=False)


_STEPS = st.sampled_from(["create", "append", "delete", "deallocate", "terminate", "none"])


@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW)
@given(steps=st.lists(st.tuples(_STEPS, st.integers(0, 4)), min_size=1, max_size=10))
def test_the_libpq_token_equals_the_psycopg_statement(
    pg_database: PgDatabase, steps: list[tuple[str, int]]
) -> None:
    """After any writes, deletes, deallocations of the token statement and
    terminated connections, the token read through libpq equals the one psycopg reads, and the
    listing answered after it equals a fresh backend's full read."""
    application = f"tok-{uuid.uuid4().hex[:12]}"
    prefix = f"t-{uuid.uuid4()}-"
    reader = open_postgres(pg_database.socket_uri(applicationName=application, listen="false"))
    writer = open_postgres(pg_database.socket_uri(listen="false"))
    counts: dict[str, int] = {}
    try:
        writer.create(header(f"{prefix}seed"))
        writer.append(f"{prefix}seed", [turn_start(0)])  # the first append initializes the store
        reader.list_snapshots(CancelToken())  # the memo is kept from here on
        for action, index in steps:
            store_step(pg_database, writer, action, f"{prefix}{index}", counts)
            if action == "deallocate":
                reader._pool.statement(_deallocate_token)  # pyright: ignore[reportPrivateUsage]
            elif action == "terminate":
                _terminate(pg_database, application)
                time.sleep(0.05)
            probed, expected = _tokens(reader)
            assert probed == expected and probed is not None
            assert_lists_as_fresh(pg_database, reader)
    finally:
        reader.close()
        writer.close()


def test_a_store_without_its_row_has_no_token_either_way(pg_database: PgDatabase) -> None:
    backend = open_postgres(pg_database.socket_uri(listen="false"))
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        assert [s.header.id for s in backend.list_snapshots(CancelToken())] == ["s"]
        sql(pg_database, "DELETE FROM dsh_query.store")
        assert _tokens(backend) == (None, None)
        assert backend.list_snapshots(CancelToken()) == ()  # as the transaction reads it
    finally:
        backend.close()


def _waiting_pid(db: PgDatabase, application: str, killed: set[int], timeout: float = 10) -> int:
    """The pid of the mount's backend waiting on a lock, other than the ``killed`` ones."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = sql(
            db,
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
            " AND wait_event_type = 'Lock'",
            application,
        )
        pids = {int(row[0]) for row in rows} - killed
        if pids:
            return pids.pop()
        time.sleep(0.02)
    raise AssertionError("no backend of the mount waits on the lock")


@pytest.mark.parametrize("kills", [1, 2])
def test_the_token_statement_is_retried_once_on_a_broken_connection(
    pg_database: PgDatabase, kills: int
) -> None:
    """Its connection terminated while the statement waits: it runs again on a fresh one and
    answers; terminated again, the read fails with the store unavailable (retried once)."""
    application = f"retry-{uuid.uuid4().hex[:12]}"
    backend = open_postgres(pg_database.socket_uri(applicationName=application, listen="false"))
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        expected = [(s.header.raw, s.revision) for s in backend.list_snapshots(CancelToken())]
        release = threading.Event()
        holder = hold_table_lock(pg_database, "store", release)
        outcome: list[object] = []

        def listing() -> None:
            try:
                got = backend.list_snapshots(CancelToken())
                outcome.append([(s.header.raw, s.revision) for s in got])
            except PostgresUnavailableError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=listing)
        try:
            thread.start()
            killed: set[int] = set()
            for _ in range(kills):
                pid = _waiting_pid(pg_database, application, killed)
                sql(pg_database, "SELECT pg_terminate_backend(%s)", pid)
                killed.add(pid)
            if kills == 1:
                _waiting_pid(pg_database, application, killed)  # the retry waits in turn
        finally:
            release.set()
            holder.join()
            thread.join(30)
        if kills == 1:
            assert outcome == [expected]
        else:
            assert len(outcome) == 1 and isinstance(outcome[0], PostgresUnavailableError)
            assert "is unavailable" in str(outcome[0])
        assert [(s.header.raw, s.revision) for s in backend.list_snapshots()] == expected
    finally:
        backend.close()


def test_the_token_statement_honours_the_statement_timeout(pg_database: PgDatabase) -> None:
    backend = open_postgres(pg_database.socket_uri(statementTimeoutMs="200", listen="false"))
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        backend.list_snapshots()
        release = threading.Event()
        holder = hold_table_lock(pg_database, "store", release)
        try:
            started = time.monotonic()
            with pytest.raises(PostgresUnavailableError) as info:
                backend.list_snapshots(CancelToken())
            assert str(info.value) == (
                "postgres statement timed out after 200 ms (statementTimeoutMs)"
            )
            assert time.monotonic() - started < 5
        finally:
            release.set()
            holder.join()
        assert [s.header.id for s in backend.list_snapshots(CancelToken())] == ["s"]
    finally:
        backend.close()


def _failure(call: Callable[[], object]) -> str:
    try:
        call()
    except PostgresUnavailableError as exc:
        return str(exc)
    raise AssertionError("no failure")


@pytest.mark.parametrize("change", ["drop schema", "revoke"])
def test_the_token_statement_fails_as_the_psycopg_statement_did(
    pg_database: PgDatabase, change: str
) -> None:
    """The store changed under a mount that keeps its memo: the libpq token statement fails
    with the very message psycopg's statement gave (an error about the statement's text is
    reported by psycopg itself, as libpq words a prepared statement's position apart)."""
    role = f"r_{uuid.uuid4().hex[:8]}"
    sql(pg_database, f"CREATE ROLE {role} LOGIN")
    owner = open_postgres(pg_database.socket_uri(listen="false"))
    owner.create(header("s"))
    owner.append("s", [turn_start(0)])
    owner.close()
    sql(pg_database, f"GRANT USAGE ON SCHEMA dsh_query TO {role}")
    sql(pg_database, f"GRANT SELECT ON ALL TABLES IN SCHEMA dsh_query TO {role}")
    backend = open_postgres(
        pg_database.socket_uri(user=role, poolSize="1", readOnly="true", listen="false")
    )
    try:
        for _ in range(2):  # the second is answered by the token statement, now prepared
            assert [s.header.id for s in backend.list_snapshots(CancelToken())] == ["s"]
        if change == "drop schema":
            sql(pg_database, "DROP SCHEMA dsh_query CASCADE")
        else:
            sql(pg_database, f"REVOKE SELECT ON dsh_query.store FROM {role}")
        listings, pool = backend._listings, backend._pool  # pyright: ignore[reportPrivateUsage]
        probed = _failure(lambda: backend.list_snapshots(CancelToken()))
        old = _failure(
            lambda: pool.statement(listings._token, CancelToken())  # pyright: ignore[reportPrivateUsage]
        )
        assert probed == old
        assert ("does not exist" if change == "drop schema" else "lacks a privilege") in probed
    finally:
        backend.close()
