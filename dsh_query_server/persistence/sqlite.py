"""The ``sqlite:`` persistence backend (persistence.md §5).

All sessions live in one SQLite database file, or in a private in-memory database for
``:memory:``. The file layout is dsh's (application id 0x44534850, ``user_version`` 17), so either
side can open and append to the other's sessions.

Threading: one connection, guarded by one lock. A ``:memory:`` database exists only inside its
connection, so one shared connection is the only way every worker thread sees the same store; for
files it keeps what opening learnt (store identity, verified tails) in one place, and SQLite
serializes writers anyway. Every call is a few short statements, so the lock is not a bottleneck.

Text columns are read as raw bytes (``_Text``) and written through ``CAST(? AS TEXT)`` from
``surrogatepass`` UTF-8: a session id or event type is any JSON string, lone surrogates included,
and stored text that is not UTF-8 must be a finding about a row, not a crash inside ``sqlite3``.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec
import zstandard
from msgspec import UNSET

from .. import jsoncodec
from ..files import make_private_dirs
from ..model.event import Event, Header, is_valid_seq_at
from ..values import MAX_SAFE_INTEGER, collapse_whitespace, is_nonneg_safe_integer, is_safe_integer
from . import legacy, logical, records
from ..cancel import CancelToken, check
from .base import (
    Inspection,
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
    Snapshot,
    StoredLog,
    Window,
)
from .memo import VerificationMemo

APPLICATION_ID = 0x44534850  # 1146308688
USER_VERSION = 17
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")
MAX_BUSY_TIMEOUT_MS = 2_147_483_647
MEMORY = ":memory:"

MAX_PACKED_MEMBERS = 1024
MAX_PACKED_DATA_BYTES = 1_048_576
COMPRESSION_THRESHOLD = 4096
ZSTD_LEVEL = 3

# §5.4: the only user objects, as (type, name, tbl_name, sql) after whitespace normalization.
EVENTS_SQL = (
    "CREATE TABLE events ( session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, data ANY NOT NULL,"
    " source_event_seqs ANY, surface_op TEXT,"
    " ignorable INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),"
    " PRIMARY KEY (session_id, seq) ) STRICT"
)
PERSISTENCE_STATE_SQL = (
    "CREATE TABLE persistence_state ( singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    " store_id TEXT NOT NULL ) STRICT"
)
SESSIONS_SQL = (
    "CREATE TABLE sessions ( id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL, cwd TEXT, parent_session TEXT, seed_length INTEGER,"
    " origin TEXT, delegation_depth INTEGER, agent_preset TEXT, incarnation TEXT NOT NULL,"
    " revision INTEGER NOT NULL ) STRICT"
)
CANONICAL_SCHEMA = (
    ("table", "events", "events", EVENTS_SQL),
    ("table", "persistence_state", "persistence_state", PERSISTENCE_STATE_SQL),
    ("table", "sessions", "sessions", SESSIONS_SQL),
)

_msgspec_decode = msgspec.json.decode
_USER_OBJECTS = "FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_JOURNAL_RETRY_SECONDS = 0.01
_FETCH_ROWS = 512
# Compressed input is fed in slices so a packed row's 1 MiB output limit is enforced while
# decompressing, not after a hostile frame has expanded in memory.
_DECOMPRESS_SLICE = 1024

# Session columns in table order, with the header's wire names (§5.4).
_HEADER_COLUMNS = (
    ("id", "id"),
    ("version", "version"),
    ("created_at", "createdAt"),
    ("cwd", "cwd"),
    ("parent_session", "parentSession"),
    ("seed_length", "seedLength"),
    ("origin", "origin"),
    ("delegation_depth", "delegationDepth"),
    ("agent_preset", "agentPreset"),
)
_SESSION_SELECT = (
    "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth,"
    " agent_preset, incarnation, revision FROM sessions"
)
_SESSION_INSERT = (
    "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin,"
    " delegation_depth, agent_preset, incarnation, revision) VALUES (CAST(? AS TEXT), ?, ?,"
    " CAST(? AS TEXT), CAST(? AS TEXT), ?, CAST(? AS TEXT), ?, CAST(? AS TEXT), CAST(? AS TEXT), 0)"
)
_EVENT_SELECT = (
    "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
    " WHERE session_id = CAST(? AS TEXT)"
)
_EVENT_INSERT = (
    "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op,"
    " ignorable) VALUES (CAST(? AS TEXT), ?, CAST(? AS TEXT), ?, ?, ?, ?, ?)"
)


class SessionDatabaseRefused(Exception):
    """The file, its settings or its schema are not a store this build may use (§5.2–§5.4)."""


class MalformedProvenance(ValueError):
    """A ``source_event_seqs`` BLOB that does not decode (§5.5)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed source_event_seqs storage value: {reason}")


class _InvalidRow(Exception):
    """A physical row whose contents do not decode (§5.6 step 3)."""


# Everything that makes a row invalid under the committed-prefix rule.
_ROW_DEFECTS = (_InvalidRow, MalformedProvenance, records.MalformedRow)


class _Text(bytes):
    """A TEXT value exactly as stored (installed as the connection's ``text_factory``)."""


def _to_text(value: str | None) -> bytes | None:
    """The bytes bound through ``CAST(? AS TEXT)`` for a text column."""
    return None if value is None else value.encode("utf-8", "surrogatepass")


def _from_text(value: bytes) -> str:
    """The string for a stored text column; UnicodeDecodeError when it is not (WTF-)UTF-8."""
    return value.decode("utf-8", "surrogatepass")


def _render(value: Any) -> str:
    return "(absent)" if value is UNSET else jsoncodec.dumps(value).decode()


# ---------------------------------------------------------------------------------------------
# Provenance encoding (§5.5)


def _zigzag(delta: int) -> int:
    return 2 * delta if delta >= 0 else -2 * delta - 1


def _unzigzag(value: int) -> int:
    return value // 2 if value % 2 == 0 else -(value + 1) // 2


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def encode_provenance(seqs: Sequence[int]) -> bytes:
    """The first seq as an unsigned LEB128 varint, each later one as a ZigZag delta varint."""
    out = bytearray()
    previous: int | None = None
    for seq in seqs:
        seq = int(seq)
        _put_varint(out, seq if previous is None else _zigzag(seq - previous))
        previous = seq
    return bytes(out)


