"""An outage of the team store (postgres.md §1.4, §4; issue 25 finding 5), against the real
PostgreSQL 15 stopped and started again: while it is down a read fails with the connection
attempt's own reason, not after a wait for a pooled connection, and the first read after it
accepts connections again answers exactly, with no remount.

The mounts set ``poolTimeoutMs`` to ten minutes, so a read that waited for a pooled connection
could not come back within the generous bounds used here; the failure's message says which
mechanism ended the read."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from dsh_query_server import errors
from dsh_query_server.model.event import make_event
from dsh_query_server.persistence.postgres import (
    PostgresUnavailableError,
    open_postgres,
)
from dsh_query_server.persistence.postgres.conninfo import parse_postgres_uri
from tests.builders import header
from tests.lsp_client import ENV, call, config, init_params
from tests.pg_server import PgDatabase, PgServer

POOL_WAIT_MS = "600000"  # the longest poolTimeoutMs: no bound below can be met by waiting it out
BOUND_SECONDS = 60.0  # generous under any load, ten times shorter than that wait


@contextmanager
def outage(server: PgServer) -> Iterator[None]:
    """The shared test server stopped for the block and started again however it ends."""
    server.halt()
    try:
        yield
    finally:
        server.start()


def bounded(read: Callable[[], object]) -> BaseException | object:
    """What ``read`` returned or raised, run in a thread joined for BOUND_SECONDS."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(read())
        except BaseException as exc:  # noqa: BLE001 - the caller asserts on it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_SECONDS)
    assert outcome, "the read was still waiting: it waited for a pooled connection"
    return outcome[0]


def _stored(db: PgDatabase) -> str:
    uri = db.socket_uri(listen="false", poolTimeoutMs=POOL_WAIT_MS)
    backend = open_postgres(uri)
    try:
        backend.create(header("s"))
        backend.append("s", [make_event("x/note", seq, seq, {"n": seq}) for seq in range(3)])
    finally:
        backend.close()
    return uri


def _not_connected(message: str, db: PgDatabase) -> None:
    """The failure is libpq's for the connection attempt (it names the server's socket, which
    is gone), not the pool's 'no connection within' of a caller that waited."""
    assert f"/.s.PGSQL.{db.server.port}" in message, message
    assert "no connection within" not in message


def test_reads_fail_at_once_while_the_server_is_down_and_the_next_read_recovers(
    pg_database: PgDatabase,
) -> None:
    backend = open_postgres(_stored(pg_database))
    try:
        expected = [e.raw for e in backend.inspect("s").events]
        listed = [s.revision for s in backend.list_snapshots()]
        with outage(pg_database.server):
            reads: list[Callable[[], object]] = [
                lambda: backend.inspect("s"),
                backend.list_snapshots,  # the listing's token statement (§3.2)
                lambda: backend.inspect_window("s", 0, 1),
                lambda: backend.stored_count("s"),
                lambda: backend.append("s", [make_event("x/note", 3, 3, {"n": 3})]),
            ]
            for read in reads * 2:  # the pooled connection is gone after the first
                failure = bounded(read)
                assert isinstance(failure, PostgresUnavailableError), failure
                assert str(failure).startswith(f"postgres store {backend.uri} is unavailable: ")
                _not_connected(str(failure), pg_database)
            assert backend.status()["reachable"] is False
        # The very first read after the server accepts connections again answers exactly.
        assert [e.raw for e in backend.inspect("s").events] == expected
        assert [s.revision for s in backend.list_snapshots()] == listed
        assert backend.status()["reachable"] is True
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("statement_ms", "connect_timeout"),
    [("30000", "10"), ("0", "10"), ("4500", "5"), ("200", "2"), ("10000", "10")],
)
def test_connecting_takes_no_longer_than_a_statement_may(
    statement_ms: str, connect_timeout: str
) -> None:
    mount = parse_postgres_uri(f"postgres://h/db?statementTimeoutMs={statement_ms}")
    assert mount.libpq["connect_timeout"] == connect_timeout
    own = parse_postgres_uri(f"postgres://h/db?statementTimeoutMs={statement_ms}&connect_timeout=7")
    assert own.libpq["connect_timeout"] == "7"


# -- over the wire --------------------------------------------------------------------------------


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_over_the_wire_a_read_fails_with_persistence_failed_and_recovers(
    server: LanguageClient, pg_database: PgDatabase
) -> None:
    uri = _stored(pg_database)
    mounted = await call(server, "sessionPersistence/mount", {"uri": uri})
    params = {"sessionId": "s", "seq": 1}
    read = await call(server, "sessionQuery/readEvent", params)
    assert read["target"]["seq"] == 1
    pg_database.server.halt()
    try:
        for method, args in (("sessionQuery/readEvent", params), ("sessionQuery/listSessions", {})):
            with pytest.raises(JsonRpcException) as info:
                await asyncio.wait_for(call(server, method, args), BOUND_SECONDS)
            assert (info.value.data or {}).get("code") == errors.PERSISTENCE_FAILED, info.value
            _not_connected(info.value.message, pg_database)
        status = await call(server, "sessionPersistence/status")
        assert status["members"][0]["postgres"]["reachable"] is False, status
    finally:
        pg_database.server.start()
    assert await call(server, "sessionQuery/readEvent", params) == read
    listed = await call(server, "sessionQuery/listSessions")
    assert [s["header"]["id"] for s in listed] == ["s"]
    status = await call(server, "sessionPersistence/status")
    member = status["members"][0]
    assert member["postgres"]["reachable"] is True and member["uri"] == mounted["uri"]
