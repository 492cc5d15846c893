"""Faults of the ``postgres:`` backend against a real PostgreSQL 15 (postgres.md §2.4, §4, §7):
racing writers, foreign schemas refused untouched, a read-only role, statement timeouts,
cancellation, a database that is down, and passwords that never leave the backend."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from dsh_query_server import errors
from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.contract.errors import SessionPersistenceReadOnlyError
from dsh_query_server.persistence.mount.uri import open_backend
from dsh_query_server.persistence.postgres import (
    PostgresBackend,
    PostgresUnavailableError,
    SessionAppendConflictError,
    open_postgres,
)
from tests.builders import header
from tests.pg_server import PgDatabase, hold_table_lock


def note(seq: int, writer: str) -> Event:
    return make_event("x/note", seq, seq, {"writer": writer})


def sql(db: PgDatabase, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        cursor = conn.execute(statement, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


# ---------------------------------------------------------------------------------------------
# two writers, one session (§3.6)


def test_two_writers_racing_on_one_session(pg_database: PgDatabase) -> None:
    writers = [open_postgres(pg_database.socket_uri()) for _ in range(2)]
    writers[0].create(header("s"))
    writers[0].append("s", [note(0, "setup")])
    rounds = 40
    barrier = threading.Barrier(2)
    outcomes: list[list[str]] = [[], []]

    def run(index: int) -> None:
        backend, name = writers[index], f"w{index}"
        for _ in range(rounds):
            barrier.wait()
            start = backend.stored_count("s")
            assert start is not None
            barrier.wait()  # both read the same count, then both append from it
            batch = [note(start + k, name) for k in range(1 + index)]
            try:
                backend.append("s", batch)
                outcomes[index].append("ok")
            except SessionAppendConflictError as exc:
                assert str(exc) == (
                    f'session "s" append starts at seq {start}, stored next seq'
                    f" is {start + 2 - index}"
                )
                outcomes[index].append("conflict")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        for round_ in range(rounds):  # each round: exactly one winner
            assert {outcomes[0][round_], outcomes[1][round_]} == {"ok", "conflict"}
        events = writers[1].read_stored("s").events
        assert [event.seq for event in events] == list(range(len(events)))
        wins = [outcomes[i].count("ok") for i in range(2)]
        assert len(events) == 1 + wins[0] + 2 * wins[1]  # nothing lost, nothing duplicated
        assert sql(pg_database, "SELECT change_count FROM dsh_query.store") == [(1 + rounds,)]
    finally:
        for backend in writers:
            backend.close()


def test_a_materialization_race_has_one_winner(pg_database: PgDatabase) -> None:
    writers = [open_postgres(pg_database.socket_uri()) for _ in range(2)]
    barrier = threading.Barrier(2)
    results: list[str] = ["", ""]

    def run(index: int) -> None:
        writers[index].create(header("m"))
        barrier.wait()
        try:
            writers[index].append("m", [note(0, f"w{index}"), note(1, f"w{index}")])
            results[index] = "ok"
        except SessionAppendConflictError as exc:
            results[index] = str(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        # The loser either met the winner's row at (2) or lost the insert at (3).
        assert sorted(results)[0] == "ok" and sorted(results)[1] in (
            'refusing to materialize "m": a log already exists in the database (load/resume it'
            " instead)",
            'session "m" append starts at seq 0, stored next seq is 2',
        )
        winner = f"w{results.index('ok')}"
        events = writers[0].read_stored("m").events
        assert [e.data() for e in events] == [{"writer": winner}] * 2
    finally:
        for backend in writers:
            backend.close()


# ---------------------------------------------------------------------------------------------
# foreign or newer schemas (§2.4): refused with the exact message, the catalog untouched

_CATALOG = (
    "SELECT c.relname, a.attname, a.attnum, a.attisdropped, t.tgname, t.tgenabled"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " LEFT JOIN pg_attribute a ON a.attrelid = c.oid LEFT JOIN pg_trigger t ON t.tgrelid = c.oid"
    " WHERE n.nspname = 'dsh_query' ORDER BY 1, 2, 3, 4, 5"
)


def _initialized(db: PgDatabase) -> None:
    backend = open_postgres(db.socket_uri())
    try:
        backend.create(header("s"))
        backend.append("s", [note(0, "w")])
    finally:
        backend.close()


_REFUSALS: list[tuple[str, Callable[[PgDatabase], object], str]] = [
    (
        "unrelated table",
        lambda db: sql(db, "CREATE SCHEMA dsh_query; CREATE TABLE dsh_query.t (x int)"),
        'postgres schema "dsh_query" is not a dsh-query store: it holds other objects',
    ),
    (
        "another application",
        lambda db: (
            _initialized(db),
            sql(db, "UPDATE dsh_query.store SET application = 'other-app'"),
        ),
        'postgres schema "dsh_query" is not a dsh-query store (application "other-app")',
    ),
    (
        "version 2",
        lambda db: (_initialized(db), sql(db, "UPDATE dsh_query.store SET schema_version = 2")),
        'postgres schema "dsh_query" holds a dsh-query store of schema version 2, written by a'
        " newer dsh-query-server; this build reads version 1 — upgrade to open it",
    ),
    (
        "a dropped column",
        lambda db: (_initialized(db), sql(db, "ALTER TABLE dsh_query.sessions DROP COLUMN writer")),
        'postgres schema "dsh_query" does not contain the required schema objects: column 9 of'
        " dsh_query.sessions is not writer text NOT NULL",
    ),
    (
        "a disabled trigger",
        lambda db: (
            _initialized(db),
            sql(db, "ALTER TABLE dsh_query.events DISABLE TRIGGER events_append_only"),
        ),
        'postgres schema "dsh_query" does not contain the required schema objects: trigger'
        " events_append_only on dsh_query.events is disabled",
    ),
]


@pytest.mark.parametrize(("case", "prepare", "message"), _REFUSALS, ids=[r[0] for r in _REFUSALS])
def test_foreign_or_newer_schemas_are_refused_untouched(
    pg_database: PgDatabase, case: str, prepare: Callable[[PgDatabase], object], message: str
) -> None:
    prepare(pg_database)
    before = (
        sql(pg_database, _CATALOG),
        sql(pg_database, "SELECT * FROM pg_namespace WHERE nspname = 'dsh_query'"),
    )
    store = sql(pg_database, "SELECT to_regclass('dsh_query.store') IS NOT NULL")[0][0]
    rows_before = sql(pg_database, "SELECT * FROM dsh_query.store") if store else []
    for read_only in ("false", "true"):
        backend = open_postgres(pg_database.socket_uri(readOnly=read_only))
        try:
            reads: list[Callable[[PostgresBackend], object]] = [
                lambda b: b.list(),
                lambda b: b.inspect("s"),
            ]
            if read_only == "false":
                reads.append(lambda b: b.create(header("new")))
                reads.append(lambda b: b.append("new", [note(0, "w")]))
            for read in reads:
                with pytest.raises(PostgresUnavailableError) as info:
                    read(backend)
                assert str(info.value) == message, case
        finally:
            backend.close()
    after = (
        sql(pg_database, _CATALOG),
        sql(pg_database, "SELECT * FROM pg_namespace WHERE nspname = 'dsh_query'"),
    )
    assert after == before
    assert (sql(pg_database, "SELECT * FROM dsh_query.store") if store else []) == rows_before


def test_a_sql_ascii_database_is_refused(pg_server: Any) -> None:
    name = f"ascii_{secrets.token_hex(4)}"
    with pg_server.admin() as conn:
        conn.execute(
            f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'SQL_ASCII'"
            " LC_COLLATE 'C' LC_CTYPE 'C'"
        )
    backend = open_postgres(PgDatabase(pg_server, name).socket_uri())
    try:
        with pytest.raises(PostgresUnavailableError) as info:
            backend.list()
        assert str(info.value) == (
            f'postgres database "{name}" has server_encoding SQL_ASCII; dsh-query needs UTF8'
        )
    finally:
        backend.close()
        with pg_server.admin() as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


# ---------------------------------------------------------------------------------------------
# roles, timeouts, cancellation (§2.4, §4)


def _role(db: PgDatabase, name: str, password: str, *grants: str) -> None:
    sql(db, f"DROP ROLE IF EXISTS {name}")
    sql(db, f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
    for grant in grants:
        sql(db, grant.replace("ROLE", name))


def test_a_read_only_role(pg_database: PgDatabase) -> None:
    _initialized(pg_database)
    password = secrets.token_urlsafe(12)
    _role(
        pg_database,
        "reader_role",
        password,
        "GRANT USAGE ON SCHEMA dsh_query TO ROLE",
        "GRANT SELECT ON ALL TABLES IN SCHEMA dsh_query TO ROLE",
        "GRANT EXECUTE ON FUNCTION pg_control_system() TO ROLE",
    )
    reader = open_postgres(pg_database.tcp_uri("reader_role", password, readOnly="true"))
    writer = open_postgres(pg_database.tcp_uri("reader_role", password))
    try:
        assert [h.id for h in reader.list()] == ["s"]
        assert [e.data() for e in reader.inspect("s").events] == [{"writer": "w"}]
        with pytest.raises(SessionPersistenceReadOnlyError):
            reader.append("s", [note(1, "r")])
        with pytest.raises(PostgresUnavailableError) as info:
            writer.append("s", [note(1, "r")])
        assert str(info.value).startswith('postgres role "reader_role" lacks a privilege:')
        assert password not in str(info.value)
        assert reader.stored_count("s") == 1
        # The revision is qualified by the cluster even for a role that reads pg_control_system.
        assert not reader.list_snapshots()[0].revision.startswith("postgres:0:")
    finally:
        reader.close()
        writer.close()


def test_statement_timeout_is_honoured(pg_database: PgDatabase) -> None:
    _initialized(pg_database)
    backend = open_postgres(pg_database.socket_uri(statementTimeoutMs="200"))
    release = threading.Event()
    holder = hold_table_lock(pg_database, "events", release)
    try:
        started = time.monotonic()
        with pytest.raises(PostgresUnavailableError) as info:
            backend.inspect("s")
        assert str(info.value) == "postgres statement timed out after 200 ms (statementTimeoutMs)"
        assert time.monotonic() - started < 5
    finally:
        release.set()
        holder.join()
        backend.close()


def test_cancellation_stops_a_blocked_read_on_the_server(pg_database: PgDatabase) -> None:
    _initialized(pg_database)
    backend = open_postgres(pg_database.socket_uri(applicationName="cancel-probe"))
    release = threading.Event()
    holder = hold_table_lock(pg_database, "events", release)
    token = CancelToken()
    try:
        timer = threading.Timer(0.3, token.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(SessionQueryCancelled):
            backend.inspect("s", token)
        assert time.monotonic() - started < 1.3  # within 1 s of the token firing
        active = sql(
            pg_database,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name"
            " = 'cancel-probe' AND state = 'active'",
        )
        assert active == [(0,)]
    finally:
        release.set()
        holder.join()
        backend.close()


def test_a_database_that_is_down_mounts_and_fails_operations(pg_database: PgDatabase) -> None:
    uri = f"postgres://nobody@127.0.0.1:1/{pg_database.name}?connect_timeout=2"
    backend = open_backend(uri)  # no round trip at mount
    try:
        assert isinstance(backend, PostgresBackend)
        with pytest.raises(PostgresUnavailableError) as info:
            backend.list()
        # The connection attempt's own reason (§4 "down"), not a wait for the pool.
        message = str(info.value)
        assert message.startswith(f"postgres store {uri} is unavailable: "), message
        assert 'connection to server at "127.0.0.1", port 1 failed: Connection refused' in message
        assert backend.status()["reachable"] is False
    finally:
        backend.close()


# ---------------------------------------------------------------------------------------------
# passwords never printed (§1.3)


def test_passwords_never_appear(pg_database: PgDatabase, caplog: pytest.LogCaptureFixture) -> None:
    password = "Pw-" + secrets.token_hex(10)
    _role(
        pg_database,
        "secret_role",
        password,
        f"GRANT ALL ON DATABASE {pg_database.name} TO ROLE",
        "GRANT CREATE ON SCHEMA public TO ROLE",
    )
    seen: list[str] = []
    good = pg_database.tcp_uri("secret_role", password)
    backend = open_backend(good)
    assert isinstance(backend, PostgresBackend)
    try:
        seen += [backend.uri, repr(backend.status())]
        backend.create(header("s"))
        backend.append("s", [note(0, "w")])
        seen += [s.revision for s in backend.list_snapshots()]
        assert "secret_role:***@" in backend.uri
    finally:
        backend.close()
    attempts: list[str] = [
        pg_database.tcp_uri("secret_role", password + "x", poolTimeoutMs="3000"),  # wrong password
        pg_database.tcp_uri("secret_role", password, poolTimeoutMs="1500").replace(
            str(pg_database.server.port), "1"
        ),  # down
        pg_database.tcp_uri("secret_role", password, statementTimeoutMs="x"),  # bad parameter
        pg_database.tcp_uri("secret_role", password, options="-c x=1"),  # refused parameter
        pg_database.socket_uri("secret_role", password=password, sslpassword=password, bogus="1"),
    ]
    for uri in attempts:
        try:
            mounted = open_backend(uri)
        except QueryError as exc:
            assert exc.code == errors.INVALID_CONFIG
            seen.append(exc.message)
            continue
        assert isinstance(mounted, PostgresBackend)
        try:
            seen += [mounted.uri, repr(mounted.status())]
            with pytest.raises(PostgresUnavailableError) as info:
                mounted.list()
            seen += [str(info.value), repr(mounted.status())]
        finally:
            mounted.close()
    seen += [record.getMessage() for record in caplog.records]
    assert seen and all(password not in text for text in seen), [t for t in seen if password in t]
    assert any("password authentication failed" in text for text in seen)


def test_password_query_parameters_are_redacted() -> None:
    with pytest.raises(QueryError) as info:
        open_backend("postgresql://u:p%40ss@h/db?password=other&sslpassword=third&nope=1")
    assert info.value.code == errors.INVALID_CONFIG
    assert info.value.message == (
        "session-query: postgres URI postgresql://u:***@h/db?password=***&sslpassword=***"
        '&nope=1: unknown parameter "nope"'
    )
    for bad, detail in (
        (
            "application_name=x",
            'parameter "application_name" is set by dsh-query; use applicationName',
        ),
        ("poolSize=0", 'parameter "poolSize" must be an integer from 1 to 100'),
        (
            "schema=pg_x",
            'parameter "schema" must be a lower-case identifier of at most 63 characters, not pg_…',
        ),
        (
            "sslmode=maybe",
            'parameter "sslmode" must be one of disable, allow, prefer,'
            " require, verify-ca, verify-full",
        ),
        ("readOnly=true&readOnly=false", 'repeated parameter "readOnly"'),
    ):
        with pytest.raises(QueryError) as info:
            open_backend(f"postgres://h/db?{bad}")
        assert info.value.message.endswith(f": {detail}"), info.value.message


def test_reads_recover_from_a_restart_without_a_remount(pg_database: PgDatabase) -> None:
    _initialized(pg_database)
    backend = open_postgres(pg_database.socket_uri())
    try:
        for mode in ("fast", "immediate"):
            before = [s.revision for s in backend.list_snapshots()]
            logged = backend.inspect("s").events
            pg_database.server.restart(mode)
            # The pooled connection died with the server: checkout replaces it, or the read
            # retries once; either way the answer is exact and no remount is needed.
            assert [s.revision for s in backend.list_snapshots()] == before
            assert [e.raw for e in backend.inspect("s").events] == [e.raw for e in logged]
            backend.append("s", [note(len(logged), mode)])
        assert [e.data()["writer"] for e in backend.read_stored("s").events] == [
            "w",
            "fast",
            "immediate",
        ]
    finally:
        backend.close()


# kill -9 of a streaming writer: test_postgres_faults_long.py (20 kills, read by a fresh server).
