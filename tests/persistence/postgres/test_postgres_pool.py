"""The connection pool of a ``postgres:`` mount (postgres.md §1.4) on a real PostgreSQL 15: at
most ``poolSize`` connections, a caller waits only while all are in use and gets one as soon as
it is returned, the ``no connection within`` message after ``poolTimeoutMs``, and connections
returned broken or inside a transaction never reach the next caller as they were."""

from __future__ import annotations

import threading
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.pq import TransactionStatus

from dsh_query_server.cancel import CancelToken
from dsh_query_server.persistence.postgres import (
    PostgresBackend,
    PostgresUnavailableError,
    open_postgres,
)
from dsh_query_server.persistence.postgres.pool import Conn, ConnectionPool, PoolTimeout
from tests.persistence.postgres.test_postgres import header, sql, turn_start, user
from tests.pg_server import PgDatabase

_SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def _pool(backend: PostgresBackend) -> ConnectionPool:
    return backend._pool._connections  # pyright: ignore[reportPrivateUsage]


def _processes(db: PgDatabase, application: str) -> int:
    rows = sql(db, "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", application)
    return int(rows[0][0])


def test_one_connection_serves_token_statements_reads_and_appends_in_turn(
    pg_database: PgDatabase,
) -> None:
    """With one connection in the pool, listings (the token statement) in a loop in two threads
    and appends and reads in this one all get it in turn, and every answer is exact."""
    backend = open_postgres(
        pg_database.socket_uri(poolSize="1", poolTimeoutMs="600000", listen="false")
    )
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        stop = threading.Event()
        errors: list[BaseException] = []

        def probes() -> None:
            try:
                while not stop.is_set():
                    got = backend.list_snapshots(CancelToken())
                    assert [s.header.id for s in got] == ["s"]
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=probes) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            for seq in range(1, 31):
                backend.append("s", [user(seq)])
                assert len(backend.read_stored("s", CancelToken()).events) == seq + 1
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        assert errors == []
        assert backend.stored_count("s") == 31
    finally:
        backend.close()


def test_a_caller_finding_every_connection_in_use_waits_then_gets_the_pool_message(
    pg_database: PgDatabase,
) -> None:
    backend = open_postgres(
        pg_database.socket_uri(poolSize="1", poolTimeoutMs="200", listen="false")
    )
    pool = _pool(backend)
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        expected = [e.raw for e in backend.inspect("s").events]
        held = pool.get()
        try:
            backend.inspect("s")
        except PostgresUnavailableError as exc:
            message = str(exc)
        else:
            raise AssertionError("a read got a connection the test holds")
        assert (
            message == f"postgres store {backend.uri} is unavailable: no connection within 200 ms"
        )
        pool.put(held)
        assert [e.raw for e in backend.inspect("s").events] == expected
        assert pool.get() is held  # returned, then reused: last in, first out
        pool.put(held)
    finally:
        backend.close()


def test_a_returned_connection_goes_to_the_caller_waiting_for_it(pg_database: PgDatabase) -> None:
    backend = open_postgres(
        pg_database.socket_uri(poolSize="1", poolTimeoutMs="600000", listen="false")
    )
    pool = _pool(backend)
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        held = pool.get()
        answers: list[object] = []
        waiter = threading.Thread(target=lambda: answers.append(backend.stored_count("s")))
        waiter.start()
        waiter.join(0.3)
        assert answers == []  # it cannot have a connection: the test holds the only one
        pool.put(held)
        waiter.join(60)
        assert answers == [1]
    finally:
        backend.close()


_STEPS = st.lists(st.sampled_from(["get", "put", "put broken", "put in transaction"]), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=_SLOW)
@given(steps=_STEPS)
def test_the_pool_never_exceeds_its_size_nor_hands_out_a_broken_connection(
    pg_database: PgDatabase, steps: list[str]
) -> None:
    """Random takes and returns (some of a connection the server terminated, some inside an
    open transaction) on a pool of two: a take fails with PoolTimeout exactly when both are
    held, every connection taken answers, and the server never sees more than two."""
    size, application = 2, f"pool-{uuid.uuid4().hex[:12]}"  # closed backends may linger a while
    backend = open_postgres(
        pg_database.socket_uri(
            poolSize=str(size), poolTimeoutMs="1", listen="false", applicationName=application
        )
    )
    pool = _pool(backend)
    held: list[Conn] = []
    try:
        for step in steps:
            if step == "get":
                try:
                    conn = pool.get()
                except PoolTimeout:
                    assert len(held) == size
                    continue
                assert len(held) < size
                assert conn.info.transaction_status == TransactionStatus.IDLE
                assert conn.execute("SELECT 1").fetchone() == (1,)
                held.append(conn)
            elif held:
                conn = held.pop()
                if step == "put broken":
                    pid = conn.info.backend_pid
                    # Returns once the server process is gone: its notice is on the socket.
                    sql(pg_database, "SELECT pg_terminate_backend(%s, 10000)", pid)
                elif step == "put in transaction":
                    conn.execute("BEGIN")
                    conn.execute("SELECT 1")
                pool.put(conn)
            assert _processes(pg_database, application) <= size
    finally:
        for conn in held:
            pool.put(conn)
        backend.close()
