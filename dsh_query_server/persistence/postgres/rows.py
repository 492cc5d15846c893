"""Rows of the ``postgres:`` store (postgres.md §2.3, §3.3): headers and storage records.

A scalar ``record`` is the event's exact bytes; a packed one is a chunk row of persistence.md
§3.2 (records.py), made only from events that its reconstruction restores byte for byte. Reading
validates the header, the continuity of the rows and every record, and any defect is corruption.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

from msgspec import UNSET

from ... import jsoncodec
from ...model.event import Event, Header
from ...values import MAX_SAFE_INTEGER, is_nonneg_safe_integer, is_safe_integer
from ..contract.errors import SessionFormatUnsupportedError, SessionPersistenceCorruptionError
from ..logical import records

MAX_MEMBERS = 1024
MAX_DATA_BYTES = 1_048_576
MAX_RECORD_BYTES = 1_073_741_823
MAX_ID_BYTES = 1024

# (seq, last_seq, record text) of one events row.
Record = tuple[int, int, str]

_CHUNK = "assistant/chunk"  # the only packable type (records._member)
_INT_ONLY = {int}


# ---------------------------------------------------------------------------------------------
# Writing


def id_problem(session_id: str) -> str | None:
    """Why an id cannot be a ``text`` key (§2.3), or None."""
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "it contains a lone surrogate"
    if size == 0:
        return "it is empty"
    if "\0" in session_id:
        return "it contains U+0000"
    if size > MAX_ID_BYTES:
        return f"it is longer than {MAX_ID_BYTES} bytes"
    return None


def header_text(header: Header) -> str:
    """The header's compact JSON as ``create`` received it (every key, in its order)."""
    return jsoncodec.dumps(header.to_value()).decode("utf-8")


def _text(raw: bytes, what: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not valid UTF-8 JSON text") from None
    if "\0" in text:
        raise ValueError(f"{what} holds an unescaped U+0000")
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"{what} is larger than {MAX_RECORD_BYTES} bytes")
    return text


def _restored(row: records.PackedRow, members: list[Event]) -> list[bool]:
    """For each member of ``row``, whether reading the row back gives its exact bytes (§2.3:
    stricter than sqlite:). Whether a member is restored depends on its own fields only: the
    fields a row shares are equal in type and value in every member (persistence.md §3.2)."""
    value = {"type": row.tag, "seq0": row.seq0, "time0": row.time0, "data": row.data}
    try:
        restored = records.unpack_row(value, sqlite=True)
    except records.MalformedRow:
        return [False] * len(members)
    return [a.raw == b.raw for a, b in zip(restored, members, strict=True)]


def _scalar(event: Event) -> Record:
    if not (isinstance(event.type, str) and event.type):
        raise ValueError(
            f"cannot store the event at seq {event.seq}: type must be a non-empty string"
        )
    if not is_safe_integer(event.time):
        raise ValueError(f"cannot store the event at seq {event.seq}: time must be a safe integer")
    if not event.has_data:
        raise ValueError(f"cannot store the event at seq {event.seq}: data is missing")
    return int(event.seq), int(event.seq), _text(event.raw, f"the event at seq {event.seq}")


def _encode(events: list[Event], scalar: set[int]) -> tuple[list[Record], set[int]]:
    """The rows of ``events`` with the events at the indexes ``scalar`` kept scalar (they
    split runs), and the indexes of packed members that their row would not restore."""
    out: list[Record] = []
    unrestored: set[int] = set()
    bounds = sorted(scalar) + [len(events)]
    start = 0
    for stop in bounds:
        position = start
        for item in records.pack(
            events[start:stop], max_members=MAX_MEMBERS, max_data_bytes=MAX_DATA_BYTES
        ):
            if isinstance(item, records.PackedRow):
                members = events[position : position + item.members]
                for k, ok in enumerate(_restored(item, members)):
                    if not ok:
                        unrestored.add(position + k)
                last = item.seq0 + item.members - 1
                out.append((item.seq0, last, _text(item.to_json(), f"the row at seq {item.seq0}")))
                position += item.members
            else:
                out.append(_scalar(item))
                position += 1
        if stop < len(events):
            out.append(_scalar(events[stop]))
        start = stop + 1
    return out, unrestored


def _repacked(events: list[Event]) -> list[Record]:
    """Chunk runs packed (§5.5 bounds), the rest scalar. A member that its packed row would not
    restore byte for byte stays scalar and splits its run; whether it is restored does not
    depend on its row, so one more pass settles it."""
    if _CHUNK not in [event.type for event in events]:
        return [_scalar(event) for event in events]  # nothing to pack: what pack would leave
    scalar: set[int] = set()
    while True:
        out, unrestored = _encode(events, scalar)
        if not unrestored:
            return out
        scalar |= unrestored


