"""The shared logical encoding of persistence.md §3: packed chunk rows, interrupted-turn closers
and legacy shape normalization. Both backends use these; neither re-implements them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, ClassVar

import msgspec
from msgspec import UNSET

from .. import jsoncodec
from ..model.event import Event, make_event
from ..values import (
    MAX_SAFE_INTEGER,
    is_nonneg_safe_integer,
    is_number,
    is_safe_integer,
    json_number,
)
from .base import SessionPersistenceCorruptionError

PACKED_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

# chunk type <-> row tag (§3.2 table)
_TAG_OF_CHUNK = {
    "text-delta": "text-chunks",
    "reasoning-delta": "reasoning-chunks",
    "tool-call-delta": "tool-call-chunks",
}
_CHUNK_OF_TAG = {tag: chunk for chunk, tag in _TAG_OF_CHUNK.items()}

_ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data"})
_CHUNK_DATA_KEYS = frozenset({"turn", "step", "chunk"})
_TEXT_CHUNK_KEYS = frozenset({"type", "index", "text"})
_TOOL_CHUNK_KEYS = frozenset({"type", "index", "id", "argumentsDelta"})
_NAMED_TOOL_CHUNK_KEYS = _TOOL_CHUNK_KEYS | {"name"}

_ROW_KEYS = frozenset({"type", "seq0", "time0", "data"})
_TEXT_ROW_KEYS = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_ROW_KEYS = frozenset({"turn", "step", "index", "dt", "id", "args"})
_NAMED_TOOL_ROW_KEYS = _TOOL_ROW_KEYS | {"name"}

MIN_RUN = 3
SQLITE_MAX_MEMBERS = 1024


class MalformedRow(Exception):
    """A packed row failed §3.2 row validation; message ``malformed <tag> storage row: <reason>``."""


@dataclass(frozen=True, slots=True)
class PackedRow:
    """One packed chunk row (persistence.md §3.2). ``data`` keys are in the spec's order."""

    tag: str
    seq0: int
    time0: int
    data: dict[str, Any]

    @property
    def members(self) -> int:
        return len(self.data["args" if self.tag == "tool-call-chunks" else "texts"])

    def data_json(self) -> bytes:
        """Compact JSON of ``data``."""
        return jsoncodec.dumps(self.data)

    def to_json(self) -> bytes:
        """Compact JSON of the whole row ``{type, seq0, time0, data}`` (a JSONL line body)."""
        return jsoncodec.dumps(
            {"type": self.tag, "seq0": self.seq0, "time0": self.time0, "data": self.data}
        )


# ---------------------------------------------------------------------------------------------
# Packing (writing)


@dataclass(frozen=True, slots=True)
class _Member:
    """The fields of one packable chunk event that a row keeps."""

    kind: str  # chunk type
    seq: int
    time: int
    turn: Any
    step: Any
    index: Any
    call_id: Any  # tool-call deltas only
    name: Any  # tool-call deltas only; UNSET when absent
    payload: str  # text or argumentsDelta


def _same_number(a: Any, b: Any) -> bool:
    # 1 and 1.0 are equal JSON values but different texts; a shared row field must restore
    # every member's exact text, so they never share a row.
    return type(a) is type(b) and a == b


def _member(event: Event) -> _Member | None:
    """The packable view of ``event``, or None when its shape is not whitelisted (§3.2)."""
    if event.type != "assistant/chunk":
        return None
    value = event.to_value()
    if value.keys() != _ENVELOPE_KEYS:
        return None
    seq, time, data = value["seq"], value["time"], value["data"]
    # Python ints only: a float seq/time could not be restored with its exact text.
    if type(seq) is not int or type(time) is not int:
        return None
    if not (is_nonneg_safe_integer(seq) and is_safe_integer(time)):
        return None
    if not isinstance(data, dict) or data.keys() != _CHUNK_DATA_KEYS:
        return None
    turn, step, chunk = data["turn"], data["step"], data["chunk"]
    if not (is_number(turn) and is_number(step)) or not isinstance(chunk, dict):
        return None
    kind, index = chunk.get("type"), chunk.get("index")
    if not is_number(index):
        return None
    if kind in ("text-delta", "reasoning-delta"):
        if chunk.keys() != _TEXT_CHUNK_KEYS or not isinstance(chunk["text"], str):
            return None
        return _Member(kind, seq, time, turn, step, index, UNSET, UNSET, chunk["text"])
    if kind == "tool-call-delta":
        if chunk.keys() not in (_TOOL_CHUNK_KEYS, _NAMED_TOOL_CHUNK_KEYS):
            return None
        name = chunk.get("name", UNSET)
        strings = (chunk["id"], chunk["argumentsDelta"]) + (() if name is UNSET else (name,))
        if not all(isinstance(s, str) for s in strings):
            return None
        return _Member(kind, seq, time, turn, step, index, chunk["id"], name,
                       chunk["argumentsDelta"])
    return None