def _read_varint(blob: bytes, pos: int) -> tuple[int, int]:
    """One unsigned LEB128 varint starting at ``pos``; the value and the position after it."""
    start, value, shift = pos, 0, 0
    while True:
        if pos >= len(blob):
            raise MalformedProvenance(f"truncated varint at byte {start}")
        byte = blob[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0 and pos - start > 1:
                raise MalformedProvenance(f"non-canonical varint at byte {start}")
            return value, pos
        shift += 7
        if shift > 56:
            raise MalformedProvenance(
                f"varint at byte {start} out of range (more than 8 continuation steps)")


def decode_provenance(blob: bytes) -> list[int]:
    """The seqs of a ``source_event_seqs`` BLOB, order and duplicates preserved."""
    seqs: list[int] = []
    pos = 0
    while pos < len(blob):
        start = pos
        value, pos = _read_varint(blob, pos)
        if not seqs:
            if value > MAX_SAFE_INTEGER:
                raise MalformedProvenance(f"first value at byte {start} out of range")
            seqs.append(value)
            continue
        if value > 2 * MAX_SAFE_INTEGER:
            raise MalformedProvenance(f"delta at byte {start} out of range")
        seq = seqs[-1] + _unzigzag(value)
        if not 0 <= seq <= MAX_SAFE_INTEGER:
            raise MalformedProvenance(f"decoded seq {seq} at byte {start} out of range")
        seqs.append(seq)
    return seqs


# ---------------------------------------------------------------------------------------------
# Data column (§5.5)


def _zstd_frame(text: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(text)


def stored_data(text: bytes) -> str | bytes:
    """The ``data`` column for serialized data: TEXT, or a Zstandard BLOB when that is smaller."""
    if len(text) < COMPRESSION_THRESHOLD:
        return text.decode()
    frame = _zstd_frame(text)
    return frame if len(frame) < len(text) else text.decode()


def _decompress(frame: bytes, limit: int | None) -> bytes:
    """The plaintext of exactly one complete Zstandard frame, at most ``limit`` bytes."""
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    consumed = 0
    try:
        while consumed < len(frame) and not decompressor.eof:
            piece = frame[consumed:consumed + _DECOMPRESS_SLICE]
            consumed += len(piece)
            out += decompressor.decompress(piece)
            if limit is not None and len(out) > limit:
                raise _InvalidRow(f"stored data exceeds {limit} bytes")
    except zstandard.ZstdError as exc:
        raise _InvalidRow(f"bad Zstandard data: {exc}") from None
    if not decompressor.eof or decompressor.unused_data or consumed < len(frame):
        raise _InvalidRow("bad Zstandard data: not exactly one complete frame")
    return bytes(out)


def _data_text(value: bytes, limit: int | None = None) -> bytes:
    """The text of a ``data`` column (a BLOB decompressed), not parsed yet."""
    if isinstance(value, _Text):
        text = bytes(value)
        if limit is not None and len(text) > limit:  # checked before parsing (§3.2 check 11)
            raise _InvalidRow(f"stored data exceeds {limit} bytes")
        return text
    return _decompress(value, limit)


def _data_json(value: bytes, limit: int | None = None) -> bytes:
    """The JSON text of a ``data`` column, checked to be strict UTF-8 and one JSON value."""
    text = _data_text(value, limit)
    _parse_json(text, "data")
    return text


def _parse_json(text: bytes, column: str) -> Any:
    try:
        # msgspec reads the bytes directly and validates UTF-8 as strictly as Python's decoder;
        # whatever it refuses goes the exact way below (decode, then the lenient fallbacks).
        return _msgspec_decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    try:
        return jsoncodec.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise _InvalidRow(f"{column} is not valid UTF-8") from None
    except jsoncodec.JSONDecodeError as exc:
        raise _InvalidRow(f"{column} is not JSON: {exc}") from None


# ---------------------------------------------------------------------------------------------
# Writing rows (§5.5)

# (seq, type, time, data, source_event_seqs, surface_op, ignorable) of one physical row.
_Columns = tuple[int, str, int, str | bytes, bytes | None, str | None, int | None]


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
            isinstance(sources, list) and all(map(is_nonneg_safe_integer, sources))):
        return "sourceEventSeqs must be an array of non-negative safe integers"
    if event.ignorable is not UNSET and event.ignorable is not True:
        return "ignorable must be true when present"
    return None


def _scalar_columns(event: Event) -> _Columns:
    """(seq, type, time, data, source_event_seqs, surface_op, ignorable) of one event."""
    problem = _scalar_problem(event)
    if problem is not None:
        raise ValueError(f"cannot store the event at seq {_render(event.seq)}: {problem}")
    return (
        int(event.seq),
        event.type,
        int(event.time),
        stored_data(jsoncodec.dumps(event.data())),
        None if event.source_seqs is UNSET else encode_provenance(event.source_seqs),
        None if event.surface_op is UNSET else jsoncodec.dumps(event.surface_op).decode(),
        1 if event.ignorable is True else None,
    )


def _packed_columns(row: records.PackedRow) -> _Columns:
    """A packed row: the tag as type, seq0/time0, and the ignorable=0 packed-row marker."""
    return (row.seq0, row.tag, row.time0, stored_data(row.data_json()), None, None, 0)


def _physical_rows(events: list[Event]) -> list[_Columns]:
    """One write batch as physical rows: packed within the sqlite bounds, the rest scalar."""
    packed = records.pack(
        events, max_members=MAX_PACKED_MEMBERS, max_data_bytes=MAX_PACKED_DATA_BYTES)
    return [
        _packed_columns(record) if isinstance(record, records.PackedRow)
        else _scalar_columns(record)
        for record in packed
    ]


def _batch_start(session_id: str, events: list[Event]) -> int:
    """The first seq of a non-empty batch, after checking that the batch is contiguous."""
    first = events[0].seq
    if not is_nonneg_safe_integer(first):
        raise ValueError(f"session {session_id} append starts at invalid seq {_render(first)}")
    first = int(first)
    for index, event in enumerate(events):
        if not is_valid_seq_at(event.seq, first + index):
            raise ValueError(
                f"session {session_id} append batch is not contiguous: expected seq"
                f" {first + index} at index {index}, got {_render(event.seq)}")
    return first


# ---------------------------------------------------------------------------------------------
# Reading rows (§5.6)


class _Row(NamedTuple):
    """One events row whose columns passed step 2 of §5.6."""

    seq: int
    type: str
    time: int
    data: bytes  # _Text for TEXT, plain bytes for a BLOB
    sources: bytes | None
    surface_op: _Text | None
    ignorable: int | None


def _is_int(value: Any) -> bool:
    return type(value) is int and is_safe_integer(value)


def _event_row_problem(values: tuple[Any, ...]) -> str | None:
    seq, kind, time_, data, sources, surface_op, ignorable = values
    if not (_is_int(seq) and seq >= 0):
        return "seq is not a non-negative safe integer"
    if not (isinstance(kind, _Text) and kind):
        return "type is not a non-empty string"
    if not _is_int(time_):
        return "time is not a safe integer"
    if not isinstance(data, bytes):
        return "data is not TEXT or BLOB"
    if sources is not None and type(sources) is not bytes:
        return "source_event_seqs is not a BLOB or NULL"
    if surface_op is not None and not isinstance(surface_op, _Text):
        return "surface_op is not TEXT or NULL"
    if ignorable is not None and not (type(ignorable) is int and ignorable in (0, 1)):
        return "ignorable is not NULL, 0 or 1"
    return None


# Decoded event type names: a log holds few distinct types, and every row names one.
_TYPE_NAMES: dict[bytes, str] = {}
_TYPE_JSON: dict[str, bytes] = {}  # and their JSON text
_TYPE_NAMES_MAX = 1024


def _event_row(values: tuple[Any, ...]) -> _Row:
    """Step 2 of §5.6 for an events row; any failure is corruption wherever the row sits."""
    seq, kind, time_, data, sources, surface_op, ignorable = values
    # The checks of _event_row_problem for the usual row, inline; anything else goes the long way.
    if (type(seq) is int and 0 <= seq <= MAX_SAFE_INTEGER and type(kind) is _Text and kind
            and type(time_) is int and -MAX_SAFE_INTEGER <= time_ <= MAX_SAFE_INTEGER
            and isinstance(data, bytes) and (sources is None or type(sources) is bytes)
            and (surface_op is None or type(surface_op) is _Text)
            and (ignorable is None or (type(ignorable) is int and 0 <= ignorable <= 1))):
        name = _TYPE_NAMES.get(kind)
        if name is not None:
            return _Row(seq, name, time_, data, sources, surface_op, ignorable)
    problem = _event_row_problem(values)
    if problem is None:
        try:
            kind = _from_text(values[1])
        except UnicodeDecodeError:
            problem = "type is not valid text"
        else:
            if len(_TYPE_NAMES) < _TYPE_NAMES_MAX:
                _TYPE_NAMES[bytes(values[1])] = kind
    if problem is not None:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: invalid events row at seq {values[0]}: {problem}")
    return _Row(values[0], kind, *values[2:])


def _decode_scalar(row: _Row) -> Event:
    """The event of a scalar row, keys in the order of §5.5."""
    data = _data_json(row.data)
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
        _parse_json(surface_op, "surface_op")
        parts += [b',"surfaceOp":', surface_op]
    if row.ignorable == 1:
        parts.append(b',"ignorable":true')
    parts.append(b"}")
    return Event.from_json(b"".join(parts))


def _decode_packed(row: _Row, outline: bool = False) -> list[Event]:
    """The member events (or ChunkOutlines) of a row carrying the packed marker (ignorable = 0)."""
    if row.type not in records.PACKED_TAGS:
        raise _InvalidRow(f"packed-row marker on type {row.type!r}, which is not a chunk tag")
    if row.sources is not None or row.surface_op is not None:
        raise _InvalidRow("packed row with surface fields")
    text = _data_text(row.data, MAX_PACKED_DATA_BYTES)
    if outline:
        members = records.outline_members(row.type, row.seq, row.time, text, sqlite=True)
        if members is not None:
            return members
    data = _parse_json(text, "data")
    return records.unpack_row(
        {"type": row.type, "seq0": row.seq, "time0": row.time, "data": data}, sqlite=True,
        outline=outline)


def _decode_row(row: _Row, outline: bool = False) -> list[Event]:
    """The events one physical row stands for; raises one of ``_ROW_DEFECTS``. With ``outline``
    packed members are ChunkOutlines (validated all the same)."""
    return _decode_packed(row, outline) if row.ignorable == 0 else [_decode_scalar(row)]


def _decodes(row: _Row) -> bool:
    try:
        _decode_row(row)
    except _ROW_DEFECTS:
        return False
    return True


def _proves_commit(row: _Row) -> bool:
    """The row decodes to a ``turn/end`` event: everything before it was committed."""
    return row.type == "turn/end" and row.ignorable != 0 and _decodes(row)


def _committed_prefix(rows: Iterable[_Row],
                      outline: bool = False) -> tuple[list[Event], int | None]:
    """The stored valid prefix, and the seq of the row that starts its torn tail (None when there
    is no torn tail) (§5.6 step 3)."""
    events: list[Event] = []
    _, torn_at = _scan_prefix(rows, events.append, events.extend, outline)
    return events, torn_at


def _scan_prefix(rows: Iterable[_Row], append: Callable[[Event], Any],
                 extend: Callable[[list[Event]], Any],
                 outline: bool = False) -> tuple[int, int | None]:
    """Pass the events of the stored valid prefix, in order, to ``append``/``extend``; the
    number of them, and the seq of the row that starts the torn tail (None: no torn tail).

    One forward pass, equivalent to the spec's backward search for the last ``turn/end`` row:
    the first invalid row is corruption when it or any later row decodes to a ``turn/end``, and
    starts the torn tail otherwise. Rows stream in (the sink decides what is kept) and every row
    is consumed, so a later row whose columns are invalid still fails the read (step 2)."""
    count = 0
    defect: tuple[_Row, Exception] | None = None
    committed = False
    for row in rows:
        if defect is None:
            try:
                if row.ignorable == 0:
                    decoded = _decode_packed(row, outline)
                    # Members of a packed row are consecutive by construction: checking the
                    # first checks them all.
                    if decoded[0].seq != count:
                        raise _InvalidRow(f"expected seq {count}, got {decoded[0].seq}")
                    count += len(decoded)
                    extend(decoded)
                else:  # _decode_row for a scalar row, without the one-element list
                    event = _decode_scalar(row)
                    if event.seq != count:
                        raise _InvalidRow(f"expected seq {count}, got {event.seq}")
                    count += 1
                    append(event)
                continue
            except _ROW_DEFECTS as exc:
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


# ---------------------------------------------------------------------------------------------
# Sessions rows (§5.4, §5.6 step 2)


def _null_or_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _null_or_count(value: Any) -> bool:
    return value is None or (_is_int(value) and value >= 0)


_HEADER_RULES = {
    "id": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "version": (_is_int, "a safe integer"),
    "created_at": (lambda v: _is_int(v) and v >= 0, "a non-negative safe integer"),
    "cwd": (lambda v: v is None or (isinstance(v, str) and os.path.isabs(v)),
            "absent or an absolute path"),
    "parent_session": (_null_or_str, "absent or a string"),
    "seed_length": (_null_or_count, "absent or a non-negative safe integer"),
    "origin": (lambda v: v is None or v == "subagent", 'absent or "subagent"'),
    "delegation_depth": (_null_or_count, "absent or a non-negative safe integer"),
    "agent_preset": (_null_or_str, "absent or a string"),
}


def _header_problem(values: Sequence[Any]) -> str | None:
    """The first header column that breaks its rule, as text; None when every column holds."""
    for (column, _), value in zip(_HEADER_COLUMNS, values):
        rule, expectation = _HEADER_RULES[column]
        if not rule(value):
            return f"{column} must be {expectation}"
    return None


def _integral(value: Any) -> Any:
    """3.0 is the integer 3 (semantics.md §0.2); integer columns store it as 3."""
    return int(value) if type(value) is float and value.is_integer() else value


def _header_columns(header: Header) -> tuple[Any, ...]:
    """The header's values in session-column order; ValueError when a row could not hold them."""
    values = []
    for _, wire in _HEADER_COLUMNS:
        value = header.get(wire)
        if value is None:
            raise ValueError(f"cannot store the session header: {wire} is null")
        values.append(None if value is UNSET else _integral(value))
    problem = _header_problem(values)
    if problem is not None:
        raise ValueError(f"cannot store the session header: {problem}")
    return tuple(values)


@dataclass(frozen=True, slots=True)
class _Session:
    """A validated sessions row."""

    header: Header
    incarnation: str
    revision: int

    @property
    def id(self) -> str:
        return self.header.id


def _session_problem(values: Sequence[Any]) -> str | None:
    problem = _header_problem(values[:9])
    if problem is not None:
        return problem
    if not (isinstance(values[9], str) and _UUID.fullmatch(values[9])):
        return "incarnation must be a UUID"
    if not (_is_int(values[10]) and values[10] >= 0):
        return "revision must be a non-negative safe integer"
    return None


def _session_row(raw: tuple[Any, ...]) -> _Session:
    """Step 2 of §5.6 for a sessions row; any failure is corruption."""
    try:
        values = [_from_text(v) if isinstance(v, _Text) else v for v in raw]
        problem = _session_problem(values)
    except UnicodeDecodeError:
        values, problem = list(raw), "a text column is not valid text"
    if problem is not None:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: invalid sessions row for session {values[0]!r}: {problem}")
    header = Header.build(**{
        wire: value for (_, wire), value in zip(_HEADER_COLUMNS, values) if value is not None})
    return _Session(header, values[9], values[10])


def _require_format_v0(header: Header) -> None:
    """§2.3: an intact log in another format version is refused, without a path suffix."""
    version = header.version
    if version > 0:
        raise SessionFormatUnsupportedError(
            f'session "{header.id}" uses log format v{version}, but this harness reads only v0:'
            " the log was written by a newer harness — upgrade the harness to open it")
    if version < 0:
        raise SessionFormatUnsupportedError(
            f'session "{header.id}" uses log format v{version}, older than the supported v0,'
            " and this build ships no upgrade path for it")


# ---------------------------------------------------------------------------------------------
# File safety (§5.3)

_POSIX = os.name == "posix"


def _lstat_or_none(path: str) -> os.stat_result | None:
    """``lstat``; None only when the path does not exist (other failures must surface)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _require_private_dir(directory: str, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise SessionDatabaseRefused(
            f'session database parent "{directory}" must be a real directory')
    if _POSIX and (st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        raise SessionDatabaseRefused(
            f'session database parent "{directory}" must be owned by the current user and not'
            " group/world-writable")


def _require_private_file(path: str, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise SessionDatabaseRefused(
            f'session database "{path}" must be a regular file, not a symbolic link')
    if _POSIX and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
        raise SessionDatabaseRefused(
            f'session database "{path}" must be owned by the current user and accessible only'
            " by that user")


def _check_location(path: str, *, create_parents: bool) -> bool:
    """The checks of §5.3 for an absolute path; whether the database file exists."""
    parent = os.path.dirname(path)
    if create_parents:
        make_private_dirs(parent)
    parent_stat = _lstat_or_none(parent)
    if parent_stat is None:
        return False
    _require_private_dir(parent, parent_stat)
    file_stat = _lstat_or_none(path)
    if file_stat is None:
        return False
    _require_private_file(path, file_stat)
    return True


def _create_private_file(path: str) -> None:
    """Create the database file exclusively with mode 0600 (or check the one a racer created)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        _require_private_file(path, os.lstat(path))


def _birth_ns(st: os.stat_result) -> int:
    """The file's birth time in nanoseconds where the platform reports it, else 0 (§5.8)."""
    birth_ns = getattr(st, "st_birthtime_ns", None)
    if birth_ns is not None:
        return birth_ns
    birth = getattr(st, "st_birthtime", None)
    return 0 if birth is None else int(birth * 1_000_000_000)


# ---------------------------------------------------------------------------------------------
# Connection, opening and schema (§5.2, §5.4)


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    """Run the block in one transaction: commit on success, roll back on any failure."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except BaseException as rollback_exc:
                raise BaseExceptionGroup(
                    "SQLite transaction failed and rolling it back failed too",
                    [exc, rollback_exc]) from None
        raise


def _pragma(conn: sqlite3.Connection, name: str) -> Any:
    row = conn.execute(f"PRAGMA {name}").fetchone()
    value = None if row is None else row[0]
    return value.decode() if isinstance(value, _Text) else value


def _expect_pragma(conn: sqlite3.Connection, name: str, expected: Any, label: str) -> None:
    value = _pragma(conn, name)
    if value != expected:
        raise _refused(label, f"reads back {name} = {value}, expected {expected}")


def _apply_settings(conn: sqlite3.Connection, busy_timeout_ms: int, label: str,
                    is_file: bool) -> None:
    """The connection settings of §5.2 that come before the opening transaction."""
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    conn.execute("PRAGMA trusted_schema = OFF")
    _expect_pragma(conn, "trusted_schema", 0, label)
    conn.execute("PRAGMA mmap_size = 0")
    if is_file:  # an in-memory database reports no mmap_size at all
        _expect_pragma(conn, "mmap_size", 0, label)
    conn.execute("PRAGMA foreign_keys = ON")


def _set_journal_mode(conn: sqlite3.Connection, mode: str, expected: str, label: str,
                      deadline: float) -> None:
    """Change the journal mode; it fails with SQLITE_BUSY at once, so retry until ``deadline``."""
    while True:
        try:
            row = conn.execute(f"PRAGMA journal_mode = {mode}").fetchone()
            break
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(_JOURNAL_RETRY_SECONDS)
    value = row[0].decode().lower()
    if value != expected:
        raise _refused(label, f"reads back journal_mode = {value}, expected {expected}")


def _identity(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(user_version, application_id, number of user objects)."""
    objects = conn.execute(f"SELECT count(*) {_USER_OBJECTS}").fetchone()[0]
    return _pragma(conn, "user_version"), _pragma(conn, "application_id"), objects


def _refused(label: str, defect: str) -> SessionDatabaseRefused:
    return SessionDatabaseRefused(f'session database at "{label}" {defect}')


def _wrong_version(label: str, user_version: int) -> SessionDatabaseRefused:
    return _refused(label, f"has schema version {user_version}, incompatible with this build"
                           f" ({USER_VERSION})")


def _wrong_application(label: str, application_id: int) -> SessionDatabaseRefused:
    return _refused(label, f"has application id {application_id}, expected {APPLICATION_ID}")


def _refuse_foreign(label: str, user_version: int, application_id: int, objects: int) -> None:
    """Checks 2–4 of the opening transaction."""
    if user_version == 0 and (application_id != 0 or objects):
        raise _refused(label, "has an unversioned schema or application identity")
    if user_version not in (0, USER_VERSION):
        raise _wrong_version(label, user_version)
    if user_version == USER_VERSION and application_id != APPLICATION_ID:
        raise _wrong_application(label, application_id)


def _initialize(conn: sqlite3.Connection) -> None:
    for _, _, _, sql in CANONICAL_SCHEMA:
        conn.execute(sql)
    conn.execute("INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)",
                 (str(uuid.uuid4()),))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {USER_VERSION}")


def _schema_text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, _Text) else value


