"""views.md §1–§2 in process: the worked example, and (hypothesis) the surface at a point equals
the fold of the prefix and every timeline number equals a brute-force recomputation written here
from the definitions, one fold per prefix."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server import errors
from dsh_query_server.errors import QueryError
from dsh_query_server.model import wire
from dsh_query_server.model.event import Event, Header
from dsh_query_server.model.text import extract_text
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.progress import Tracker
from dsh_query_server.query.service import SessionQueryService
from dsh_query_server.query.timeline import build_timeline
from dsh_query_server.session.fold import fold_surface
from dsh_query_server.session.store import SessionStore
from tests.builders import A, R, U, assistant_data, ev, hdr, log_only
from tests.session.test_fold_property import valid_logs


def service_with(events: list[Event], sid: str = "s1") -> SessionQueryService:
    store = SessionStore()
    store.create({"version": 0, "id": sid, "createdAt": 0})
    if events:
        store.append(sid, [_input(e) for e in events])
    return SessionQueryService(store, PersistenceBinding())


def _input(event: Event) -> dict[str, Any]:
    value = event.to_value()
    del value["seq"]
    return value


def j(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


def worked_example() -> list[Event]:
    """views.md §2's worked example."""
    hi = assistant_data("hi")
    hi["usage"] = {"inputTokens": 10, "outputTokens": 2}
    return [
        U(0, "hello"),
        ev("assistant/message", 1, hi, op="append"),
        U(2, "more"),
        A(3, "sure"),
        U(4, "Summary: greeted", op=R(0, 3), src=[0, 1, 2, 3]),
        A(5, "ok"),
    ]


def test_worked_example():
    service = service_with(worked_example())
    timeline = j(service.read_timeline("s1"))
    assert timeline["session"]["id"] == "s1"
    assert timeline["capturedThroughSeq"] == 5
    assert timeline["contextWindow"] is None
    assert [(s["seq"], s["surface"]) for s in timeline["steps"]] == [
        (1, {"events": 1, "chars": 5, "approxTokens": 2}),
        (3, {"events": 3, "chars": 11, "approxTokens": 3}),
        (5, {"events": 1, "chars": 16, "approxTokens": 4}),
    ]
    assert [s["recorded"] for s in timeline["steps"]] == [
        {
            "input": 10,
            "cacheRead": None,
            "cacheWrite": None,
            "output": 2,
            "reasoning": None,
            "context": 10,
        },
        None,
        None,
    ]
    first = timeline["steps"][0]
    assert (first["time"], first["turn"], first["step"], first["model"]) == (
        1,
        1,
        1,
        "deepseek-chat",
    )
    assert timeline["replacements"] == [
        {
            "seq": 4,
            "time": 4,
            "type": "user/message",
            "kind": "compaction",
            "shadowed": {"count": 4, "firstSeq": 0, "lastSeq": 3},
            "before": {"events": 4, "chars": 15, "approxTokens": 4},
            "after": {"events": 1, "chars": 16, "approxTokens": 4},
        }
    ]
    assert timeline["peak"] == {"seq": 5, "approxTokens": 4, "recordedContext": None}
    seqs = [e["seq"] for e in j(service.read_surface("s1", through_seq=3))["events"]]
    assert seqs == [0, 1, 2, 3]
    through4 = j(service.read_surface("s1", through_seq=4))
    assert [e["seq"] for e in through4["events"]] == [4]
    assert through4["capturedThroughSeq"] == 4


def test_empty_log_has_no_steps_and_no_surface_point():
    service = service_with([])
    timeline = j(service.read_timeline("s1"))
    assert timeline["capturedThroughSeq"] is None
    assert (timeline["steps"], timeline["replacements"], timeline["peak"]) == ([], [], None)
    with pytest.raises(QueryError) as info:
        service.read_surface("s1", through_seq=0)
    assert info.value.code == errors.EVENT_NOT_FOUND


def test_through_seq_null_is_the_current_surface():
    service = service_with(worked_example())
    assert j(service.read_surface("s1", through_seq=None)) == j(service.read_surface("s1"))


# -- properties ---------------------------------------------------------------------------------


@st.composite
def logs_with_usage(draw):
    """valid_logs, with usage on some assistant messages (some fields absent or not numbers)
    and some log-only markers turned into request/context events."""
    events, _ = draw(valid_logs(max_size=30))
    counts = st.one_of(st.integers(0, 10**6), st.just(-1), st.just("7"), st.none())
    out = []
    for event in events:
        value = event.to_value()
        if event.type == "assistant/message" and draw(st.booleans()):
            usage = {
                key: draw(counts)
                for key in (
                    "inputTokens",
                    "outputTokens",
                    "cacheReadTokens",
                    "cacheWriteTokens",
                    "reasoningTokens",
                )
                if draw(st.booleans())
            }
            value["data"]["usage"] = usage
        elif event.type in ("turn/start", "step/start") and draw(st.booleans()):
            window = draw(st.one_of(st.integers(0, 10**6), st.none(), st.just("big")))
            value = {**value, "type": "request/context", "data": {"contextWindow": window}}
        out.append(Event.from_value(value))
    return out


