"""Unreadable sessions on a ``postgres:`` store (semantics.md §6.5 [ours]): a session whose rows
are damaged is left out of the search (read in bulk, postgres.md §3.3) and named; the others are
searched; a repaired session is found again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dsh_query_server import errors
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.postgres import PostgresBackend, open_postgres
from tests.builders import U, hdr
from tests.pg_server import PgDatabase
from tests.search_helpers import ids, make, sessions


@pytest.fixture
def backend(pg_database: PgDatabase) -> Iterator[PostgresBackend]:
    opened = open_postgres(pg_database.socket_uri())
    yield opened
    opened.close()


def sql(db: PgDatabase, statement: str, *params: Any) -> None:
    with db.connect() as conn:
        conn.execute(statement, params)  # type: ignore[arg-type]


def test_damaged_rows_leave_the_session_out_and_named(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    for sid in ("a", "b", "c"):
        backend.create(Header.from_value(hdr(sid, 1, cwd="/w")))
        backend.append(sid, [U(0, "needle in the rows")])
    sql(pg_database, "UPDATE dsh_query.sessions SET event_count = 3 WHERE id = 'b'")
    _, binding, service = make()
    binding.mount(backend)
    for _ in range(2):
        page = sessions(service, "needle")
        assert sorted(ids(page)) == ["a", "c"]
        (entry,) = page["unreadable"]
        assert entry["sessionId"] == "b" and entry["code"] == errors.CORRUPT_SESSION
        assert entry["message"].startswith("corrupt session log: stored rows end at seq 0")
        assert "postgres:" not in entry["message"] and "path" not in entry  # no URI, no file
    sql(pg_database, "UPDATE dsh_query.sessions SET event_count = 1 WHERE id = 'b'")
    backend.append("b", [U(1, "repaired")])  # a new revision
    page = sessions(service, "needle")
    assert sorted(ids(page)) == ["a", "b", "c"] and "unreadable" not in page