def _require_canonical_schema(conn: sqlite3.Connection, label: str) -> None:
    found = tuple(
        (*(_schema_text(v) for v in row[:3]), collapse_whitespace(_schema_text(row[3]) or ""))
        for row in conn.execute(
            f"SELECT type, name, tbl_name, sql {_USER_OBJECTS} ORDER BY type, name"))
    if found != CANONICAL_SCHEMA:
        raise _refused(label, "does not contain the required schema objects")


def _open_schema(conn: sqlite3.Connection, label: str, writable: bool) -> bool:
    """The opening transaction of §5.4; False when a read-only mount finds a pristine file."""
    with _transaction(conn, "BEGIN IMMEDIATE" if writable else "BEGIN"):
        user_version, application_id, objects = _identity(conn)
        _refuse_foreign(label, user_version, application_id, objects)
        if user_version == 0:
            if not writable:
                return False
            _initialize(conn)
        _require_canonical_schema(conn, label)
    return True


def _recheck_schema(conn: sqlite3.Connection, label: str) -> None:
    """What every mutation re-checks inside its own transaction (§5.4)."""
    user_version, application_id, _ = _identity(conn)
    if application_id != APPLICATION_ID:
        raise _wrong_application(label, application_id)
    _require_canonical_schema(conn, label)
    if user_version != USER_VERSION:
        raise _wrong_version(label, user_version)