def _continues(prev: _Member, nxt: _Member) -> bool:
    """The run rule of §3.2: ``nxt`` may follow ``prev`` in one row."""
    return (
        nxt.kind == prev.kind
        and nxt.seq == prev.seq + 1
        and is_safe_integer(nxt.time - prev.time)
        and _same_number(nxt.turn, prev.turn)
        and _same_number(nxt.step, prev.step)
        and _same_number(nxt.index, prev.index)
        and nxt.call_id == prev.call_id
        and nxt.name == prev.name
    )


def _row(run: list[_Member]) -> PackedRow:
    first = run[0]
    data: dict[str, Any] = {
        "turn": first.turn,
        "step": first.step,
        "index": first.index,
        "dt": [b.time - a.time for a, b in zip(run, run[1:])],
    }
    payloads = [m.payload for m in run]
    if first.kind == "tool-call-delta":
        data["id"] = first.call_id
        if first.name is not UNSET:
            data["name"] = first.name
        data["args"] = payloads
    else:
        data["texts"] = payloads
    return PackedRow(_TAG_OF_CHUNK[first.kind], first.seq, first.time, data)


def _fits(run: list[_Member], max_data_bytes: int | None) -> bool:
    return max_data_bytes is None or len(_row(run).data_json()) <= max_data_bytes


def _split_run(
    run: list[_Member], events: list[Event], max_members: int | None, max_data_bytes: int | None
) -> list[Event | PackedRow]:
    """Turn one run into records, greedily from its start (persistence.md §5.5); runs shorter
    than three members stay verbatim."""
    out: list[Event | PackedRow] = []
    start = 0
    while len(run) - start >= MIN_RUN:
        take = len(run) - start if max_members is None else min(max_members, len(run) - start)
        if not _fits(run[start:start + take], max_data_bytes):
            take = _largest_fitting(run, start, take - 1, max_data_bytes)
        if take == 0:
            out.append(events[start])
            start += 1
            continue
        out.append(_row(run[start:start + take]))
        start += take
    out.extend(events[start:])
    return out


def _largest_fitting(run: list[_Member], start: int, high: int, max_data_bytes: int | None) -> int:
    """Binary search for the largest count in [3, high] whose row fits; 0 when none does."""
    best, low = 0, MIN_RUN
    while low <= high:
        mid = (low + high) // 2
        if _fits(run[start:start + mid], max_data_bytes):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def pack(
    events: list[Event], *, max_members: int | None = None, max_data_bytes: int | None = None
) -> list[Event | PackedRow]:
    """Split one write batch into storage records: runs of >= 3 eligible chunk events become
    PackedRows, everything else stays a verbatim Event. ``max_members``/``max_data_bytes`` are the
    sqlite bounds (1024 members, 1 MiB of data JSON, greedy split of §5.5); None = unbounded."""
    out: list[Event | PackedRow] = []
    run: list[_Member] = []
    run_events: list[Event] = []

    def flush() -> None:
        out.extend(_split_run(run, run_events, max_members, max_data_bytes))
        run.clear()
        run_events.clear()

    for event in events:
        member = _member(event)
        if run and (member is None or not _continues(run[-1], member)):
            flush()
        if member is None:
            out.append(event)
        else:
            run.append(member)
            run_events.append(event)
    flush()
    return out


# ---------------------------------------------------------------------------------------------
# Unpacking (reading)


def _row_data_check(tag: str, data: dict[str, Any]) -> str | None:
    """Checks 5–7 of §3.2; the failure reason or None."""
    if tag == "tool-call-chunks":
        if data.keys() not in (_TOOL_ROW_KEYS, _NAMED_TOOL_ROW_KEYS):
            return "data keys must be exactly turn, step, index, dt, id, optional name, args"
        if not isinstance(data["id"], str) or not isinstance(data.get("name", ""), str):
            return "id and name must be strings"
    elif data.keys() != _TEXT_ROW_KEYS:
        return "data keys must be exactly turn, step, index, dt, texts"
    if not (is_number(data["turn"]) and is_number(data["step"]) and is_number(data["index"])):
        return "turn, step and index must be numbers"
    return None


def _payload_check(payload: Any, name: str, sqlite: bool) -> str | None:
    """Check 8 of §3.2."""
    # JSON decoding yields exact ``str``: comparing the set of element types stays in C.
    if not isinstance(payload, list) or not set(map(type, payload)) <= _STR_ONLY:
        return f"{name} must be an array of strings"
    if sqlite and not MIN_RUN <= len(payload) <= SQLITE_MAX_MEMBERS:
        return f"{name} must hold {MIN_RUN} to {SQLITE_MAX_MEMBERS} strings"
    if not payload:
        return f"{name} must not be empty"
    return None


_STR_ONLY = frozenset({str})
_INT_ONLY = frozenset({int})


