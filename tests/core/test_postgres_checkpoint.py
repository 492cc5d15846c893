"""Checkpointing into a shared PostgreSQL store (postgres.md §3.8, §4 "failure during a
checkpoint"), against a real PostgreSQL 15: the checkpointer reconciles a log that another writer
(a second server, ``sync``) stored, waits for a live log that is behind, re-sends what a lost
commit dropped, suspends only a diverged session, and retries a database outage with back-off."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import pathlib
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from dsh_query_server import errors
from dsh_query_server.cli.sync import run as sync_run
from dsh_query_server.core.checkpoint import Checkpointer
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.postgres import PostgresBackend, open_postgres
from dsh_query_server.persistence.postgres.conninfo import parse_postgres_uri
from dsh_query_server.session.store import SessionStore
from tests.builders import U
from tests.lsp_client import ENV, call, config, init_params
from tests.pg_server import PgDatabase

HEADER = {"id": "s", "createdAt": 5, "cwd": "/team"}


class Server:
    """One server's live store and checkpointer on its own mount of the database."""

    def __init__(
        self, uri: str, mode: str = "manual", backend: PostgresBackend | None = None
    ) -> None:
        self.store = SessionStore()
        self.binding = PersistenceBinding()
        self.backend = backend or open_postgres(uri)
        self.checkpointer = Checkpointer(self.store, self.binding, mode=mode, interval_ms=10)
        self.binding.mount(self.backend)

    def live(self, session_id: str = "s") -> tuple[Header, list[Event]]:
        observed = self.store.events_from(session_id, 0)
        assert observed is not None
        return observed

    def close(self) -> None:
        self.checkpointer.stop(flush=False)
        self.backend.close()


@pytest.fixture
def servers(pg_database: PgDatabase) -> Iterator[Callable[..., Server]]:
    opened: list[Server] = []

    def open_server(
        mode: str = "manual", backend: PostgresBackend | None = None, **params: str
    ) -> Server:
        opened.append(Server(pg_database.socket_uri(**params), mode, backend))
        return opened[-1]

    yield open_server
    for server in opened:
        server.close()


def turns(first: int, count: int) -> list[dict[str, Any]]:
    return [{"type": "turn/start", "data": {"turn": n}} for n in range(first, first + count)]


def live_session(server: Server, count: int, session_id: str = "s") -> list[Event]:
    """A live session of ``count`` events: a seed (with its end-seed marker) and turns."""
    server.store.create({**HEADER, "id": session_id}, [U(0, "seed").to_value()])
    if count > 2:
        server.store.append(session_id, turns(1, count - 2))
    events = server.live(session_id)[1]
    assert len(events) == count
    return events


def write_copy(db: PgDatabase, header: Header, events: list[Event]) -> None:
    """Another writer (a second server, ``sync``) stores these exact events."""
    other = open_postgres(db.socket_uri())
    try:
        other.create(header)
        other.append(header.id, events)
    finally:
        other.close()


def stored(db: PgDatabase, session_id: str = "s") -> list[bytes]:
    backend = open_postgres(db.socket_uri())
    try:
        return [e.raw for e in backend.read_stored(session_id).events]
    finally:
        backend.close()


def writers(db: PgDatabase) -> dict[str, str]:
    with db.connect() as conn:
        found = conn.execute("SELECT id, writer FROM dsh_query.sessions").fetchall()
    return {str(a): str(b) for a, b in found}


