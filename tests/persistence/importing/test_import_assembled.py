"""The emitter builds an event's JSON around its payload's encoding (no parse of the bytes back)
when nothing is told the emitted values; with a sink it encodes the whole object and parses it.
Both give the same event: the same bytes, envelope and payload, surface events included."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from dsh_query_server.model.event import Event
from dsh_query_server.persistence.importing.emitter import Emitter

text = st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", 'é\n"\\', "\u2028"]))
value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(
        allow_nan=False, allow_infinity=False), text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)
    ),
    max_leaves=10,
)  # fmt: skip
payload = st.dictionaries(text.filter(lambda k: k != "import"), value, max_size=4)
op = st.one_of(
    st.none(),
    st.just("append"),
    st.builds(
        lambda a, b: {"op": "replace", "start": a, "end": b}, st.integers(0, 9), st.integers(0, 9)
    ),
)
sources = st.one_of(st.none(), st.lists(st.integers(0, 2**40), max_size=4))


def envelope(event: Event) -> tuple[Any, ...]:
    return (
        event.raw, event.type, event.seq, event.time, event.surface_op, event.source_seqs,
        event.ignorable, event.has_data, event.data_json, event.data(),
    )  # fmt: skip


def emitted(steps: list[tuple[str, dict[str, Any], Any, Any]], sink: bool) -> list[Event]:
    told: list[bytes] = []
    em = Emitter("test", 5, sink=(lambda v, raw: told.append(raw)) if sink else None)
    em.begin(3, 1_700_000_000_123, "f.jsonl")
    for etype, data, surface_op, src in steps:
        if surface_op is None:
            em.log(etype, dict(data))
        else:
            value: dict[str, Any] = {"type": etype, "data": dict(data), "surfaceOp": surface_op}
            if src is not None:
                value["sourceEventSeqs"] = src
            em._put(value, em.time)  # pyright: ignore[reportPrivateUsage]
    if sink:
        assert told == [e.raw for e in em.events]
    return em.events


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.sampled_from(["user/message", "tool/result", "x/y"]), payload, op, sources),
        min_size=1,
        max_size=5,
    )
)
def test_assembled_events_equal_parsed_ones(steps) -> None:
    fast, slow = emitted(steps, sink=False), emitted(steps, sink=True)
    assert [envelope(e) for e in fast] == [envelope(e) for e in slow]
    assert all(e.source_seqs is UNSET for e, s in zip(fast, steps, strict=True) if s[3] is None)


def test_a_surface_event_in_bytes() -> None:
    [event] = emitted([("user/message", {"content": "hi"}, "append", [0])], sink=False)
    assert event.raw == (
        b'{"type":"user/message","seq":0,"time":1700000000123,"data":{"content":"hi"},'
        b'"surfaceOp":"append","sourceEventSeqs":[0]}'
    )
    assert event.data_json == b'{"content":"hi"}'
    assert Event.from_json(event.raw).data_json == event.data_json