def _all_safe_integers(values: list[Any]) -> bool:
    """``all(map(is_safe_integer, values))``, in C for the usual all-``int`` array."""
    if set(map(type, values)) <= _INT_ONLY:
        return not values or (-MAX_SAFE_INTEGER <= min(values) and max(values) <= MAX_SAFE_INTEGER)
    return all(map(is_safe_integer, values))


def _member_times(time0: int, dt: list[Any]) -> list[int] | None:
    """Running times ``time0 + dt[0] + … + dt[k-1]``, or None when one is not a safe integer.
    ``dt`` already holds safe integers (integral floats become ints)."""
    gaps = dt if set(map(type, dt)) <= _INT_ONLY else map(int, dt)
    times = list(accumulate(gaps, initial=time0))
    if -MAX_SAFE_INTEGER <= min(times) and max(times) <= MAX_SAFE_INTEGER:
        return times
    return None


def _validate_row(row: dict[str, Any], tag: str, sqlite: bool) -> str | list[int]:
    """Checks 1–10 of §3.2, in order: the first failure's reason, or the member times."""
    if row.keys() != _ROW_KEYS:
        return "envelope keys must be exactly type, seq0, time0, data"
    if not is_nonneg_safe_integer(row["seq0"]):
        return "seq0 must be a non-negative safe integer"
    if not is_safe_integer(row["time0"]):
        return "time0 must be a safe integer"
    data = row["data"]
    if not isinstance(data, dict):
        return "data must be an object"
    reason = _row_data_check(tag, data)
    if reason is not None:
        return reason
    name = "args" if tag == "tool-call-chunks" else "texts"
    reason = _payload_check(data[name], name, sqlite)
    if reason is not None:
        return reason
    dt = data["dt"]
    members = len(data[name])
    if not isinstance(dt, list) or len(dt) != members - 1 or not _all_safe_integers(dt):
        return "dt must be an array of member count - 1 safe integers"
    if not is_safe_integer(int(row["seq0"]) + members - 1):
        return "seq0 + members - 1 must be a safe integer"
    times = _member_times(int(row["time0"]), dt)
    if times is None:
        return "member times must be safe integers"
    return times


def _chunk_head(tag: str, data: dict[str, Any]) -> bytes:
    """The member chunk object up to its payload, keys in the order of §3.2 reconstruction."""
    dumps = jsoncodec.dumps
    index = dumps(data["index"])
    if tag == "tool-call-chunks":
        name = b',"name":' + dumps(data["name"]) if "name" in data else b""
        return b'{"type":"tool-call-delta","index":' + index + b',"id":' + dumps(data["id"]) + name + b',"argumentsDelta":'
    return b'{"type":"' + _CHUNK_OF_TAG[tag].encode() + b'","index":' + index + b',"text":'


class ChunkOutline(msgspec.Struct, frozen=True, gc=False):
    """A packed-row member known only by what listing and tracing read: its seq and time.

    ``listEvents`` and ``traceEvent`` need the type, time and surface markers of every event but
    never a chunk's payload, so an outline read (``unpack_row(..., outline=True)``) skips building
    each member's JSON. The row is validated exactly as in a full read. Members never carry
    ``surfaceOp``, ``sourceEventSeqs`` or ``ignorable`` (§3.2 eligibility). Untracked by the
    garbage collector (``gc=False``; it holds two ints): a long log makes ~100,000 of them, and
    tracked objects that many trigger full collections over the whole heap."""

    seq: int
    time: int

    type: ClassVar[str] = "assistant/chunk"
    surface_op: ClassVar[Any] = UNSET
    source_seqs: ClassVar[Any] = UNSET
    ignorable: ClassVar[Any] = UNSET
    has_data: ClassVar[bool] = True


