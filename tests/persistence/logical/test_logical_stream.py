"""``StreamedLog.extend`` (its inlined current-form path) equals ``append`` one event at a time,
for any split of any log into batches: the same window, shape, count and held error."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.logical.legacy import LEGACY_TYPES, NeedsHistory
from dsh_query_server.persistence.logical.log import StreamedLog

_TYPES = sorted(LEGACY_TYPES) + ["session/title", "assistant/chunk", "tool/call", "x/unknown"]
_DATA = st.one_of(
    st.none(),
    st.integers(0, 3),
    st.fixed_dictionaries({"turn": st.integers(0, 2)}),
    st.fixed_dictionaries(
        {"message": st.fixed_dictionaries({"id": st.sampled_from(["m1", "m2"])})}
    ),
    st.fixed_dictionaries({"content": st.just([{"type": "text", "text": "hi"}])}),
)


@st.composite
def _event(draw: st.DrawFn, seq: int) -> Event:
    if draw(st.integers(0, 15)) == 0:  # a non-string type: held as an error by append
        return Event.from_json(b'{"type":[1],"seq":%d,"time":0,"data":null}' % seq)
    return make_event(draw(st.sampled_from(_TYPES)), seq, seq, draw(_DATA))


@st.composite
def _logs(draw: st.DrawFn) -> list[Event]:
    size = draw(st.integers(0, 12))
    return [draw(_event(seq)) for seq in range(size)]


def _outcome(stream: StreamedLog, feed: Any) -> Any:
    try:
        feed(stream)
        window, shape = stream.finish()
    except NeedsHistory:
        return "needs history", stream.count
    except Exception as exc:  # noqa: BLE001 - the held error is part of the outcome
        return type(exc).__name__, str(exc), stream.count
    return [e.raw for e in window], shape, stream.count


@settings(max_examples=300)
@given(_logs(), st.lists(st.integers(1, 5), max_size=6), st.integers(0, 12), st.integers(0, 12))
def test_extend_equals_append_one_by_one(
    events: list[Event], cuts: list[int], first: int, span: int
) -> None:
    def one_by_one(stream: StreamedLog) -> None:
        for event in events:
            stream.append(event)

    def batched(stream: StreamedLog) -> None:
        start = 0
        for size in [*cuts, len(events)]:
            stream.extend(events[start : start + size])
            start += size

    expected = _outcome(StreamedLog("s", first, first + span), one_by_one)
    assert _outcome(StreamedLog("s", first, first + span), batched) == expected


_SEQS = st.one_of(
    st.integers(-2, 2**53 + 2), st.sampled_from([True, False, 1.0, 2.5, -0.0, "1", None])
)


@given(st.lists(_SEQS, max_size=6), st.integers(-2, 2**53 + 2), st.booleans())
def test_window_cover_check_equals_the_per_event_rule(seqs: list[Any], lo: int, run: bool) -> None:
    from dsh_query_server.persistence.logical.log import _covers  # pyright: ignore[reportPrivateUsage]
    from dsh_query_server.values import is_nonneg_safe_integer

    if run:  # mostly a true run from lo, so the equal case is met often
        seqs = list(range(lo, lo + len(seqs)))
    stored = [Event.from_json(jsoncodec.dumps({"type": "x", "seq": seq})) for seq in seqs]
    expected = all(is_nonneg_safe_integer(e.seq) and e.seq == lo + i for i, e in enumerate(stored))
    assert _covers(stored, lo) == expected
