"""Change notification of the ``postgres:`` backend (postgres.md §5, §7 "NOTIFY → didChange"),
against a real PostgreSQL 15: two real servers over stdio on one database, and the listener of one
backend watched directly (own writes and other stores skipped, lifecycle, a standby polled)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from dsh_query_server.model.event import make_event
from dsh_query_server.persistence.postgres import PostgresBackend, open_postgres
from dsh_query_server.persistence.postgres.listener import LISTENING, OFF, POLLING
from tests.builders import U, header
from tests.lsp_client import ENV, call, config, init_params
from tests.pg_server import BINDIR, PgDatabase, PgServer, _free_port


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server_a(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server_b(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def changes(client: LanguageClient) -> list[dict[str, Any]]:
    return client.did_change  # type: ignore[attr-defined,no-any-return]


async def until(predicate: Callable[[], bool], seconds: float) -> float:
    """Wait until ``predicate`` holds; the time it took, or a failure after ``seconds``."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"not within {seconds} s")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def notifications(client: LanguageClient) -> str:
    status = await call(client, "sessionPersistence/status")
    return str(status["members"][0]["postgres"]["notifications"])


async def listening(client: LanguageClient) -> None:
    for _ in range(250):
        if await notifications(client) == LISTENING:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the listener never listened")


async def write(client: LanguageClient, session_id: str, created: int) -> None:
    header = {"version": 0, "id": session_id, "createdAt": created, "cwd": "/team"}
    await call(client, "sessionStore/create", {"header": header, "seed": [U(0, "hi").to_value()]})
    await call(client, "sessionStore/checkpoint", {"sessionId": session_id})


def ids_seen(client: LanguageClient) -> set[str]:
    return {sid for params in changes(client) for sid in params.get("sessionIds", [])}


def listener_pids(db: PgDatabase, application: str) -> list[int]:
    with db.connect() as conn:
        found = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = %s"
            " AND query LIKE 'LISTEN%%'",
            (db.name, application),
        ).fetchall()
    return [int(str(row[0])) for row in found]


async def test_b_hears_a_checkpoint_a_killed_listener_and_a_delete(
    server_a: LanguageClient, server_b: LanguageClient, pg_database: PgDatabase
) -> None:
    uri_a = pg_database.socket_uri(applicationName="dsh-a")
    uri_b = pg_database.socket_uri(applicationName="dsh-b")
    await call(server_a, "sessionPersistence/mount", {"uri": uri_a})
    await write(server_a, "first", 1)  # the store exists before B listens
    await call(server_b, "sessionPersistence/mount", {"uri": uri_b})
    await listening(server_b)
    changes(server_b).clear()

    # A's checkpoint reaches B's client within 2 s, as the id.
    await write(server_a, "from-a", 2)
    await until(lambda: "from-a" in ids_seen(server_b), 2.0)
    assert not any(p.get("corpus") for p in changes(server_b)), changes(server_b)
    listed = await call(server_b, "sessionQuery/listSessions")
    assert sorted(s["header"]["id"] for s in listed) == ["first", "from-a"]

    # The listener's connection killed: it reconnects and tells the corpus changed, once.
    [pid] = listener_pids(pg_database, "dsh-b")
    changes(server_b).clear()
    with pg_database.connect() as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    await until(lambda: any(p.get("corpus") for p in changes(server_b)), 8.0)
    await listening(server_b)
    assert listener_pids(pg_database, "dsh-b") not in ([], [pid])
    await asyncio.sleep(0.5)
    assert [p for p in changes(server_b) if p.get("corpus")] == [{"corpus": True}]

    # And it still hears A afterwards.
    changes(server_b).clear()
    await write(server_a, "after", 3)
    await until(lambda: "after" in ids_seen(server_b), 2.0)

    # An SQL DELETE of a session refreshes B.
    changes(server_b).clear()
    with pg_database.connect() as conn:
        conn.execute("DELETE FROM dsh_query.sessions WHERE id = 'from-a'")
    await until(lambda: any(p.get("corpus") for p in changes(server_b)), 2.0)
    listed = await call(server_b, "sessionQuery/listSessions")
    assert sorted(s["header"]["id"] for s in listed) == ["after", "first"]


async def test_the_listener_lives_with_its_binding(
    server_a: LanguageClient, pg_database: PgDatabase
) -> None:
    uri = pg_database.socket_uri(applicationName="dsh-life")
    writer = open_postgres(pg_database.socket_uri())
    store(writer, "s")  # the store exists, so LISTEN is each listener's last statement
    writer.close()
    await call(server_a, "sessionPersistence/mount", {"uri": uri})
    await listening(server_a)
    [first] = listener_pids(pg_database, "dsh-life")
    # A remount replaces the listener: the old connection goes, one new one listens.
    await call(server_a, "sessionPersistence/mount", {"uri": uri})
    await listening(server_a)
    await until(lambda: len(listener_pids(pg_database, "dsh-life")) == 1, 3.0)
    assert listener_pids(pg_database, "dsh-life") != [first]
    # listen=false: no listener at all.
    await call(
        server_a,
        "sessionPersistence/mount",
        {"uri": pg_database.socket_uri(applicationName="dsh-life", listen="false")},
    )
    assert await notifications(server_a) == OFF
    await until(lambda: listener_pids(pg_database, "dsh-life") == [], 3.0)
    await call(server_a, "sessionPersistence/mount", {"uri": uri})
    await listening(server_a)
    # Unmounting stops it too.
    await call(server_a, "sessionPersistence/unmount")
    await until(lambda: listener_pids(pg_database, "dsh-life") == [], 3.0)


