"""``dsh-query postgres init`` against a real PostgreSQL 15 (postgres.md §2.4): it prints the SQL
by default and changes nothing, ``--apply`` creates the store and grants writer and reader roles
exactly what they need, a second run is harmless, a foreign schema is refused untouched, and the
administrator's password is never printed."""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from dsh_query_server.cli.postgres import run
from dsh_query_server.model.event import Header, make_event
from dsh_query_server.persistence.postgres import PostgresUnavailableError, open_postgres
from tests.builders import U
from tests.lsp_client import ENV, call, config, init_params
from tests.pg_server import PgDatabase

_CATALOG = (
    "SELECT c.relname, a.attname, a.attnum, c.relacl::text FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_attribute a ON a.attrelid = c.oid"
    " WHERE n.nspname = 'dsh_query' ORDER BY 1, 2, 3"
)


def init(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["init", *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def sql(db: PgDatabase, statement: str) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        cursor = conn.execute(statement)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def role(db: PgDatabase, prefix: str, *grants: str) -> tuple[str, str]:
    """A fresh login role (roles are cluster-wide, so the name is random) and its password."""
    name, password = f"{prefix}_{secrets.token_hex(4)}", "Pw-" + secrets.token_hex(8)
    sql(db, f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
    sql(db, f'GRANT CONNECT ON DATABASE "{db.name}" TO {name}')
    for grant in grants:
        sql(db, grant.format(role=name, db=db.name))
    return name, password


@pytest.fixture
def admin(pg_database: PgDatabase) -> tuple[str, str]:
    """An administrator who may create schemas in the database, but is not a superuser."""
    return role(pg_database, "admin", 'GRANT CREATE ON DATABASE "{db}" TO {role}')


def test_the_default_prints_the_sql_and_changes_nothing(
    pg_database: PgDatabase, admin: tuple[str, str]
) -> None:
    writer, _ = role(pg_database, "writer")
    uri = pg_database.tcp_uri(*admin)
    code, out, err = init(uri, "--writer", writer)
    assert code == 0, err
    assert admin[1] not in out + err and f"{admin[0]}:***@" in out
    assert 'schema "dsh_query" holds no store yet: this creates it' in out
    assert 'CREATE TABLE "dsh_query".store' in out and "pg_advisory_xact_lock" in out
    assert f'GRANT INSERT ON "dsh_query"."events" TO "{writer}";' in out
    assert out.rstrip().endswith("COMMIT;") and "nothing was changed" in out
    assert sql(pg_database, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dsh_query'") == [
        (0,)
    ]
    # The printed script is what --apply runs: an administrator may run it with psql instead.
    with psycopg.connect(uri.replace("postgresql://", "postgres://"), autocommit=True) as conn:
        conn.execute(out)  # type: ignore[arg-type]
    backend = open_postgres(pg_database.socket_uri(readOnly="true"))
    try:
        assert backend.list() == []  # an initialized, empty store (not refused)
    finally:
        backend.close()
    code, out, err = init(uri, "--writer", writer, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert code == 0 and report["applied"] is False and report["storeId"] is not None
    assert not any("CREATE TABLE" in s for s in report["statements"])


def test_apply_then_a_writer_checkpoints_and_a_reader_only_reads(
    pg_database: PgDatabase, admin: tuple[str, str]
) -> None:
    writer, writer_pw = role(pg_database, "writer")
    reader, reader_pw = role(pg_database, "reader")
    uri = pg_database.tcp_uri(*admin)
    code, out, err = init(uri, "--writer", writer, "--reader", reader, "--apply", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["applied"] is True and admin[1] not in out + err
    catalog = sql(pg_database, _CATALOG)
    # Twice is harmless: the store is kept (same id, same catalog and grants), nothing fails.
    code, out, err = init(uri, "--writer", writer, "--reader", reader, "--apply", "--json")
    assert code == 0, err
    assert json.loads(out)["storeId"] == first["storeId"]
    assert sql(pg_database, _CATALOG) == catalog

    writing = open_postgres(pg_database.tcp_uri(writer, writer_pw))
    try:
        writing.create(Header.build(version=0, id="w", createdAt=1))
        writing.append("w", [make_event("x/note", 0, 0, {"text": "needle"})])
        writing.append("w", [make_event("x/note", 1, 0, {"text": "more"})])
    finally:
        writing.close()
    reading = open_postgres(pg_database.tcp_uri(reader, reader_pw))  # a writable mount
    try:
        assert [h.id for h in reading.list()] == ["w"]
        assert [e.seq for e in reading.read_stored("w").events] == [0, 1]
        with pytest.raises(PostgresUnavailableError) as info:
            reading.append("w", [make_event("x/note", 2, 0, {})])
        assert str(info.value).startswith(f'postgres role "{reader}" lacks a privilege:')
        with pytest.raises(PostgresUnavailableError) as info:
            reading.create(Header.build(version=0, id="r", createdAt=2))
            reading.append("r", [make_event("x/note", 0, 0, {})])
        assert "lacks a privilege" in str(info.value)
    finally:
        reading.close()
    assert sql(pg_database, "SELECT count(*) FROM dsh_query.sessions") == [(1,)]


def test_a_foreign_schema_is_refused_untouched(
    pg_database: PgDatabase, admin: tuple[str, str]
) -> None:
    writer, _ = role(pg_database, "writer")
    sql(pg_database, "CREATE SCHEMA dsh_query; CREATE TABLE dsh_query.t (x int)")
    before = sql(pg_database, _CATALOG)
    for extra in ((), ("--apply",)):
        code, out, err = init(pg_database.socket_uri(), "--writer", writer, *extra)
        assert code == 1 and out == ""
        assert err.strip() == (
            'postgres schema "dsh_query" is not a dsh-query store: it holds other objects'
        )
    assert sql(pg_database, _CATALOG) == before


def test_a_missing_role_fails_the_whole_transaction(
    pg_database: PgDatabase, admin: tuple[str, str]
) -> None:
    uri = pg_database.tcp_uri(*admin, schema="team")
    code, out, err = init(uri, "--reader", "no_such_role_x", "--apply")
    assert code == 1 and out == ""
    assert 'no such role "no_such_role_x"' in err and admin[1] not in err
    assert sql(pg_database, "SELECT count(*) FROM pg_namespace WHERE nspname = 'team'") == [(0,)]


def test_usage_errors_and_an_unreachable_database(pg_database: PgDatabase) -> None:
    assert init()[0] == 2
    assert init("sqlite:/tmp/x.db")[0] == 2
    assert init(pg_database.socket_uri(poolSize="0"))[0] == 2
    assert init(pg_database.socket_uri(readOnly="true"), "--apply")[0] == 2
    code, _, err = init("postgres://u:hunter22@127.0.0.1:1/db?connect_timeout=2")
    assert code == 1 and "hunter22" not in err and "u:***@" in err
    # Wired as a subcommand of the real CLI.
    shown = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "postgres", "init", "--help"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert shown.returncode == 0 and "--writer ROLE" in shown.stdout


# -- through real servers: the reader role reads and searches, its checkpoints are refused --


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV))
async def server(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield lsp_client
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_a_reader_server_reads_and_searches_and_cannot_checkpoint(
    server: LanguageClient, pg_database: PgDatabase, admin: tuple[str, str]
) -> None:
    writer, writer_pw = role(pg_database, "writer")
    reader, reader_pw = role(pg_database, "reader")
    code, _, err = init(
        pg_database.tcp_uri(*admin), "--writer", writer, "--reader", reader, "--apply"
    )
    assert code == 0, err
    writing = open_postgres(pg_database.tcp_uri(writer, writer_pw))
    try:
        writing.create(Header.build(version=0, id="team", createdAt=1, cwd="/t"))
        writing.append("team", [U(0, "shared needle")])
    finally:
        writing.close()
    await call(
        server,
        "sessionPersistence/mount",
        {"uri": pg_database.tcp_uri(reader, reader_pw, readOnly="true")},
    )
    listed = await call(server, "sessionQuery/listSessions")
    assert [s["header"]["id"] for s in listed] == ["team"]
    found = await call(server, "sessionQuery/searchSessions", {"query": "needle", "limit": 5})
    assert [h["header"]["id"] for h in found["items"]] == ["team"]
    await call(
        server,
        "sessionStore/create",
        {"header": {"version": 0, "id": "mine", "createdAt": 2}, "seed": [U(0, "x").to_value()]},
    )
    with pytest.raises(JsonRpcException) as info:
        await call(server, "sessionStore/checkpoint", {"sessionId": "mine"})
    assert (info.value.data or {}).get("code") == "SESSION_STORE_READ_ONLY"
    assert reader_pw not in info.value.message