def _passed(line: records.KeptLine) -> Record | None:
    """A source's canonical packed line as its row, when it is within the bounds of §2.1."""
    if not (records.MIN_RUN <= line.members <= MAX_MEMBERS and line.data_bytes <= MAX_DATA_BYTES):
        return None
    try:
        text = _text(line.line, "a kept row")
    except ValueError:
        return None
    return line.start, line.start + line.members - 1, text


def encode_batch(batch: Sequence[records.Piece]) -> list[Record]:
    """One contiguous batch as rows: chunk runs packed (§5.5 bounds), the rest scalar. A
    source's canonical packed line (records.KeptLine, ``sync``'s pass-through, postgres.md §6)
    within the bounds is stored as it is: it reads back as exactly its members. The events
    around such rows, and the members of a line out of bounds, are packed as without."""
    out: list[Record] = []
    run: list[Event] = []
    for piece in batch:
        if isinstance(piece, Event):
            run.append(piece)
            continue
        record = _passed(piece)
        if record is None:
            run.extend(piece.events())
            continue
        if run:
            out.extend(_repacked(run))
            run = []
        out.append(record)
    if run:
        out.extend(_repacked(run))
    return out


def events_of(batch: Sequence[records.Piece]) -> list[Event]:
    """The events of a batch, a kept line's members built."""
    out: list[Event] = []
    for piece in batch:
        if isinstance(piece, Event):
            out.append(piece)
        else:
            out.extend(piece.events())
    return out


def batch_start(session_id: str, batch: Sequence[records.Piece]) -> int:
    """The first seq of a non-empty batch, after checking that it is contiguous (§3.6); a kept
    line's members have the seqs from its ``seq0`` on."""
    seqs: list[Any] = []
    for piece in batch:
        if isinstance(piece, Event):
            seqs.append(piece.seq)
        else:
            seqs.extend(range(piece.start, piece.start + piece.members))
    first = seqs[0]
    if not is_nonneg_safe_integer(first):
        raise ValueError(
            f'session "{session_id}" append batch is not contiguous at index 0:'
            f" expected a non-negative safe integer seq, got {first!r}"
        )
    first = int(first)
    end = first + len(seqs)
    if set(map(type, seqs)) == _INT_ONLY and seqs == list(range(first, end)):
        if end - 1 > MAX_SAFE_INTEGER:
            raise ValueError(f'session "{session_id}" append batch ends beyond the safe integers')
        return first  # the usual batch, checked in C; the loop below finds the first fault
    for index, seq in enumerate(seqs):
        if type(seq) not in (int, float) or seq != first + index:
            raise ValueError(
                f'session "{session_id}" append batch is not contiguous at index {index}:'
                f" expected seq {first + index}, got {jsoncodec.dumps(seq).decode()}"
            )
    if end - 1 > MAX_SAFE_INTEGER:
        raise ValueError(f'session "{session_id}" append batch ends beyond the safe integers')
    return first


# ---------------------------------------------------------------------------------------------
# Reading


def _corrupt_row(session_id: str, reason: str) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(
        f'corrupt postgres session row "{session_id}": {reason}'
    )


def _require_format_v0(header: Header) -> None:
    """persistence.md §2.3: another numeric format version is refused before other checks."""
    version = header.version
    if not is_safe_integer(version) or version == 0:
        return
    if version > 0:
        raise SessionFormatUnsupportedError(
            f'session "{header.id}" uses log format v{version}, but this harness reads only v0:'
            " the log was written by a newer harness — upgrade the harness to open it"
        )
    raise SessionFormatUnsupportedError(
        f'session "{header.id}" uses log format v{version}, older than the supported v0,'
        " and this build ships no upgrade path for it"
    )


def _str_or_unset(value: object) -> bool:
    return value is UNSET or isinstance(value, str)


def _count_or_unset(value: object) -> bool:
    if type(value) is int:  # the common case, without the calls
        return 0 <= value <= MAX_SAFE_INTEGER
    return value is UNSET or is_nonneg_safe_integer(value)


def _problem(header: Header, session_id: str, created_at: object | None) -> str | None:
    """The first check of §3.3 step 1 that ``header`` fails, in the order they are reported;
    None when it passes them all. Plain tests in a row: a listing runs them on every session."""
    if header.id != session_id:
        return "header id does not match the row's id"
    if not is_nonneg_safe_integer(header.created_at):
        return "createdAt must be a non-negative safe integer"
    if created_at is not None and created_at != header.created_at:
        return "created_at does not match"
    if not _str_or_unset(header.cwd):
        return "cwd must be a string"
    if not _str_or_unset(header.parent_session):
        return "parentSession must be a string"
    if not _str_or_unset(header.agent_preset):
        return "agentPreset must be a string"
    if not _count_or_unset(header.seed_length):
        return "seedLength must be a non-negative safe integer"
    if not _count_or_unset(header.delegation_depth):
        return "delegationDepth must be a non-negative safe integer"
    if header.origin is not UNSET and header.origin != "subagent":
        return 'origin must be "subagent"'
    return None