# -- one backend's listener, watched directly -------------------------------------------------


class Heard:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        self.event = threading.Event()

    def __call__(self, ids: list[str], corpus: bool) -> None:
        self.calls.append((ids, corpus))
        self.event.set()

    def wait_for(self, predicate: Callable[[], bool], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not predicate():
            assert time.monotonic() < deadline, self.calls
            time.sleep(0.02)


def store(backend: PostgresBackend, session_id: str) -> None:
    backend.create(header(session_id))
    backend.append(session_id, [make_event("turn/start", 0, 0, {"turn": 1})])


def wait_state(backend: PostgresBackend, state: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while backend.listener.state != state:
        assert time.monotonic() < deadline, backend.listener.state
        time.sleep(0.02)


def test_own_writes_and_other_stores_are_skipped(pg_database: PgDatabase) -> None:
    mine = open_postgres(pg_database.socket_uri())
    other = open_postgres(pg_database.socket_uri())
    foreign = open_postgres(pg_database.socket_uri(schema="elsewhere"))
    heard = Heard()
    try:
        store(mine, "init")  # the listener reads the store's identity when it connects
        mine.listener.start(heard)
        wait_state(mine, LISTENING)
        store(mine, "own")
        store(foreign, "foreign")  # same channel, another store
        store(other, "theirs")
        heard.wait_for(lambda: heard.calls != [], 2.0)
        time.sleep(1.2)
        assert heard.calls == [(["theirs"], False)]
        listener = mine.listener.current
        mine.listener.stop(wait=5)
        assert mine.listener.state == OFF
        assert listener is not None and not listener.alive  # no thread left behind
    finally:
        for backend in (mine, other, foreign):
            backend.close()


def test_a_listener_started_before_the_store_exists(pg_database: PgDatabase) -> None:
    mine = open_postgres(pg_database.socket_uri())
    other = open_postgres(pg_database.socket_uri())
    heard = Heard()
    try:
        mine.listener.start(heard)
        wait_state(mine, LISTENING)
        store(other, "new")
        heard.wait_for(lambda: heard.calls == [(["new"], False)], 2.0)
    finally:
        mine.close()
        other.close()
    assert mine.listener.state == OFF


def test_a_database_restart_reconnects_with_back_off(pg_database: PgDatabase) -> None:
    mine = open_postgres(pg_database.socket_uri())
    heard = Heard()
    try:
        store(mine, "s")
        mine.listener.start(heard)
        wait_state(mine, LISTENING)
        pg_database.server.pg_ctl("stop", "-w", "-m", "fast")
        try:
            wait_state(mine, "reconnecting")
            time.sleep(3.5)  # retries after 1 s, 2 s, then waits 4 s
        finally:
            pg_database.server.pg_ctl("start", "-w", "-l", str(pg_database.server.base / "log"))
        assert heard.calls == []
        heard.wait_for(lambda: heard.calls == [([], True)], 8.0)
        assert mine.listener.state == LISTENING
    finally:
        mine.close()


# -- a hot standby refuses LISTEN: the listener polls ------------------------------------------


@pytest.fixture
def standby(pg_server: PgServer) -> Iterator[PgServer]:
    """A streaming replica of the test server, in its own 0700 directory."""
    base = pg_server.base / f"standby-{_free_port()}"
    base.mkdir(mode=0o700)
    data, sock = base / "data", base / "sock"
    sock.mkdir(mode=0o700)
    if pg_server.run_as is not None:
        shutil.chown(base, pg_server.run_as, pg_server.run_as)
        shutil.chown(sock, pg_server.run_as, pg_server.run_as)
    subprocess.run(
        pg_server.command(
            str(BINDIR / "pg_basebackup"),
            "-D",
            str(data),
            "-R",
            "-c",
            "fast",
            "-X",
            "stream",
            "-h",
            str(pg_server.socket_dir),
            "-p",
            str(pg_server.port),
            "-U",
            "postgres",
        ),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    server = PgServer(base, data, sock, _free_port(), pg_server.run_as)
    with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(
            f"port = {server.port}\nunix_socket_directories = '{sock}'\n"
            "listen_addresses = ''\nhot_standby = on\n"
        )
    server.pg_ctl("start", "-w", "-l", str(base / "server.log"))
    try:
        yield server
    finally:
        server.pg_ctl("stop", "-w", "-m", "immediate", check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_a_standby_is_polled(pg_database: PgDatabase, standby: PgServer) -> None:
    primary = open_postgres(pg_database.socket_uri())
    replica_uri = PgDatabase(standby, pg_database.name).socket_uri(readOnly="true")
    replica = open_postgres(replica_uri)
    heard = Heard()
    try:
        store(primary, "before")
        replica.listener.start(heard)
        current = replica.listener.current
        assert current is not None
        current.poll_seconds = 0.3  # §5 says every 5 s; the test need not wait that long
        wait_state(replica, POLLING)
        time.sleep(0.5)  # the first poll is the baseline
        store(primary, "polled")
        heard.wait_for(lambda: (["polled"], False) in heard.calls, 5.0)
        with pg_database.connect() as conn:
            conn.execute("DELETE FROM dsh_query.sessions WHERE id = 'before'")
        heard.wait_for(lambda: ([], True) in heard.calls, 5.0)
    finally:
        primary.close()
        replica.close()
