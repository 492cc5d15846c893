"""Groups of ``dsh-query sync`` (postgres.md §6): small sessions new to the target share one
transaction, a batch of at most 1,000 events or 8 MiB, instead of a commit each (a commit costs
a flush of the server's log: per small session it was most of the time). A group commits whole
or not at all, so an interrupted run still leaves a valid prefix: whole sessions, each exactly
its source's stored prefix. A group that fails is redone one session at a time by the caller,
which gives every report and conflict rule of the one-by-one path."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .. import jsoncodec
from ..cancel import CancelToken
from ..model.event import Event
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.contract.results import Snapshot, StoredLog
from ..persistence.jsonl import JsonlBackend
from ..persistence.logical.records import KeptLine, Piece
from ..persistence.postgres import rows
from ..persistence.postgres.writes import Write
from ..values import is_nonneg_safe_integer
from .log import SourceLog, count_of, size_of, width

MAX_BATCH_EVENTS = 1000
MAX_BATCH_BYTES = 8 * 1024 * 1024
LONG_BYTES = 1 << 20  # a transcript this long holds several batches (see long_first)


def batches(pieces: Sequence[Piece]) -> list[list[Piece]]:
    """One session's pieces in batches of at most 1,000 events or 8 MiB of records (§6), cut
    where the events alone would be cut: a kept line across a cut (or too large for a batch)
    goes as its members."""
    out: list[list[Piece]] = []
    current: list[Piece] = []
    events = size = 0
    stack = list(reversed(pieces))
    while stack:
        piece = stack.pop()
        n = width(piece)
        bytes_ = size_of(piece)
        if current and (events >= MAX_BATCH_EVENTS or size + bytes_ > MAX_BATCH_BYTES):
            out.append(current)
            current, events, size = [], 0, 0
        if isinstance(piece, KeptLine) and (
            events + n > MAX_BATCH_EVENTS or bytes_ > MAX_BATCH_BYTES
        ):
            stack.extend(reversed(piece.events()))
            continue
        current.append(piece)
        events += n
        size += bytes_
    if current:
        out.append(current)
    return out


@dataclass
class Report:
    """One source's counts."""

    source: str
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("created", "grown", "unchanged", "behind", "conflict", "diverged", "failed"), 0
        )
    )


@dataclass(frozen=True, slots=True)
class Skip:
    """A skipped or failed session."""

    id: str
    source: str
    reason: str
    seq: int | None = None
    message: str = ""


@runtime_checkable
class _StoredReader(Protocol):
    def read_stored(self, session_id: str, token: CancelToken | None = None) -> StoredLog: ...


def read_source(source: PersistenceBackend, session_id: str, token: CancelToken) -> SourceLog:
    """What sync copies (§6): the stored valid prefix, or ``inspect`` for an importer without
    ``read_stored`` (which must not synthesize events); of a ``jsonl:`` source, with its
    canonical packed lines kept whole (log.py)."""
    if isinstance(source, JsonlBackend):
        return SourceLog.of(*source.read_stored_pieces(session_id, token))
    if isinstance(source, _StoredReader):
        log = source.read_stored(session_id, token)
        return SourceLog(log.header, log.events, len(log.events))
    inspected = source.inspect(session_id, token)
    return SourceLog(inspected.meta, inspected.events, len(inspected.events))


@dataclass(frozen=True, slots=True)
class Member:
    """One session waiting in a group, with what its one-by-one redo needs."""

    report: Report
    snapshot: Snapshot
    log: SourceLog
    write: Write
    size: int  # bytes of its records
    digest: str  # its log's digest

    @property
    def count(self) -> int:
        return self.log.count


def group_write(log: SourceLog, max_events: int, max_bytes: int) -> tuple[Write, int] | None:
    """The session's one batch for a group, with its size in bytes, or None when it takes the
    one-by-one path: empty (nothing to write), larger than one batch, or anything
    ``create``/``append`` would refuse (then the one-by-one path gives the exact error)."""
    header = log.header
    if not log.count or log.count > max_events:
        return None
    size = log.size
    session_id = header.id
    if (
        size > max_bytes
        or not isinstance(session_id, str)
        or not is_nonneg_safe_integer(header.created_at)
        or rows.id_problem(session_id) is not None
    ):
        return None
    try:
        if rows.batch_start(session_id, log.pieces) != 0:
            return None
        records = rows.encode_batch(log.pieces)
        text = rows.header_text(header)
    except (ValueError, TypeError):
        return None
    return Write(session_id, 0, log.count, records, text), size


def packed_batch(session_id: str, batch: Sequence[Piece]) -> Write:
    """One batch of a session packed as ``append`` packs it (its errors too), its kept lines
    stored as they are, without a header: the session is stored or was created through the
    backend."""
    first = rows.batch_start(session_id, batch)
    return Write(session_id, first, first + count_of(batch), rows.encode_batch(batch), None)


def member(
    report: Report, snapshot: Snapshot, log: SourceLog, max_events: int, max_bytes: int
) -> Member | None:
    """The session as a group member, or None (see ``group_write``)."""
    grouped = group_write(log, max_events, max_bytes)
    if grouped is None:
        return None
    write, size = grouped
    return Member(report, snapshot, log, write, size, log.digest())


class Pending:
    """The group being filled; ``add`` hands back a full one for its caller to commit."""

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._members: list[Member] = []
        self._events = 0
        self._bytes = 0

    def add(self, item: Member) -> list[Member] | None:
        with self._lock:
            full = None
            events = self._events + item.count
            size = self._bytes + item.size
            if self._members and (events > self.max_events or size > self.max_bytes):
                full = self._members
                self._members, self._events, self._bytes = [], 0, 0
            self._members.append(item)
            self._events += item.count
            self._bytes += item.size
            return full

    def take(self) -> list[Member]:
        with self._lock:
            members = self._members
            self._members, self._events, self._bytes = [], 0, 0
            return members


def long_first(source: PersistenceBackend, ordered: list[Snapshot]) -> list[Snapshot]:
    """A ``jsonl:`` source's sessions whose transcripts are long start first, each kind in
    createdAt order: a long log's batches commit one after another, so started last it trails
    the run alone while the other jobs idle (§6: with more than one job, commits are unordered)."""
    if not isinstance(source, JsonlBackend):
        return ordered
    long = [s for s in ordered if _transcript_bytes(s.revision) >= LONG_BYTES]
    if not long:
        return ordered
    return long + [s for s in ordered if _transcript_bytes(s.revision) < LONG_BYTES]


def _transcript_bytes(revision: str) -> int:
    """The size in a ``jsonl:`` revision (``<dev>:<ino>:<size>:<mtime_ns>:<ctime_ns>``,
    persistence.md §4.10); 0 for one of another form."""
    fields = revision.split(":")
    return int(fields[2]) if len(fields) == 5 and fields[2].isdigit() else 0


def _same_event(a: Event, b: Event) -> bool:
    if a.raw == b.raw:
        return True
    try:
        return jsoncodec.dumps(a.to_value()) == jsoncodec.dumps(b.to_value())
    except (ValueError, TypeError):
        return False


def first_difference(source: list[Event], stored: list[Event]) -> int | None:
    for index, (a, b) in enumerate(zip(source, stored, strict=False)):
        if not _same_event(a, b):
            return index
    return None