def decode_header(session_id: str, text: str, created_at: object | None = None) -> Header:
    """Step 1 of §3.3 for a sessions row's ``header`` (and, in listings, its key columns)."""
    try:
        raw = text.encode("utf-8")
        # One parse: a typed decode succeeds exactly for a strict JSON object; anything else
        # is parsed again below for the message that says why.
        header = Header.from_json(raw)
    except (ValueError, UnicodeEncodeError):
        header = _not_a_header(session_id, text)
    _require_format_v0(header)
    problem = _problem(header, session_id, created_at)
    if problem is not None:
        raise _corrupt_row(session_id, problem)
    return header


def _not_a_header(session_id: str, text: str) -> Header:
    try:
        value = jsoncodec.loads(text.encode("utf-8"))
    except (jsoncodec.JSONDecodeError, UnicodeEncodeError) as exc:
        raise _corrupt_row(session_id, f"header is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _corrupt_row(session_id, "header is not a JSON object")
    return Header.from_json(text.encode("utf-8"))  # a JSON object: the typed decode above took it


def listed_header(session_id: str, text: str, created_at: object) -> Header:
    """A listing row's header (§3.2): checked as in §3.3, but a foreign version is listed, not
    refused."""
    try:
        return decode_header(session_id, text, created_at)
    except SessionPersistenceCorruptionError:
        raise
    except Exception:  # noqa: BLE001 - a foreign version is listed, not refused (§3.2)
        return Header.from_json(text.encode("utf-8"))


def span_events(found: Iterable[Sequence[object]], lo: int, hi: int) -> list[Event]:
    """The stored events ``lo..hi`` of (seq, last_seq, record) rows, in order; a row that does
    not decode is corruption."""
    stored: list[Event] = []
    for a, b, c in found:
        stored.extend(
            e for e in decode_record((int(str(a)), int(str(b)), str(c))) if lo <= e.seq <= hi
        )
    return stored


def _invalid(seq: int, reason: str) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(
        f"corrupt session log: invalid stored record at seq {seq}: {reason}"
    )


def _scalar_event(seq: int, record: bytes) -> Event:
    try:
        event = Event.from_json(record)
        if event.has_data:
            jsoncodec.loads(event.data_json)
    except (ValueError, jsoncodec.JSONDecodeError) as exc:
        raise _invalid(seq, f"not a JSON event object: {exc}") from None
    if not (isinstance(event.type, str) and event.type):
        raise _invalid(seq, "type must be a non-empty string")
    if not (type(event.seq) in (int, float) and event.seq == seq):
        raise _invalid(seq, "seq does not match the row")
    if not is_safe_integer(event.time):
        raise _invalid(seq, "time must be a safe integer")
    if not event.has_data:
        raise _invalid(seq, "data is missing")
    return event


def decode_record(row: Record) -> list[Event]:
    """The events of one row (step 3 of §3.3)."""
    seq, last_seq, text = row
    record = text.encode("utf-8")
    if last_seq == seq:
        return [_scalar_event(seq, record)]
    try:
        value = jsoncodec.loads(record)
    except jsoncodec.JSONDecodeError as exc:
        raise _invalid(seq, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _invalid(seq, "a packed row must be a JSON object")
    try:
        events = records.unpack_row(cast(dict[str, Any], value), sqlite=True)
    except records.MalformedRow as exc:
        raise _invalid(seq, str(exc)) from None
    if value["seq0"] != seq or len(events) != last_seq - seq + 1:
        raise _invalid(seq, "seq0 and the member count do not match seq and last_seq")
    return events


def decode_rows(rows: Iterable[Record], count: int, start: int = 0) -> Iterator[Event]:
    """Continuity (step 2) and records (step 3) of rows from ``start`` on; the rows must end
    at ``count``. Corruption raises as soon as it is seen."""
    expected = start
    for row in rows:
        seq, last_seq = row[0], row[1]
        if seq != expected:
            raise SessionPersistenceCorruptionError(
                f"corrupt session log: seq gap at seq {seq} (expected {expected})"
            )
        yield from decode_record(row)
        expected = last_seq + 1
    if expected != count:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: stored rows end at seq {expected - 1}, but the session row"
            f" counts {count} events"
        )
