"""Events rows (persistence.md §5.5, §5.6): one write batch as physical rows, and the reading
side: each row's columns checked, decoded to events, and the committed-prefix rule."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

from msgspec import UNSET

from ... import jsoncodec
from ...model.event import Event, is_valid_seq_at
from ...values import MAX_SAFE_INTEGER, is_nonneg_safe_integer, is_safe_integer
from ..contract.errors import SessionPersistenceCorruptionError
from ..logical import records
from .codec import (
    MAX_PACKED_DATA_BYTES,
    MAX_PACKED_MEMBERS,
    ROW_DEFECTS,
    InvalidRow,
    Text,
    data_json,
    data_text,
    decode_provenance,
    encode_provenance,
    from_text,
    parse_json,
    render,
    stored_data,
)

# ---------------------------------------------------------------------------------------------
# Writing rows (§5.5)

# (seq, type, time, data, source_event_seqs, surface_op, ignorable) of one physical row.
Columns = tuple[int, str, int, str | bytes, bytes | None, str | None, int | None]


def _scalar_problem(event: Event) -> str | None:
    """Why ``event`` cannot be stored as a scalar row and read back identically, or None."""
    if not isinstance(event.type, str) or not event.type:
        return "type must be a non-empty string"
    if not is_safe_integer(event.time):
        return "time must be a safe integer"
    if not event.has_data:
        return "data is missing"
    sources = event.source_seqs
    if sources is not UNSET and not (
        isinstance(sources, list) and all(map(is_nonneg_safe_integer, cast(list[Any], sources)))
    ):
        return "sourceEventSeqs must be an array of non-negative safe integers"
    if event.ignorable is not UNSET and event.ignorable is not True:
        return "ignorable must be true when present"
    return None


def _scalar_columns(event: Event) -> Columns:
    """(seq, type, time, data, source_event_seqs, surface_op, ignorable) of one event."""
    problem = _scalar_problem(event)
    if problem is not None:
        raise ValueError(f"cannot store the event at seq {render(event.seq)}: {problem}")
    return (
        int(event.seq),
        event.type,
        int(event.time),
        stored_data(jsoncodec.dumps(event.data())),
        None if event.source_seqs is UNSET else encode_provenance(event.source_seqs),
        None if event.surface_op is UNSET else jsoncodec.dumps(event.surface_op).decode(),
        1 if event.ignorable is True else None,
    )


def _packed_columns(row: records.PackedRow) -> Columns:
    """A packed row: the tag as type, seq0/time0, and the ignorable=0 packed-row marker."""
    return (row.seq0, row.tag, row.time0, stored_data(row.data_json()), None, None, 0)


def physical_rows(events: list[Event]) -> list[Columns]:
    """One write batch as physical rows: packed within the sqlite bounds, the rest scalar."""
    packed = records.pack(
        events, max_members=MAX_PACKED_MEMBERS, max_data_bytes=MAX_PACKED_DATA_BYTES
    )
    return [
        _packed_columns(record)
        if isinstance(record, records.PackedRow)
        else _scalar_columns(record)
        for record in packed
    ]


def batch_start(session_id: str, events: list[Event]) -> int:
    """The first seq of a non-empty batch, after checking that the batch is contiguous."""
    first = events[0].seq
    if not is_nonneg_safe_integer(first):
        raise ValueError(f"session {session_id} append starts at invalid seq {render(first)}")
    first = int(first)
    for index, event in enumerate(events):
        if not is_valid_seq_at(event.seq, first + index):
            raise ValueError(
                f"session {session_id} append batch is not contiguous: expected seq"
                f" {first + index} at index {index}, got {render(event.seq)}"
            )
    return first


# ---------------------------------------------------------------------------------------------
# Reading rows (§5.6)


class Row(NamedTuple):
    """One events row whose columns passed step 2 of §5.6."""

    seq: int
    type: str
    time: int
    data: bytes  # Text for TEXT, plain bytes for a BLOB
    sources: bytes | None
    surface_op: Text | None
    ignorable: int | None


def is_int(value: Any) -> bool:
    return type(value) is int and is_safe_integer(value)


def _event_row_problem(values: tuple[Any, ...]) -> str | None:
    seq, kind, time_, data, sources, surface_op, ignorable = values
    if not (is_int(seq) and seq >= 0):
        return "seq is not a non-negative safe integer"
    if not (isinstance(kind, Text) and kind):
        return "type is not a non-empty string"
    if not is_int(time_):
        return "time is not a safe integer"
    if not isinstance(data, bytes):
        return "data is not TEXT or BLOB"
    if sources is not None and type(sources) is not bytes:
        return "source_event_seqs is not a BLOB or NULL"
    if surface_op is not None and not isinstance(surface_op, Text):
        return "surface_op is not TEXT or NULL"
    if ignorable is not None and not (type(ignorable) is int and ignorable in (0, 1)):
        return "ignorable is not NULL, 0 or 1"
    return None


# Decoded event type names: a log holds few distinct types, and every row names one.
_TYPE_NAMES: dict[bytes, str] = {}
_TYPE_JSON: dict[str, bytes] = {}  # and their JSON text
_TYPE_NAMES_MAX = 1024


def event_row(values: tuple[Any, ...]) -> Row:
    """Step 2 of §5.6 for an events row; any failure is corruption wherever the row sits."""
    seq, kind, time_, data, sources, surface_op, ignorable = values
    # The checks of _event_row_problem for the usual row, inline; anything else goes the long way.
    if (
        type(seq) is int
        and 0 <= seq <= MAX_SAFE_INTEGER
        and type(kind) is Text
        and kind
        and type(time_) is int
        and -MAX_SAFE_INTEGER <= time_ <= MAX_SAFE_INTEGER
        and isinstance(data, bytes)
        and (sources is None or type(sources) is bytes)
        and (surface_op is None or type(surface_op) is Text)
        and (ignorable is None or (type(ignorable) is int and 0 <= ignorable <= 1))
    ):
        name = _TYPE_NAMES.get(kind)
        if name is not None:
            return Row(seq, name, time_, data, sources, surface_op, ignorable)
    problem = _event_row_problem(values)
    name = ""
    if problem is None:
        try:
            name = from_text(values[1])
        except UnicodeDecodeError:
            problem = "type is not valid text"
        else:
            if len(_TYPE_NAMES) < _TYPE_NAMES_MAX:
                _TYPE_NAMES[bytes(values[1])] = name
    if problem is not None:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: invalid events row at seq {values[0]}: {problem}"
        )
    return Row(values[0], name, *values[2:])


def _decode_scalar(row: Row) -> Event:
    """The event of a scalar row, keys in the order of §5.5."""
    data = data_json(row.data)
    kind = _TYPE_JSON.get(row.type)
    if kind is None:
        kind = jsoncodec.dumps(row.type)
        if len(_TYPE_JSON) < _TYPE_NAMES_MAX:
            _TYPE_JSON[row.type] = kind
    head = b'{"type":%b,"seq":%d,"time":%d,"data":' % (kind, row.seq, row.time)
    if row.sources is None and row.surface_op is None and row.ignorable is None:
        # Exactly {type, seq, time, data}, every part already validated: no need to re-parse.
        return Event.assemble(head + data + b"}", row.type, row.seq, row.time, data)
    parts = [head, data]
    if row.sources is not None:
        parts += [b',"sourceEventSeqs":', jsoncodec.dumps(decode_provenance(row.sources))]
    if row.surface_op is not None:
        surface_op = bytes(row.surface_op)
        parse_json(surface_op, "surface_op")
        parts += [b',"surfaceOp":', surface_op]
    if row.ignorable == 1:
        parts.append(b',"ignorable":true')
    parts.append(b"}")
    return Event.from_json(b"".join(parts))


def _decode_packed(row: Row, outline: bool = False) -> list[Event]:
    """The member events (or ChunkOutlines) of a row carrying the packed marker (ignorable = 0)."""
    if row.type not in records.PACKED_TAGS:
        raise InvalidRow(f"packed-row marker on type {row.type!r}, which is not a chunk tag")
    if row.sources is not None or row.surface_op is not None:
        raise InvalidRow("packed row with surface fields")
    text = data_text(row.data, MAX_PACKED_DATA_BYTES)
    if outline:
        members = records.outline_members(row.type, row.seq, row.time, text, sqlite=True)
        if members is not None:
            return _as_events(members)
    else:
        events = records.packed_members(row.type, row.seq, row.time, text, sqlite=True)
        if events is not None:
            return events
    data = parse_json(text, "data")
    return _as_events(
        records.unpack_row(
            {"type": row.type, "seq0": row.seq, "time0": row.time, "data": data},
            sqlite=True,
            outline=outline,
        )
    )


def _as_events(members: list[Event] | list[records.ChunkOutline]) -> list[Event]:
    # An outline read's ChunkOutlines stand in for member events (records.ChunkOutline): they
    # carry everything listEvents and traceEvent read.
    return cast(list[Event], members)


def decode_row(row: Row, outline: bool = False) -> list[Event]:
    """The events one physical row stands for; raises one of ``ROW_DEFECTS``. With ``outline``
    packed members are ChunkOutlines (validated all the same)."""
    return _decode_packed(row, outline) if row.ignorable == 0 else [_decode_scalar(row)]


def _decodes(row: Row) -> bool:
    try:
        decode_row(row)
    except ROW_DEFECTS:
        return False
    return True


def _proves_commit(row: Row) -> bool:
    """The row decodes to a ``turn/end`` event: everything before it was committed."""
    return row.type == "turn/end" and row.ignorable != 0 and _decodes(row)


def committed_prefix(rows: Iterable[Row], outline: bool = False) -> tuple[list[Event], int | None]:
    """The stored valid prefix, and the seq of the row that starts its torn tail (None when there
    is no torn tail) (§5.6 step 3)."""
    events: list[Event] = []
    _, torn_at = scan_prefix(rows, events.append, events.extend, outline)
    return events, torn_at


def scan_prefix(
    rows: Iterable[Row],
    append: Callable[[Event], Any],
    extend: Callable[[list[Event]], Any],
    outline: bool = False,
) -> tuple[int, int | None]:
    """Pass the events of the stored valid prefix, in order, to ``append``/``extend``; the
    number of them, and the seq of the row that starts the torn tail (None: no torn tail).

    One forward pass, equivalent to the spec's backward search for the last ``turn/end`` row:
    the first invalid row is corruption when it or any later row decodes to a ``turn/end``, and
    starts the torn tail otherwise. Rows stream in (the sink decides what is kept) and every row
    is consumed, so a later row whose columns are invalid still fails the read (step 2)."""
    count = 0
    defect: tuple[Row, Exception] | None = None
    committed = False
    for row in rows:
        if defect is None:
            try:
                if row.ignorable == 0:
                    decoded = _decode_packed(row, outline)
                    # Members of a packed row are consecutive by construction: checking the
                    # first checks them all.
                    if decoded[0].seq != count:
                        raise InvalidRow(f"expected seq {count}, got {decoded[0].seq}")
                    count += len(decoded)
                    extend(decoded)
                else:  # decode_row for a scalar row, without the one-element list
                    event = _decode_scalar(row)
                    if event.seq != count:
                        raise InvalidRow(f"expected seq {count}, got {event.seq}")
                    count += 1
                    append(event)
                continue
            except ROW_DEFECTS as exc:
                defect = (row, exc)
        if not committed and _proves_commit(row):
            committed = True
    if defect is None:
        return count, None
    if committed:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: invalid committed physical row at seq {defect[0].seq}"
        ) from defect[1]
    return count, defect[0].seq
