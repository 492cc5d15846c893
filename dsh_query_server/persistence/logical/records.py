"""Storage records of persistence.md §3.2: packed chunk rows (packing on write, validation and
exact reconstruction on read). Both backends use these; neither re-implements them. The other
parts of the shared logical encoding: closers.py (§3.3), legacy.py (§3.4), log.py (the
logical log that ``inspect`` returns, whole, as a window, or verified as a stream).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any, ClassVar, Literal, NamedTuple, overload

import msgspec
from msgspec import UNSET, UnsetType

from ... import jsoncodec
from ...model.event import Event
from ...values import (
    MAX_SAFE_INTEGER,
    is_array,
    is_nonneg_safe_integer,
    is_number,
    is_object,
    is_safe_integer,
)

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
    if not is_object(data) or data.keys() != _CHUNK_DATA_KEYS:
        return None
    turn, step, chunk = data["turn"], data["step"], data["chunk"]
    if not (is_number(turn) and is_number(step)) or not is_object(chunk):
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
        return _Member(
            kind, seq, time, turn, step, index, chunk["id"], name, chunk["argumentsDelta"]
        )
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
        "dt": [b.time - a.time for a, b in zip(run, run[1:], strict=False)],
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
        if not _fits(run[start : start + take], max_data_bytes):
            take = _largest_fitting(run, start, take - 1, max_data_bytes)
        if take == 0:
            out.append(events[start])
            start += 1
            continue
        out.append(_row(run[start : start + take]))
        start += take
    out.extend(events[start:])
    return out


def _largest_fitting(run: list[_Member], start: int, high: int, max_data_bytes: int | None) -> int:
    """Binary search for the largest count in [3, high] whose row fits; 0 when none does."""
    best, low = 0, MIN_RUN
    while low <= high:
        mid = (low + high) // 2
        if _fits(run[start : start + mid], max_data_bytes):
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
    if not is_array(payload) or not set(map(type, payload)) <= _STR_ONLY:
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
    if not is_object(data):
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
    if not is_array(dt) or len(dt) != members - 1 or not _all_safe_integers(dt):
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
        name = dumps(data["name"]) if "name" in data else UNSET
        return _tool_head(index, dumps(data["id"]), name)
    return _text_head(tag, index)


def _tool_head(index: bytes, call_id: bytes, name: bytes | UnsetType) -> bytes:
    named = b"" if name is UNSET else b',"name":' + name
    return (
        b'{"type":"tool-call-delta","index":' + index + b',"id":' + call_id + named
    ) + b',"argumentsDelta":'


def _text_head(tag: str, index: bytes) -> bytes:
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


class _TextRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    seq0: int
    time0: int
    data: _TextRowData


class _ToolRow(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    seq0: int
    time0: int
    data: _ToolRowData


_ROW_DATA_DECODERS = {
    "text-chunks": msgspec.json.Decoder(_TextRowData),
    "reasoning-chunks": msgspec.json.Decoder(_TextRowData),
    "tool-call-chunks": msgspec.json.Decoder(_ToolRowData),
}
_ROW_DECODERS = {
    "text-chunks": msgspec.json.Decoder(_TextRow),
    "reasoning-chunks": msgspec.json.Decoder(_TextRow),
    "tool-call-chunks": msgspec.json.Decoder(_ToolRow),
}

_RowData = _TextRowData | _ToolRowData


def _typed_data(tag: str, data_json: bytes) -> _RowData | None:
    decoder = _ROW_DATA_DECODERS.get(tag)
    if decoder is None:
        return None
    try:
        return decoder.decode(data_json)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _typed_times(data: _RowData, seq0: int, time0: int, sqlite: bool) -> list[int] | None:
    """The member times of a typed-decoded row that passes checks 1–10 of §3.2, else None.
    The typed decode already checked keys and kinds (checks 1 and 4–8 but the bounds)."""
    if type(seq0) is not int or type(time0) is not int:
        return None
    members = len(data.args) if isinstance(data, _ToolRowData) else len(data.texts)
    if not (MIN_RUN <= members <= SQLITE_MAX_MEMBERS if sqlite else members >= 1):
        return None
    dt = data.dt  # ints by type
    if len(dt) != members - 1 or not (0 <= seq0 and seq0 + members - 1 <= MAX_SAFE_INTEGER):
        return None
    if dt and not (-MAX_SAFE_INTEGER <= min(dt) and max(dt) <= MAX_SAFE_INTEGER):
        return None
    times = list(accumulate(dt, initial=time0))
    if not (-MAX_SAFE_INTEGER <= min(times) and max(times) <= MAX_SAFE_INTEGER):
        return None
    return times


def outline_members(
    tag: str, seq0: int, time0: int, data_json: bytes, *, sqlite: bool = False
) -> list[ChunkOutline] | None:
    """The ChunkOutlines of a well-formed packed row, straight from its ``data`` JSON text; None
    when this fast path cannot tell (then ``unpack_row(..., outline=True)`` decides, with the
    exact reason). A typed decode checks keys and kinds in one pass: checks 4–8 of §3.2, and
    ``seq0``/``time0`` come from validated integer columns."""
    data = _typed_data(tag, data_json)
    times = None if data is None else _typed_times(data, seq0, time0, sqlite)
    if times is None:
        return None
    return list(map(ChunkOutline, range(seq0, seq0 + len(times)), times))


def packed_members(
    tag: str, seq0: int, time0: int, data_json: bytes, *, sqlite: bool = False
) -> list[Event] | None:
    """``unpack_row``'s member events of a well-formed packed row, from its ``data`` JSON text in
    one typed pass; None when this fast path cannot tell (``unpack_row`` then decides)."""
    data = _typed_data(tag, data_json)
    times = None if data is None else _typed_times(data, seq0, time0, sqlite)
    return None if data is None or times is None else _typed_members(tag, seq0, times, data)


def _typed_line(line: bytes, tag: str) -> tuple[_TextRow | _ToolRow, list[int]] | None:
    """The typed decode of a whole row's JSON text and its member times, when well-formed."""
    decoder = _ROW_DECODERS.get(tag)
    if decoder is None:
        return None
    try:
        row = decoder.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if row.type != tag:
        return None
    times = _typed_times(row.data, row.seq0, row.time0, False)
    return None if times is None else (row, times)


