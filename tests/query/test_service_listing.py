"""listSessions without a Record per session (semantics.md §3.1, §3.2): the corpus order of
``newest_first`` against the key sort it replaces, ``list_sessions_json`` against the encoded
``list_sessions`` it stands for on the wire, over random corpora of live and persisted sessions,
and the frame of a large Raw result against the encoded response."""

from __future__ import annotations

import sqlite3
from typing import Any, cast

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import Raw

from dsh_query_server import jsoncodec
from dsh_query_server.cancel import CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.model.params import NoParams
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.query.loading import newest_first
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.server.dispatch import Dispatcher, encode_frame
from dsh_query_server.server.registry import Method
from dsh_query_server.server.transport import JOIN_BELOW
from dsh_query_server.session.store import SessionStore
from dsh_query_server.values import is_number
from tests.builders import ev, hdr
from tests.fakes import MemoryBackend


def _reference_key(entry: tuple[Header, bool, bool]) -> tuple[Any, Any]:
    """The sort key the corpus used before (a key function per entry)."""
    created, session_id = entry[0].created_at, entry[0].id
    return (
        -created if is_number(created) else 0,
        (0, session_id) if isinstance(session_id, str) else (1, repr(session_id)),
    )


_IDS = st.one_of(
    st.text(max_size=4),
    st.integers(-3, 3),
    st.sampled_from([None, True, 1.5, [1], {"a": 1}]),
)
_CREATED = st.one_of(
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([None, True, False, "7", [1], 0, 0.0, -0.0, 2**53]),
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(_IDS, _CREATED, st.booleans(), st.booleans()), max_size=30, unique_by=repr
    )
)
def test_newest_first_orders_as_the_key_sort(rows: list[tuple[Any, Any, bool, bool]]) -> None:
    entries = [
        (Header.from_value({"version": 0, "id": sid, "createdAt": created}), live, persisted)
        for sid, created, live, persisted in rows
    ]
    expected = sorted(entries, key=_reference_key)
    assert [id(e) for e in newest_first(entries)] == [id(e) for e in expected]


_SIDS = st.text(alphabet="ab\u00e9\u2028\U0001f600", min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(
    live=st.dictionaries(_SIDS, st.integers(0, 5), max_size=6),
    persisted=st.dictionaries(
        _SIDS, st.tuples(st.integers(0, 5), st.sampled_from([None, "/p", "\ud800"])), max_size=6
    ),
    mounted=st.booleans(),
)
def test_the_joined_listing_is_the_encoded_listing(
    live: dict[str, int], persisted: dict[str, tuple[int, str | None]], mounted: bool
) -> None:
    """The same bytes as msgspec's encoding of ``list_sessions``, or the same error (a live
    session whose persisted header conflicts)."""
    store, binding = SessionStore(), PersistenceBinding()
    service = SessionQueryService(store, binding)
    for sid, created in live.items():
        store.create(hdr(sid, created))
    backend = MemoryBackend()
    for sid, (created, cwd) in persisted.items():
        backend.put(hdr(sid, created) if cwd is None else hdr(sid, created, cwd=cwd))
    if mounted:
        binding.mount(backend)
    try:
        expected = jsoncodec.dumps(service.list_sessions())
    except QueryError as exc:
        with pytest.raises(QueryError) as info:
            service.list_sessions_json()
        assert (info.value.code, info.value.message) == (exc.code, exc.message)
        return
    assert bytes(service.list_sessions_json()) == expected
    assert jsoncodec.loads(expected) == jsoncodec.to_builtins(service.list_sessions())


_MSG_IDS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udfffb", "\u2028", ""]),
)


