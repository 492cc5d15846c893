"""Bulk inspection of the ``postgres:`` store (persistence/postgres/bulk.py): every id gets
exactly what ``inspect(id)`` gives (the Inspection or the error), whatever the chunking, the
damage or concurrent appends; and a search index built from it equals one built id by id."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from random import Random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.contract.capabilities import Capabilities
from dsh_query_server.persistence.contract.results import BulkResult, Inspection, Snapshot
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.mount.composite import CompositeBackend
from dsh_query_server.persistence.mount.uri import open_backend
from dsh_query_server.persistence.postgres import PostgresBackend, bulk, open_postgres
from dsh_query_server.search import documents, reconcile
from dsh_query_server.search.reconcile import SearchIndex
from dsh_query_server.session.store import SessionStore
from tests.persistence.postgres.test_postgres import (
    _SLOW,
    chunk,
    header,
    raws,
    sql,
    turn_end,
    turn_start,
    user,
)
from tests.pg_server import PgDatabase

DAMAGES = ("none", "header", "version", "count", "gap", "record")


def _log(length: int, closed: bool, words: Sequence[str]) -> list[Event]:
    """A turn of user messages and chunk runs (packed rows), open or closed."""
    events = [turn_start(0)]
    for seq in range(1, length):
        word = words[seq % len(words)]
        events.append(user(seq, f"say {word} {seq}") if seq % 7 == 1 else chunk(seq, word))
    if closed:
        events.append(turn_end(length))
    return events


def _damage(db: PgDatabase, schema: str, sid: str, kind: str) -> None:
    where = f"FROM {schema}.sessions WHERE id = %s"
    if kind == "header":
        sql(db, f"UPDATE {schema}.sessions SET header = '[1]' WHERE id = %s", sid)
    elif kind == "version":
        text = f'{{"version":2,"id":"{sid}","createdAt":1700000000000}}'
        sql(db, f"UPDATE {schema}.sessions SET header = %s WHERE id = %s", text, sid)
    elif kind == "count":
        sql(db, f"UPDATE {schema}.sessions SET event_count = event_count + 1 WHERE id = %s", sid)
    elif kind == "gap":
        sql(
            db,
            f"INSERT INTO {schema}.events SELECT pk, event_count + 1, event_count + 1, '{{}}' {where}",
            sid,
        )
        sql(db, f"UPDATE {schema}.sessions SET event_count = event_count + 2 WHERE id = %s", sid)
    elif kind == "record":
        sql(
            db,
            f"""INSERT INTO {schema}.events SELECT pk, event_count, event_count, '{{"type":"x"}}' {where}""",
            sid,
        )
        sql(db, f"UPDATE {schema}.sessions SET event_count = event_count + 1 WHERE id = %s", sid)


def _expected(backend: PostgresBackend | CompositeBackend, sid: str) -> Inspection | Exception:
    try:
        return backend.inspect(sid)
    except Exception as exc:  # noqa: BLE001 - compared with the bulk result
        return exc


def _same(got: BulkResult, want: Inspection | Exception) -> bool:
    if isinstance(want, Exception) or isinstance(got, Exception):
        return type(got) is type(want) and str(got) == str(want)
    return (
        isinstance(got, Inspection)
        and got.meta == want.meta
        and raws(got.events) == raws(want.events)
        and got.events == want.events
    )


@pytest.fixture
def schema() -> str:
    return f"bulk_{uuid.uuid4().hex[:12]}"


def _store(db: PgDatabase, schema: str) -> PostgresBackend:
    return open_postgres(db.socket_uri(schema=schema, listen="false"))


sessions_strategy = st.lists(
    st.tuples(st.integers(1, 40), st.booleans(), st.sampled_from(DAMAGES)), min_size=0, max_size=8
)


@settings(max_examples=25, deadline=None, suppress_health_check=_SLOW)
@given(
    specs=sessions_strategy,
    missing=st.lists(st.sampled_from(["nope", "x", "s0", "é", "\ud800", ""]), max_size=3),
    limit=st.integers(0, 50),
    ids_per_read=st.integers(1, 6),
    rows_per_read=st.integers(1, 120),
    seed=st.randoms(use_true_random=False),
)
def test_bulk_results_equal_inspect_per_id(
    pg_database: PgDatabase,
    specs: list[tuple[int, bool, str]],
    missing: list[str],
    limit: int,
    ids_per_read: int,
    rows_per_read: int,
    seed: Random,
) -> None:
    schema = f"bulk_{uuid.uuid4().hex[:12]}"
    backend = _store(pg_database, schema)
    try:
        stored_ids = []
        for i, (length, closed, damage) in enumerate(specs):
            sid = f"s{i + 1}"
            backend.create(header(sid))
            backend.append(sid, _log(length, closed, ["alpha", "beta"]))
            _damage(pg_database, schema, sid, damage)
            stored_ids.append(sid)
        asked = stored_ids + missing + stored_ids[:2]  # duplicates are answered again
        seed.shuffle(asked)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bulk, "IDS_PER_READ", ids_per_read)
            patch.setattr(bulk, "ROWS_PER_READ", rows_per_read)
            got = list(backend.inspect_many(asked, limit))
        assert [sid for sid, _ in got] == asked
        for sid, result in got:
            want = _expected(backend, sid)
            if result is None:  # left to the caller: too long, or not bindable as text
                count = backend.stored_count(sid) if sid in stored_ids else None
                assert (count is not None and count > limit) or sid in ("\ud800", "")
                continue
            assert _same(result, want), (sid, result, want)
    finally:
        backend.close()


def test_an_uninitialized_store_answers_not_found(pg_database: PgDatabase) -> None:
    backend = _store(pg_database, "never_created")
    try:
        got = dict(backend.inspect_many(["a", "b"], 10))
        assert [str(e) for e in got.values()] == ['session "a" not found', 'session "b" not found']
        assert all(type(e) is LookupError for e in got.values())
    finally:
        backend.close()


def test_cancellation_stops_the_bulk_read(pg_database: PgDatabase, schema: str) -> None:
    backend = _store(pg_database, schema)
    try:
        for i in range(3):
            backend.create(header(f"s{i}"))
            backend.append(f"s{i}", _log(5, True, ["a"]))
        token = CancelToken()
        results = backend.inspect_many(["s0", "s1", "s2"], 10, token)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bulk, "IDS_PER_READ", 1)
            assert next(results)[0] == "s0"
            token.cancel()
            with pytest.raises(SessionQueryCancelled):
                next(results)
    finally:
        backend.close()


def test_results_under_concurrent_appends_are_states_inspect_saw(
    pg_database: PgDatabase, schema: str
) -> None:
    """Each bulk result is the log at some committed append: one that ``inspect`` returned."""
    writer, reader = _store(pg_database, schema), _store(pg_database, schema)
    ids = [f"s{i}" for i in range(6)]
    seen: dict[str, set[tuple[bytes, ...]]] = {sid: set() for sid in ids}
    for sid in ids:
        writer.create(header(sid))
        writer.append(sid, [turn_start(0)])
        seen[sid].add(tuple(raws(writer.inspect(sid).events)))
    done = threading.Event()

    def append() -> None:
        for seq in range(1, 40):
            for sid in ids:
                batch = [chunk(seq, "w")] if seq < 39 else [turn_end(seq)]
                writer.append(sid, batch)
                seen[sid].add(tuple(raws(writer.inspect(sid).events)))
        done.set()

    thread = threading.Thread(target=append)
    got: list[tuple[str, BulkResult]] = []
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bulk, "IDS_PER_READ", 2)
            thread.start()
            while not done.is_set():
                got += reader.inspect_many(ids, 1000)
        thread.join()
        assert got
        for sid, result in got:
            assert isinstance(result, Inspection)
            assert tuple(raws(result.events)) in seen[sid]
    finally:
        done.set()
        thread.join()
        writer.close()
        reader.close()


# ---------------------------------------------------------------------------------------------
# the index built from it


class _PerId:
    """The same store without its bulk read: the reconcile inspects it id by id, as before."""

    cheap_windows = True

    def __init__(self, inner: PostgresBackend) -> None:
        self.inner = inner

    @property
    def uri(self) -> str:
        return self.inner.uri

    @property
    def writable(self) -> bool:
        return False

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        return self.inner.list(token)

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> tuple[Snapshot, ...]:
        return self.inner.list_snapshots(token)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        return self.inner.inspect(session_id, token)

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Any:
        return self.inner.inspect_window(session_id, first, last, token)

    def create(self, header: Header) -> None:
        raise AssertionError("read only")

    def append(self, session_id: str, events: list[Event]) -> None:
        raise AssertionError("read only")

    def stored_count(self, session_id: str) -> int | None:
        return self.inner.stored_count(session_id)

    def close(self) -> None:
        self.inner.close()


def _build(backend: Any) -> tuple[list[Any], list[Any]] | tuple[str, str]:
    """The persisted side of a fresh index after one reconcile, or the reconcile's error."""
    binding = PersistenceBinding()
    binding.mount(backend)
    index = SearchIndex.open(":memory:", "wal", SessionStore(), binding)
    try:
        index.reconcile(NULL_TOKEN)
    except QueryError as exc:
        index.close()
        return exc.code, exc.message
    try:
        sessions = list(index.conn.execute("SELECT * FROM persisted_sessions ORDER BY id"))
        docs = list(
            index.conn.execute(
                "SELECT rowid, text, session_id, seq, type, time, surface, codepoint_length"
                " FROM persisted_docs ORDER BY rowid"
            )
        )
        return sessions, docs
    finally:
        index.close()


