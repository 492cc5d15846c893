"""A long log's documents read window by window (texts kept from the fold pass, or read again
when they outgrow the budget) equal the documents of the whole log (semantics.md §6.4)."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.sqlite import SqliteBackend
from dsh_query_server.search import documents
from tests.builders import A, R, U, chunk, hdr


@st.composite
def logs(draw: st.DrawFn) -> list[Any]:
    events: list[Any] = []
    surface: list[int] = []  # seqs of the messages so far (a replace picks its range there)
    kinds = ["user", "assistant", "chunk", "replace"]
    for seq in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(kinds if surface else kinds[:3]))
        text = draw(st.sampled_from(["needle", "hay stack", "needle hay", "", "  "]))
        if kind == "user":
            events.append(U(seq, text))
            surface.append(seq)
        elif kind == "assistant":
            events.append(A(seq, text))
            surface.append(seq)
        elif kind == "chunk":
            events.append(chunk(seq, text or "x"))
        else:  # a surface rewrite of earlier messages (rarely an invalid one)
            first = draw(st.integers(0, len(surface) - 1))
            start, end = surface[first], surface[draw(st.integers(first, len(surface) - 1))]
            if draw(st.integers(0, 9)) == 0:
                start = seq  # not in the surface: INVALID_SURFACE
            events.append(A(seq, text, op=R(start, end), src=[start]))
            surface.append(seq)
    return events


def _outcome(run: Any) -> Any:
    try:
        read = run()
        docs = list(read)
        read.raise_error()
        return docs
    except QueryError as exc:
        return exc.code, exc.message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.integers(1, 4), st.sampled_from([0, 40, 10**9]))
def test_windowed_documents_equal_the_whole_log(events, window, budget) -> None:
    directory = tempfile.mkdtemp()
    patch = pytest.MonkeyPatch()
    try:
        backend = SqliteBackend(f"{directory}/store.sqlite")
        backend.create(Header.from_value(hdr("s")))
        backend.append("s", events)
        binding = PersistenceBinding()
        binding.mount(backend)
        whole = _outcome(
            lambda: documents.Read(
                Header.from_value(hdr("s")),
                documents.persisted_documents("s", backend.inspect("s").events),
            )
        )
        patch.setattr(documents, "WINDOW", window)
        patch.setattr(documents, "TEXT_BUDGET", budget)
        bound = binding.current()
        assert bound is not None
        assert _outcome(lambda: documents.read_persisted(bound.logs, "s", NULL_TOKEN)) == whole
        backend.close()
    finally:
        patch.undo()
        shutil.rmtree(directory)