class _TextRowData(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    dt: list[int]
    texts: list[str]


class _ToolRowData(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    turn: int | float
    step: int | float
    index: int | float
    dt: list[int]
    id: str
    args: list[str]
    name: str | msgspec.UnsetType = UNSET


_ROW_DATA_DECODERS = {
    "text-chunks": msgspec.json.Decoder(_TextRowData),
    "reasoning-chunks": msgspec.json.Decoder(_TextRowData),
    "tool-call-chunks": msgspec.json.Decoder(_ToolRowData),
}


def outline_members(tag: str, seq0: int, time0: int, data_json: bytes, *,
                    sqlite: bool = False) -> list[ChunkOutline] | None:
    """The ChunkOutlines of a well-formed packed row, straight from its ``data`` JSON text; None
    when this fast path cannot tell (then ``unpack_row(..., outline=True)`` decides, with the
    exact reason). A typed decode checks keys and kinds in one pass: checks 4–8 of §3.2, and
    ``seq0``/``time0`` come from validated integer columns."""
    decoder = _ROW_DATA_DECODERS.get(tag)
    if decoder is None or type(seq0) is not int or type(time0) is not int:
        return None
    try:
        data = decoder.decode(data_json)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    members = len(data.args if tag == "tool-call-chunks" else data.texts)
    if not (MIN_RUN <= members <= SQLITE_MAX_MEMBERS if sqlite else members >= 1):
        return None
    dt = data.dt  # ints by type
    if len(dt) != members - 1 or not (0 <= seq0 and seq0 + members - 1 <= MAX_SAFE_INTEGER):
        return None
    times = list(accumulate(dt, initial=time0))
    if dt and not (-MAX_SAFE_INTEGER <= min(dt) and max(dt) <= MAX_SAFE_INTEGER):
        return None
    if not (-MAX_SAFE_INTEGER <= min(times) and max(times) <= MAX_SAFE_INTEGER):
        return None
    return list(map(ChunkOutline, range(seq0, seq0 + members), times))


def unpack_row(
    row: dict[str, Any], *, sqlite: bool = False, outline: bool = False
) -> list[Event] | list[ChunkOutline]:
    """Validate a packed row object ``{type: tag, seq0, time0, data}`` (checks 1-10 of §3.2, with
    the sqlite member bounds when ``sqlite``) and reconstruct its member events exactly, or only
    their ChunkOutlines when ``outline``. Raises MalformedRow."""
    tag = row.get("type")
    if not isinstance(tag, str) or tag not in PACKED_TAGS:
        raise MalformedRow(f"malformed {tag} storage row: type is not a packed row tag")
    times = _validate_row(row, tag, sqlite)
    if isinstance(times, str):
        raise MalformedRow(f"malformed {tag} storage row: {times}")
    seq0 = int(row["seq0"])
    if outline:
        return list(map(ChunkOutline, range(seq0, seq0 + len(times)), times))
    data = row["data"]
    payloads = data["args" if tag == "tool-call-chunks" else "texts"]
    # Every member shares all but its seq, time and payload: encode the rest once.
    head = (b'{"turn":' + jsoncodec.dumps(data["turn"]) + b',"step":' + jsoncodec.dumps(data["step"])
            + b',"chunk":' + _chunk_head(tag, data))
    events = []
    assemble = Event.assemble
    for k, payload in enumerate(payloads):
        data_json = head + jsoncodec.dumps(payload) + b"}}"
        seq, time = seq0 + k, times[k]
        raw = b'{"type":"assistant/chunk","seq":%d,"time":%d,"data":%b}' % (seq, time, data_json)
        events.append(assemble(raw, "assistant/chunk", seq, time, data_json))
    return events


# ---------------------------------------------------------------------------------------------
# Interrupted-turn closers (§3.3)

NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide from the tool's semantics whether to retry it: retry only "
    "read-only or idempotent operations; when the call may have had side effects, verify the "
    "external state or ask the user first. Never retry blindly."
)

_NONE = object()  # "no open turn/step" (distinct from a JSON null turn)


def _get(value: Any, *path: str) -> Any:
    """``value[path0][path1]…`` through objects only; UNSET when any link is missing."""
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return UNSET
        value = value[key]
    return value


class _TurnState:
    """The forward scan of §3.3: open turn, open step and pending tool calls."""

    def __init__(self) -> None:
        self.turn: Any = _NONE
        self.step: Any = _NONE
        self.pending: dict[str, dict[str, Any]] = {}  # call id -> {step?, callSeq?}

    def observe(self, event: Event) -> None:
        kind = event.type
        if kind == "turn/start":
            turn = _get(event.data(), "turn")
            if turn is not UNSET:
                self.turn, self.step, self.pending = turn, _NONE, {}
        elif kind == "turn/end":
            self.turn, self.step, self.pending = _NONE, _NONE, {}
        elif kind == "step/start":
            step = _get(event.data(), "step")
            if step is not UNSET:
                self.step = step
        elif kind == "step/end":
            self.step, self.pending = _NONE, {}
        elif kind == "assistant/message":
            self._register_calls(event.data())
        elif kind == "tool/call":
            call_id = _get(event.data(), "callId")
            if isinstance(call_id, str) and call_id in self.pending:
                self.pending[call_id]["callSeq"] = event.seq
        elif kind == "tool/result":
            call_id = _get(event.data(), "message", "source", "callId")
            if isinstance(call_id, str):
                self.pending.pop(call_id, None)

    def _register_calls(self, data: Any) -> None:
        content = _get(data, "message", "content")
        if not isinstance(content, list):
            return
        step = _get(data, "step")
        for block in content:
            if _get(block, "type") == "tool-call" and isinstance(_get(block, "id"), str):
                # Assigning to an existing key keeps its position and drops its callSeq.
                self.pending[block["id"]] = {} if step is UNSET else {"step": step}


def _tool_result_closer(
    turn: Any, call_id: str, entry: dict[str, Any], seq: int, time: Any
) -> Event:
    started = "callSeq" in entry
    data: dict[str, Any] = {"turn": turn}
    if "step" in entry:
        data["step"] = entry["step"]
    data["message"] = {
        "id": f"interrupted-tool-result-{call_id}-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [{
            "type": "tool-result",
            "toolCallId": call_id,
            "isError": True,
            "content": [{"type": "text",
                         "text": OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT}],
        }],
    }
    data["error"] = (
        {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"} if started
        else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    )
    return make_event("tool/result", seq, time, data, surface_op="append",
                      source_seqs=[entry["callSeq"]] if started else UNSET)


def _open_turn_start(events: list[Event]) -> int | None:
    """The index of the turn/start that opened a still-open final turn, if any.

    Only the last turn/start or turn/end matters (both reset the scan), so the forward scan can
    begin there instead of decoding every message of the log."""
    for index in range(len(events) - 1, -1, -1):
        kind = events[index].type
        if kind == "turn/end":
            return None
        if kind == "turn/start" and _get(events[index].data(), "turn") is not UNSET:
            return index
    return None


def closers(events: list[Event]) -> list[Event]:
    """The in-memory closers of §3.3 for a prefix that ends inside an open turn ([] otherwise)."""
    start = _open_turn_start(events)
    if start is None:
        return []
    state = _TurnState()
    for event in events[start:]:
        state.observe(event)
    return _closers_after(state, events[-1])


def _closers_after(state: _TurnState, last: Event) -> list[Event]:
    """The closers for an open turn in ``state``, numbered after ``last`` (the prefix's end)."""
    seq, time, turn = int(last.seq) + 1, last.time, state.turn
    out = []
    for call_id, entry in state.pending.items():
        out.append(_tool_result_closer(turn, call_id, entry, seq, time))
        seq += 1
    if state.step is not _NONE:
        out.append(make_event("step/end", seq, time, {"turn": turn, "step": state.step}))
        seq += 1
    out.append(make_event("turn/end", seq, time, {"turn": turn, "reason": {"kind": "interrupted"}}))
    return out


# ---------------------------------------------------------------------------------------------
# Legacy shape normalization (§3.4)


def _corrupt(session_id: str, what: str, seq: Any) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(
        f'session "{session_id}" contains malformed pre-react-loop {what} at seq {render_json(seq)}'
    )


def render_json(value: Any) -> str:
    """A value as message text: numbers as JSON numbers (3.0 is 3), others as compact JSON."""
    return json_number(value) if is_number(value) else jsoncodec.dumps(value).decode()


def _is_turn_number(value: Any) -> bool:
    return is_safe_integer(value) and value >= 1


def _legacy_turn_start(data: Any) -> dict[str, Any] | None:
    """Rewrite 1: the new data, or None when the legacy shape is malformed."""
    trigger = data["trigger"]
    if (_is_turn_number(data.get("turn")) and data.keys() == {"turn", "trigger"}
            and isinstance(trigger, dict) and isinstance(trigger.get("kind"), str)
            and trigger["kind"]):
        return {"turn": data["turn"]}
    return None


def _is_legacy_reason(reason: Any) -> bool:
    """Rewrite 2 applies only to these three legacy reason forms."""
    if not isinstance(reason, dict):
        return False
    kind = reason.get("kind")
    return (kind == "disposed" or (kind == "aborted" and "reason" not in reason)
            or (kind == "error" and "error" not in reason))


_FAILURE_OPTIONAL = {"status": is_number, "providerRetryAfterMs": is_number,
                     "requestId": lambda v: isinstance(v, str)}


def _is_failure(failure: Any) -> bool:
    return (
        isinstance(failure, dict)
        and isinstance(failure.get("message"), str)
        and isinstance(failure.get("code"), str)
        and failure.keys() <= {"message", "code", *_FAILURE_OPTIONAL}
        and all(check(failure[k]) for k, check in _FAILURE_OPTIONAL.items() if k in failure)
    )


def _legacy_reason(reason: dict[str, Any]) -> dict[str, Any] | None:
    """The current-form reason for a legacy one, or None when it is malformed."""
    kind, keys = reason["kind"], reason.keys()
    if kind in ("disposed", "aborted"):
        if keys != {"kind"}:
            return None
        inner = "disposed" if kind == "disposed" else "legacy"
        return {"kind": "aborted", "reason": {"kind": inner}}
    if not is_nonneg_safe_integer(reason.get("step")):
        return None
    if keys == {"kind", "step", "failure"} and _is_failure(reason["failure"]):
        return {"kind": "error", "error": reason["failure"]}
    if (keys in ({"kind", "step", "message"}, {"kind", "step", "message", "code"})
            and isinstance(reason["message"], str)
            and isinstance(reason.get("code", ""), str)):
        return {"kind": "error",
                "error": {"message": reason["message"], "code": reason.get("code", "UNKNOWN")}}
    return None


def _legacy_turn_end(data: dict[str, Any]) -> dict[str, Any] | None:
    """Rewrite 2: the new data, or None when the legacy shape is malformed."""
    if not _is_turn_number(data.get("turn")) or data.keys() != {"turn", "reason"}:
        return None
    reason = _legacy_reason(data["reason"])
    return None if reason is None else {**data, "reason": reason}


def _steering_data(session_id: str, seq: Any, data: Any) -> dict[str, Any] | None:
    """Rewrite 3: the user/message data for a steering/message, or None when malformed."""
    if not isinstance(data, dict) or not is_safe_integer(data.get("turn")):
        return None
    if data.keys() == {"turn", "message"} and isinstance(data["message"], dict):
        return data["message"]
    if data.keys() == {"turn", "content", "source"}:
        return {"content": data["content"], "source": data["source"],
                "id": _legacy_id(session_id, seq), "role": "user"}
    return None


def _legacy_id(session_id: str, seq: Any) -> str:
    return f"legacy-message:{session_id}:{render_json(seq)}"


def _message_id(event: Event) -> Any:
    """The message id an event records for later replace lookups (UNSET when none)."""
    if isinstance(event, ChunkOutline):
        return UNSET  # a packed chunk's data keys are exactly turn, step and chunk
    data = event.data()
    found = _get(data, "id") if event.type == "user/message" else _get(data, "message", "id")
    return found if isinstance(found, str) else UNSET


class NeedsHistory(Exception):
    """A streamed verification (StreamedLog) met a legacy replace lookup, which needs the events
    before it: the caller verifies with the whole log instead."""


class StaleShape(Exception):
    """A window read met stored data that its verified LogShape does not describe: the log
    changed without its revision changing. The backend then verifies the whole log again."""


# Rewrite 4 applies only when these predicates hold on the data's top-level keys.
_IDENTITY_REWRITE = {
    "user/message":
        lambda keys: not keys & {"id", "role", "message"} and {"content", "source"} <= keys,
    "assistant/message": lambda keys: "message" not in keys and {"content", "provenance"} <= keys,
    "tool/result": lambda keys: "message" not in keys and {"callId", "content", "isError"} <= keys,
}
_KEYS_DECODER = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _data_keys(event: Event) -> Any:
    """The top-level keys of ``data`` without decoding the values (an empty set when ``data`` is
    not an object); None when only the full decoder can tell (absent data, surrogates, …)."""
    try:
        return _KEYS_DECODER.decode(event.data_json).keys()
    except msgspec.ValidationError:
        return frozenset()
    except msgspec.DecodeError:
        return None


class _Normalizer:
    """Rewrites one log's legacy shapes in order, remembering events by seq for rewrite 4.

    ``resolved`` collects, per legacy tool/result whose replace looks up an earlier message id,
    the id found (UNSET for none), so a window can later be normalized without the events before
    it. Built with ``known`` (such a map from an earlier full pass) it normalizes a window."""

    def __init__(self, session_id: str, known: dict[Any, Any] | None = None,
                 streaming: bool = False) -> None:
        self.session_id = session_id
        self.known = known
        # Streaming (StreamedLog): earlier events are not kept, so a replace lookup cannot be
        # answered; it raises NeedsHistory instead.
        self.streaming = streaming
        self.resolved: dict[Any, Any] = {}
        self.out: list[Event] = []
        # Rewritten events by seq, built at the first replace lookup (legacy logs only) and kept
        # up to date from then on; message ids are read lazily too: few events need them.
        self.by_seq: dict[Any, Event] | None = None

    def rewrite(self, event: Event) -> Event:
        kind = event.type
        if kind not in _LEGACY_TYPES:
            return event
        if kind in _IDENTITY_REWRITE:
            # Messages are large and nearly always current-form: look at the keys first.
            keys = _data_keys(event)
            if keys is not None and not _IDENTITY_REWRITE[kind](keys):
                return event
        data = event.data()
        if not isinstance(data, dict) and kind != "steering/message":
            return event
        new_kind, new_data = kind, data
        if kind == "turn/start" and "trigger" in data:
            new_data = _legacy_turn_start(data)
            if new_data is None:
                raise _corrupt(self.session_id, "turn/start", event.seq)
        elif kind == "turn/end" and _is_legacy_reason(data.get("reason")):
            new_data = _legacy_turn_end(data)
            if new_data is None:
                raise _corrupt(self.session_id, "turn/end", event.seq)
        elif kind == "steering/message":
            new_kind, new_data = "user/message", _steering_data(self.session_id, event.seq, data)
            if new_data is None:
                raise _corrupt(self.session_id, "steering/message", event.seq)
        new_data = self._add_identity(new_kind, event, new_data)
        if new_kind == kind and new_data is data:
            return event
        return _with(event, new_kind, new_data)

    def _add_identity(self, kind: str, event: Event, data: dict[str, Any]) -> dict[str, Any]:
        """Rewrite 4: give a legacy message its id/role/message wrapper."""
        sid = self.session_id
        if kind == "user/message":
            if not data.keys() & {"id", "role", "message"} and {"content", "source"} <= data.keys():
                return {**data, "id": _legacy_id(sid, event.seq), "role": "user"}
        elif kind == "assistant/message":
            if "message" not in data and {"content", "provenance"} <= data.keys():
                provenance = data["provenance"]
                source = {**(provenance if isinstance(provenance, dict) else {}), "kind": "model"}
                rest = {k: v for k, v in data.items() if k not in ("content", "provenance")}
                return {**rest, "message": {"id": _legacy_id(sid, event.seq), "role": "assistant",
                                            "content": data["content"], "source": source}}
        elif kind == "tool/result":
            if "message" not in data and {"callId", "content", "isError"} <= data.keys():
                return self._tool_result_data(event, data)
        return data

    def _replaced_id(self, event: Event, start: Any) -> Any:
        """The message id recorded for seq ``start`` (UNSET when none)."""
        if self.known is not None:
            if event.seq not in self.known:
                raise StaleShape(f"no verified message id for the replace at seq {event.seq}")
            return self.known[event.seq]
        if self.by_seq is None:
            if self.streaming:
                raise NeedsHistory(f"a replace at seq {event.seq} looks up an earlier event")
            self.by_seq = {e.seq: e for e in self.out}
        replaced = self.by_seq.get(start)
        message_id = UNSET if replaced is None else _message_id(replaced)
        self.resolved[event.seq] = message_id
        return message_id

    def _tool_result_data(self, event: Event, data: dict[str, Any]) -> dict[str, Any]:
        call_id = data["callId"]
        message: dict[str, Any] = {}
        op = event.surface_op
        if isinstance(op, dict) and op.get("op") == "replace" and is_number(op.get("start")):
            message_id = self._replaced_id(event, op["start"])
            if message_id is not UNSET:
                message["id"] = message_id
        else:
            message["id"] = _legacy_id(self.session_id, event.seq)
        message["role"] = "user"
        message["content"] = [{"type": "tool-result", "toolCallId": call_id,
                               "content": data["content"], "isError": data["isError"]}]
        message["source"] = {"kind": "tool", "callId": call_id}
        rest = {k: v for k, v in data.items() if k not in ("callId", "content", "isError")}
        return {**rest, "message": message}

    def run(self, events: list[Event]) -> list[Event]:
        out = self.out
        legacy = _LEGACY_TYPES
        for event in events:
            if event.type in legacy:
                event = self.rewrite(event)
            if self.by_seq is not None:
                self.by_seq[event.seq] = event
            out.append(event)
        return out


_LEGACY_TYPES = frozenset({"turn/start", "turn/end", "steering/message", "user/message",
                           "assistant/message", "tool/result"})


def _with(event: Event, kind: str, data: Any) -> Event:
    """``event`` with a new type and data; every other key keeps its value and position."""
    value = event.to_value()
    value["type"] = kind
    value["data"] = data
    return Event.from_value(value)


def normalize_legacy(session_id: str, events: list[Event]) -> list[Event]:
    """§3.4 legacy shape rewrites, in log order. Raises SessionPersistenceCorruptionError."""
    return _Normalizer(session_id).run(events)


# ---------------------------------------------------------------------------------------------
# The logical log, whole or as a window


@dataclass(frozen=True, slots=True)
class LogShape:
    """What a window read needs to know about the rest of a verified log: how many events the
    stored valid prefix holds, the closers after it, and the message ids that legacy replace
    lookups found (rewrite 4 of §3.4 is the one rewrite that looks at earlier events).

    It is small by construction (closers are a handful of events; ``resolved_ids`` is empty for
    current-form logs), so backends may keep one per session in memory."""

    stored: int
    closers: tuple[Event, ...]
    resolved_ids: dict[Any, Any] = field(default_factory=dict)

    @property
    def length(self) -> int:
        return self.stored + len(self.closers)


def verified_log(session_id: str, events: list[Event]) -> tuple[list[Event], LogShape]:
    """The logical log of a stored valid prefix (normalized, plus closers) and its shape."""
    normalizer = _Normalizer(session_id)
    normalized = normalizer.run(events)
    tail = closers(normalized)
    return normalized + tail, LogShape(len(events), tuple(tail), normalizer.resolved)


def logical_log(session_id: str, events: list[Event]) -> list[Event]:
    """What ``inspect`` returns after storage decoding: normalized prefix plus closers."""
    return verified_log(session_id, events)[0]


def stored_span(shape: LogShape, first: int, last: int) -> tuple[int, int]:
    """The stored seqs ``[lo, hi]`` a window ``[first, last]`` (first >= 0) needs; lo > hi when
    the window holds no stored event."""
    return first, min(last, shape.stored - 1)


def logical_window(
    session_id: str, shape: LogShape, stored: list[Event], first: int, last: int
) -> list[Event]:
    """Logical events ``first..last`` (clipped to the log), from the stored events of
    ``stored_span`` exactly. Raises StaleShape when ``stored`` is not that span."""
    lo, hi = stored_span(shape, first, last)
    expected = max(0, hi - lo + 1)
    if len(stored) != expected or not all(
            is_nonneg_safe_integer(e.seq) and e.seq == lo + i for i, e in enumerate(stored)):
        raise StaleShape(f"stored events do not cover seqs {lo}..{hi}")
    window = _Normalizer(session_id, shape.resolved_ids).run(stored)
    end = min(last, shape.length - 1)
    if end >= shape.stored:
        window.extend(shape.closers[max(first, shape.stored) - shape.stored:end - shape.stored + 1])
    return window


# ---------------------------------------------------------------------------------------------
# Streamed verification: the facts of ``verified_log`` without holding the log


# Event types that can change a _TurnState; observe() ignores every other type.
_TURN_STATE_TYPES = frozenset({"turn/start", "turn/end", "step/start", "step/end",
                               "assistant/message", "tool/call", "tool/result"})
# Deferred events folded into the state at a time: bounds memory in a very long open turn.
_FOLD_EVERY = 256


class _StreamedTurn:
    """The scan of ``closers`` for a prefix that streams past. Only the last open turn matters
    (a ``turn/start`` with a turn, or a ``turn/end``, resets the state), so events are kept only
    from the last such ``turn/start`` on, and only types the scan reacts to; they are observed in
    batches, so most turns end before any of their messages is decoded (as in ``closers``).
    A failure while observing counts only if its turn is still the open one at the end (only
    then does ``closers`` observe that event), so it is held until then."""

    def __init__(self) -> None:
        self.state: _TurnState | None = None  # None: no open turn
        self.deferred: list[Event] = []
        self.error: Exception | None = None

    def observe(self, event: Event) -> None:
        kind = event.type
        if type(kind) is not str or kind not in _TURN_STATE_TYPES:
            return
        if kind == "turn/end":
            self.state, self.deferred, self.error = None, [], None
        elif kind == "turn/start" and _get(event.data(), "turn") is not UNSET:
            self.state, self.deferred, self.error = _TurnState(), [event], None
        elif self.state is not None:  # with no open turn, nothing before the next turn/start counts
            self.deferred.append(event)
            if len(self.deferred) >= _FOLD_EVERY:
                self._fold()

    def _fold(self) -> None:
        assert self.state is not None
        deferred, self.deferred = self.deferred, []
        if self.error is not None:
            return
        try:
            for event in deferred:
                self.state.observe(event)
        except Exception as exc:  # noqa: BLE001 - raised by closers() if this turn stays open
            self.error = exc

    def closers(self, last: Event) -> list[Event]:
        if self.state is None:
            return []
        self._fold()
        if self.error is not None:
            raise self.error
        return _closers_after(self.state, last)


class StreamedLog:
    """``verified_log`` for a stored valid prefix fed one event at a time (``append``/``extend``,
    in seq order), keeping only the logical events ``first..last`` and what a LogShape needs.

    The storage pass that feeds it must finish before a normalization error counts (``inspect``
    decodes the whole prefix before it normalizes, so a storage error later in the log wins):
    the first such error is held and raised by ``finish``. A legacy replace lookup raises
    NeedsHistory at once; the caller then verifies with the whole log."""

    def __init__(self, session_id: str, first: int, last: int) -> None:
        self.count = 0
        self._normalizer = _Normalizer(session_id, streaming=True)
        self._turn = _StreamedTurn()
        self._first = first
        self._last = last
        self._last_event: Event | None = None
        self._error: Exception | None = None
        self._window: list[Event] = []

    def append(self, event: Event) -> None:
        index = self.count
        self.count = index + 1
        if self._error is not None:
            return
        try:
            if event.type in _LEGACY_TYPES:
                event = self._normalizer.rewrite(event)
        except NeedsHistory:
            raise
        except Exception as exc:  # noqa: BLE001 - held until the storage pass is done (see above)
            self._error = exc
            return
        self._turn.observe(event)
        self._last_event = event
        if self._first <= index <= self._last:
            self._window.append(event)

    def extend(self, events: list[Event]) -> None:
        for event in events:
            self.append(event)

    def finish(self) -> tuple[list[Event], LogShape]:
        """The logical events ``first..last`` (clipped) and the log's shape."""
        if self._error is not None:
            raise self._error
        tail = [] if self._last_event is None else self._turn.closers(self._last_event)
        window = self._window
        for index, closer in enumerate(tail, self.count):
            if self._first <= index <= self._last:
                window.append(closer)
        return window, LogShape(self.count, tuple(tail), self._normalizer.resolved)