@settings(max_examples=12, deadline=None, suppress_health_check=_SLOW)
@given(
    specs=st.lists(
        st.tuples(st.integers(1, 30), st.booleans(), st.sampled_from(("none",) * 8 + DAMAGES)),
        min_size=1,
        max_size=8,
    ),
    window=st.sampled_from([4, 16, 8192]),
    ids_per_read=st.integers(1, 4),
)
def test_the_index_built_in_bulk_equals_the_one_built_id_by_id(
    pg_database: PgDatabase,
    specs: list[tuple[int, bool, str]],
    window: int,
    ids_per_read: int,
) -> None:
    schema = f"bulk_{uuid.uuid4().hex[:12]}"
    backend = _store(pg_database, schema)
    plain = _PerId(_store(pg_database, schema))
    try:
        assert Capabilities.of(backend).bulk is backend
        assert Capabilities.of(plain).bulk is None and Capabilities.of(plain).cheap_windows
        for i, (length, closed, damage) in enumerate(specs):
            sid = f"s{i}"
            backend.create(header(sid))
            backend.append(sid, _log(length, closed, ["needle", "hay", "stack"]))
            _damage(pg_database, schema, sid, damage)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bulk, "IDS_PER_READ", ids_per_read)
            patch.setattr(documents, "WINDOW", window)  # long logs: the windowed path
            patch.setattr(reconcile, "WINDOW", window)
            built = _build(backend)
            assert built == _build(plain)
        if all(damage == "none" for _, _, damage in specs):
            assert isinstance(built[0], list) and len(built[0]) == len(specs)
    finally:
        backend.close()
        plain.close()


