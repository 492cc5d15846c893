"""``readSessionView`` (views.md §3.2 [ours]) is exactly the four requests the session view made
before, from one load: ``readTimeline``, ``listEvents``, the ``readTitles`` entry of the id and,
with the log, ``readSession``'s events; a failure is the first of theirs."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dsh_query_server.errors import QueryError
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.session.store import SessionStore
from tests.builders import A, U, chunk, ev, example_a, example_c, hdr, log_only, user_data
from tests.fakes import MemoryBackend


def _title(seq: int, title: Any) -> Any:
    source = {"kind": "user"}
    return log_only("session/title", seq, {"title": title, "messageSeqs": [0], "source": source})


PERSISTED = {
    "a": example_a(),
    "c": example_c(),
    "chunks": [U(0), chunk(1, "part one"), chunk(2, "part two", index=1), A(3)],
    "titled": [U(0), A(1), _title(2, "first"), U(3), _title(4, "second")],
    "bad-title": [U(0), _title(1, 5)],  # malformed: the view's title entry is its rejection
    "bad-surface": [ev("user/message", 0, user_data("x")), U(1)],  # seq 0 lacks surfaceOp
    "no-replay": [log_only("turn/start", 1, {"turn": 1})],  # CORRUPT_SESSION from readSession
    "empty": [],
}


@pytest.fixture
def service() -> SessionQueryService:
    store = SessionStore()
    binding = PersistenceBinding()
    backend = MemoryBackend()
    for sid, events in PERSISTED.items():
        backend.put(hdr(sid), events)
    binding.mount(backend)
    store.create(hdr("live"), seed=[e.to_value() for e in example_c()])
    return SessionQueryService(store, binding)


def _answer(call: Any) -> Any:
    """The JSON an answer is sent as, or the error's (code, message)."""
    try:
        return msgspec.json.encode(call())
    except QueryError as exc:
        return (exc.code, exc.message)


def _before(service: SessionQueryService, sid: str, with_log: bool) -> Any:
    """What the four requests answered, as one view would hold them; the first error."""
    parts: dict[str, Any] = {}
    calls = [
        ("timeline", lambda: service.read_timeline(sid)),
        ("events", lambda: service.list_events(sid)),
        ("title", lambda: service.read_titles([sid])[0]),
    ]
    if with_log:
        calls.append(("log", lambda: service.read_session(sid).events))
    for key, call in calls:
        answer = _answer(call)
        if isinstance(answer, tuple):
            if key != "title":
                return answer
        parts[key] = msgspec.json.decode(answer) if isinstance(answer, bytes) else answer
    return parts


@pytest.mark.parametrize("sid", [*PERSISTED, "live", "missing"])
@pytest.mark.parametrize("with_log", [True, False])
def test_the_view_is_the_four_answers(service, sid, with_log):
    view = _answer(lambda: service.read_session_view(sid, with_log))
    before = _before(service, sid, with_log)
    if isinstance(before, tuple):
        assert view == before
        return
    assert isinstance(view, bytes)
    assert msgspec.json.decode(view) == before


def test_a_malformed_title_is_a_rejection_inside_the_view(service):
    view = msgspec.json.decode(msgspec.json.encode(service.read_session_view("bad-title", True)))
    assert view["title"]["status"] == "rejected"
    assert view["title"]["reason"]["code"] == "SESSION_QUERY_CORRUPT_SESSION"
    titled = msgspec.json.decode(msgspec.json.encode(service.read_session_view("titled", False)))
    assert titled["title"]["value"]["title"]["title"] == "second"
    assert "log" not in titled
