"""The title memo (query/titlememo.py, semantics.md §3.8): a title batch served from what earlier
batches read at the same revisions answers exactly what a batch that inspects every log answers,
for random corpora, before and after random appends by another writer."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.persistence.sqlite import backend as sqlite_backend
from dsh_query_server.query.service import SessionQueryService
from tests.builders import EPOCH_MS, header
from tests.persistence.test_window import (
    CWD,
    PLAN_STEP,
    PROPERTY,
    InspectOnly,
    batches,
    build_log,
    service_over,
)

# Each session: its log's plan, the cuts of its appends, and what another writer appends later
# (None: nothing).
SESSION = st.tuples(
    st.lists(PLAN_STEP, min_size=1, max_size=12),
    st.lists(st.integers(0, 10**6), max_size=3),
    st.none() | st.lists(PLAN_STEP, min_size=1, max_size=6),
)
CORPUS = st.lists(SESSION, min_size=1, max_size=6)


def sid(i: int) -> str:
    return f"s{i}"


def write(backend: Any, corpus: list[Any]) -> None:
    for i, (plan, cuts, _) in enumerate(corpus):
        backend.create(header(sid(i), EPOCH_MS + i, cwd=CWD, delegationDepth=0))
        for batch in batches(build_log(plan), cuts):
            backend.append(sid(i), batch)


def append_more(backend: Any, corpus: list[Any]) -> None:
    """The later appends: each continues its log (seqs and turns as one longer plan would)."""
    for i, (plan, _, more) in enumerate(corpus):
        if more is None:
            continue
        added = build_log(plan + more)[len(build_log(plan)) :]
        try:
            backend.append(sid(i), added)
        except Exception:  # noqa: BLE001 - a log the writer refuses (torn, corrupt) stays as it is
            pass


def titles(service: SessionQueryService, ids: list[str]) -> Any:
    return to_builtins(service.read_titles(ids))


def same_titles(fast: SessionQueryService, full: SessionQueryService, ids: list[str]) -> None:
    for _ in range(2):  # the second batch is served by the memo wherever the first could fill it
        assert titles(fast, ids) == titles(full, ids)


def ids_of(corpus: list[Any]) -> list[str]:
    return [sid(i) for i in range(len(corpus))][::-1] + ["missing", "s0"]


@PROPERTY
@given(CORPUS)
def test_sqlite_titles_from_the_memo_equal_full_reads(corpus) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "store", "sessions.db")
        writer = SqliteBackend(path)
        write(writer, corpus)
        fast, full = SqliteBackend(path), SqliteBackend(path)
        try:
            fast_service, full_service = service_over(fast), service_over(InspectOnly(full))
            same_titles(fast_service, full_service, ids_of(corpus))
            append_more(writer, corpus)
            same_titles(fast_service, full_service, ids_of(corpus))
        finally:
            for backend in (writer, fast, full):
                backend.close()


@PROPERTY
@given(CORPUS, st.sampled_from(["none", "zstd"]))
def test_jsonl_titles_from_the_memo_equal_full_reads(corpus, compression) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = os.path.join(directory, "root")
        writer = JsonlBackend(root, compression=compression)
        write(writer, corpus)
        fast, full = JsonlBackend(root, read_only=True), JsonlBackend(root, read_only=True)
        fast_service, full_service = service_over(fast), service_over(InspectOnly(full))
        same_titles(fast_service, full_service, ids_of(corpus))
        append_more(writer, corpus)
        same_titles(fast_service, full_service, ids_of(corpus))


# -- the memo by example --------------------------------------------------------------------------


def title(seq: int, text: str) -> Event:
    return make_event(
        "session/title",
        seq,
        1000 + seq,
        {"title": text, "messageSeqs": [], "source": {"kind": "user"}},
    )


def plain_log(text: str) -> list[Event]:
    return build_log([("turn", 0), ("user", 0), ("end", 0)]) + [title(3, text)]


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "sessions.db")
    writer = SqliteBackend(path)
    for i in range(3):
        writer.create(header(sid(i), EPOCH_MS + i, cwd=CWD, delegationDepth=0))
        writer.append(sid(i), plain_log(f"first {i}"))
    reader = SqliteBackend(path)
    yield writer, reader, service_over(reader)
    writer.close()
    reader.close()


def title_texts(service: SessionQueryService, ids: list[str]) -> list[Any]:
    return [r.get("value", {}).get("title", {}).get("title") for r in titles(service, ids)]


def test_a_warm_batch_reads_no_log(store, monkeypatch) -> None:
    _, _, service = store
    ids = [sid(i) for i in range(3)]
    assert title_texts(service, ids) == ["first 0", "first 1", "first 2"]

    def no_read(*args: Any) -> Any:
        raise AssertionError("a title known at this revision must not be read again")

    monkeypatch.setattr(sqlite_backend, "select_rows", no_read)
    monkeypatch.setattr(sqlite_backend, "select_span", no_read)
    monkeypatch.setattr(sqlite_backend, "select_session", no_read)
    assert title_texts(service, ids) == ["first 0", "first 1", "first 2"]


def test_an_append_is_seen_by_the_next_batch(store) -> None:
    writer, _, service = store
    ids = [sid(i) for i in range(3)]
    assert title_texts(service, ids) == ["first 0", "first 1", "first 2"]
    writer.append(sid(1), [title(4, "renamed")])
    assert title_texts(service, ids) == ["first 0", "renamed", "first 2"]
    assert title_texts(service, ids) == ["first 0", "renamed", "first 2"]


def test_a_new_binding_starts_empty(store, tmp_path) -> None:
    _, reader, service = store
    assert title_texts(service, [sid(0)]) == ["first 0"]
    assert len(service.titles.memo) == 1
    other = SqliteBackend(str(tmp_path / "other.db"))
    other.create(header(sid(0), EPOCH_MS, cwd=CWD, delegationDepth=0))
    other.append(sid(0), plain_log("elsewhere"))
    service.loader.binding.unmount()
    service.loader.binding.mount(other)
    try:
        assert title_texts(service, [sid(0)]) == ["elsewhere"]
    finally:
        other.close()