def unpack_line(line: bytes, tag: str) -> list[Event]:
    """``unpack_row(loads(line))`` for the JSON text of a whole row whose ``type`` is ``tag``:
    one typed decode for a well-formed row, the exact checks of ``unpack_row`` otherwise."""
    typed = _typed_line(line, tag)
    if typed is not None:
        row, times = typed
        return _typed_members(tag, row.seq0, times, row.data)
    return unpack_row(jsoncodec.loads(line))


class KeptLine(NamedTuple):
    """A packed line of a log read in its canonical form (``kept_line``): the exact compact
    JSON that ``PackedRow.to_json`` gives for the row's values, so it may be stored as its row
    (``sync``'s pass-through, postgres.md §6): reading it back gives the same members."""

    start: int  # its first member's seq (``seq0``)
    members: int
    line: bytes  # the row's exact compact JSON
    data_bytes: int  # length of its ``data`` JSON

    def events(self) -> list[Event]:
        """Its members, as reading the line gives them."""
        return unpack_line(self.line, self.line[9 : self.line.index(b'"', 9)].decode())


# What a log read with its kept lines holds (the jsonl backend's ``read_stored_pieces``): its
# events in order, where each canonical packed line stands for its members.
Piece = Event | KeptLine


def kept_line(line: bytes, tag: str) -> KeptLine | None:
    """``line`` as a KeptLine when it is a ``tag`` row's canonical compact JSON, else None
    (one typed decode, and no member events built). Such a line has one ``type`` key, first."""
    typed = _typed_line(line, tag)
    if typed is None:
        return None
    row, times = typed
    data = _canonical_data(row.data)
    canonical = b'{"type":"%b","seq0":%d,"time0":%d,"data":%b}' % (
        tag.encode(),
        row.seq0,
        row.time0,
        data,
    )
    return KeptLine(row.seq0, len(times), line, len(data)) if canonical == line else None


def _canonical_data(data: _RowData) -> bytes:
    """``data`` as ``_row`` orders it (typed-decoded strings hold no lone surrogates)."""
    if isinstance(data, _ToolRowData) and data.name is not UNSET:
        return msgspec.json.encode(
            {
                "turn": data.turn,
                "step": data.step,
                "index": data.index,
                "dt": data.dt,
                "id": data.id,
                "name": data.name,
                "args": data.args,
            }
        )
    return msgspec.json.encode(data)  # fields in the spec's order; UNSET name omitted


def _typed_members(tag: str, seq0: int, times: list[int], data: _RowData) -> list[Event]:
    encode = msgspec.json.encode  # typed-decoded strings hold no lone surrogates
    if isinstance(data, _ToolRowData):
        name = UNSET if data.name is UNSET else encode(data.name)
        chunk = _tool_head(encode(data.index), encode(data.id), name)
        payloads = data.args
    else:
        chunk = _text_head(tag, encode(data.index))
        payloads = data.texts
    head = b'{"turn":' + encode(data.turn) + b',"step":' + encode(data.step) + b',"chunk":' + chunk
    return Event.assemble_chunks(seq0, times, head, map(encode, payloads))


@overload
def unpack_row(
    row: dict[str, Any], *, sqlite: bool = ..., outline: Literal[False] = ...
) -> list[Event]: ...
@overload
def unpack_row(
    row: dict[str, Any], *, sqlite: bool = ..., outline: Literal[True]
) -> list[ChunkOutline]: ...
@overload
def unpack_row(
    row: dict[str, Any], *, sqlite: bool = ..., outline: bool
) -> list[Event] | list[ChunkOutline]: ...
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
    head = (
        b'{"turn":'
        + jsoncodec.dumps(data["turn"])
        + b',"step":'
        + jsoncodec.dumps(data["step"])
        + b',"chunk":'
        + _chunk_head(tag, data)
    )
    return Event.assemble_chunks(seq0, times, head, map(jsoncodec.dumps, payloads))
