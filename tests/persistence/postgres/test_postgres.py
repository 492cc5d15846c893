"""The ``postgres:`` backend against a real PostgreSQL 15 (postgres.md §2, §3): the persistence
contract that test_sqlite.py checks for ``sqlite:``, byte-exact records, windows equal to slices
of ``inspect``, append-only events and exact listings."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.cancel import CancelToken, SessionQueryCancelled
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.contract.errors import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
)
from dsh_query_server.persistence.mount.uri import open_backend
from dsh_query_server.persistence.postgres import (
    PostgresBackend,
    SessionAppendConflictError,
    open_postgres,
    rows,
)
from tests.builders import EPOCH_MS
from tests.builders import header as build_header
from tests.pg_server import PgDatabase

MAX_SAFE = 2**53 - 1
_SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]

# Headers created at EPOCH_MS (the stored createdAt some assertions read back).
header = partial(build_header, created=EPOCH_MS)


def user(seq: int, text: str = "hi") -> Event:
    data = {
        "id": f"u{seq}",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }
    return make_event("user/message", seq, seq, data, surface_op="append")


def turn_start(seq: int, turn: int = 1) -> Event:
    return make_event("turn/start", seq, seq, {"turn": turn})


def turn_end(seq: int, turn: int = 1) -> Event:
    return make_event("turn/end", seq, seq, {"turn": turn, "reason": {"kind": "completed"}})


def chunk(seq: int, text: str = "x") -> Event:
    data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}
    return make_event("assistant/chunk", seq, seq, data)


def raws(events: list[Event]) -> list[bytes]:
    return [event.raw for event in events]


@pytest.fixture
def backend(pg_database: PgDatabase) -> Iterator[PostgresBackend]:
    opened = open_postgres(pg_database.socket_uri())
    yield opened
    opened.close()


def stored(backend: PostgresBackend, events: list[Event], session_id: str = "s") -> None:
    backend.create(header(session_id))
    backend.append(session_id, events)


def sql(db: PgDatabase, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        cursor = conn.execute(statement, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def store_step(
    db: PgDatabase, writer: PostgresBackend, action: str, sid: str, counts: dict[str, int]
) -> None:
    """One step of other writers and an administrator for the listing property tests: create
    (through a new backend: one remembers its creates, so an id deleted and created again needs
    another), append one event, or delete the row. ``counts`` tracks the stored lengths."""
    if action == "create" and sid not in counts:
        maker = open_postgres(db.socket_uri(listen="false"))
        try:
            maker.create(header(sid))
            maker.append(sid, [turn_start(0)])
        finally:
            maker.close()
        counts[sid] = 1
    elif action == "append" and sid in counts:
        writer.append(sid, [user(counts[sid])])
        counts[sid] += 1
    elif action == "delete" and sid in counts:
        sql(db, "DELETE FROM dsh_query.sessions WHERE id = %s", sid)
        del counts[sid]


def assert_lists_as_fresh(db: PgDatabase, reader: PostgresBackend) -> None:
    """``reader``'s listing (through its memo) equals a new backend's full read."""
    fresh = open_postgres(db.socket_uri(listen="false"))
    try:
        expected = fresh.list_snapshots()
    finally:
        fresh.close()
    got = reader.list_snapshots(CancelToken())
    assert [(s.header.raw, s.revision) for s in got] == [
        (s.header.raw, s.revision) for s in expected
    ]


# ---------------------------------------------------------------------------------------------
# mounting


def test_the_uri_scheme_mounts_postgres_and_shows_it_redacted(pg_database: PgDatabase) -> None:
    uri = pg_database.socket_uri(poolSize="2") + "&password=hunter2"
    mounted = open_backend(uri)
    try:
        assert isinstance(mounted, PostgresBackend)
        assert "hunter2" not in mounted.uri and "password=***" in mounted.uri
        assert mounted.writable and mounted.cheap_windows
        assert mounted.list() == []
    finally:
        mounted.close()


# ---------------------------------------------------------------------------------------------
# create and append (§3.5, §3.6)


def test_create_is_lazy_and_materializes_with_the_first_batch(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    backend.create(header("s", cwd="/p"))
    assert backend.list() == [] and backend.stored_count("s") is None
    with pytest.raises(LookupError, match='^session "s" not found$'):
        backend.inspect("s")
    backend.append("s", [turn_start(0), user(1)])
    assert backend.stored_count("s") == 2
    (row,) = sql(pg_database, "SELECT id, header, created_at, event_count FROM dsh_query.sessions")
    assert row == ("s", header("s", cwd="/p").raw.decode(), 1_700_000_000_000, 2)


def test_create_refusals(backend: PostgresBackend, pg_database: PgDatabase) -> None:
    stored(backend, [turn_start(0)])
    with pytest.raises(ValueError, match='^session "s" already exists in this backend$'):
        backend.create(header("s"))
    other = open_postgres(pg_database.socket_uri())
    try:
        with pytest.raises(ValueError) as info:
            other.create(header("s"))
        assert str(info.value) == (
            'session "s" already has a persisted log on disk; load/resume it instead of creating'
        )
    finally:
        other.close()
    for created_at in (-1, 1.5, True, MAX_SAFE + 1):
        with pytest.raises(ValueError, match="createdAt"):
            backend.create(Header.build(version=0, id="t", createdAt=created_at))
    for bad, reason in (
        ("", "it is empty"),
        ("\ud800", "it contains a lone surrogate"),
        ("a\0b", "it contains U+0000"),
        ("x" * 1025, "it is longer than 1024 bytes"),
    ):
        with pytest.raises(ValueError, match=re.escape("cannot be stored in postgres: " + reason)):
            backend.create(header(bad))


def test_append_errors_write_nothing(backend: PostgresBackend, pg_database: PgDatabase) -> None:
    backend.append("nobody", [])  # an empty batch is a no-op
    with pytest.raises(LookupError, match='^session "nobody" not found$'):
        backend.append("nobody", [turn_start(0)])
    stored(backend, [turn_start(0), user(1)])
    with pytest.raises(ValueError) as info:
        backend.append("s", [user(2), user(4)])
    assert str(info.value) == (
        'session "s" append batch is not contiguous at index 1: expected seq 3, got 4'
    )
    with pytest.raises(SessionAppendConflictError) as conflict:
        backend.append("s", [user(5)])
    assert str(conflict.value) == 'session "s" append starts at seq 5, stored next seq is 2'
    assert (conflict.value.first_seq, conflict.value.stored_count) == (5, 2)
    with pytest.raises(ValueError, match="type must be a non-empty string"):
        backend.append("s", [make_event("", 2, 2, {})])
    assert backend.stored_count("s") == 2
    assert sql(pg_database, "SELECT count(*) FROM dsh_query.events") == [(2,)]


def test_appends_continue_a_log_written_by_another_instance(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    stored(backend, [turn_start(0)])
    other = open_postgres(pg_database.socket_uri())
    try:
        other.append("s", [user(1)])
        backend.append("s", [turn_end(2)])
        assert raws(other.inspect("s").events) == raws([turn_start(0), user(1), turn_end(2)])
    finally:
        other.close()


def test_read_only_mounts_refuse_writes_before_any_io(pg_database: PgDatabase) -> None:
    reader = open_postgres(pg_database.socket_uri(readOnly="true"))
    try:
        assert not reader.writable
        with pytest.raises(SessionPersistenceReadOnlyError):
            reader.create(header("s"))
        with pytest.raises(SessionPersistenceReadOnlyError):
            reader.append("s", [turn_start(0)])
        assert reader.list() == []  # an uninitialized store reads as empty and stays so
        assert sql(pg_database, "SELECT 1 FROM pg_namespace WHERE nspname = 'dsh_query'") == []
    finally:
        reader.close()


def test_an_uninitialized_store_appears_without_a_remount(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    reader = open_postgres(pg_database.socket_uri(readOnly="true"))
    try:
        assert reader.list() == [] and reader.stored_count("s") is None
        with pytest.raises(LookupError, match='^session "s" not found$'):
            reader.inspect_window("s", 0, 3)
        stored(backend, [turn_start(0)])
        assert [h.id for h in reader.list()] == ["s"]
    finally:
        reader.close()


# ---------------------------------------------------------------------------------------------
# byte-exact records (§2.3)

_ODD = [
    b'{"type":"x/num","seq":%d,"time":0,"data":{"a":1.0,"b":-0.0,"c":1e300,"d":9007199254740993}}',
    b'{"type":"x/text","seq":%d,"time":0,"data":"line\\u2028sep \\u0000 \\ud800 \\udfff end"}',
    b'{"type":"text-chunks","seq":%d,"time":0,"data":{"tagged":"but scalar"}}',
    b'{"type":"x/raw","seq":%d,"time":0,"data":{"s":"\xe2\x80\xa8 raw U+2028"},"ignorable":true}',
    b'{"type":"assistant/chunk","seq":%d,"time":1.0,"data":{"turn":1,"step":1,'
    b'"chunk":{"type":"text-delta","index":0,"text":"float time"}}}',
]


@st.composite
def logs(draw: st.DrawFn) -> list[Event]:
    out: list[Event] = []
    for kind in draw(st.lists(st.sampled_from(["odd", "run", "tool"]), min_size=1, max_size=6)):
        if kind == "odd":
            template = draw(st.sampled_from(_ODD))
            out.append(Event.from_json(template % len(out)))
        else:
            length = draw(st.sampled_from([1, 2, 3, 4, 1024, 1025, 3000]))
            text = draw(st.text(max_size=3))
            for _ in range(length):
                if kind == "run":
                    out.append(chunk(len(out), text))
                else:
                    out.append(
                        make_event(
                            "assistant/chunk",
                            len(out),
                            len(out),
                            {
                                "turn": 1,
                                "step": 2,
                                "chunk": {
                                    "type": "tool-call-delta",
                                    "index": 0,
                                    "id": "c",
                                    "argumentsDelta": text,
                                },
                            },
                        )
                    )
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=_SLOW)
@given(events=logs(), split=st.integers(min_value=0, max_value=5000))
def test_logs_read_back_as_the_exact_bytes(
    pg_database: PgDatabase, events: list[Event], split: int
) -> None:
    backend = open_postgres(pg_database.socket_uri())
    # A fresh id per example: id(events) is reused once a list is freed.
    session_id = f"s-{uuid.uuid4().hex}"
    try:
        backend.create(header(session_id))
        cut = min(split, len(events))
        backend.append(session_id, events[:cut])
        backend.append(session_id, events[cut:])
        assert raws(backend.read_stored(session_id).events) == raws(events)
        assert raws(backend.inspect(session_id).events) == raws(events)  # no open turn
        records = sql(
            pg_database,
            "SELECT e.seq, e.last_seq, e.record FROM dsh_query.events e"
            " JOIN dsh_query.sessions s ON s.pk = e.session_pk WHERE s.id = %s"
            " ORDER BY e.seq",
            session_id,
        )
        by_seq = {event.seq: event.raw for event in events}
        for seq, last_seq, record in records:
            assert last_seq - seq + 1 <= 1024
            if last_seq == seq:
                assert record.encode() == by_seq[seq]  # scalar rows are the writer's bytes
            else:
                assert record.startswith('{"type":"')
    finally:
        backend.close()


def test_tagged_scalars_and_short_runs_stay_scalar(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    events = [Event.from_json(_ODD[2] % 0), chunk(1), chunk(2), user(3), *map(chunk, range(4, 8))]
    stored(backend, events)
    spans = sql(pg_database, "SELECT seq, last_seq FROM dsh_query.events ORDER BY seq")
    assert spans == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 7)]
    assert raws(backend.inspect("s").events) == raws(events)


# ---------------------------------------------------------------------------------------------
# logical log: legacy shapes, closers, windows (§3.3, §3.4)


def test_legacy_shapes_are_normalized(backend: PostgresBackend) -> None:
    message = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}
    stored(
        backend,
        [
            turn_start(0),
            make_event("steering/message", 1, 1, {"turn": 1, "message": message}),
            turn_end(2),
        ],
    )
    assert backend.inspect("s").events[1].to_value() == {
        "type": "user/message",
        "seq": 1,
        "time": 1,
        "data": message,
    }


def test_an_open_turn_gets_in_memory_closers(backend: PostgresBackend) -> None:
    stored(
        backend, [turn_start(0), user(1), make_event("step/start", 2, 2, {"turn": 1, "step": 1})]
    )
    tail = [event.to_value() for event in backend.inspect("s").events[3:]]
    assert [event["type"] for event in tail] == ["step/end", "turn/end"]
    assert tail[1]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert backend.stored_count("s") == 3


def _window_log() -> list[Event]:
    message = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}
    events = [
        turn_start(0),
        user(1),
        *map(chunk, range(2, 1500)),
        make_event("session/title", 1500, 1500, {"title": "t"}),
        make_event("steering/message", 1501, 1501, {"turn": 1, "message": message}),
        make_event("step/start", 1502, 1502, {"turn": 1, "step": 1}),
    ]
    return events


@settings(max_examples=15, deadline=None, suppress_health_check=_SLOW)
@given(ranges=st.lists(st.tuples(st.integers(0, 1510), st.integers(0, 40)), min_size=1, max_size=4))
def test_windows_equal_inspect_sliced(
    pg_database: PgDatabase, ranges: list[tuple[int, int]]
) -> None:
    backend = open_postgres(pg_database.socket_uri())
    try:
        if backend.stored_count("w") is None:
            stored(backend, _window_log(), "w")
        whole = backend.inspect("w").events
        for first, width in ranges:
            for reader in (backend, open_postgres(pg_database.socket_uri())):
                window = reader.inspect_window("w", first, first + width)
                assert window.length == len(whole) and window.start == first
                assert raws(window.events) == raws(whole[first : first + width + 1])
                assert window.title == 1500
                if reader is not backend:
                    reader.close()
    finally:
        backend.close()


def test_windows_follow_appends_and_errors(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    stored(backend, [turn_start(0), *map(chunk, range(1, 50))])
    assert len(backend.inspect_window("s", 40, 60).events) == 11  # 40..49 + turn/end
    backend.append("s", [*map(chunk, range(50, 60)), turn_end(60)])
    window = backend.inspect_window("s", 40, 70)
    assert raws(window.events) == raws(backend.inspect("s").events[40:])
    assert window.length == 61
    sql(pg_database, "UPDATE dsh_query.sessions SET header = '[1]'")
    for read in (lambda: backend.inspect("s"), lambda: backend.inspect_window("s", 0, 1)):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            read()
        assert str(info.value) == 'corrupt postgres session row "s": header is not a JSON object'
    sql(pg_database, """UPDATE dsh_query.sessions SET header = '{"id": "s",'""")
    for read in (lambda: backend.inspect("s"), lambda: backend.list()):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            read()
        assert str(info.value).startswith('corrupt postgres session row "s": header is not JSON: ')


# ---------------------------------------------------------------------------------------------
# corruption and format versions (§3.3)


def test_damaged_rows_are_corruption(backend: PostgresBackend, pg_database: PgDatabase) -> None:
    stored(backend, [turn_start(0), user(1)])
    sql(pg_database, "UPDATE dsh_query.sessions SET event_count = 3")
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        backend.inspect("s")
    assert str(info.value) == (
        "corrupt session log: stored rows end at seq 1, but the session row counts 3 events"
    )
    sql(pg_database, "INSERT INTO dsh_query.events SELECT pk, 3, 3, '{}' FROM dsh_query.sessions")
    with pytest.raises(SessionPersistenceCorruptionError, match="seq gap at seq 3 .expected 2"):
        backend.inspect_window("s", 0, 0)
    sql(
        pg_database,
        'INSERT INTO dsh_query.events SELECT pk, 2, 2, \'{"type":"x"}\' FROM dsh_query.sessions',
    )
    sql(pg_database, "UPDATE dsh_query.sessions SET event_count = 4")
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        backend.inspect("s")
    assert str(info.value).startswith("corrupt session log: invalid stored record at seq 2:")


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (
            1,
            'session "s" uses log format v1, but this harness reads only v0: the log was written by'
            " a newer harness — upgrade the harness to open it",
        ),
        (
            -1,
            'session "s" uses log format v-1, older than the supported v0, and this build ships no'
            " upgrade path for it",
        ),
    ],
)
def test_other_format_versions_are_refused(
    backend: PostgresBackend, pg_database: PgDatabase, version: int, message: str
) -> None:
    stored(backend, [turn_start(0)])
    sql(
        pg_database,
        "UPDATE dsh_query.sessions SET header = %s",
        f'{{"version":{version},"id":"s","createdAt":1700000000000}}',
    )
    for read in (lambda: backend.inspect("s"), lambda: backend.inspect_window("s", 0, 0)):
        with pytest.raises(SessionFormatUnsupportedError) as info:
            read()
        assert str(info.value) == message
    assert [h.version for h in backend.list()] == [version]  # listed, not refused (§3.2)


# ---------------------------------------------------------------------------------------------
# revisions and listings (§3.2)


def test_revisions_change_on_append_only_and_are_qualified(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    stored(backend, [turn_start(0)])
    (first,) = backend.list_snapshots()
    backend.inspect("s")
    assert backend.list_snapshots()[0].revision == first.revision
    assert backend.read_stored("s").revision == first.revision
    (store_id,) = sql(pg_database, "SELECT store_id::text FROM dsh_query.store")[0]
    assert first.revision.startswith("postgres:")
    assert f":store:{store_id}:events:1:revision:" in first.revision
    with pytest.raises(SessionAppendConflictError):
        backend.append("s", [user(5)])
    assert backend.list_snapshots()[0].revision == first.revision
    backend.append("s", [user(1)])
    second = backend.list_snapshots()[0].revision
    assert second != first.revision and ":events:2:revision:" in second
    other = open_postgres(pg_database.socket_uri(schema="other_store"))
    try:
        stored(other, [turn_start(0)])
        assert (
            other.list_snapshots()[0].revision.split(":events:")[0]
            != first.revision.split(":events:")[0]
        )
    finally:
        other.close()


def test_listings_see_every_change_by_other_writers(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    stored(backend, [turn_start(0)], "a")
    first = backend.list_snapshots()
    assert backend.list_snapshots() is first  # unchanged: the memo, exactly
    other = open_postgres(pg_database.socket_uri())
    try:
        stored(other, [turn_start(0)], "b")
        other.append("a", [user(1)])
        listed = {s.header.id: s.revision for s in backend.list_snapshots()}
        assert listed == {s.header.id: s.revision for s in other.list_snapshots()}
        assert set(listed) == {"a", "b"}
        sql(pg_database, "DELETE FROM dsh_query.sessions WHERE id = 'a'")
        assert [h.id for h in backend.list()] == ["b"]
    finally:
        other.close()


def test_events_are_append_only(backend: PostgresBackend, pg_database: PgDatabase) -> None:
    stored(backend, [turn_start(0), user(1)])
    for statement in (
        "UPDATE dsh_query.events SET record = record",
        "DELETE FROM dsh_query.events",
        "TRUNCATE dsh_query.events CASCADE",
    ):
        with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
            sql(pg_database, statement)
    sql(pg_database, "DELETE FROM dsh_query.sessions")
    assert sql(pg_database, "SELECT count(*) FROM dsh_query.events") == [(0,)]
    assert sql(pg_database, "SELECT change_count, deletions FROM dsh_query.store") == [(2, 1)]
    assert backend.list() == []


def test_a_fired_token_stops_reads(backend: PostgresBackend) -> None:
    stored(backend, [turn_start(0)])
    token = CancelToken()
    token.cancel()
    for read in (
        lambda: backend.inspect("s", token),
        lambda: backend.list(token),
        lambda: backend.inspect_window("s", 0, 0, token),
    ):
        with pytest.raises(SessionQueryCancelled):
            read()


def test_windows_extend_a_verified_log_exactly_as_appends_arrive(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    message = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}
    stored(backend, [turn_start(0), user(1), *map(chunk, range(2, 10))])
    other = open_postgres(pg_database.socket_uri())
    try:
        assert backend.inspect_window("s", 0, 3).length == 11  # verified whole, one closer
        batches = [
            [turn_end(10), turn_start(11, 2)],
            [
                make_event("steering/message", 12, 12, {"turn": 2, "message": message}),
                make_event("session/title", 13, 13, {"title": "t"}),
            ],
            [make_event("step/start", 14, 14, {"turn": 2, "step": 1}), *map(chunk, range(15, 20))],
            [turn_end(20, 2)],
        ]
        for batch in batches:
            other.append("s", batch)
            whole = (
                backend.inspect("s").events if batch is batches[-1] else other.inspect("s").events
            )
            for first, last in ((0, 3), (8, 30), (12, 13), (len(whole) - 2, len(whole) + 5)):
                window = backend.inspect_window("s", first, last)
                assert raws(window.events) == raws(whole[first : last + 1])
                assert window.length == len(whole)
            assert window.title == (13 if batch is not batches[0] else None)
        sql(
            pg_database,
            "INSERT INTO dsh_query.events SELECT pk, 21, 21, '[]' FROM dsh_query.sessions",
        )
        sql(
            pg_database,
            "UPDATE dsh_query.sessions SET event_count = 22, revision = gen_random_uuid()",
        )
        for read in (lambda: backend.inspect("s"), lambda: backend.inspect_window("s", 0, 0)):
            with pytest.raises(
                SessionPersistenceCorruptionError, match="invalid stored record at seq 21"
            ):
                read()
    finally:
        other.close()


def _escaped_chunk(seq: int) -> Event:
    """A chunk event whose bytes a packed row would not restore (an escaped "x")."""
    return Event.from_json(
        b'{"type":"assistant/chunk","seq":%d,"time":%d,"data":{"turn":1,"step":1,'
        b'"chunk":{"type":"text-delta","index":0,"text":"\\u0078"}}}' % (seq, seq)
    )


@settings(max_examples=60, deadline=None)
@given(kinds=st.lists(st.sampled_from(["chunk", "escaped", "user"]), min_size=1, max_size=40))
def test_a_chunk_its_row_would_not_restore_stays_scalar_and_splits_the_run(
    kinds: list[str],
) -> None:
    makers = {"chunk": chunk, "escaped": _escaped_chunk, "user": user}
    events = [makers[kind](seq) for seq, kind in enumerate(kinds)]
    encoded = rows.encode_batch(events)
    restored = list(rows.decode_rows(encoded, len(events)))
    assert raws(restored) == raws(events)
    # The rows are exactly those of packing the canonical stretches between the other events.
    expected: list[tuple[int, int]] = []
    stretch: list[int] = []
    for seq, kind in [*enumerate(kinds), (len(kinds), "end")]:
        if kind == "chunk":
            stretch.append(seq)
            continue
        if len(stretch) >= 3:
            expected.append((stretch[0], stretch[-1]))
        else:
            expected.extend((s, s) for s in stretch)
        stretch = []
        if kind != "end":
            expected.append((seq, seq))
    assert [(seq, last_seq) for seq, last_seq, _ in encoded] == expected


def test_logs_of_more_rows_than_one_fetch_read_back_whole(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    # 2,001 scalar rows: the first fetch, then a cursor past its last row, ending on a full fetch
    events = [turn_start(0), *(user(seq) for seq in range(1, 2000)), turn_end(2000)]
    stored(backend, events)
    assert sql(pg_database, "SELECT count(*) FROM dsh_query.events") == [(2001,)]
    assert raws(backend.read_stored("s").events) == raws(events)
    assert raws(backend.inspect_window("s", 995, 1005).events) == raws(events[995:1006])
    sql(
        pg_database,
        "INSERT INTO dsh_query.events SELECT pk, 2001, 2001, '[]' FROM dsh_query.sessions",
    )
    with pytest.raises(
        SessionPersistenceCorruptionError, match="invalid stored record at seq 2001"
    ):
        backend.read_stored("s")


def test_each_append_notifies_its_change_inside_the_transaction(
    backend: PostgresBackend, pg_database: PgDatabase
) -> None:
    session_id = 'quote " and \u00e9 \\ id'
    with pg_database.connect() as listener:
        listener.execute("LISTEN dsh_query_changes")
        backend.create(header(session_id))
        backend.append(session_id, [turn_start(0)])
        backend.append(session_id, [user(1), turn_end(2)])
        with pytest.raises(SessionAppendConflictError):
            backend.append(session_id, [user(1)])  # rolled back: no notification
        payloads = [n.payload for n in listener.notifies(timeout=1, stop_after=3)]
    (store_id,) = sql(pg_database, "SELECT store_id::text FROM dsh_query.store")[0]
    writer = sql(pg_database, "SELECT writer FROM dsh_query.sessions")[0][0].split(" ")[1]
    expected = [
        {"v": 1, "store": store_id, "writer": writer, "change": change, "id": session_id}
        for change in (1, 2)
    ]
    assert payloads == [jsoncodec.dumps(value).decode() for value in expected]
