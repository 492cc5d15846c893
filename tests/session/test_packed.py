"""The live store's compact log: views are detached snapshots that read back the exact JSON."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.session import packed
from dsh_query_server.session.packed import PackedLog
from dsh_query_server.session.store import SessionStore
from tests.builders import ev, live_snapshot

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@pytest.fixture(
    params=[packed.BLOCK_BYTES, 1, 150], ids=["default-blocks", "seal-every-batch", "small-blocks"]
)
def block_bytes(request):
    saved = packed.BLOCK_BYTES
    packed.BLOCK_BYTES = request.param
    yield request.param
    packed.BLOCK_BYTES = saved


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(texts, min_size=1, max_size=5), max_size=6))
def test_views_read_back_exact_events_and_ignore_later_appends(block_bytes, batches):
    # Views taken before and after blocks are sealed (compressed) read the same bytes back.
    log = PackedLog()
    appended = []
    views = []
    for batch in batches:
        events = [ev("x/note", len(appended) + i, {"t": t}) for i, t in enumerate(batch)]
        log.extend(events)
        appended.extend(events)
        views.append((log.view(), len(appended)))
    if block_bytes == 1 and batches:
        assert len(log.blocks) == len(batches)  # every batch was sealed into its own block
    for view, length in views:
        assert len(view) == length and bool(view) == (length > 0)
        assert [e.raw for e in view] == [e.raw for e in appended[:length]]
        assert [e.raw for e in view[1:]] == [e.raw for e in appended[1:length]]
        assert [view.raw(i) for i in reversed(range(length))] == [
            e.raw for e in reversed(appended[:length])
        ]
        if length:
            assert view[-1].raw == appended[length - 1].raw and view[-1].seq == length - 1
            assert view.raw(0) == appended[0].raw


def test_out_of_range_index_raises_index_error():
    log = PackedLog()
    log.extend([ev("x/note", 0)])
    view = log.view()
    log.extend([ev("x/note", 1)])
    for bad in (1, 2, -2):
        try:
            view[bad]
        except IndexError:
            continue
        raise AssertionError(f"index {bad} should be out of range")


def test_store_snapshot_is_unchanged_by_later_appends_and_shares_the_fold():
    store = SessionStore()
    store.create({"id": "s", "createdAt": 0})
    store.append("s", [{"type": "turn/start", "data": {"turn": 1}}])
    first = live_snapshot(store, "s")
    again = live_snapshot(store, "s")
    assert again.fold is first.fold  # no append in between: one frozen fold is shared
    store.append(
        "s",
        [
            {
                "type": "user/message",
                "surfaceOp": "append",
                "data": {
                    "id": "u",
                    "role": "user",
                    "content": [{"type": "text", "text": "hi"}],
                    "source": {"kind": "user"},
                },
            }
        ],
    )
    later = live_snapshot(store, "s")
    assert len(first.events) == 1 and first.fold.nodes == []
    assert len(later.events) == 2 and later.fold.nodes == [1]
    assert [e.type for e in later.events] == ["turn/start", "user/message"]
    pending_from = store.events_from("s", 1)
    assert pending_from is not None
    header, pending = pending_from
    assert header.id == "s" and [e.seq for e in pending] == [1]


def test_store_remembers_the_last_title_event():
    store = SessionStore()
    store.create(
        {"id": "s", "createdAt": 0},
        [{"type": "session/title", "seq": 0, "time": 1, "data": {"title": "first"}}],
    )
    assert live_snapshot(store, "s").title_seq == 0
    store.append(
        "s",
        [
            {"type": "turn/start", "data": {"turn": 1}},
            {"type": "session/title", "data": {"title": "second"}},
            {"type": "turn/end", "data": {"turn": 1}},
        ],
    )
    snap = live_snapshot(store, "s")
    assert snap.title_seq == 3 and snap.events[3].data()["title"] == "second"  # seq 1 is end-seed
    store.create({"id": "none", "createdAt": 0})
    assert live_snapshot(store, "none").title_seq is None
