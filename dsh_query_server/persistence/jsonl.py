"""The ``jsonl:`` backend (persistence.md §4): dsh's JSONL session roots, raw or Zstandard.

One transcript per session at ``<root>/<project dir>/<escaped id>/session.jsonl[.zstd]``: a header
line, then one storage record (§3.2) per line. Reads never change anything on disk; the first
append publishes a transcript atomically, later appends are fsynced and rolled back on failure.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import threading
import weakref
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import zstandard
from msgspec import UNSET

from .. import jsoncodec
from ..files import fsync_dir, make_private_dirs
from ..model.event import HEADER_FIELDS, Event, Header, is_valid_seq_at
from ..values import is_nonneg_safe_integer, is_number, json_number
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
from .legacy import NeedsHistory, StaleShape, render_json
from .logical import LogShape, StreamedLog, logical_window, stored_span, verified_log
from .records import PACKED_TAGS, MalformedRow, PackedRow, pack, unpack_row

COMPRESSIONS = ("auto", "zstd", "none")
TRANSCRIPT = {"zstd": "session.jsonl.zstd", "none": "session.jsonl"}
SUFFIX = {"zstd": ".jsonl.zstd", "none": ".jsonl"}
OPPOSITE = {"zstd": "none", "none": "zstd"}
NO_CWD = "_no-cwd"
ZSTD_MAGIC = 0xFD2FB528
ZSTD_LEVEL = 3
# Header reads start small (a header line is ~150 bytes, a header frame a little more) and double,
# so listing 10,000 sessions reads kilobytes per file, not 64 KiB; long headers still work.
HEADER_READ_FIRST = 1024
HEADER_READ_MAX = 64 * 1024
RETIRED_HEADER_KEYS = frozenset({"sandboxMode", "approvalPolicy"})


class JsonlBackendError(Exception):
    """A refusal that is neither corruption nor an OS error: not found, layout, encoding
    mismatch, duplicate ids, append contiguity, torn tail (persistence.md §6: "other")."""


class RollbackError(Exception):
    """An append failed and truncating it away failed too; carries both failures."""

    def __init__(self, path: str, error: BaseException, rollback_error: BaseException) -> None:
        super().__init__(f'failed to roll back append to "{path}"')
        self.error = error
        self.rollback_error = rollback_error


def _corrupt(message: str) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(message)


# ---------------------------------------------------------------------------------------------
# §4.2 project directory key and §4.3 session-id escaping

_SAFE_UNITS = frozenset(
    map(ord, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"))
_SEPARATOR_UNITS = frozenset(map(ord, "/\\:"))
_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
MAX_PROJECT_KEY = 251


def _code_units(text: str) -> Iterator[int]:
    """``text`` as JavaScript sees it: UTF-16 code units (lone surrogates pass through)."""
    for char in text:
        point = ord(char)
        if point > 0xFFFF:
            point -= 0x10000
            yield 0xD800 | (point >> 10)
            yield 0xDC00 | (point & 0x3FF)
        else:
            yield point


def _unit_text(unit: int) -> str:
    return chr(unit) if unit in _SAFE_UNITS else f"~{unit:04X}"


def project_dir(cwd: str | None) -> str:
    """The project directory name for a header's cwd (None when the header has none)."""
    if cwd is None:
        return NO_CWD
    if not cwd:
        raise ValueError("cannot encode an empty project path")
    pieces: list[str] = []
    in_separator_run = False
    for unit in _code_units(cwd):
        separator = unit in _SEPARATOR_UNITS
        if not separator:
            pieces.append(_unit_text(unit))
        elif not in_separator_run:
            pieces.append("-")
        in_separator_run = separator
    key = ("".join(pieces).lstrip("-") or "root")[:MAX_PROJECT_KEY]
    return f"--{key}--"


def escape_segment(session_id: str) -> str:
    """A session id as one lossless, traversal-free path segment."""
    if not session_id:
        raise ValueError("cannot encode an empty path segment")
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    if _SAFE_SEGMENT.fullmatch(session_id):
        return session_id
    return "".join(_unit_text(unit) for unit in _code_units(session_id))


# ---------------------------------------------------------------------------------------------
# §4.4 the header line


def header_line(header: Header) -> bytes:
    """The header record as written: fixed key order, delegationDepth always present."""
    value: dict[str, Any] = {"type": "session"}
    for name in HEADER_FIELDS:
        field = header.depth_or_zero if name == "delegationDepth" else header.get(name)
        if field is not UNSET:
            value[name] = field
    return jsoncodec.dumps(value) + b"\n"


