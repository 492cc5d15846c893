"""persistence.md §3: packed chunk rows, interrupted-turn closers, legacy normalization."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server import jsoncodec
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.logical.closers import OUTCOME_UNKNOWN_TEXT, closers
from dsh_query_server.persistence.logical.legacy import normalize_legacy
from dsh_query_server.persistence.logical.log import logical_log
from dsh_query_server.persistence.logical.records import MalformedRow, PackedRow, pack, unpack_row

# ---------------------------------------------------------------------------------------------
# helpers


def text_chunk(
    seq: int,
    time: int,
    text: str,
    *,
    kind: str = "text-delta",
    turn: Any = 1,
    step: Any = 1,
    index: Any = 0,
) -> Event:
    chunk = {"type": kind, "index": index, "text": text}
    return make_event("assistant/chunk", seq, time, {"turn": turn, "step": step, "chunk": chunk})


def tool_chunk(
    seq: int, time: int, args: str, *, call_id: str = "c1", name: Any = None, index: Any = 0
) -> Event:
    chunk: dict[str, Any] = {"type": "tool-call-delta", "index": index, "id": call_id}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = args
    return make_event("assistant/chunk", seq, time, {"turn": 1, "step": 1, "chunk": chunk})


def values(records: list[Any]) -> list[Any]:
    return [r.to_value() if isinstance(r, Event) else r for r in records]


def unpacked(records: list[Event | PackedRow]) -> list[Event]:
    out: list[Event] = []
    for record in records:
        if isinstance(record, PackedRow):
            out.extend(unpack_row(jsoncodec.loads(record.to_json())))
        else:
            out.append(record)
    return out


def first_row(records: list[Event | PackedRow]) -> PackedRow:
    assert isinstance(records[0], PackedRow), records[0]
    return records[0]


def ev(kind: str, seq: int, data: Any, time: int = 0, **kw: Any) -> Event:
    return make_event(kind, seq, time, data, **kw)


# ---------------------------------------------------------------------------------------------
# §3.2 worked example and reconstruction

EXAMPLE_ROW = (
    b'{"type":"text-chunks","seq0":3,"time0":1000,"data":{"turn":1,"step":1,"index":0,'
    b'"dt":[5,0,12],"texts":["Hel","lo"," wor","ld"]}}'
)


def test_worked_example_decodes_to_four_events() -> None:
    events = unpack_row(jsoncodec.loads(EXAMPLE_ROW))
    expected = [(3, 1000, "Hel"), (4, 1005, "lo"), (5, 1005, " wor"), (6, 1017, "ld")]
    assert [e.to_value() for e in events] == [
        {
            "type": "assistant/chunk",
            "seq": s,
            "time": t,
            "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": x}},
        }
        for s, t, x in expected
    ]
    # key order per spec
    assert events[0].raw == (
        b'{"type":"assistant/chunk","seq":3,"time":1000,"data":{"turn":1,"step":1,'
        b'"chunk":{"type":"text-delta","index":0,"text":"Hel"}}}'
    )


def test_worked_example_packs_back_to_the_same_row() -> None:
    events = unpack_row(jsoncodec.loads(EXAMPLE_ROW))
    [row] = pack(events)
    assert isinstance(row, PackedRow)
    assert row.to_json() == EXAMPLE_ROW
    assert row.members == 4
    assert row.data_json() == jsoncodec.dumps(jsoncodec.loads(EXAMPLE_ROW)["data"])


def test_tool_row_round_trip_with_and_without_name() -> None:
    named = [tool_chunk(i, 10 - i, a, name="bash") for i, a in enumerate(["{", '"a"', ":1}"])]
    [row] = pack(named)
    assert isinstance(row, PackedRow)
    assert row.tag == "tool-call-chunks"
    assert list(row.data) == ["turn", "step", "index", "dt", "id", "name", "args"]
    assert row.data["dt"] == [-1, -1]
    assert values(unpacked([row])) == values(named)
    anonymous = [tool_chunk(i, 0, a) for i, a in enumerate("xyz")]
    [row] = pack(anonymous)
    assert isinstance(row, PackedRow)
    assert "name" not in row.data
    assert values(unpacked([row])) == values(anonymous)


def test_reasoning_row_and_odd_numbers_round_trip() -> None:
    events = [
        text_chunk(i, -5 + i, "é\ud800", kind="reasoning-delta", turn=1.5, step=2, index=10**20)
        for i in range(3)
    ]
    [row] = pack(events)
    assert isinstance(row, PackedRow) and row.tag == "reasoning-chunks"
    back = unpacked([row])
    assert values(back) == values(events)
    assert [e.raw for e in back] == [e.raw for e in events]


# ---------------------------------------------------------------------------------------------
# §3.2 eligibility and runs


def test_runs_shorter_than_three_stay_verbatim() -> None:
    events = [text_chunk(0, 0, "a"), text_chunk(1, 0, "b")]
    assert pack(events) == events


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {"turn": True, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "b"}},
            ),
            id="bool-turn",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {
                    "turn": 1,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": False, "text": "b"},
                },
            ),
            id="bool-index",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "b"}},
                ignorable=True,
            ),
            id="ignorable",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "b"}},
                surface_op="append",
            ),
            id="surfaceOp",
        ),
        pytest.param(
            Event.from_value(
                {
                    "type": "assistant/chunk",
                    "seq": 1,
                    "time": 0,
                    "x": 1,
                    "data": {
                        "turn": 1,
                        "step": 1,
                        "chunk": {"type": "text-delta", "index": 0, "text": "b"},
                    },
                }
            ),
            id="extra-envelope-key",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {
                    "turn": 1,
                    "step": 1,
                    "x": 0,
                    "chunk": {"type": "text-delta", "index": 0, "text": "b"},
                },
            ),
            id="extra-data-key",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {
                    "turn": 1,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": "b", "x": 1},
                },
            ),
            id="extra-chunk-key",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": 5}},
            ),
            id="non-string-text",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0.5,  # pyright: ignore[reportArgumentType] - deliberately not an integer
                {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "b"}},
            ),
            id="fractional-time",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1.0,  # pyright: ignore[reportArgumentType] - deliberately a float
                0,
                {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "b"}},
            ),
            id="float-seq",
        ),
        pytest.param(
            make_event(
                "assistant/chunk",
                1,
                0,
                {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0}},
            ),
            id="block-start",
        ),
        pytest.param(make_event("user/message", 1, 0, {}), id="other-type"),
    ],
)
def test_an_ineligible_event_breaks_the_run(odd: Event) -> None:
    events = [text_chunk(0, 0, "a"), odd, text_chunk(2, 0, "c")]
    assert values(pack(events)) == values(events)


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(text_chunk(3, 0, "b"), id="seq-jump"),
        pytest.param(text_chunk(2, 0, "b", index=1), id="index"),
        pytest.param(text_chunk(2, 0, "b", step=2), id="step"),
        pytest.param(text_chunk(2, 0, "b", turn=1.0), id="turn-1.0"),
        pytest.param(text_chunk(2, 0, "b", kind="reasoning-delta"), id="kind"),
        pytest.param(text_chunk(2, 2**52, "b"), id="unsafe-dt"),
    ],
)
def test_runs_split_where_members_differ(second: Event) -> None:
    data = second.data()
    head = [text_chunk(0, -(2**52), "x"), text_chunk(1, -(2**52), "y")]
    tail = [
        text_chunk(
            second.seq + k,
            second.time,
            "z",
            kind=data["chunk"]["type"],
            turn=data["turn"],
            step=data["step"],
            index=data["chunk"]["index"],
        )
        for k in (1, 2)
    ]
    events = head + [second] + tail
    records = pack(events)
    assert [r.members if isinstance(r, PackedRow) else 1 for r in records] == [1, 1, 3]
    assert values(unpacked(records)) == values(events)


def test_tool_runs_split_on_name_presence_or_id() -> None:
    events = [
        tool_chunk(0, 0, "a"),
        tool_chunk(1, 0, "b"),
        tool_chunk(2, 0, "c", name="n"),
        tool_chunk(3, 0, "d", name="n"),
        tool_chunk(4, 0, "e", name="n"),
        tool_chunk(5, 0, "f", name="m"),
        tool_chunk(6, 0, "g", name="m", call_id="c2"),
    ]
    records = pack(events)
    assert [r.members if isinstance(r, PackedRow) else 1 for r in records] == [1, 1, 3, 1, 1]
    assert values(unpacked(records)) == values(events)


def test_sqlite_bounds_split_greedily() -> None:
    events = [text_chunk(i, i, "x" * 10) for i in range(10)]
    records = pack(events, max_members=4)
    assert [r.members if isinstance(r, PackedRow) else 1 for r in records] == [4, 4, 1, 1]
    size_of_3 = len(first_row(pack(events[:3])).data_json())
    records = pack(events, max_members=1024, max_data_bytes=size_of_3)
    assert [r.members if isinstance(r, PackedRow) else 1 for r in records] == [3, 3, 3, 1]
    records = pack(events, max_data_bytes=size_of_3 - 1)
    assert records == events
    assert values(unpacked(pack(events, max_members=3))) == values(events)


def test_sqlite_bounds_skip_one_oversized_member() -> None:
    events = [text_chunk(0, 0, "x" * 100)] + [text_chunk(i, 0, "y") for i in range(1, 5)]
    limit = len(first_row(pack(events[1:])).data_json())
    records = pack(events, max_data_bytes=limit)
    assert [r.members if isinstance(r, PackedRow) else 1 for r in records] == [1, 4]


# ---------------------------------------------------------------------------------------------
# §3.2 row validation, in order


def row(tag: str = "text-chunks", **data: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"turn": 1, "step": 1, "index": 0, "dt": [1, 1]}
    if tag == "tool-call-chunks":
        base.update(id="c", args=["a", "b", "c"])
    else:
        base["texts"] = ["a", "b", "c"]
    base.update(data)
    return {
        "type": tag,
        "seq0": 0,
        "time0": 0,
        "data": {k: v for k, v in base.items() if v is not ...},
    }


def with_envelope(value: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(value)
    out.update(changes)
    return {k: v for k, v in out.items() if v is not ...}


MALFORMED = [
    ("envelope-extra", with_envelope(row(), seq=0), "envelope keys"),
    ("envelope-missing", with_envelope(row(), time0=...), "envelope keys"),
    ("seq0-negative", with_envelope(row(), seq0=-1), "seq0"),
    ("seq0-bool", with_envelope(row(), seq0=False), "seq0"),
    ("seq0-unsafe", with_envelope(row(), seq0=2**53), "seq0"),
    ("time0-fraction", with_envelope(row(), time0=0.5), "time0"),
    ("data-array", with_envelope(row(), data=[]), "data must be an object"),
    ("data-extra-key", row(extra=1), "data keys"),
    ("data-missing-dt", row(dt=...), "data keys"),
    ("text-row-with-name", row(name="n"), "data keys"),
    ("tool-row-with-texts", row("tool-call-chunks", texts=["a"]), "data keys"),
    ("tool-id-number", row("tool-call-chunks", id=1), "strings"),
    ("tool-name-null", row("tool-call-chunks", name=None), "strings"),
    ("turn-bool", row(turn=True), "numbers"),
    ("index-string", row(index="0"), "numbers"),
    ("texts-empty", row(texts=[], dt=[]), "texts"),
    ("texts-non-string", row(texts=["a", 1, "c"]), "texts"),
    ("texts-not-array", row(texts="abc"), "texts"),
    ("args-non-string", row("tool-call-chunks", args=["a", None, "c"]), "args"),
    ("dt-short", row(dt=[1]), "dt"),
    ("dt-fraction", row(dt=[1, 0.5]), "dt"),
    ("dt-not-array", row(dt={}), "dt"),
    ("seq-overflow", with_envelope(row(), seq0=2**53 - 2), "seq0 + members"),
    ("time-overflow", with_envelope(row(dt=[2**53 - 1, 1]), time0=1), "member times"),
]


@pytest.mark.parametrize(
    "value,fragment", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_rows_are_refused(value: dict[str, Any], fragment: str) -> None:
    with pytest.raises(MalformedRow) as info:
        unpack_row(value)
    message = str(info.value)
    assert message.startswith(f"malformed {value['type']} storage row: ")
    assert fragment in message


def test_validation_runs_in_spec_order() -> None:
    # both seq0 (check 2) and data (check 4) are bad: check 2 reports
    with pytest.raises(MalformedRow, match="seq0"):
        unpack_row(with_envelope(row(), seq0=-1, data=None))
    # both data keys (5) and turn (7) are bad: check 5 reports
    with pytest.raises(MalformedRow, match="data keys"):
        unpack_row(row(turn="x", extra=1))


def test_sqlite_rows_need_three_to_1024_members() -> None:
    assert len(unpack_row(row(), sqlite=True)) == 3
    with pytest.raises(MalformedRow, match="3 to 1024"):
        unpack_row(row(texts=["a", "b"], dt=[0]), sqlite=True)
    with pytest.raises(MalformedRow, match="3 to 1024"):
        unpack_row(row(texts=["a"] * 1025, dt=[0] * 1024), sqlite=True)
    assert len(unpack_row(row(texts=["a"], dt=[]))) == 1


def test_integral_floats_in_a_foreign_row_are_accepted() -> None:
    events = unpack_row(with_envelope(row(dt=[1.0, 2]), seq0=4.0, time0=10.0))
    assert [(e.seq, e.time) for e in events] == [(4, 10), (5, 11), (6, 13)]


# ---------------------------------------------------------------------------------------------
# §3.3 closers


def worked_tool_log(with_call: bool) -> list[Event]:
    call = {"type": "tool-call", "id": "call-1", "name": "bash", "arguments": '{"cmd":"ls"}'}
    events = [
        ev("turn/start", 0, {"turn": 1}),
        ev(
            "user/message",
            1,
            {"id": "m-1", "role": "user", "content": [], "source": {"kind": "user"}},
            surface_op="append",
        ),
        ev("step/start", 2, {"turn": 1, "step": 1}),
        ev(
            "assistant/message",
            3,
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "id": "m-2",
                    "role": "assistant",
                    "content": [call],
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                },
            },
            surface_op="append",
        ),
    ]
    if with_call:
        events.append(
            ev(
                "tool/call",
                4,
                {
                    "turn": 1,
                    "step": 1,
                    "callId": "call-1",
                    "name": "bash",
                    "arguments": '{"cmd":"ls"}',
                },
                time=77,
            )
        )
    return events


def test_closers_for_a_started_tool_call() -> None:
    out = closers(worked_tool_log(with_call=True))
    assert [(e.type, e.seq, e.time) for e in out] == [
        ("tool/result", 5, 77),
        ("step/end", 6, 77),
        ("turn/end", 7, 77),
    ]
    result = out[0].to_value()
    assert list(result) == ["type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs"]
    assert result["surfaceOp"] == "append" and result["sourceEventSeqs"] == [4]
    data = result["data"]
    assert list(data) == ["turn", "step", "message", "error"]
    assert data["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert data["message"] == {
        "id": "interrupted-tool-result-call-1-5",
        "role": "user",
        "source": {"kind": "tool", "callId": "call-1"},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "call-1",
                "isError": True,
                "content": [{"type": "text", "text": OUTCOME_UNKNOWN_TEXT}],
            }
        ],
    }
    assert OUTCOME_UNKNOWN_TEXT.startswith(
        "The tool call was interrupted after it was recorded, but no result was durably "
        "recorded. Its outcome is unknown. "
    )
    assert out[1].to_value()["data"] == {"turn": 1, "step": 1}
    assert out[2].to_value()["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}


def test_closers_for_a_tool_call_not_started() -> None:
    out = closers(worked_tool_log(with_call=False))
    result = out[0].to_value()
    assert result["seq"] == 4 and "sourceEventSeqs" not in result
    assert result["data"]["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert result["data"]["message"]["content"][0]["content"][0]["text"] == (
        "The tool call was interrupted before the Harness recorded it as started. "
        "Retry it if it is still needed."
    )
    assert [e.type for e in out] == ["tool/result", "step/end", "turn/end"]


def test_interrupted_turn_without_open_step() -> None:
    events = [ev("turn/start", 0, {"turn": 1}, time=100), ev("user/message", 1, {}, time=300)]
    [closer] = closers(events)
    assert closer.to_value() == {
        "type": "turn/end",
        "seq": 2,
        "time": 300,
        "data": {"turn": 1, "reason": {"kind": "interrupted"}},
    }


def test_balanced_or_empty_logs_get_no_closers() -> None:
    assert closers([]) == []
    assert closers([ev("turn/start", 0, {"turn": 1}), ev("turn/end", 1, None)]) == []
    assert closers([ev("user/message", 0, {})]) == []


def test_closer_scan_ignores_unusable_fields() -> None:
    events = [
        ev("turn/start", 0, {"turn": 2}),
        ev("turn/start", 1, {"no": "turn"}),  # ignored
        ev("step/start", 2, "not an object"),  # ignored
        ev(
            "assistant/message",
            3,
            {
                "message": {
                    "content": [
                        {"type": "tool-call", "id": 5},
                        {"type": "tool-call", "id": "a"},
                        {"type": "tool-call", "id": "b"},
                    ]
                }
            },
        ),  # no step: closers omit it
        ev("tool/call", 4, {"callId": "b"}),
        ev(
            "assistant/message",
            5,
            {"step": 3, "message": {"content": [{"type": "tool-call", "id": "b"}]}},
        ),  # re-register: keeps position, drops callSeq
        ev("tool/call", 6, {"callId": 7}),
        ev("tool/result", 7, {"message": {"source": {"callId": None}}}),
        ev("tool/result", 8, {"message": {"source": {"callId": "zzz"}}}),
    ]
    out = closers(events)
    assert [e.type for e in out] == ["tool/result", "tool/result", "turn/end"]
    first, second = (e.to_value() for e in out[:2])
    assert first["data"]["turn"] == 2 and "step" not in first["data"]
    assert first["data"]["message"]["source"]["callId"] == "a"
    assert second["data"]["step"] == 3 and "sourceEventSeqs" not in second
    assert [e.seq for e in out] == [9, 10, 11]


def test_step_end_clears_pending_calls() -> None:
    events = [
        ev("turn/start", 0, {"turn": 1}),
        ev(
            "assistant/message",
            1,
            {"step": 1, "message": {"content": [{"type": "tool-call", "id": "a"}]}},
        ),
        ev("step/end", 2, None),
    ]
    assert [e.type for e in closers(events)] == ["turn/end"]


# ---------------------------------------------------------------------------------------------
# §3.4 legacy normalization


def norm_one(event: Event, sid: str = "s") -> dict[str, Any]:
    [out] = normalize_legacy(sid, [event])
    return out.to_value()


def test_turn_start_trigger_is_dropped() -> None:
    out = norm_one(ev("turn/start", 0, {"turn": 1, "trigger": {"kind": "user"}}))
    assert out["data"] == {"turn": 1}


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 0, "trigger": {"kind": "user"}},
        {"turn": 1, "trigger": {"kind": ""}},
        {"turn": 1, "trigger": "user"},
        {"turn": 1, "trigger": {"kind": "user"}, "x": 1},
        {"turn": True, "trigger": {"kind": "user"}},
    ],
)
def test_malformed_turn_start_trigger(data: dict[str, Any]) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        normalize_legacy("sid", [ev("turn/start", 4, data)])
    assert str(info.value) == 'session "sid" contains malformed pre-react-loop turn/start at seq 4'


@pytest.mark.parametrize(
    "reason,expected",
    [
        ({"kind": "disposed"}, {"kind": "aborted", "reason": {"kind": "disposed"}}),
        ({"kind": "aborted"}, {"kind": "aborted", "reason": {"kind": "legacy"}}),
        (
            {
                "kind": "error",
                "step": 2,
                "failure": {
                    "message": "m",
                    "code": "c",
                    "status": 500,
                    "providerRetryAfterMs": 1.5,
                    "requestId": "r",
                },
            },
            {
                "kind": "error",
                "error": {
                    "message": "m",
                    "code": "c",
                    "status": 500,
                    "providerRetryAfterMs": 1.5,
                    "requestId": "r",
                },
            },
        ),
        (
            {"kind": "error", "step": 0, "message": "m"},
            {"kind": "error", "error": {"message": "m", "code": "UNKNOWN"}},
        ),
        (
            {"kind": "error", "step": 0, "message": "m", "code": "X"},
            {"kind": "error", "error": {"message": "m", "code": "X"}},
        ),
    ],
)
def test_legacy_turn_end_reasons(reason: dict[str, Any], expected: dict[str, Any]) -> None:
    out = norm_one(ev("turn/end", 0, {"turn": 1, "reason": reason}))
    assert out["data"] == {"turn": 1, "reason": expected}


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 0, "reason": {"kind": "disposed"}},
        {"turn": 1, "reason": {"kind": "disposed"}, "x": 1},
        {"turn": 1, "reason": {"kind": "disposed", "x": 1}},
        {"turn": 1, "reason": {"kind": "aborted", "x": 1}},
        {"turn": 1, "reason": {"kind": "error", "message": "m"}},
        {"turn": 1, "reason": {"kind": "error", "step": -1, "message": "m"}},
        {"turn": 1, "reason": {"kind": "error", "step": 1, "message": 5}},
        {"turn": 1, "reason": {"kind": "error", "step": 1, "message": "m", "code": 5}},
        {"turn": 1, "reason": {"kind": "error", "step": 1, "failure": {"message": "m"}}},
        {
            "turn": 1,
            "reason": {
                "kind": "error",
                "step": 1,
                "failure": {"message": "m", "code": "c", "status": "500"},
            },
        },
        {
            "turn": 1,
            "reason": {
                "kind": "error",
                "step": 1,
                "failure": {"message": "m", "code": "c", "other": 1},
            },
        },
    ],
)
def test_malformed_legacy_turn_end(data: dict[str, Any]) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        normalize_legacy("sid", [ev("turn/end", 9, data)])
    assert str(info.value) == 'session "sid" contains malformed pre-react-loop turn/end at seq 9'


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 1, "reason": {"kind": "completed"}},
        {"turn": "odd", "reason": {"kind": "aborted", "reason": {"kind": "user"}}},
        {"turn": 1, "reason": {"kind": "error", "error": {"message": "m", "code": "c"}}},
        {"turn": 1},
        "not an object",
    ],
)
def test_current_turn_end_forms_are_untouched(data: Any) -> None:
    event = ev("turn/end", 0, data)
    assert normalize_legacy("s", [event])[0] is event


def test_steering_message_forms() -> None:
    message = {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}
    out = norm_one(
        ev(
            "steering/message",
            3,
            {"turn": 1, "message": message},
            surface_op="append",
            source_seqs=[1],
        )
    )
    assert out == {
        "type": "user/message",
        "seq": 3,
        "time": 0,
        "data": message,
        "surfaceOp": "append",
        "sourceEventSeqs": [1],
    }
    out = norm_one(ev("steering/message", 3, {"turn": 1, "content": ["c"], "source": "s"}), "S")
    assert out["type"] == "user/message"
    assert out["data"] == {
        "content": ["c"],
        "source": "s",
        "id": "legacy-message:S:3",
        "role": "user",
    }
    assert list(out["data"]) == ["content", "source", "id", "role"]


def test_steering_message_with_legacy_inner_message_gets_identity() -> None:
    out = norm_one(ev("steering/message", 2, {"turn": 1, "message": {"content": [], "source": {}}}))
    assert out["data"] == {"content": [], "source": {}, "id": "legacy-message:s:2", "role": "user"}


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"turn": 1},
        {"turn": 1.5, "message": {}},
        {"turn": 1, "message": "m"},
        {"turn": 1, "content": [], "source": {}, "x": 1},
    ],
)
def test_malformed_steering_message(data: Any) -> None:
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        normalize_legacy("sid", [ev("steering/message", 1, data)])
    assert str(info.value) == (
        'session "sid" contains malformed pre-react-loop steering/message at seq 1'
    )


def test_user_message_without_identity() -> None:
    out = norm_one(ev("user/message", 5, {"content": ["x"], "source": {"kind": "user"}}))
    assert out["data"] == {
        "content": ["x"],
        "source": {"kind": "user"},
        "id": "legacy-message:s:5",
        "role": "user",
    }
    for data in (
        {"id": "i", "content": [], "source": {}},
        {"role": "user", "content": [], "source": {}},
        {"content": []},
    ):
        event = ev("user/message", 0, data)
        assert normalize_legacy("s", [event])[0] is event


def test_assistant_message_without_identity() -> None:
    data = {
        "turn": 1,
        "content": ["c"],
        "step": 2,
        "provenance": {"kind": "x", "provider": "p"},
        "usage": {},
    }
    out = norm_one(ev("assistant/message", 7, data))
    assert out["data"] == {
        "turn": 1,
        "step": 2,
        "usage": {},
        "message": {
            "id": "legacy-message:s:7",
            "role": "assistant",
            "content": ["c"],
            "source": {"kind": "model", "provider": "p"},
        },
    }
    assert list(out["data"]) == ["turn", "step", "usage", "message"]
    assert list(out["data"]["message"]["source"]) == ["kind", "provider"]
    out = norm_one(ev("assistant/message", 7, {"content": [], "provenance": None}))
    assert out["data"]["message"]["source"] == {"kind": "model"}


def test_tool_result_without_identity_and_replace_lookup() -> None:
    events = [
        ev("user/message", 0, {"id": "u-0", "role": "user", "content": [], "source": {}}),
        ev("assistant/message", 1, {"content": [], "provenance": {}}),
        ev("tool/result", 2, {"turn": 1, "callId": "c", "content": ["r"], "isError": False}),
        ev(
            "tool/result",
            3,
            {"callId": "c", "content": [], "isError": True},
            surface_op={"op": "replace", "start": 1, "end": 2},
        ),
        ev(
            "tool/result",
            4,
            {"callId": "c", "content": [], "isError": True},
            surface_op={"op": "replace", "start": 0.0, "end": 2},
        ),
        ev(
            "tool/result",
            5,
            {"callId": "c", "content": [], "isError": True},
            surface_op={"op": "replace", "start": 99, "end": 2},
        ),
        ev(
            "tool/result",
            6,
            {"callId": "c", "content": [], "isError": True},
            surface_op={"op": "replace", "start": "1", "end": 2},
        ),
    ]
    out = [e.to_value() for e in normalize_legacy("S", events)]
    assert out[2]["data"] == {
        "turn": 1,
        "message": {
            "id": "legacy-message:S:2",
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": "c", "content": ["r"], "isError": False}
            ],
            "source": {"kind": "tool", "callId": "c"},
        },
    }
    assert out[3]["data"]["message"]["id"] == "legacy-message:S:1"  # id of the rewritten seq 1
    assert out[4]["data"]["message"]["id"] == "u-0"
    assert "id" not in out[5]["data"]["message"]
    assert list(out[5]["data"]["message"]) == ["role", "content", "source"]
    assert out[6]["data"]["message"]["id"] == "legacy-message:S:6"
    assert all(o["surfaceOp"] == e.surface_op for o, e in zip(out[3:], events[3:], strict=True))


def test_current_events_pass_through_unchanged() -> None:
    events = worked_tool_log(with_call=True)
    assert all(a is b for a, b in zip(normalize_legacy("s", events), events, strict=True))


def test_logical_log_normalizes_then_closes() -> None:
    events = [ev("turn/start", 0, {"turn": 1, "trigger": {"kind": "user"}}, time=5)]
    assert [e.to_value() for e in logical_log("s", events)] == [
        {"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}},
        {
            "type": "turn/end",
            "seq": 1,
            "time": 5,
            "data": {"turn": 1, "reason": {"kind": "interrupted"}},
        },
    ]


# ---------------------------------------------------------------------------------------------
# property: pack -> unpack is identity

texts = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6)
chunk_kinds = st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta", "other"])


@st.composite
def chunk_batches(draw: st.DrawFn) -> list[Event]:
    events: list[Event] = []
    seq = draw(st.integers(0, 5))
    time = draw(st.integers(-(2**53) + 10**6, 2**53 - 10**6))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(chunk_kinds)
        turn, step, index = (draw(st.sampled_from([1, 2, 1.5])) for _ in range(3))
        name = draw(st.sampled_from([None, "n", "m"]))
        for _ in range(draw(st.integers(1, 5))):
            seq += draw(st.sampled_from([1, 1, 1, 2]))
            time += draw(st.integers(-3, 3))
            if kind == "tool-call-delta":
                events.append(tool_chunk(seq, time, draw(texts), name=name, index=index))
            elif kind == "other":
                events.append(ev("tool/call", seq, {"x": draw(texts)}, time=time))
            else:
                events.append(
                    text_chunk(seq, time, draw(texts), kind=kind, turn=turn, step=step, index=index)
                )
    return events


@settings(max_examples=150, deadline=None)
@given(chunk_batches(), st.sampled_from([None, 3, 4, 1024]))
def test_pack_then_unpack_is_identity(events: list[Event], max_members: int | None) -> None:
    records = pack(events, max_members=max_members)
    assert values(unpacked(records)) == values(events)
    for record in records:
        if isinstance(record, PackedRow):
            assert 3 <= record.members <= (max_members or 10**9)


def test_a_window_replace_without_its_verified_message_id_is_a_stale_shape():
    # A window read normalizes a legacy replace with the message ids its verification recorded;
    # a replace it has no id for means the log changed without a new revision: verify again.
    from dsh_query_server.persistence.logical.legacy import Normalizer, StaleShape

    legacy = Event.from_value(
        {
            "type": "tool/result",
            "seq": 5,
            "time": 1,
            "surfaceOp": {"op": "replace", "start": 2, "end": 2},
            "data": {"callId": "c1", "content": [], "isError": False},
        }
    )
    with pytest.raises(StaleShape):
        Normalizer("s", known={}).run([legacy])