# ---------------------------------------------------------------------------------------------
# through a composite mount (importers.md §4.1): a postgres member beside a sqlite one


@settings(max_examples=10, deadline=None, suppress_health_check=_SLOW)
@given(
    specs=st.lists(
        st.tuples(st.booleans(), st.integers(1, 30), st.booleans()), min_size=1, max_size=8
    ),
    missing=st.lists(st.sampled_from(["nope", "zz"]), max_size=2),
    limit=st.integers(0, 40),
)
def test_a_composite_reads_its_postgres_member_in_bulk(
    pg_database: PgDatabase,
    tmp_path_factory: pytest.TempPathFactory,
    specs: list[tuple[bool, int, bool]],
    missing: list[str],
    limit: int,
) -> None:
    schema = f"bulk_{uuid.uuid4().hex[:12]}"
    path = str(tmp_path_factory.mktemp("composite") / "store.sqlite")
    pg, lite = _store(pg_database, schema), open_backend(f"sqlite:{path}")
    composite = CompositeBackend([pg, lite], "composite")
    plain = CompositeBackend([_PerId(_store(pg_database, schema)), lite], "plain")
    try:
        assert Capabilities.of(composite).bulk is composite
        for i, (on_pg, length, closed) in enumerate(specs):
            sid = f"s{i}"
            member = pg if on_pg else lite
            member.create(header(sid))
            member.append(sid, _log(length, closed, ["needle", "hay"]))
        ids = [f"s{i}" for i in range(len(specs))] + missing
        got = list(composite.inspect_many(ids, limit))
        assert [sid for sid, _ in got] == ids
        for (sid, result), spec in zip(got, [*specs, *([None] * len(missing))], strict=True):
            if result is None:  # the caller's own read: a sqlite id, a missing one, a long log
                assert spec is None or not spec[0] or spec[1] + (1 if spec[2] else 0) > limit
                continue
            assert spec is not None and spec[0]
            assert _same(result, _expected(composite, sid))
        assert _build(composite) == _build(plain)
    finally:
        pg.close()
        plain.close()