def _int_or_negative_zero(text: str) -> int | float:
    # json turns "-0" into the integer 0; keep the sign so the header check can see it.
    if text == "-0":
        return -0.0
    # int() refuses thousands of digits; no number that long is a safe integer anyway.
    return int(text) if len(text) < 18 else float(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _parse_header_json(line: bytes) -> Any:
    """The header line as a JSON value, negative zeros kept; raises ValueError."""
    text = line.decode("utf-8", "replace")
    try:
        return json.loads(text, parse_int=_int_or_negative_zero, parse_float=_finite_float,
                          parse_constant=_reject_constant)
    except RecursionError as exc:
        raise ValueError("header line nests too deeply") from exc


def _is_negative_zero(value: Any) -> bool:
    return type(value) is float and value == 0 and math.copysign(1.0, value) < 0


def _is_count(value: Any) -> bool:
    """A non-negative safe integer that is not written as a negative zero."""
    return is_nonneg_safe_integer(value) and not _is_negative_zero(value)


def _optional(value: dict[str, Any], key: str, valid: Any) -> bool:
    return key not in value or valid(value[key])


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _header_from_value(value: Any) -> Header:
    """A valid header line's header (§4.4); other keys are dropped. Raises corruption."""
    if not isinstance(value, dict) or value.get("type") != "session":
        raise _corrupt("corrupt session log: first line is not a session header")
    if value.keys() & RETIRED_HEADER_KEYS:
        raise _corrupt("session header uses retired policy baseline fields")
    valid = (
        is_number(value.get("version"))
        and isinstance(value.get("id"), str)
        and _is_count(value.get("createdAt"))
        and _is_count(value.get("delegationDepth"))
        and _optional(value, "origin", lambda v: v == "subagent")
        and _optional(value, "agentPreset", _is_string)
        and _optional(value, "cwd", _is_string)
        and _optional(value, "parentSession", _is_string)
        and _optional(value, "seedLength", _is_count)
    )
    if not valid:
        raise _corrupt("corrupt session log: first line is not a session header")
    return Header.build(**{name: value.get(name, UNSET) for name in HEADER_FIELDS})


def _format_refusal(value: dict[str, Any], path: str) -> SessionFormatUnsupportedError:
    version = value["version"]
    raw_id = value.get("id", UNSET)
    shown_id = raw_id if isinstance(raw_id, str) else (
        "undefined" if raw_id is UNSET else jsoncodec.dumps(raw_id).decode())
    if version > 0:
        reason = (f"uses log format v{json_number(version)}, but this harness reads only v0: "
                  "the log was written by a newer harness — upgrade the harness to open it")
    else:
        reason = (f"uses log format v{json_number(version)}, older than the supported v0, and this "
                  "build ships no upgrade path for it")
    return SessionFormatUnsupportedError(f'session "{shown_id}" {reason} (raw log: {path})')


def _stored_header(line: bytes, path: str) -> Header:
    """§4.5 step 1 for a header line (without its newline) of a log being read in full."""
    try:
        value = _parse_header_json(line)
    except ValueError:
        raise _corrupt("corrupt session log: header line is not valid JSON") from None
    if isinstance(value, dict) and is_number(value.get("version")) and value["version"] != 0:
        raise _format_refusal(value, path)
    return _header_from_value(value)


def _listed_header(line: bytes) -> Header | None:
    """A header for listing, or None to skip the directory (§4.8 step 4.5)."""
    try:
        return _header_from_value(_parse_header_json(line))
    except (ValueError, SessionPersistenceCorruptionError):
        return None


# ---------------------------------------------------------------------------------------------
# §4.5 storage record lines


class _Unparsable(Exception):
    """A line that is not JSON, or a malformed packed row."""


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _valid_utf8(line: bytes) -> bytes:
    # dsh decodes with replacement; msgspec would keep invalid bytes inside raw ``data``.
    return line if _is_utf8(line) else line.decode("utf-8", "replace").encode("utf-8")


def _record_events(line: bytes) -> list[Event] | None:
    """The events one record line stands for; None when it is JSON but not an object."""
    line = _valid_utf8(line)
    try:
        event = Event.from_json(line)
    except ValueError:
        try:
            jsoncodec.loads(line)
        except jsoncodec.JSONDecodeError:
            raise _Unparsable from None
        return None
    if isinstance(event.type, str) and event.type in PACKED_TAGS:
        try:
            return unpack_row(jsoncodec.loads(line))
        except MalformedRow:
            raise _Unparsable from None
    return [event]


def _yields_turn_end(line: bytes) -> bool:
    try:
        events = _record_events(line)
    except _Unparsable:
        return False
    return events is not None and any(event.type == "turn/end" for event in events)


def _render_seq(events: list[Event] | None) -> str:
    if events is None:
        return "non-object"
    seq = events[0].seq
    return "missing" if seq is UNSET else render_json(seq)


class _LineScanner:
    """§4.5 steps 2–4 over the plaintext after the header, fed in pieces (lines may span them).

    Events are accepted up to the first defect; after it, the scanner only looks for a
    ``turn/end`` that proves the defect was committed."""

    def __init__(self, mark_every: int = 0, sink: StreamedLog | None = None) -> None:
        self.events: list[Event] = []
        # Accepted events go to ``events``, or to ``sink`` (a streamed verification keeps none).
        self.count = 0
        self._extend = self.events.extend if sink is None else sink.extend
        # Seek hints for window reads of raw transcripts: (stream offset of a line's start, seq
        # of its first event) for every ``mark_every``-th accepted line (none when 0).
        self.mark_every = mark_every
        self.marks: list[tuple[int, int]] = []
        self.line_no = 0
        self.accepted_end = 0  # stream offset just past the last accepted line
        self.defect: str | None = None
        self.confirmed = False  # a committed turn/end follows the defect
        self._partial = b""
        self._partial_offset = 0

    @property
    def unterminated(self) -> bool:
        return bool(self._partial)

    def feed(self, data: bytes, start: int = 0) -> None:
        """Scan ``data[start:]`` (an offset, not a slice: no copy of a whole transcript)."""
        if self._partial:
            buffer, start = self._partial + data[start:], 0
        else:
            buffer = data
            self._partial_offset -= start  # stream offsets count from data[start]
        while not self.confirmed:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            self._line(buffer[start:end], self._partial_offset + end + 1)
            start = end + 1
        self._partial = buffer[start:]
        self._partial_offset += start

    def raise_if_confirmed(self) -> None:
        if self.confirmed:
            assert self.defect is not None
            raise _corrupt(self.defect)

    def _line(self, line: bytes, end: int) -> None:
        self.line_no += 1
        if self.defect is not None:
            self.confirmed = _yields_turn_end(line)
            return
        try:
            events = _record_events(line)
        except _Unparsable:
            self.defect = f"corrupt session log: unparsable committed event at line {self.line_no}"
            return
        expected = self.count
        if events is None or not is_valid_seq_at(events[0].seq, expected):
            self.defect = (f"corrupt session log: seq gap in committed region at line "
                           f"{self.line_no} (expected {expected}, got {_render_seq(events)})")
            self.confirmed = events is not None and any(e.type == "turn/end" for e in events)
            return
        if self.mark_every and (self.line_no - 1) % self.mark_every == 0:
            self.marks.append((end - len(line) - 1, expected))
        self.count = expected + len(events)
        self._extend(events)
        self.accepted_end = end


@dataclass(frozen=True, slots=True)
class _Decoded:
    header: Header
    events: list[Event]
    torn: bool
    # Where the lines after the header start (raw: after its newline; zstd: after its frame),
    # and seek hints (file offset, seq of the first event there) about every MARK_EVERY lines:
    # raw at lines, zstd at frames that start on a line boundary.
    body: int = 0
    marks: tuple[tuple[int, int], ...] = ()


# Lines between seek hints: a window read parses at most this many lines before its first event
# (Zstandard: this many, plus the rest of the frame the next hint would have started at).
MARK_EVERY = 64


def decode_raw(content: bytes, path: str, sink: StreamedLog | None = None) -> _Decoded:
    """Decode a whole ``session.jsonl`` (§4.5); with ``sink``, the accepted events go there and
    ``events`` stays empty."""
    newline = content.find(b"\n")
    if newline < 0:
        raise _corrupt("empty or header-less session log")
    header = _stored_header(content[:newline], path)
    scanner = _LineScanner(MARK_EVERY, sink)
    scanner.feed(content, newline + 1)
    scanner.raise_if_confirmed()
    body = newline + 1
    return _Decoded(header, scanner.events, body + scanner.accepted_end < len(content), body,
                    tuple((body + offset, seq) for offset, seq in scanner.marks))


# ---------------------------------------------------------------------------------------------
# §4.6 Zstandard layout


def _frame_end(data: bytes, start: int) -> int | None:
    """The end of the frame at ``start`` found structurally, or None when it is torn."""
    size = len(data)
    if size - start < 4:
        return None
    if int.from_bytes(data[start:start + 4], "little") != ZSTD_MAGIC:
        raise _corrupt(f"corrupt Zstandard session log: invalid frame magic at byte {start}")
    pos = start + 4
    if pos >= size:
        return None
    descriptor = data[pos]
    if descriptor & 0x18:
        raise _corrupt(f"corrupt Zstandard session log: reserved frame-header bit at byte {pos}")
    single_segment = bool(descriptor & 0x20)
    window = 0 if single_segment else 1
    dictionary = (0, 1, 2, 4)[descriptor & 0x03]
    content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    pos += 1 + window + dictionary + content_size
    last = False
    while not last:
        if pos + 3 > size:
            return None
        block = int.from_bytes(data[pos:pos + 3], "little")
        kind = (block >> 1) & 0x03
        if kind == 3:
            raise _corrupt(f"corrupt Zstandard session log: reserved block type at byte {pos}")
        pos += 3 + (1 if kind == 1 else block >> 3)
        last = bool(block & 1)
    if descriptor & 0x04:
        pos += 4
    return pos if pos <= size else None


def _scan_frames(data: bytes) -> tuple[list[tuple[int, int]], int | None]:
    """The complete frames ``(start, end)`` and the torn final frame's start, if any."""
    frames = []
    pos = 0
    while pos < len(data):
        end = _frame_end(data, pos)
        if end is None:
            return frames, pos
        frames.append((pos, end))
        pos = end
    return frames, None


def _decode_frame(decompressor: zstandard.ZstdDecompressor, frame: bytes) -> bytes | None:
    """A complete frame's plaintext, or None when it fails decoding or its checksum."""
    stream = decompressor.decompressobj()  # streaming: frames need not declare their size
    try:
        plain = stream.decompress(frame)
    except zstandard.ZstdError:
        return None
    return plain if stream.eof and not stream.unused_data else None


def _decode_torn_frame(decompressor: zstandard.ZstdDecompressor, data: bytes) -> bytes:
    """Whatever a torn final frame's bytes yield; a decoder error yields nothing."""
    try:
        return decompressor.decompressobj().decompress(data)
    except zstandard.ZstdError:
        return b""


def _is_one_line(plain: bytes) -> bool:
    return plain.endswith(b"\n") and plain.count(b"\n") == 1


def _header_frame_line(plain: bytes) -> bytes:
    if not _is_one_line(plain):
        raise _corrupt("corrupt Zstandard session log: first frame is not exactly one header line")
    return plain[:-1]


def decode_zstd(content: bytes, path: str, sink: StreamedLog | None = None) -> _Decoded:
    """Decode a whole ``session.jsonl.zstd`` (§4.6); with ``sink``, the accepted events go there
    and ``events`` stays empty.

    Frames are decoded and scanned one at a time, so the plaintext is never all in memory; the
    errors keep the order of §4.6: a frame that fails to decode is met in frame order, and the
    header (step 3) and the scan (step 5) are judged once every complete frame has decoded (the
    scanner only records its first defect). ``marks`` are seek hints for window reads: (byte
    offset of a frame that starts on a line boundary, seq of its first event), about every
    MARK_EVERY lines."""
    frames, torn_start = _scan_frames(content)
    if not frames:
        raise _corrupt("empty or header-less Zstandard session log")
    decompressor = zstandard.ZstdDecompressor()
    scanner = _LineScanner(0, sink)
    marks: list[tuple[int, int]] = []
    marked_at = -MARK_EVERY
    head = b""
    for index, (start, end) in enumerate(frames):
        plain = _decode_frame(decompressor, content[start:end])
        if plain is None:
            raise _corrupt(
                f"corrupt Zstandard session log: frame at byte {start} failed validation")
        if index == 0:
            head = plain
            continue
        if (not scanner.unterminated and scanner.defect is None
                and scanner.line_no - marked_at >= MARK_EVERY):
            marks.append((start, scanner.count))
            marked_at = scanner.line_no
        scanner.feed(plain)
    header = _stored_header(_header_frame_line(head), path)
    if scanner.defect is not None or scanner.unterminated:
        raise _corrupt("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    if torn_start is not None:
        if scanner.line_no - marked_at >= MARK_EVERY:
            marks.append((torn_start, scanner.count))
        scanner.feed(_decode_torn_frame(decompressor, content[torn_start:]))
        scanner.raise_if_confirmed()
    return _Decoded(header, scanner.events, torn_start is not None, frames[0][1], tuple(marks))


def _zstd_frame(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compress(plain)


# ---------------------------------------------------------------------------------------------
# writing helpers


def _event_line(event: Event) -> bytes:
    # ``raw`` is the event's exact JSON; a newline in it can only be insignificant whitespace,
    # which would split the record, so such events are re-serialized compactly.
    return event.raw if b"\n" not in event.raw else jsoncodec.dumps(event.to_value())


def _record_line(record: Event | PackedRow) -> bytes:
    return record.to_json() if isinstance(record, PackedRow) else _event_line(record)


def _check_serializable(events: list[Event]) -> None:
    """Refuse a batch that cannot be written as the same JSON values (§4.11)."""
    for index, event in enumerate(events):
        if not isinstance(event, Event):
            raise TypeError("session event batch is not losslessly JSON-serializable: "
                            f"element {index} is not an event")
        if not _is_utf8(event.raw):
            raise ValueError("session event batch is not losslessly JSON-serializable: "
                             f"event {index} holds invalid UTF-8")
        if isinstance(event.type, str) and event.type in PACKED_TAGS:
            # A JSONL reader takes such a line for a packed row (§3.2).
            raise ValueError("session event batch is not losslessly JSON-serializable: "
                             f"event {index} has the packed-row type {event.type}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_new_file(path: str, content: bytes) -> None:
    """Create ``path`` exclusively with mode 0600 and make ``content`` durable in it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        _write_all(fd, content)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _remove_quietly(path)
        raise
    os.close(fd)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _append_durably(path: str, data: bytes) -> None:
    """Append and fsync; on failure truncate back to the old size (§4.11 later appends)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException as error:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError as rollback_error:
                raise RollbackError(path, error, rollback_error) from error
            raise
    finally:
        os.close(fd)


def stat_key(st: os.stat_result) -> tuple[int, ...]:
    """The fields of a revision (§4.10), in its order; a listing of 10,000 sessions keeps one
    per transcript, and a whole stat_result is several times larger."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def revision_of_key(key: tuple[int, ...]) -> str:
    return ":".join(map(str, key))


def revision_of(st: os.stat_result) -> str:
    return revision_of_key(stat_key(st))


def _is_flat_artifact(entry: os.DirEntry[str]) -> bool:
    return (entry.name.endswith(SUFFIX["none"]) or entry.name.endswith(SUFFIX["zstd"])) and \
        entry.is_file(follow_symlinks=False)


def _flat_layout_error(path: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'session artifact "{path}" uses the unsupported flat-file layout; use a separate root '
        "or move it into a project/session directory before loading")


def _mismatch_error(path: str, kind: str, mode: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'session artifact "{path}" uses {SUFFIX[kind]}, but this backend is configured for '
        f'compression "{mode}"; use a separate root or select the matching compression mode')


def _not_found(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(f'session "{session_id}" not found')


def _duplicate(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'duplicate JSONL session id "{session_id}" appears in multiple project directories')


def _same_existing_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


class _SessionDir(NamedTuple):  # a tuple: the survey makes one per session on every call
    """A session directory found under the root, with the encodings its transcripts use."""

    path: str
    name: str
    kinds: tuple[str, ...]
    keys: tuple[tuple[int, ...], ...]  # one per kind: stat_key of the survey's probe

    def transcript(self, kind: str) -> str:
        return self.path + os.sep + TRANSCRIPT[kind]  # os.path.join: path has no trailing sep


class _ListedHeader(NamedTuple):
    """A transcript's header as the last listing read it: valid while ``key`` (its stat) is."""

    key: tuple[int, ...]
    revision: str
    header: Header
    exact: bool  # the header names exactly this path (§4.8 step 4.6 passed without realpath)


class _Survey:
    """A finished survey kept for the request that made it, with its session directories by
    name, indexed on first use."""

    __slots__ = ("sessions", "encoding", "_by_name")

    def __init__(self, sessions: list[_SessionDir], encoding: str | None) -> None:
        self.sessions = sessions
        self.encoding = encoding
        self._by_name: dict[str, list[_SessionDir]] | None = None

    def named(self, name: str) -> list[_SessionDir]:
        if self._by_name is None:  # built by one thread or, harmlessly, by two
            by_name: dict[str, list[_SessionDir]] = {}
            for session in self.sessions:
                by_name.setdefault(session.name, []).append(session)
            self._by_name = by_name
        return self._by_name.get(name, [])


@dataclass(frozen=True, slots=True)
class _Located:
    path: str
    encoding: str


@dataclass(frozen=True, slots=True)
class _Verified:
    """What a full read of a transcript proved at one revision (see memo.py)."""

    path: str
    encoding: str
    shape: LogShape
    body: int  # file offset just past the header (its line, or its frame)
    marks: tuple[tuple[int, int], ...]  # (file offset of a line or frame, seq of its first event)
    marked_seqs: tuple[int, ...]  # the marks' seqs, for bisect


_WINDOW_READ = 64 * 1024


# ---------------------------------------------------------------------------------------------
# the backend


class JsonlBackend:
    """persistence.md §4. Synchronous; safe to call from several threads."""

    def __init__(
        self,
        root: str,
        *,
        compression: str = "auto",
        pack_chunks: bool = True,
        read_only: bool = False,
        uri: str | None = None,
    ) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(f"unknown jsonl compression {compression!r}")
        self.root = os.path.abspath(root)
        self.uri = uri if uri is not None else f"jsonl:{self.root}"
        self.writable = not read_only
        self._pack_chunks = pack_chunks
        self._encoding: str | None = None if compression == "auto" else compression
        self._lock = threading.Lock()  # guards the fields below and the lock table
        self._session_locks: dict[str, threading.Lock] = {}
        self._created: dict[str, Header] = {}  # created here, not yet materialized
        self._tracked: set[str] = set()  # created or written through this instance
        self._counts: dict[str, int] = {}  # stored event count after our last good append
        self._locations: dict[str, _Located] = {}
        self._headers: dict[str, _ListedHeader] = {}  # by transcript path, from the last listing
        # Each request's (token's) last survey, for _locate's reuse; an entry goes with its token,
        # so a finished request's survey is not kept until the next one.
        self._surveys: weakref.WeakKeyDictionary[CancelToken, _Survey] = weakref.WeakKeyDictionary()
        # Transcripts verified whole per revision, so window reads at that revision seek to
        # their lines or frames (memo.py explains why this is not a cache).
        self._memo = VerificationMemo()
        self._check_root()

    # inspect_window reads only a window's lines or frames once a log is verified at its
    # revision, so a long log can be read window by window (search/documents.py).
    cheap_windows = True

    # -- mount ---------------------------------------------------------------------------------

    def _check_root(self) -> None:
        """An existing root must be a readable directory; an absent one is created later."""
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f'jsonl root "{self.root}" is not a directory')
        if not os.access(self.root, os.R_OK | os.X_OK):
            raise PermissionError(f'jsonl root "{self.root}" is not readable')

    def close(self) -> None:
        """Nothing to release: every operation opens and closes its own files."""

    # -- root survey and encoding (§4.7) -------------------------------------------------------

    def _scandir(self, path: str, token: CancelToken | None) -> list[os.DirEntry[str]]:
        check(token)
        with os.scandir(path) as entries:
            found = sorted(entries, key=lambda entry: entry.name)
        check(token)
        return found

    def _exists(self, path: str, token: CancelToken | None) -> bool:
        """Probe a path: only "does not exist" is absence; other failures surface."""
        return self._probe(path, token) is not None

    def _probe(self, path: str, token: CancelToken | None) -> os.stat_result | None:
        """``stat`` a path; None only when it does not exist (other failures surface)."""
        check(token)
        try:
            found: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            found = None
        check(token)
        return found

    def _project_dirs(self, token: CancelToken | None) -> list[str]:
        try:
            entries = self._scandir(self.root, token)
        except FileNotFoundError:
            return []
        return [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]

    def _survey(self, token: CancelToken | None) -> list[_SessionDir]:
        """Every session directory holding a transcript; flat artifacts fail the survey.

        This runs on every request over every session, so the loop is written for speed: the
        probes are inlined (as _probe: only "does not exist" is absence), the token is checked
        once per session directory, and paths are joined by hand (entry.path never ends in a
        separator)."""
        found = []
        transcripts = tuple(TRANSCRIPT.items())
        probe = os.stat
        for project in self._project_dirs(token):
            for entry in self._scandir(project, token):
                if _is_flat_artifact(entry):
                    raise _flat_layout_error(entry.path)
                if not entry.is_dir():
                    continue
                check(token)
                base = entry.path + os.sep
                kinds: tuple[str, ...] = ()
                keys: tuple[tuple[int, ...], ...] = ()
                for kind, name in transcripts:
                    try:
                        st = probe(base + name)
                    except FileNotFoundError:
                        continue
                    kinds += (kind,)
                    keys += (stat_key(st),)
                if kinds:
                    found.append(_SessionDir(entry.path, entry.name, kinds, keys))
        check(token)
        return found

    def _root_encoding(self, token: CancelToken | None) -> tuple[list[_SessionDir], str | None]:
        """Survey the root and determine or verify its encoding (None: still undetermined)."""
        check(token)
        sessions = self._survey(token)
        with self._lock:
            encoding = self._encoding or next((s.kinds[0] for s in sessions), None)
            for session in sessions:
                for kind in session.kinds:
                    if kind != encoding:
                        assert encoding is not None
                        raise _mismatch_error(session.transcript(kind), kind, encoding)
            self._encoding = encoding
            if token is not None:
                self._surveys[token] = _Survey(sessions, encoding)
        return sessions, encoding

    def _encoding_for_write(self) -> str:
        """The root encoding, fixing an undetermined one to zstd (first materialization)."""
        _, encoding = self._root_encoding(None)
        with self._lock:
            self._encoding = self._encoding or encoding or "zstd"
            return self._encoding

    # -- identity (§4.8 step 4.6) --------------------------------------------------------------

    def _expected_transcript(self, header: Header, path: str, encoding: str) -> str:
        cwd = None if header.cwd is UNSET else header.cwd
        if header.id == "" or cwd == "":
            raise _corrupt(f'corrupt session log "{path}": header id cannot name a storage path')
        return _transcript_path(self.root, cwd, header.id, encoding)

    def _check_path_identity(self, header: Header, path: str, encoding: str) -> bool:
        """Raises when the header does not name this path; True when it names it exactly."""
        expected = self._expected_transcript(header, path, encoding)
        if expected == path:
            return True
        if not _same_existing_file(expected, path):
            raise _corrupt(f'corrupt session log "{path}": header id "{header.id}" and cwd '
                           f'identify "{expected}"')
        return False

    # -- listing (§4.8) ------------------------------------------------------------------------

    @staticmethod
    def _pieces(path: str, token: CancelToken | None) -> Iterator[bytes]:
        """A file's bytes in pieces growing from 1 KiB (headers are short, but may be long)."""
        with open(path, "rb") as file:
            size = HEADER_READ_FIRST
            while True:
                check(token)
                chunk = file.read(size)
                check(token)
                if not chunk:
                    return
                yield chunk
                size = min(size * 2, HEADER_READ_MAX)

    def _read_raw_header(self, path: str, token: CancelToken | None) -> bytes | None:
        """The bytes before the first newline (any length), or None when there is none yet."""
        head = b""
        with contextlib.closing(self._pieces(path, token)) as pieces:
            for chunk in pieces:
                newline = chunk.find(b"\n")
                if newline >= 0:
                    return head + chunk[:newline]
                head += chunk
        return None

    def _read_zstd_header(self, path: str, token: CancelToken | None) -> bytes | None:
        """The header line from the first frame, or None while that frame is incomplete."""
        data = b""
        with contextlib.closing(self._pieces(path, token)) as pieces:
            for chunk in pieces:
                data += chunk
                end = _frame_end(data, 0)
                if end is not None:
                    break
            else:
                return None
        plain = _decode_frame(zstandard.ZstdDecompressor(), data[:end])
        if plain is None:
            raise _corrupt("corrupt Zstandard session log: header frame failed validation")
        return _header_frame_line(plain)

    def _listing(self, token: CancelToken | None) -> list[tuple[Header, str]]:
        """Listed headers with their revisions, from the survey's stat (§4.8 steps 1–4)."""
        sessions, encoding = self._root_encoding(token)
        if encoding is None:
            return []
        read_header = self._read_zstd_header if encoding == "zstd" else self._read_raw_header
        listed: list[tuple[Header, str]] = []
        seen: set[str] = set()
        known_headers = self._headers
        headers: dict[str, _ListedHeader] = {}
        for session in sessions:
            path = session.transcript(encoding)
            # The survey verified the encoding: every session's one kind is this one. A
            # transcript only grows: while its inode, size and times are unchanged, so is its
            # first line, and the header parsed last time is reused instead of read again, and
            # with it the path identity check when that was an exact match (a pure function of
            # the header, the root and the encoding).
            key = session.keys[0]
            known = known_headers.get(path)
            if known is not None and known.key == key:
                header, revision, exact = known.header, known.revision, known.exact
            else:
                try:
                    line = read_header(path, token)
                except FileNotFoundError:
                    continue
                parsed = None if line is None else _listed_header(line)
                if parsed is None:
                    continue
                header, revision, exact = parsed, revision_of_key(key), False
            if not exact:
                exact = self._check_path_identity(header, path, encoding)
            headers[path] = _ListedHeader(key, revision, header, exact)
            if header.id in seen:
                raise _duplicate(header.id)
            seen.add(header.id)
            listed.append((header, revision))
        self._headers = headers
        return listed

    def list(self, token: CancelToken | None = None) -> list[Header]:
        return [header for header, _ in self._listing(token)]

    def list_snapshots(self, token: CancelToken | None = None) -> list[Snapshot]:
        # The survey already took one stat of each transcript (§4.8 step 5 asks for exactly one).
        return [Snapshot(header, revision) for header, revision in self._listing(token)]

    # -- lookup and reading (§4.9) -------------------------------------------------------------

    def _session_lock(self, session_id: str) -> threading.Lock:
        with self._lock:
            return self._session_locks.setdefault(session_id, threading.Lock())

    def _locate(self, session_id: str, token: CancelToken | None) -> _Located | None:
        """§4.9 steps 1–2. A lookup reuses the survey its own request (token) made last when
        that survey found the session and the transcript is still there. The survey costs two
        stats per session directory, and a request lists before it inspects (§3.0.5), a search's
        reconcile inspects every changed session between two listings, and a batch inspects
        many: surveying afresh for each inspect was quadratic in the root's size (10,000
        sessions: ~50 ms per inspect). The reused survey is one this request finished moments
        earlier, listings always survey afresh (so a search's second listing still sees an
        artifact that appeared during its inspects), and the transcript is read afresh."""
        name = escape_segment(session_id) if session_id else ""  # "" names no directory
        with self._lock:
            recent = None if token is None else self._surveys.get(token)
        if recent is not None:
            located = self._find(session_id, recent.named(name), recent.encoding)
            if located is not None and self._probe(located.path, token) is not None:
                return located
        sessions, encoding = self._root_encoding(token)
        return self._find(session_id, [s for s in sessions if s.name == name], encoding)

    @staticmethod
    def _find(session_id: str, matches: list[_SessionDir], encoding: str | None) -> _Located | None:
        """The transcript among the session directories named for the id."""
        if encoding is None or not session_id:
            return None
        if len(matches) > 1:
            raise _duplicate(session_id)
        return _Located(matches[0].transcript(encoding), encoding) if matches else None

    def _stat(self, path: str, token: CancelToken | None) -> os.stat_result:
        check(token)
        st = os.stat(path)
        check(token)
        return st

    def _read_file(self, path: str, token: CancelToken | None) -> bytes:
        check(token)
        with open(path, "rb") as file:
            content = file.read()
        check(token)
        return content

    def _stable_read(self, path: str, token: CancelToken | None) -> tuple[bytes, str]:
        """A copy of the file that no writer changed while it was read, and its revision."""
        while True:
            before = revision_of(self._stat(path, token))
            content = self._read_file(path, token)
            after = self._stat(path, token)
            if revision_of(after) == before and len(content) == after.st_size:
                return content, before

    def _load(
        self, session_id: str, token: CancelToken | None
    ) -> tuple[StoredLog, _Located] | None:
        """§4.9 steps 1–5: the stored log and where it lives, or None when there is none."""
        located = self._locate(session_id, token)
        if located is None:
            return None
        return self._load_located(session_id, located, token)[0], located

    def _load_located(
        self, session_id: str, located: _Located, token: CancelToken | None
    ) -> tuple[StoredLog, _Decoded]:
        """§4.9 steps 3–5 for a found transcript."""
        content, revision = self._stable_read(located.path, token)
        decode = decode_zstd if located.encoding == "zstd" else decode_raw
        decoded = decode(content, located.path)
        self._check_identity(session_id, decoded.header, located)
        return StoredLog(decoded.header, decoded.events, decoded.torn, revision), decoded

    def _check_identity(self, session_id: str, header: Header, located: _Located) -> None:
        if header.id != session_id:
            raise _corrupt(f'corrupt session log "{located.path}": requested id "{session_id}" '
                           f'does not match header id "{header.id}"')
        self._check_path_identity(header, located.path, located.encoding)

    def read_stored(self, session_id: str, token: CancelToken | None = None) -> StoredLog:
        """The stored header and valid prefix, before legacy normalization and closers."""
        with self._session_lock(session_id):
            loaded = self._load(session_id, token)
        if loaded is None:
            raise _not_found(session_id)
        return loaded[0]

    def inspect(self, session_id: str, token: CancelToken | None = None) -> Inspection:
        stored = self.read_stored(session_id, token)
        return Inspection(stored.header, verified_log(session_id, stored.events)[0])

    def inspect_window(self, session_id: str, first: int, last: int,
                       token: CancelToken | None = None) -> Window:
        """The logical events ``first..last`` (clipped) with exactly the result and errors of
        ``inspect``. A transcript this instance already verified whole at its current revision
        is read only around the window (a seek hint, then lines, or frames for Zstandard);
        otherwise it is read and verified whole, as ``inspect`` does."""
        with self._session_lock(session_id):
            located = self._locate(session_id, token)
            if located is None:
                raise _not_found(session_id)
            window = self._known_window(session_id, located, first, last, token)
            if window is None:
                window = self._verify_window(session_id, located, first, last, token)
            return window

    def _verify_window(self, session_id: str, located: _Located, first: int, last: int,
                       token: CancelToken | None) -> Window:
        """The first window read of a transcript at a revision: verified whole exactly as
        ``inspect`` does, but streamed, so only the window and the memo's facts are kept, not
        every event. A legacy replace lookup needs earlier events: then the (same) content is
        decoded whole, as ``inspect`` decodes it."""
        content, revision = self._stable_read(located.path, token)
        decode = decode_zstd if located.encoding == "zstd" else decode_raw
        streamed: StreamedLog | None = StreamedLog(session_id, first, last)
        try:
            decoded = decode(content, located.path, streamed)
        except NeedsHistory:
            decoded = decode(content, located.path)
            streamed = None
        del content  # the events that matter are decoded; the file's bytes are not needed
        self._check_identity(session_id, decoded.header, located)
        if streamed is None:
            logical, shape = verified_log(session_id, decoded.events)
            events = logical[first:last + 1]
        else:
            events, shape = streamed.finish()
        self._memo.put(session_id, revision, _Verified(
            located.path, located.encoding, shape, decoded.body, decoded.marks,
            tuple(seq for _, seq in decoded.marks)))
        return Window(decoded.header, shape.length, first, events, shape.title)

    def _known_window(self, session_id: str, located: _Located, first: int, last: int,
                      token: CancelToken | None) -> Window | None:
        """The window of a transcript verified at its current revision, read from its own lines
        or frames; None when the revision moved or the bytes disagree (then: verify again)."""
        revision = revision_of(self._stat(located.path, token))
        known = self._memo.get(session_id, revision)
        if known is None or known.path != located.path or known.encoding != located.encoding:
            return None
        shape = known.shape
        lo, hi = stored_span(shape, first, last)
        zstd = known.encoding == "zstd"
        try:
            with open(located.path, "rb") as file:
                head = file.read(known.body)
                line = _known_header_frame(head) if zstd else head[:-1]
                header = _stored_header(line, located.path)
                self._check_identity(session_id, header, located)
                read_span = _read_frames_span if zstd else _read_span
                stored = [] if lo > hi else read_span(file, known, lo, hi, token)
                if revision_of(os.fstat(file.fileno())) != revision:
                    raise StaleShape("the transcript changed while it was read")
            events = logical_window(session_id, shape, stored, first, last)
        except (StaleShape, _Unparsable, SessionPersistenceCorruptionError,
                SessionFormatUnsupportedError, OSError):
            self._memo.forget(session_id)
            return None
        check(token)
        return Window(header, shape.length, first, events, shape.title)

    def stored_count(self, session_id: str) -> int | None:
        with self._session_lock(session_id):
            if session_id in self._counts:
                return self._counts[session_id]
            loaded = self._load(session_id, None)
        return None if loaded is None else len(loaded[0].events)

    # -- writing (§4.11) -----------------------------------------------------------------------

    def _refuse_read_only(self) -> None:
        if not self.writable:
            raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def create(self, header: Header) -> None:
        self._refuse_read_only()
        if not is_nonneg_safe_integer(header.created_at):
            raise ValueError("session header createdAt must be a non-negative safe integer")
        session_id = header.id
        # Both names must be derivable now, or the session could never be materialized.
        name = escape_segment(session_id)
        project_dir(None if header.cwd is UNSET else header.cwd)
        with self._session_lock(session_id):
            if session_id in self._tracked:
                raise JsonlBackendError(f'session "{session_id}" already exists in this backend')
            sessions, _ = self._root_encoding(None)
            if any(session.name == name for session in sessions):
                raise JsonlBackendError(
                    f'session "{session_id}" already has a persisted log on disk; load/resume it '
                    "instead of creating")
            self._created[session_id] = header
            self._tracked.add(session_id)

    def append(self, session_id: str, events: list[Event]) -> None:
        self._refuse_read_only()
        if not events:
            return
        _check_serializable(events)
        with self._session_lock(session_id):
            located: _Located | None
            if session_id in self._counts:
                count, located = self._counts[session_id], self._locations[session_id]
            elif session_id in self._created:
                count, located = 0, None
            else:
                count, located = self._stored_tail(session_id)
            _check_contiguous(session_id, events, count)
            # Forget the count while writing: after a failed write the log is read back.
            self._counts.pop(session_id, None)
            if located is None:
                located = self._materialize(self._created[session_id], events)
            else:
                _append_durably(located.path, self._encode_batch(located.encoding, events))
            self._counts[session_id] = count + len(events)
            self._locations[session_id] = located
            self._tracked.add(session_id)

    def _stored_tail(self, session_id: str) -> tuple[int, _Located]:
        """The stored event count of a log this instance has not written yet (full read)."""
        loaded = self._load(session_id, None)
        if loaded is None:
            raise _not_found(session_id)
        stored, located = loaded
        if stored.torn:
            raise JsonlBackendError(
                f'session "{session_id}" has a torn stored tail; repair it before appending')
        return len(stored.events), located

    def _encode_batch(self, encoding: str, events: list[Event]) -> bytes:
        records = pack(events) if self._pack_chunks else events
        body = b"\n".join(_record_line(record) for record in records) + b"\n"
        return _zstd_frame(body) if encoding == "zstd" else body

    def _materialize(self, header: Header, events: list[Event]) -> _Located:
        """First append: publish header and batch together, never over an existing log."""
        session_id = header.id
        encoding = self._encoding_for_write()
        cwd = None if header.cwd is UNSET else header.cwd
        session_dir = os.path.join(self.root, project_dir(cwd), escape_segment(session_id))
        path = os.path.join(session_dir, TRANSCRIPT[encoding])
        opposite = os.path.join(session_dir, TRANSCRIPT[OPPOSITE[encoding]])
        if self._exists(opposite, None):
            raise _mismatch_error(opposite, OPPOSITE[encoding], encoding)
        if self._exists(path, None):
            raise _exists_on_disk(session_id)
        head = header_line(header)
        content = (_zstd_frame(head) if encoding == "zstd" else head) + \
            self._encode_batch(encoding, events)
        make_private_dirs(session_dir, durable=True)
        temp = f"{path}.{secrets.token_hex(6)}.tmp"
        _write_new_file(temp, content)
        try:
            os.link(temp, path)
        except FileExistsError:
            _remove_quietly(temp)
            raise _exists_on_disk(session_id) from None
        except BaseException:
            _remove_quietly(temp)
            raise
        del self._created[session_id]  # published: from now on the log is read back from disk
        fsync_dir(session_dir)
        _remove_quietly(temp)
        return _Located(path, encoding)


def _known_header_frame(frame: bytes) -> bytes:
    plain = _decode_frame(zstandard.ZstdDecompressor(), frame)
    if plain is None or not _is_one_line(plain):
        raise StaleShape("the header frame changed")
    return plain[:-1]


def _span_events(lines: list[bytes], lo: int, hi: int, expected: int,
                 events: list[Event]) -> int:
    """Decode verified lines (exactly as the scanner does), keeping events ``lo..hi``; returns
    the seq expected after them, stopping once it is past ``hi``."""
    for line in lines:
        decoded = _record_events(line)
        if decoded is None or not is_valid_seq_at(decoded[0].seq, expected):
            raise StaleShape(f"expected seq {expected} at a verified line")
        events.extend(e for e in decoded if lo <= e.seq <= hi)
        expected += len(decoded)
        if expected > hi:
            break
    return expected


def _read_frames_span(file: Any, known: _Verified, lo: int, hi: int,
                      token: CancelToken | None) -> list[Event]:
    """Stored events ``lo..hi`` of a verified Zstandard transcript: seek to the last hinted frame
    at or before ``lo`` (it starts on a line boundary) and decode frames in order until ``hi``
    is reached; the torn final frame, if the span reaches it, yields what its bytes yield."""
    if not known.marks:
        raise StaleShape("no seek hints for a non-empty prefix")
    offset, expected = known.marks[bisect_right(known.marked_seqs, lo) - 1]
    file.seek(offset)
    decompressor = zstandard.ZstdDecompressor()
    events: list[Event] = []
    data, pos, pending, eof = b"", 0, b"", False
    while expected <= hi:
        check(token)
        end = _frame_end(data, pos)
        if end is None and not eof:
            piece = file.read(_WINDOW_READ)
            eof = not piece
            data = data[pos:] + piece
            pos = 0
            continue
        if end is None:  # the torn final frame: whatever its available bytes yield
            if pos == len(data):
                raise StaleShape("the transcript ends before the verified prefix does")
            plain, pos = _decode_torn_frame(decompressor, data[pos:]), len(data)
        else:
            plain = _decode_frame(decompressor, data[pos:end])
            if plain is None:
                raise StaleShape("a verified frame no longer decodes")
            pos = end
        lines = (pending + plain).split(b"\n")
        pending = lines.pop()
        expected = _span_events(lines, lo, hi, expected, events)
    return events


def _read_span(file: Any, known: _Verified, lo: int, hi: int,
               token: CancelToken | None) -> list[Event]:
    """Stored events ``lo..hi`` of a verified raw transcript: seek to the last hint at or before
    ``lo`` and decode lines (exactly as the scanner does) until ``hi`` is reached."""
    if not known.marks:
        raise StaleShape("no seek hints for a non-empty prefix")
    offset, expected = known.marks[bisect_right(known.marked_seqs, lo) - 1]
    file.seek(offset)
    events: list[Event] = []
    pending = b""
    while expected <= hi:
        check(token)
        piece = file.read(_WINDOW_READ)
        if not piece:
            raise StaleShape("the transcript ends before the verified prefix does")
        lines = (pending + piece).split(b"\n")
        pending = lines.pop()
        expected = _span_events(lines, lo, hi, expected, events)
    return events


def _transcript_path(root: str, cwd: str | None, session_id: str, encoding: str) -> str:
    """Where a header's transcript lives (§4.1). Listing checks it once per header read: an
    exact match is remembered with the header (_ListedHeader.exact)."""
    return os.path.join(root, project_dir(cwd), escape_segment(session_id), TRANSCRIPT[encoding])


def _exists_on_disk(session_id: str) -> JsonlBackendError:
    return JsonlBackendError(
        f'refusing to materialize "{session_id}": a log already exists on disk (load/resume it '
        "instead)")


def _check_contiguous(session_id: str, events: list[Event], stored: int) -> None:
    for index, event in enumerate(events):
        if not is_valid_seq_at(event.seq, stored + index):
            got = "missing" if event.seq is UNSET else render_json(event.seq)
            raise JsonlBackendError(f'append seq mismatch for "{session_id}": expected '
                                    f"{stored + index} at index {index}, got {got}")