def _store_identity(conn: sqlite3.Connection, label: str) -> str:
    row = conn.execute("SELECT store_id FROM persistence_state WHERE singleton = 1").fetchone()
    store_id = row[0] if row is not None else None
    if isinstance(store_id, _Text):
        store_id = store_id.decode("utf-8", "replace")
    if not (isinstance(store_id, str) and _UUID.fullmatch(store_id)):
        raise _refused(label, "has no valid store identity")
    return store_id


@dataclass(frozen=True, slots=True)
class _Store:
    """An opened, validated database."""

    conn: sqlite3.Connection
    source: str  # the revision prefix of §5.8, computed once at opening

    def revision(self, session: _Session) -> str:
        return f"{self.source}:incarnation:{session.incarnation}:revision:{session.revision}"


# ---------------------------------------------------------------------------------------------
# Queries


def _select_session(conn: sqlite3.Connection, session_id: str) -> _Session | None:
    row = conn.execute(
        f"{_SESSION_SELECT} WHERE id = CAST(? AS TEXT)", (_to_text(session_id),)).fetchone()
    return None if row is None else _session_row(row)


def _select_rows(conn: sqlite3.Connection, session_id: str,
                 token: CancelToken | None) -> Iterator[_Row]:
    """Every events row of the session in seq order, each validated (§5.6 steps 1–2).

    Rows stream one at a time, so a long log's rows are never all in memory, and few objects
    are alive at once (batches of row tuples would keep triggering garbage collections that
    promote the decoded events, and then full collections over the whole heap)."""
    cursor = conn.execute(f"{_EVENT_SELECT} ORDER BY seq", (_to_text(session_id),))
    for count, values in enumerate(cursor, 1):
        if count % _FETCH_ROWS == 0:
            check(token)
        yield _event_row(values)
    check(token)