@settings(max_examples=60, deadline=None)
@given(
    msg_id=_MSG_IDS,
    size=st.sampled_from([0, 10, JOIN_BELOW - 30, JOIN_BELOW, 3 * JOIN_BELOW]),
    text=st.text(alphabet='a\u00e9\u2028\U0001f600"\\', min_size=1, max_size=8),
)
def test_a_large_raw_result_is_framed_as_the_encoded_response(
    msg_id: Any, size: int, text: str
) -> None:
    """A Raw result's frame holds the bytes ``encode_frame`` gives the whole response, whether
    it is written from the Raw's own buffer (large) or encoded (small, or an odd id)."""
    item = jsoncodec.dumps(text)
    raw = Raw(b"[" + b",".join([item] * max(1, size // (len(item) + 1))) + b"]")
    answers_raw = Method("test/raw", NoParams, object, (), lambda rt, p, t: raw)
    frame = Dispatcher().answer(msg_id, answers_raw, cast(Any, None), {}, CancelToken())
    expected = encode_frame({"jsonrpc": "2.0", "id": msg_id, "result": raw}, msg_id)
    assert b"".join(bytes(part) for part in frame) == b"".join(expected)
    try:
        encodable = msgspec.json.encode(msg_id) is not None
    except UnicodeEncodeError:  # a lone surrogate: the encoder's fallback escapes everything
        encodable = False
    if len(raw) >= JOIN_BELOW and encodable:
        assert any(type(part) is memoryview for part in frame)  # not copied


_STEPS = st.sampled_from(
    [
        "live_new",
        "live_append",
        "live_remove",
        "stored_new",
        "stored_append",
        "stored_swap",
        "remount",
        "none",
    ]
)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(_STEPS, max_size=12), picks=st.lists(st.integers(0, 3), min_size=12))
def test_a_repeated_listing_is_the_listing_of_a_fresh_service(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str], picks: list[int]
) -> None:
    """``observe`` hands back its last observation while the backend lists the very same
    headers, under the same binding, with no live commit since: after every change (live
    commits, another writer's commits to the SQLite file, a remount), one service asked again
    and again answers what a service with no memory of earlier requests answers; and asked
    twice with nothing changed in between, it answers with the same bytes object."""
    path = str(tmp_path_factory.mktemp("listing") / "store.db")
    store, binding = SessionStore(), PersistenceBinding()
    service = SessionQueryService(store, binding)
    binding.mount(SqliteBackend(path))
    other = SqliteBackend(path)  # another writer
    try:
        for index, (step, pick) in enumerate(zip(steps, picks, strict=False)):
            sid = f"s{pick}"
            if step == "live_new" and not store.is_live(sid):
                store.create(hdr(sid, pick))
            elif step == "live_append" and store.is_live(sid):
                store.append(sid, [{"type": "x/note", "data": {}}])
            elif step == "live_remove":
                store.remove(sid)
            elif step == "stored_new" and other.stored_count(f"p{pick}") is None:
                # a new writer: ``other`` remembers the ids it created, and an outside delete
                # (stored_swap) may have removed one of them since
                writer = SqliteBackend(path)
                writer.create(Header.from_value(hdr(f"p{pick}", 10 + pick)))
                writer.append(f"p{pick}", [ev("x/note", 0)])
                writer.close()
            elif step == "stored_append" and other.stored_count(f"p{pick}") is not None:
                other.append(f"p{pick}", [ev("x/note", other.stored_count(f"p{pick}") or 0)])
            elif step == "stored_swap" and other.stored_count(f"p{pick}") is not None:
                # as many sessions as before, another one among them (an outside delete)
                with sqlite3.connect(path) as conn:
                    conn.execute("PRAGMA foreign_keys = ON")
                    conn.execute("DELETE FROM sessions WHERE id = ?", (f"p{pick}",))
                other.create(Header.from_value(hdr(f"q{index}", 30)))
                other.append(f"q{index}", [ev("x/note", 0)])
            elif step == "remount":
                binding.mount(SqliteBackend(path))
            fresh = SessionQueryService(store, binding)
            try:
                first = service.list_sessions_json()
            except QueryError as exc:  # a live header that conflicts with the stored one
                with pytest.raises(QueryError) as info:
                    fresh.list_sessions_json()
                assert (info.value.code, info.value.message) == (exc.code, exc.message)
                continue
            assert bytes(first) == bytes(fresh.list_sessions_json())
            assert service.list_sessions_json() is first  # nothing changed: the same answer
            assert [r.to_wire() for r in service.corpus()] == [r.to_wire() for r in fresh.corpus()]
    finally:
        other.close()