def _num(value: Any) -> int | None:
    ok = type(value) is int and value >= 0
    return value if ok else None


def brute_recorded(data: dict[str, Any]) -> dict[str, Any] | None:
    """dsh's rule, from views.md §2, written again."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    fields = {
        "input": _num(usage.get("inputTokens")),
        "cacheRead": _num(usage.get("cacheReadTokens")),
        "cacheWrite": _num(usage.get("cacheWriteTokens")),
        "output": _num(usage.get("outputTokens")),
        "reasoning": _num(usage.get("reasoningTokens")),
    }
    if fields["input"] is None:
        context = None
    else:
        context = fields["input"] + (fields["cacheRead"] or 0) + (fields["cacheWrite"] or 0)
    return {**fields, "context": context}


def measure(events: list[Event], through: int) -> dict[str, int]:
    """The surface after events 0..through, folded from scratch and measured."""
    nodes = fold_surface(events[: through + 1]).nodes
    chars = sum(len(extract_text(events[s])) for s in nodes)
    return {"events": len(nodes), "chars": chars, "approxTokens": math.ceil(chars / 4)}


def brute_timeline(events: list[Event]) -> dict[str, Any]:
    steps = []
    for e in events:
        if e.type != "assistant/message":
            continue
        data = e.data()
        steps.append(
            {
                "seq": e.seq,
                "time": e.time,
                "turn": data["turn"],
                "step": data["step"],
                "model": data["message"]["source"]["model"],
                "surface": measure(events, e.seq - 1),
                "recorded": brute_recorded(data),
            }
        )
    replacements = []
    for rep in fold_surface(events).replacements:
        before_nodes = fold_surface(events[: rep.seq]).nodes
        after_nodes = set(fold_surface(events[: rep.seq + 1]).nodes)
        gone = [s for s in before_nodes if s not in after_nodes]
        etype = events[rep.seq].type
        replacements.append(
            {
                "seq": rep.seq,
                "time": events[rep.seq].time,
                "type": etype,
                "kind": "tool-result-rewrite" if etype == "tool/result" else "compaction",
                "shadowed": {"count": len(gone), "firstSeq": gone[0], "lastSeq": gone[-1]},
                "before": measure(events, rep.seq - 1),
                "after": measure(events, rep.seq),
            }
        )
    windows = [
        e.data()["contextWindow"]
        for e in events
        if e.type == "request/context" and _num(e.data().get("contextWindow")) is not None
    ]
    peak = None
    if steps:
        top = max(s["surface"]["approxTokens"] for s in steps)
        best = next(s for s in steps if s["surface"]["approxTokens"] == top)
        context = best["recorded"]["context"] if best["recorded"] else None
        peak = {"seq": best["seq"], "approxTokens": top, "recordedContext": context}
    return {
        "capturedThroughSeq": len(events) - 1 if events else None,
        "contextWindow": windows[-1] if windows else None,
        "steps": steps,
        "replacements": replacements,
        "peak": peak,
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs_with_usage())
def test_every_timeline_number_equals_a_brute_force_recomputation(events):
    timeline = j(service_with(events).read_timeline("s1"))
    del timeline["session"]
    assert timeline == brute_timeline(events)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_logs(max_size=30), st.data())
def test_surface_through_seq_equals_the_fold_of_the_prefix(log, data):
    events, _ = log
    service = service_with(events)
    if not events:
        return
    through = data.draw(st.integers(0, len(events) - 1))
    snapshot = j(service.read_surface("s1", through_seq=through))
    expected = fold_surface(events[: through + 1]).nodes
    assert [e["seq"] for e in snapshot["events"]] == expected
    assert snapshot["events"] == [events[s].to_value() for s in expected]
    assert snapshot["capturedThroughSeq"] == through
    with pytest.raises(QueryError) as info:
        service.read_surface("s1", through_seq=len(events))
    assert info.value.code == errors.EVENT_NOT_FOUND


def test_log_only_events_change_no_surface():
    events = [U(0, "abcd"), log_only("turn/start", 1, {"turn": 1}), A(2, "x")]
    step = j(service_with(events).read_timeline("s1"))["steps"][0]
    assert step["surface"] == {"events": 1, "chars": 4, "approxTokens": 1}


def test_the_timeline_counts_its_pass_over_the_events():
    """``charting k of n events`` (protocol.md §8 "After a read"): every 4,096 events, rising,
    with the header's own JSON as the session."""

    class Told(Tracker):
        def __init__(self) -> None:
            super().__init__(None, "t")
            self.told: list[str | None] = []

        def report(self, message: str | None, done: int | None = None, total: int | None = None):
            self.told.append(message)

    events = [U(seq, f"m{seq}") if seq % 2 == 0 else A(seq, "a") for seq in range(10_000)]
    header = Header.from_value(hdr("s", 1))
    told = Told()
    build_timeline(wire.raw(header), header, events, fold_surface(events), told)
    assert told.told == [f"charting {k:,} of 10,000 events" for k in (0, 4096, 8192)]