def _select_span(conn: sqlite3.Connection, session_id: str, lo: int, hi: int, torn_at: int | None,
                 token: CancelToken | None) -> list[_Row]:
    """The rows that hold stored seqs ``lo..hi`` of a verified prefix: the last row starting at
    or before ``lo`` (a packed row covering ``lo`` starts up to 1,023 seqs earlier) and every row
    after it through ``hi``. Two primary-key range reads, however long the log is. Rows from
    ``torn_at`` on are the torn tail, whose seqs may overlap the prefix: they are left out."""
    text_id = _to_text(session_id)
    limit = MAX_SAFE_INTEGER + 1 if torn_at is None else torn_at
    head = conn.execute(f"{_EVENT_SELECT} AND seq <= ? AND seq < ? ORDER BY seq DESC LIMIT 1",
                        (text_id, lo, limit)).fetchall()
    check(token)
    rest = conn.execute(f"{_EVENT_SELECT} AND seq > ? AND seq <= ? AND seq < ? ORDER BY seq",
                        (text_id, lo, hi, limit)).fetchall()
    check(token)
    return [_event_row(values) for values in head + rest]


def _span_events(rows: list[_Row], lo: int, hi: int) -> list[Event]:
    """The events with seqs ``lo..hi`` that ``rows`` decode to (coverage is checked later)."""
    events: list[Event] = []
    for row in rows:
        events.extend(e for e in _decode_row(row) if lo <= e.seq <= hi)
    return events