def test_a_prefix_stored_by_another_writer_is_continued(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    events = live_session(a, 5)
    write_copy(pg_database, a.live()[0], events[:3])
    assert a.checkpointer.flush() == {"s": 4}
    assert stored(pg_database) == [e.raw for e in events]
    assert writers(pg_database)["s"].endswith(a.backend._instance)  # pyright: ignore[reportPrivateUsage]


def test_a_materialization_lost_to_another_writer_is_reconciled(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    prefix: list[Event] = []

    class Racing(PostgresBackend):
        def create(self, header: Header) -> None:
            super().create(header)
            write_copy(pg_database, header, prefix)  # another writer wins the race right here

    a = servers(backend=Racing(parse_postgres_uri(pg_database.socket_uri())))
    events = live_session(a, 5)
    prefix.extend(events[:2])
    # A's first append finds the stored log ("refusing to materialize"): it reconciles.
    assert a.checkpointer.flush() == {"s": 4}
    assert stored(pg_database) == [e.raw for e in events]


def test_a_live_log_behind_the_stored_one_waits_for_it_to_grow(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    a.store.create(HEADER, [U(0, "seed").to_value()])
    # The producer's next events carry their own times, so another writer (a replay, sync)
    # can already hold exactly what A's live log will say.
    ahead = [{"type": "turn/start", "time": 100 + n, "data": {"turn": n}} for n in (1, 2, 3)]
    scratch = SessionStore()
    scratch.create(HEADER, [U(0, "seed").to_value()])
    scratch.append("s", ahead)
    observed = scratch.events_from("s", 2)
    assert observed is not None
    write_copy(pg_database, a.live()[0], [*a.live()[1], *observed[1]])
    before = stored(pg_database)
    assert a.checkpointer.flush() == {}  # L is a stored prefix: wait
    a.store.append("s", ahead[:1])
    assert a.checkpointer.flush() == {}
    assert a.checkpointer.pending_events() == 3
    a.store.append("s", [*ahead[1:], *turns(9, 1)])
    assert a.checkpointer.flush() == {"s": 5}
    after = stored(pg_database)
    assert after[:5] == before and after == [e.raw for e in a.live()[1]]


def test_a_diverged_log_suspends_only_that_session(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    events = live_session(a, 4)
    live_session(a, 3, "t")
    changed = Event.from_value({**events[2].to_value(), "data": {"turn": 99}})
    write_copy(pg_database, a.live()[0], [*events[:2], changed])
    before = stored(pg_database)
    with pytest.raises(QueryError) as info:
        a.checkpointer.flush()
    message = 'session "s" diverged from its persisted copy at seq 2; checkpointing it is suspended'
    assert info.value.code == errors.STORE_PERSISTENCE_FAILED
    assert info.value.message == message
    assert stored(pg_database, "t") == [e.raw for e in a.live("t")[1]]  # the others continue
    a.store.append("t", turns(5, 1))
    a.store.append("s", turns(5, 1))
    with pytest.raises(QueryError) as again:
        a.checkpointer.flush()
    assert again.value.message == message
    assert a.checkpointer.flush("t") == {"t": 3}
    with pytest.raises(QueryError) as one:
        a.checkpointer.flush("s")
    assert one.value.message == message
    assert stored(pg_database) == before  # never written into


def test_an_incompatible_stored_header_suspends_the_session(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    events = live_session(a, 3)
    write_copy(pg_database, Header.from_value({**HEADER, "version": 0, "cwd": "/other"}), events)
    with pytest.raises(QueryError) as info:
        a.checkpointer.flush()
    assert info.value.message == (
        'session "s" diverged from its persisted copy at its header; checkpointing it is suspended'
    )


def test_lost_commits_are_sent_again(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    events = live_session(a, 5)
    assert a.checkpointer.flush() == {"s": 4}
    revisions = {a.backend.revision("s")}
    # A failover lost A's last two commits: the store holds an older, shorter copy.
    with pg_database.connect() as conn:
        conn.execute("DELETE FROM dsh_query.sessions WHERE id = 's'")
    write_copy(pg_database, a.live()[0], events[:3])
    revisions.add(a.backend.revision("s"))
    a.store.append("s", turns(7, 2))
    assert a.checkpointer.flush() == {"s": 6}
    assert stored(pg_database) == [e.raw for e in a.live()[1]]
    assert a.backend.revision("s") not in revisions


def test_an_in_doubt_or_conflicting_append_already_stored_is_not_repeated(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    a = servers()
    live_session(a, 3)
    assert a.checkpointer.flush() == {"s": 2}
    a.store.append("s", turns(3, 2))
    events = a.live()[1]
    # Someone else already stored exactly A's next batch (as an in-doubt commit would have).
    _append_as_other(pg_database, events[3:])
    assert a.checkpointer.flush() == {"s": 4}
    assert stored(pg_database) == [e.raw for e in events]


def _append_as_other(db: PgDatabase, batch: list[Event]) -> None:
    """Another server's append of this batch to the stored session "s"."""
    backend: PostgresBackend = open_postgres(db.socket_uri())
    try:
        backend._created["s"] = ""  # pyright: ignore[reportPrivateUsage]
        backend.append("s", batch)
    finally:
        backend.close()


def test_auto_retries_a_database_outage_with_back_off(
    servers: Callable[..., Server], pg_database: PgDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    a = servers("auto", poolTimeoutMs="300")  # each attempt against the down store is short
    a.checkpointer.start()
    live_session(a, 3)
    live_session(a, 2, "t")
    deadline = time.monotonic() + 5
    while a.checkpointer.pending_events() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert a.checkpointer.pending_events() == 0
    server = pg_database.server
    caplog.set_level(logging.WARNING, logger="dsh_query_server.core.checkpoint")
    server.pg_ctl("stop", "-w", "-m", "fast")
    try:
        a.store.append("s", turns(2, 3))
        time.sleep(4.0)  # retries after 0.5 s, 1 s, 2 s, ...
        assert a.checkpointer.pending_events() >= 3  # kept live, not lost
    finally:
        server.pg_ctl("start", "-w", "-l", str(server.base / "server.log"))
    failed = [r.created for r in caplog.records if 'checkpoint of session "s" failed' in r.message]
    gaps = [b - a_ for a_, b in zip(failed, failed[1:], strict=False)]
    assert 2 <= len(failed) <= 5, failed
    assert all(gap >= 0.5 * 2**i - 0.05 for i, gap in enumerate(gaps)), gaps
    assert not any('session "t"' in r.message for r in caplog.records)  # nothing to retry for t
    deadline = time.monotonic() + 20
    while a.checkpointer.pending_events() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stored(pg_database) == [e.raw for e in a.live()[1]]


def test_a_restored_older_copy_of_the_database_is_refilled(
    servers: Callable[..., Server], pg_database: PgDatabase
) -> None:
    # postgres.md §7 "lost commits": an older cold copy of the data directory comes back (as an
    # asynchronous failover would); the live session re-sends, and no revision recurs.
    a = servers()
    live_session(a, 4)
    assert a.checkpointer.flush() == {"s": 3}
    server = pg_database.server
    log_file = str(server.base / "server.log")
    backup = str(server.base / "backup")
    server.pg_ctl("stop", "-w", "-m", "fast")
    subprocess.run(server.command("cp", "-a", str(server.data), backup), check=True, timeout=120)
    server.pg_ctl("start", "-w", "-l", log_file)
    revisions = {a.backend.revision("s")}
    a.store.append("s", turns(5, 2))
    assert a.checkpointer.flush() == {"s": 5}
    revisions.add(a.backend.revision("s"))
    server.pg_ctl("stop", "-w", "-m", "immediate")
    subprocess.run(server.command("rm", "-rf", str(server.data)), check=True, timeout=120)
    subprocess.run(server.command("mv", backup, str(server.data)), check=True, timeout=120)
    server.pg_ctl("start", "-w", "-l", log_file)
    assert a.backend.stored_count("s") == 4
    a.store.append("s", turns(9, 1))
    assert a.checkpointer.flush() == {"s": 6}
    assert stored(pg_database) == [e.raw for e in a.live()[1]]
    assert a.backend.revision("s") not in revisions


# -- over the wire: a real server continues what ``sync`` stored first ------------------------


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server_a(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(
        init_params({"index": ":memory:", "checkpoint": {"mode": "manual"}})
    )
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_a_server_continues_what_sync_stored_first(
    server_a: LanguageClient,
    pg_database: PgDatabase,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    source = f"jsonl:{tmp_path / 'root'}"
    await call(server_a, "sessionPersistence/mount", {"uri": source})
    await call(
        server_a, "sessionStore/create", {"header": HEADER, "seed": [U(0, "seed").to_value()]}
    )
    await call(server_a, "sessionStore/append", {"sessionId": "s", "events": turns(1, 2)})
    assert await call(server_a, "sessionStore/checkpoint") == {"flushed": {"s": 3}}
    # sync copies the stored prefix into the shared store; then the server moves there.
    assert sync_run(["--to", pg_database.socket_uri(), source], io.StringIO(), io.StringIO()) == 0
    copied = stored(pg_database)
    assert len(copied) == 4
    await call(server_a, "sessionPersistence/mount", {"uri": pg_database.socket_uri()})
    await call(server_a, "sessionStore/append", {"sessionId": "s", "events": turns(3, 2)})
    assert await call(server_a, "sessionStore/checkpoint") == {"flushed": {"s": 5}}
    events = await call(server_a, "sessionQuery/listEvents", {"sessionId": "s"})
    after = stored(pg_database)
    assert after[:4] == copied and [e["seq"] for e in events] == list(range(6)) == [
        json.loads(raw)["seq"] for raw in after
    ]
    status = await call(server_a, "sessionPersistence/status")
    assert status["pendingEvents"] == 0
