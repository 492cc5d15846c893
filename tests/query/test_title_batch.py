"""The title batch (query/titlememo.py ``TitleBatch``): a batch given back whole while its proof
holds (the live store's generation, the very same listing) answers exactly what a batch that inspects every log answers, through random sequences of appends by
another writer, live sessions created, appended to and dropped, batches of other ids and a memo
small enough to evict."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.query.titlememo import CAPACITY, TitleMemo
from dsh_query_server.session.store import SessionStore
from tests.builders import EPOCH_MS, hdr, header
from tests.persistence.test_window import CWD, PLAN_STEP, PROPERTY, InspectOnly, build_log

SESSIONS = 4
INDEX = st.integers(0, SESSIONS - 1)
OP = st.one_of(
    st.tuples(st.just("append"), INDEX, st.lists(PLAN_STEP, min_size=1, max_size=4)),
    st.tuples(st.just("live"), INDEX, st.booleans()),  # the same header as stored, or another
    st.tuples(st.just("live-title"), INDEX, st.sampled_from(["one", "two", " "])),
    st.tuples(st.just("drop"), INDEX),
    st.tuples(st.just("batch"), st.sampled_from(["all", "reversed", "some", "one"])),
)


def sid(i: int) -> str:
    return f"s{i}"


def ids_for(kind: str) -> list[str]:
    every = [sid(i) for i in range(SESSIONS)] + ["missing"]
    return {
        "all": every,
        "reversed": every[::-1],
        "some": every[::2] + every[:1],
        "one": [sid(1)],
    }[kind]


def over(store: SessionStore, backend: Any) -> SessionQueryService:
    binding = PersistenceBinding()
    binding.mount(backend)
    return SessionQueryService(store, binding)


def answer(service: SessionQueryService, ids: list[str]) -> Any:
    return to_builtins(service.read_titles(ids))


def apply(
    op: tuple[Any, ...], writer: SqliteBackend, store: SessionStore, plans: list[Any]
) -> None:
    kind, *rest = op
    if kind == "append":
        i, more = rest
        added = build_log(plans[i] + more)[len(build_log(plans[i])) :]
        try:
            writer.append(sid(i), added)
            plans[i] = plans[i] + more
        except Exception:  # noqa: BLE001 - a log the writer refuses stays as it is
            pass
    elif kind == "live" and not store.is_live(sid(rest[0])):
        i, same = rest
        created = EPOCH_MS + i if same else EPOCH_MS + 100 + i  # another header: a conflict
        store.create(hdr(sid(i), created, cwd=CWD, delegationDepth=0))
    elif kind == "live-title" and store.is_live(sid(rest[0])):
        i, text = rest
        title = {"title": text, "messageSeqs": [], "source": {"kind": "user"}}
        store.append(sid(i), [{"type": "session/title", "data": title}])
    elif kind == "drop":
        store.remove(sid(rest[0]))


@PROPERTY
@given(
    st.lists(st.lists(PLAN_STEP, min_size=1, max_size=8), min_size=SESSIONS, max_size=SESSIONS),
    st.lists(OP, max_size=14),
    st.sampled_from([2, CAPACITY]),
)
def test_batches_given_back_equal_full_reads(plans, ops, capacity) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "store", "sessions.db")
        writer = SqliteBackend(path)
        for i, plan in enumerate(plans):
            writer.create(header(sid(i), EPOCH_MS + i, cwd=CWD, delegationDepth=0))
            writer.append(sid(i), build_log(plan))
        fast, full = SqliteBackend(path), SqliteBackend(path)
        store = SessionStore()  # one live store, seen by both services
        fast_service, full_service = over(store, fast), over(store, InspectOnly(full))
        fast_service.titles.memo = TitleMemo(capacity)
        plans = list(plans)
        try:
            for op in [("batch", "all"), *ops, ("batch", "all")]:
                apply(op, writer, store, plans)
                ids = ids_for(op[1]) if op[0] == "batch" else ids_for("all")
                expected = answer(full_service, ids)
                for _ in range(3):  # read, from the memo, then given back whole
                    assert answer(fast_service, ids) == expected, op
        finally:
            for backend in (writer, fast, full):
                backend.close()


def test_a_batch_is_given_back_while_nothing_changed(tmp_path) -> None:
    """By example: the third batch is the second's results, the very same objects; a commit to
    the live store or an append by another writer ends that."""
    writer = SqliteBackend(str(tmp_path / "sessions.db"))
    for i in range(3):
        writer.create(header(sid(i), EPOCH_MS + i, cwd=CWD, delegationDepth=0))
        writer.append(sid(i), build_log([("turn", 0), ("user", 0), ("title", 0), ("end", 0)]))
    reader = SqliteBackend(str(tmp_path / "sessions.db"))
    store = SessionStore()
    service = over(store, reader)
    ids = [sid(i) for i in range(3)]
    try:
        service.read_titles(ids)  # reads every log
        second = service.read_titles(ids)  # from the memo
        third = service.read_titles(ids)
        assert all(a is b for a, b in zip(second, third, strict=True))
        assert third is not second  # a list of its own: the caller may keep or change it
        store.create(hdr("live", EPOCH_MS, cwd=CWD, delegationDepth=0))
        after_commit = service.read_titles(ids)
        assert after_commit == third
        title = build_log([("turn", 0), ("user", 0), ("title", 0), ("end", 0), ("title", 0)])[4]
        writer.append(sid(1), [title])
        renamed = to_builtins(service.read_titles(ids))
        assert renamed[1]["value"]["title"]["title"] == "title 4"
        assert to_builtins(service.read_titles(ids)) == renamed
    finally:
        writer.close()
        reader.close()
