"""The door to a mounted backend's reads (persistence/reads.py): it chooses the read path the
backend offers, checks what comes back and maps failures as semantics.md §3.0.4, §3.0.5 and
tools.md §2.6 name them (search and the checkpointer get the backend's own failures)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from dsh_query_server import errors
from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.errors import (
    SessionPersistenceCorruptionError,
    SessionRawArtifactsUnsupportedError,
)
from dsh_query_server.persistence.contract.results import (
    BulkResult,
    Digest,
    Inspection,
    Payloads,
    Reading,
    SessionRawArtifact,
    Snapshot,
    Window,
)
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.persistence.reads import StoredLogs
from tests.builders import U, hdr, log_only
from tests.fakes import MemoryBackend, ops

TITLE = {"title": "A title", "messageSeqs": [0], "source": {"kind": "user"}}
EVENTS = [U(0, "one"), log_only("session/title", 1, TITLE), U(2, "two"), log_only("x/note", 3)]


class Windowed(MemoryBackend):
    """A backend with every optional read path, each recorded."""

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        self._enter("inspect_window", (session_id, first, last), token)
        header, events = self.sessions[session_id]
        title = next((e.seq for e in reversed(events) if e.type == "session/title"), None)
        return Window(header, len(events), first, list(events[first : last + 1]), title)

    def inspect_outline(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        self._enter("inspect_outline", session_id, token)
        header, events = self.sessions[session_id]
        return Inspection(header, list(events))

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        self._enter("list_one", session_id, token)
        return self.sessions[session_id][0] if session_id in self.sessions else None


def mounted(backend: MemoryBackend) -> StoredLogs:
    backend.put(hdr("s", 1), EVENTS)
    backend.put(hdr("t", 2), [])
    return PersistenceBinding().mount(backend).logs


def failure(call: Any) -> tuple[str, str, Any]:
    with pytest.raises(QueryError) as info:
        call()
    return info.value.code, info.value.message, info.value.cause


def test_each_read_takes_the_path_the_backend_offers() -> None:
    plain, windowed = MemoryBackend(), Windowed()
    plain_logs, windowed_logs = mounted(plain), mounted(windowed)
    assert ops(plain) == ops(windowed) == []  # nothing is called at mount
    for logs in (plain_logs, windowed_logs):
        found = logs.header("s")
        assert found is not None and found.raw == Header.from_value(hdr("s", 1)).raw
        assert logs.header("missing") is None
        assert [h.id for h in logs.headers()] == ["s", "t"]
        assert logs.outline("s").events == logs.log("s").events == EVENTS
        window = logs.window("s", 1, 2)
        assert (window.length, window.start, window.events, window.title) == (4, 1, EVENTS[1:3], 1)
        assert logs.window("s", 5, 9).events == []
    assert ops(plain) == ["list", "list", "list", "inspect", "inspect", "inspect", "inspect"]
    assert ops(windowed) == [
        "list_one",
        "list_one",
        "list",
        "inspect_outline",
        "inspect",
        "inspect_window",
        "inspect_window",
    ]
    assert not plain_logs.reads_windows and windowed_logs.reads_windows


def test_windows_of_a_log_without_window_reads_inspect_it_once() -> None:
    backend = MemoryBackend()
    windows = mounted(backend).windows("s")
    shape = windows.read(0, -1)
    assert (shape.length, shape.events, shape.title) == (4, [], 1)
    assert windows.read(1, 1).events == [EVENTS[1]]
    assert windows.read(0, 63).events == EVENTS
    assert ops(backend) == ["inspect"]


@pytest.mark.parametrize("backend", [MemoryBackend(), Windowed()], ids=["plain", "windowed"])
def test_failures_are_mapped_as_the_spec_names_them(backend: MemoryBackend) -> None:
    logs = mounted(backend)
    backend.fail["list"] = backend.fail["list_one"] = OSError("disk gone")
    listing = (
        errors.PERSISTENCE_FAILED,
        "session persistence listing failed: disk gone",
        "disk gone",
    )
    assert failure(lambda: logs.header("s")) == listing
    assert failure(lambda: logs.headers()) == listing
    backend.corrupt.add("s")
    backend.fail["inspect_window"] = SessionPersistenceCorruptionError("bad bytes")
    corrupt = (errors.CORRUPT_SESSION, 'stored session "s" is corrupt: bad bytes', "bad bytes")
    assert failure(lambda: logs.log("s")) == corrupt
    assert failure(lambda: logs.window("s", 0, 1)) == corrupt
    backend.fail["inspect_window"] = KeyError("gone")
    assert failure(lambda: logs.log("missing")) == (
        errors.PERSISTENCE_FAILED,
        'failed to inspect session "missing": session "missing" not found',
        'session "missing" not found',
    )


def test_a_failure_after_a_cancel_is_the_cancellation() -> None:
    backend = MemoryBackend()
    logs = mounted(backend)
    token = CancelToken()

    def cancel_then_fail(op: str, arg: Any, tok: CancelToken) -> None:
        token.cancel()
        raise OSError("interrupted")

    backend._enter = cancel_then_fail  # type: ignore[method-assign]
    aborted = (errors.ABORTED, errors.CANCELLED_MESSAGE, None)
    assert failure(lambda: logs.header("s", token)) == aborted
    assert failure(lambda: logs.log("s", CancelToken())) == (  # another request's token fired
        errors.PERSISTENCE_FAILED,
        'failed to inspect session "s": interrupted',
        "interrupted",
    )


@pytest.mark.parametrize("backend", [MemoryBackend(), Windowed()], ids=["plain", "windowed"])
def test_no_backend_call_starts_after_a_cancel(backend: MemoryBackend) -> None:
    logs = mounted(backend)
    token = CancelToken()
    token.cancel()
    reads = [
        lambda: logs.headers(token),
        lambda: logs.header("s", token),
        lambda: logs.log("s", token),
        lambda: logs.outline("s", token),
        lambda: logs.window("s", 0, 1, token),
    ]
    for read in reads:
        assert failure(read) == (errors.ABORTED, errors.CANCELLED_MESSAGE, None)
    assert ops(backend) == []


class Broken(Windowed):
    def list(self, token: CancelToken = NULL_TOKEN) -> Any:
        return ("not", "a list")

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        return Header.from_value(hdr("other", 1))

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        return Window(Header.from_value(hdr(session_id, 1)), 4, first, [])


def test_results_that_break_the_contract_fail_the_read_that_asked() -> None:
    logs = mounted(Broken())
    not_headers = "persistence listing is not a list of session headers"
    assert (
        failure(lambda: logs.headers())[1] == f"session persistence listing failed: {not_headers}"
    )
    assert (
        failure(lambda: logs.header("s"))[1] == f"session persistence listing failed: {not_headers}"
    )
    assert failure(lambda: logs.window("s", 0, 2))[1] == (
        'failed to inspect session "s": persistence returned a window that does not hold'
        " events 0..2"
    )
    with pytest.raises(TypeError):  # the checkpointer's read: the backend's failure, checked
        logs.stored_window("s", 0, 2)


class Raw(MemoryBackend):
    supports_raw_artifacts = True

    def locate(self, header: Header) -> None:
        return None

    def read_raw(self, session_id: str, token: CancelToken = NULL_TOKEN) -> SessionRawArtifact:
        self._enter("read_raw", session_id, token)
        return SessionRawArtifact(self.sessions[session_id][0], "session.jsonl", b"bytes")


def test_raw_artifacts_are_read_where_the_backend_stores_them() -> None:
    with pytest.raises(SessionRawArtifactsUnsupportedError):
        mounted(MemoryBackend()).raw("s")
    backend = Raw()
    logs = mounted(backend)
    artifact = logs.raw("s")
    assert artifact is not None and artifact.content == b"bytes"
    backend.fail["read_raw"] = PermissionError("denied")
    assert failure(lambda: logs.raw("s")) == (
        errors.PERSISTENCE_FAILED,
        'failed to read the stored log of session "s": denied',
        "denied",
    )


class Bulk(MemoryBackend):
    def __init__(self, answer: str | None = None) -> None:
        super().__init__()
        self.answer = answer
        self.payloads: Payloads = None

    def inspect_many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken = NULL_TOKEN,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[tuple[str, BulkResult]]:
        self.payloads = payloads
        del digest  # never digested: a result may always come whole
        for sid in session_ids:
            yield (self.answer or sid), self.inspect(sid, token)


def test_many_reads_in_bulk_where_it_can_and_checks_the_answers() -> None:
    plain = MemoryBackend()
    assert list(mounted(plain).many(["s", "t"], 10, NULL_TOKEN)) == [None, None]
    assert ops(plain) == []  # each is left to the caller's own read
    answers = list(mounted(Bulk()).many(["s", "t"], 10, NULL_TOKEN))
    assert [a.events if isinstance(a, Inspection) else a for a in answers] == [EVENTS, []]
    with pytest.raises(ValueError, match="bulk inspection answered 'x' for 's'"):
        list(mounted(Bulk("x")).many(["s"], 10, NULL_TOKEN))
    bulk = Bulk()  # the payloads the caller reads reach the backend
    reading = Reading(texts=frozenset({"user/message"}))
    list(mounted(bulk).many(["s"], 10, NULL_TOKEN, reading))
    assert bulk.payloads == reading


def test_snapshots_are_checked_and_an_unchanged_listing_is_the_known_one() -> None:
    backend = MemoryBackend()
    logs = mounted(backend)
    first = logs.snapshots(NULL_TOKEN)
    assert list(first.by_id) == ["s", "t"]
    assert logs.snapshots(NULL_TOKEN, first) is first  # the same immutable headers again
    backend.put(hdr("s", 1), EVENTS)  # a new revision
    assert logs.snapshots(NULL_TOKEN, first) is not first
    header = Header.from_value(hdr("s", 1))
    backend.list_snapshots = lambda token=NULL_TOKEN: [  # type: ignore[method-assign]
        Snapshot(header, "a"),
        Snapshot(header, "b"),
    ]
    with pytest.raises(ValueError, match='persistence listed duplicate session "s"'):
        logs.snapshots(NULL_TOKEN)
