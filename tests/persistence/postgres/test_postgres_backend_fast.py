"""The one-statement reads of the ``postgres:`` backend (postgres.md §3.1, §3.2, §3.4) against the
transactions they skip, on a real PostgreSQL 15: the listing token alone while the memo is
current, ``list_one``, the window joined with its session row, the pool's checkout check without a
round trip, and the one cancel watcher per pool."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.postgres import PostgresBackend, open_postgres
from tests.persistence.postgres.test_postgres import (
    assert_lists_as_fresh,
    chunk,
    header,
    raws,
    sql,
    store_step,
    turn_end,
    turn_start,
    user,
)
from tests.pg_server import PgDatabase, hold_table_lock

_SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]


def _event(kind: str, seq: int, turn: int) -> Event:
    message = {"id": f"m{seq}", "role": "user", "content": [], "source": {"kind": "user"}}
    if kind == "chunk":
        return chunk(seq, str(seq % 7))
    if kind == "user":
        return user(seq)
    if kind == "steer":  # a legacy shape the reader normalizes
        return make_event("steering/message", seq, seq, {"turn": turn, "message": message})
    if kind == "title":
        return make_event("session/title", seq, seq, {"title": f"t{seq}"})
    if kind == "start":
        return turn_start(seq, turn)
    return turn_end(seq, turn)


_KINDS = st.sampled_from(["chunk", "chunk", "chunk", "user", "steer", "title", "start", "end"])


def _batches(kinds: list[list[str]]) -> list[list[Event]]:
    out: list[list[Event]] = []
    seq, turn = 0, 1
    for batch in kinds:
        events = []
        for kind in batch:
            events.append(_event(kind, seq, turn))
            seq += 1
            turn += kind == "end"
        out.append(events)
    return out


def _same_window(a: Any, b: Any) -> None:
    assert (a.length, a.start, a.title) == (b.length, b.start, b.title)
    assert a.meta.raw == b.meta.raw
    assert raws(a.events) == raws(b.events)


@settings(max_examples=25, deadline=None, suppress_health_check=_SLOW)
@given(
    kinds=st.lists(st.lists(_KINDS, min_size=1, max_size=60), min_size=1, max_size=5),
    windows=st.lists(st.tuples(st.integers(0, 320), st.integers(0, 60)), min_size=1, max_size=6),
)
def test_the_one_statement_window_equals_the_transaction(
    pg_database: PgDatabase, kinds: list[list[str]], windows: list[tuple[int, int]]
) -> None:
    """After every append by another writer, each window read by one statement (when it
    answers) equals the transaction's window and ``inspect`` sliced; once the log was read
    at its revision, the statement answers."""
    sid = f"w-{uuid.uuid4()}"
    reader, writer = (open_postgres(pg_database.socket_uri()) for _ in range(2))
    try:
        writer.create(header(sid))
        for batch in _batches(kinds):
            writer.append(sid, batch)
            assert reader._fast_window(sid, 0, 0, CancelToken()) is None  # stale or no memo
            whole = reader.inspect(sid).events  # verifies the log at this revision
            for first, width in windows:
                last = first + width
                fast = reader._fast_window(sid, first, last, CancelToken())
                assert fast is not None
                _same_window(fast, reader._window_read(sid, first, last, CancelToken()))
                assert raws(fast.events) == raws(whole[first : last + 1])
                assert fast.length == len(whole)
    finally:
        reader.close()
        writer.close()


def test_a_window_of_a_changed_or_damaged_row_falls_back_to_the_transaction(
    pg_database: PgDatabase,
) -> None:
    backend = open_postgres(pg_database.socket_uri())
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0), user(1), *map(chunk, range(2, 30))])
        backend.inspect_window("s", 0, 5)
        assert backend._fast_window("s", 3, 9, CancelToken()) is not None
        assert backend._fast_window("nobody", 0, 1, CancelToken()) is None
        # A damaged header keeps the revision: the statement declines, the transaction reports.
        sql(pg_database, "UPDATE dsh_query.sessions SET header = '[1]'")
        assert backend._fast_window("s", 3, 9, CancelToken()) is None
        with pytest.raises(Exception, match="header is not a JSON object"):
            backend.inspect_window("s", 3, 9)
    finally:
        backend.close()


@settings(max_examples=20, deadline=None, suppress_health_check=_SLOW)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["append", "create", "delete", "none"]), st.integers(0, 5)),
        min_size=1,
        max_size=8,
    ),
    probes=st.lists(st.integers(0, 7), max_size=4),
)
def test_the_token_statement_listing_equals_a_full_read(
    pg_database: PgDatabase, steps: list[tuple[str, int]], probes: list[int]
) -> None:
    """Whatever other writers and an administrator did in between, the listing a memo answers
    after its token statement equals a fresh backend's full listing, and ``list_one`` gives the
    header ``list`` lists (None for an id it lists none for)."""
    prefix = f"l-{uuid.uuid4()}-"
    reader, writer = (open_postgres(pg_database.socket_uri()) for _ in range(2))
    counts: dict[str, int] = {}
    try:
        for action, index in steps:
            store_step(pg_database, writer, action, f"{prefix}{index}", counts)
            for _ in range(2):  # the second read is answered by the token statement alone
                assert_lists_as_fresh(pg_database, reader)
            listed = {h.id: h.raw for h in reader.list()}
            for probe in probes:
                one = reader.list_one(f"{prefix}{probe}", CancelToken())
                assert (None if one is None else one.raw) == listed.get(f"{prefix}{probe}")
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("table", ["events", "store"])
def test_one_statement_reads_are_cancelled_on_the_server(
    pg_database: PgDatabase, table: str
) -> None:
    backend: PostgresBackend = open_postgres(pg_database.socket_uri(applicationName="fast-cancel"))
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0), *map(chunk, range(1, 9))])
        backend.inspect_window("s", 0, 3)
        backend.list_snapshots()  # both memos are current: each read is one statement first
        release = threading.Event()
        holder = hold_table_lock(pg_database, table, release)
        try:
            token = CancelToken()
            threading.Timer(0.3, token.cancel).start()
            started = time.monotonic()
            with pytest.raises(SessionQueryCancelled):
                if table == "events":
                    backend.inspect_window("s", 0, 3, token)
                else:
                    backend.list_snapshots(token)
            assert time.monotonic() - started < 1.3
            active = sql(
                pg_database,
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'fast-cancel'"
                " AND state = 'active'",
            )
            assert active == [(0,)]
        finally:
            release.set()
            holder.join()
    finally:
        backend.close()


def test_many_reads_share_one_watcher_and_only_fired_tokens_cancel(
    pg_database: PgDatabase,
) -> None:
    backend = open_postgres(pg_database.socket_uri(poolSize="4"))
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0), *map(chunk, range(1, 40))])
        expected = raws(backend.inspect("s").events)
        before = {t.name for t in threading.enumerate()}
        errors: list[BaseException] = []

        def read(i: int) -> None:
            try:
                for _ in range(10):
                    assert raws(backend.inspect("s", CancelToken()).events) == expected
                    window = backend.inspect_window("s", i, i + 5, CancelToken())
                    assert raws(window.events) == expected[i : i + 6]
                fired = CancelToken()
                fired.cancel()
                with pytest.raises(SessionQueryCancelled):
                    backend.inspect("s", fired)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        watchers = [t for t in threading.enumerate() if t.name == "dsh-query-pg-cancel"]
        assert len([t for t in watchers if t.name not in before]) <= 1
    finally:
        backend.close()


def test_a_connection_the_server_terminated_is_replaced_at_checkout(
    pg_database: PgDatabase,
) -> None:
    """The checkout check makes no round trip for a quiet connection, yet one whose server
    process was terminated is replaced before use, so even an append (never retried) works."""
    backend = open_postgres(
        pg_database.socket_uri(poolSize="1", applicationName="checkout", listen="false")
    )
    try:
        backend.create(header("s"))
        backend.append("s", [turn_start(0)])
        for seq in (1, 2):
            sql(
                pg_database,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'checkout'",
            )
            time.sleep(0.2)
            backend.append("s", [user(seq)])
        assert backend.stored_count("s") == 3
        assert [e.seq for e in backend.read_stored("s").events] == [0, 1, 2]
    finally:
        backend.close()