def _invalid_tail(session_id: str, seq: int) -> ValueError:
    return ValueError(f"session {session_id} has an invalid physical tail at seq {seq}")


def _decode_tail_row(session_id: str, row: _Row) -> list[Event]:
    try:
        return _decode_row(row)
    except _ROW_DEFECTS as exc:
        raise _invalid_tail(session_id, row.seq) from exc


def _discover_tail(conn: sqlite3.Connection, session_id: str) -> int:
    """Stored tail discovery (§5.7 step 2): the seq after the last stored event.

    Reads the last two physical rows, and the packed rows up to 1,023 seqs before them that
    could reach into them; they must decode, not overlap, and the last two must be adjacent."""
    text_id = _to_text(session_id)
    last_two = [_event_row(r) for r in conn.execute(
        f"{_EVENT_SELECT} ORDER BY seq DESC LIMIT 2", (text_id,))][::-1]
    if not last_two:
        return 0
    low = last_two[0].seq
    earlier = [_event_row(r) for r in conn.execute(
        f"{_EVENT_SELECT} AND seq >= ? AND seq < ? AND ignorable = 0 ORDER BY seq",
        (text_id, low - (MAX_PACKED_MEMBERS - 1), low))]
    for row in earlier:
        if _decode_tail_row(session_id, row)[-1].seq >= low:
            raise _invalid_tail(session_id, low)
    decoded = [_decode_tail_row(session_id, row) for row in last_two]
    if len(decoded) == 2 and decoded[1][0].seq != decoded[0][-1].seq + 1:
        raise _invalid_tail(session_id, last_two[1].seq)
    return decoded[-1][-1].seq + 1


@dataclass(frozen=True, slots=True)
class _VerifiedRows:
    """What a full read proved at one revision (see memo.py): the logical log's shape, and the
    seq of the row where the torn tail starts (rows from there on are not part of the log)."""

    shape: logical.LogShape
    torn_at: int | None


def _not_found(session_id: str) -> LookupError:
    return LookupError(f'session "{session_id}" not found')


# ---------------------------------------------------------------------------------------------
# The backend


class SqliteBackend:
    """persistence.md §5. Synchronous; safe to call from several threads."""

    # inspect_window reads only a window's rows once a log is verified at its revision, so a
    # long log can be read window by window (search/documents.py).
    cheap_windows = True

    def __init__(self, path: str, *, journal_mode: str = "wal", busy_timeout_ms: int = 5000,
                 read_only: bool = False, uri: str | None = None) -> None:
        if journal_mode not in JOURNAL_MODES:
            raise ValueError(f"journalMode must be one of {', '.join(JOURNAL_MODES)}")
        if type(busy_timeout_ms) is not int or not 0 <= busy_timeout_ms <= MAX_BUSY_TIMEOUT_MS:
            raise ValueError(f"busyTimeoutMs must be an integer from 0 to {MAX_BUSY_TIMEOUT_MS}")
        self.uri = uri if uri is not None else f"sqlite:{path}"
        self.writable = not read_only
        self._memory = path == MEMORY
        self._path = path if self._memory else os.path.abspath(path)
        self._journal_mode = journal_mode
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._store: _Store | None = None
        # Headers of sessions created through this instance, as session-column values.
        self._created: dict[str, tuple[Any, ...]] = {}
        # (incarnation, revision) of logs this instance read whole and found untorn, or wrote:
        # an append at that same revision needs only the cheap tail discovery, not a full decode.
        self._verified: dict[str, tuple[str, int]] = {}
        # What full reads proved per (session, revision), so window reads at the same revision
        # read only their rows (memo.py explains why this is not a cache).
        self._memo = VerificationMemo()
        # The last listing and the change token it was read under (see _change_token).
        self._listing: tuple[tuple[Any, ...], tuple[Snapshot, ...]] | None = None
        self._commits = 0
        if not self._memory:
            _check_location(self._path, create_parents=self.writable)  # mount-time checks

    # -- opening ---------------------------------------------------------------------------

    def _prepare_file(self) -> bool:
        """The file checks just before the first open; False when a read-only mount has none."""
        if _check_location(self._path, create_parents=self.writable):
            return True
        if not self.writable:
            return False
        _create_private_file(self._path)
        return True

    def _connect(self) -> sqlite3.Connection:
        if self._memory:
            target = MEMORY
        else:
            mode = "rw" if self.writable else "ro"
            target = f"file:{urllib.parse.quote(self._path)}?mode={mode}"
        conn = sqlite3.connect(target, uri=not self._memory, isolation_level=None,
                               check_same_thread=False, timeout=self._busy_timeout_ms / 1000)
        conn.text_factory = _Text
        return conn

    def _source(self, store_id: str) -> str:
        if self._memory:
            return f"memory:store:{store_id}"
        st = os.stat(self._path)
        return f"file:{st.st_dev}:{st.st_ino}:{_birth_ns(st)}:store:{store_id}"

    def _configure(self, conn: sqlite3.Connection, started: float) -> _Store | None:
        """Settings, opening transaction and identity (§5.2, §5.4); None for a pristine
        read-only database."""
        _apply_settings(conn, self._busy_timeout_ms, self._path, is_file=not self._memory)
        if not _open_schema(conn, self._path, self.writable):
            return None
        if self.writable:  # a read-only mount leaves journal_mode and synchronous as they are
            expected = "memory" if self._memory else self._journal_mode
            _set_journal_mode(conn, self._journal_mode, expected, self._path,
                              started + self._busy_timeout_ms / 1000)
            conn.execute("PRAGMA synchronous = FULL")
            _expect_pragma(conn, "synchronous", 2, self._path)
        return _Store(conn, self._source(_store_identity(conn, self._path)))

    def _open(self) -> _Store | None:
        """Open the database; None when a read-only mount finds it absent or pristine."""
        started = time.monotonic()
        if not self._memory and not self._prepare_file():
            return None
        conn = self._connect()
        try:
            store = self._configure(conn, started)
        except BaseException:
            conn.close()
            raise
        if store is None:
            conn.close()
        return store

    @contextmanager
    def _locked(self, token: CancelToken | None = None) -> Iterator[_Store | None]:
        """The opened store (opening it lazily), held under the lock for the block."""
        check(token)
        with self._lock:
            check(token)
            if self._store is None:
                self._store = self._open()
                check(token)
            yield self._store

    # -- reading ---------------------------------------------------------------------------

    def _decode_log(self, store: _Store, session: _Session, token: CancelToken | None,
                    outline: bool = False) -> tuple[StoredLog, int | None]:
        """The stored valid prefix of one session (§5.6), inside the caller's transaction, and
        the seq of the row where its torn tail starts (None: no torn tail)."""
        _require_format_v0(session.header)
        rows = _select_rows(store.conn, session.id, token)
        events, torn_at = _committed_prefix(rows, outline)
        if torn_at is None:
            self._verified[session.id] = (session.incarnation, session.revision)
        return StoredLog(session.header, events, torn_at is not None,
                         store.revision(session)), torn_at

    def _read(self, session_id: str, token: CancelToken | None,
              outline: bool = False) -> tuple[StoredLog, int | None] | None:
        with self._locked(token) as store:
            if store is None:
                return None
            with _transaction(store.conn, "BEGIN"):
                session = _select_session(store.conn, session_id)
                check(token)
                read = None if session is None else self._decode_log(store, session, token, outline)
        check(token)
        return read

    def read_stored(self, session_id: str, token: CancelToken | None = None) -> StoredLog:
        """What the database holds for one session: header, valid prefix, torn flag, revision."""
        read = self._read(session_id, token)
        if read is None:
            raise _not_found(session_id)
        return read[0]

    def _verified_log(self, session_id: str,
                      read: tuple[StoredLog, int | None] | None) -> Inspection:
        """The logical log of a stored prefix; its shape is remembered for window reads."""
        if read is None:
            raise _not_found(session_id)
        log, torn_at = read
        events, shape = logical.verified_log(session_id, log.events)
        self._memo.put(session_id, log.revision, _VerifiedRows(shape, torn_at))
        return Inspection(log.header, events)

    def inspect(self, session_id: str, token: CancelToken | None = None) -> Inspection:
        return self._verified_log(session_id, self._read(session_id, token))

    def inspect_outline(self, session_id: str, token: CancelToken | None = None) -> Inspection:
        """``inspect`` with packed chunk members as ChunkOutlines (same validation, same errors)."""
        return self._verified_log(session_id, self._read(session_id, token, outline=True))

    def inspect_window(self, session_id: str, first: int, last: int,
                       token: CancelToken | None = None) -> Window:
        """The logical events ``first..last`` (clipped) with exactly the result and errors of
        ``inspect``. At a revision this instance already verified whole, only the window's rows
        are read; otherwise the whole log is read and verified, as ``inspect`` does."""
        with self._locked(token) as store:
            if store is None:
                raise _not_found(session_id)
            with _transaction(store.conn, "BEGIN"):
                session = _select_session(store.conn, session_id)
                check(token)
                if session is None:
                    raise _not_found(session_id)
                _require_format_v0(session.header)
                revision = store.revision(session)
                known = self._memo.get(session_id, revision)
                events = None if known is None else self._known_window(
                    store.conn, session_id, known, first, last, token)
                if events is None:
                    events, known = self._verify_window(store, session, first, last, token)
                    self._memo.put(session_id, revision, known)
        check(token)
        return Window(session.header, known.shape.length, first, events, known.shape.title)

    def _verify_window(self, store: _Store, session: _Session, first: int, last: int,
                       token: CancelToken | None) -> tuple[list[Event], _VerifiedRows]:
        """The first window read at a revision: the whole log validated exactly as ``inspect``
        does, but streamed, keeping only the window and the memo's facts (a long log's events
        are never all in memory). A legacy replace lookup needs earlier events: then the log is
        read whole, as ``inspect`` reads it."""
        streamed = logical.StreamedLog(session.id, first, last)
        rows = _select_rows(store.conn, session.id, token)
        try:
            _, torn_at = _scan_prefix(rows, streamed.append, streamed.extend)
        except legacy.NeedsHistory:
            rows.close()
            log, torn_at = self._decode_log(store, session, token)
            whole, shape = logical.verified_log(session.id, log.events)
            return whole[first:last + 1], _VerifiedRows(shape, torn_at)
        if torn_at is None:  # as _decode_log: an untorn log is known before it is normalized
            self._verified[session.id] = (session.incarnation, session.revision)
        events, shape = streamed.finish()
        return events, _VerifiedRows(shape, torn_at)

    def _known_window(self, conn: sqlite3.Connection, session_id: str, known: _VerifiedRows,
                      first: int, last: int, token: CancelToken | None) -> list[Event] | None:
        """A window of a log verified at the current revision, from its own rows; None when the
        rows disagree with the verified shape (changed without a revision bump): verify again."""
        shape = known.shape
        lo, hi = logical.stored_span(shape, first, last)
        try:
            stored = [] if lo > hi else _span_events(
                _select_span(conn, session_id, lo, hi, known.torn_at, token), lo, hi)
            return logical.logical_window(session_id, shape, stored, first, last)
        except (legacy.StaleShape, SessionPersistenceCorruptionError, *_ROW_DEFECTS):
            self._memo.forget(session_id)
            return None

    def stored_count(self, session_id: str) -> int | None:
        read = self._read(session_id, None)
        return None if read is None else len(read[0].events)

    def _change_token(self, store: _Store) -> tuple[Any, ...]:
        """Changes whenever the sessions table may have: ``data_version`` moves on every commit
        by another connection, ``_commits`` on ours, and the file's identity, size and mtime on
        anything that rewrites the file behind SQLite's back. Equal tokens mean the last listing
        still describes the database, so it is reused instead of re-validating every row."""
        data_version = store.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._memory:
            return (data_version, self._commits)
        st = os.stat(self._path)
        return (data_version, self._commits, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def list_snapshots(self, token: CancelToken | None = None) -> tuple[Snapshot, ...]:
        with self._locked(token) as store:
            if store is None:
                return []
            with _transaction(store.conn, "BEGIN"):
                changed = self._change_token(store)
                if self._listing is None or self._listing[0] != changed:
                    sessions = []
                    cursor = store.conn.execute(f"{_SESSION_SELECT} ORDER BY id")
                    while chunk := cursor.fetchmany(_FETCH_ROWS):
                        check(token)
                        sessions.extend(map(_session_row, chunk))
                    snapshots = tuple(Snapshot(session.header, store.revision(session)) for session in sessions)
                    self._listing = (changed, snapshots)
                snapshots = self._listing[1]
        check(token)
        # Snapshots and the tuple are immutable, so sharing them is handing out fresh values;
        # the same object back tells search's reconcile "unchanged" without a pass over it.
        return snapshots

    def list(self, token: CancelToken | None = None) -> list[Header]:
        return [snapshot.header for snapshot in self.list_snapshots(token)]

    # -- writing ---------------------------------------------------------------------------

    def _require_writable(self) -> None:
        if not self.writable:
            raise SessionPersistenceReadOnlyError(
                f"persistence backend {self.uri} is mounted read-only")

    def create(self, header: Header) -> None:
        """Remember a new session's header (§2.1); nothing is written until its first append."""
        self._require_writable()
        columns = _header_columns(header)
        session_id = header.id
        with self._locked() as store:
            assert store is not None  # a writable mount always opens or raises
            if session_id in self._created:
                raise ValueError(f'session "{session_id}" already exists in this backend')
            with _transaction(store.conn, "BEGIN"):
                stored = _select_session(store.conn, session_id) is not None
            if stored:
                raise ValueError(
                    f'session "{session_id}" already has a persisted log on disk; load/resume it'
                    " instead of creating")
            self._created[session_id] = columns

    def _stored_next_seq(self, store: _Store, session: _Session) -> int:
        """Where the stored log continues. A log not verified at this revision is decoded whole,
        so a torn tail anywhere is refused before anything is written on top of it."""
        if self._verified.get(session.id) == (session.incarnation, session.revision):
            return _discover_tail(store.conn, session.id)
        log, _ = self._decode_log(store, session, None)
        if log.torn:
            raise ValueError(
                f'session "{session.id}" has a torn stored tail; repair it before appending')
        return len(log.events)

    def _append_rows(self, store: _Store, session_id: str, first: int,
                     rows: list[_Columns]) -> tuple[str, int]:
        """Steps 1–7 of §5.7 in one BEGIN IMMEDIATE; the committed (incarnation, revision)."""
        conn = store.conn
        with _transaction(conn, "BEGIN IMMEDIATE"):
            _recheck_schema(conn, self._path)
            session = _select_session(conn, session_id)
            if session is None and session_id not in self._created:
                raise _not_found(session_id)
            expected = 0 if session is None else self._stored_next_seq(store, session)
            if first != expected:
                raise ValueError(
                    f"session {session_id} append starts at seq {first}, stored next seq is"
                    f" {expected}")
            if session is None:
                incarnation, revision = str(uuid.uuid4()), 0
                columns = self._created[session_id]
                conn.execute(_SESSION_INSERT, (*map(_bind_text, columns), incarnation))
            else:
                incarnation, revision = session.incarnation, session.revision
            text_id = _to_text(session_id)
            conn.executemany(_EVENT_INSERT, [
                (text_id, seq, _to_text(kind), *rest) for seq, kind, *rest in rows])
            conn.execute("UPDATE sessions SET revision = revision + 1 WHERE id = CAST(? AS TEXT)",
                         (text_id,))
        return incarnation, revision + 1

    def append(self, session_id: str, events: list[Event]) -> None:
        """Store one batch durably and atomically after the stored log (§5.7)."""
        self._require_writable()
        if not events:
            return
        first = _batch_start(session_id, events)
        rows = _physical_rows(events)
        with self._locked() as store:
            assert store is not None  # a writable mount always opens or raises
            try:
                self._verified[session_id] = self._append_rows(store, session_id, first, rows)
            finally:
                self._commits += 1  # any attempt may have changed the table: list afresh

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.conn.close()
                self._store = None


def _bind_text(value: Any) -> Any:
    """A session-column value as bound: strings as bytes for ``CAST(? AS TEXT)``."""
    return _to_text(value) if isinstance(value, str) else value
