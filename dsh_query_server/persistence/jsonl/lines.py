"""Storage record lines (persistence.md §4.5 steps 2–4): each line's events, and the scanner
that accepts events up to the first defect and then looks for a commit that proves it."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import UNSET

from ... import jsoncodec
from ...model.event import Event, is_valid_seq_at
from ...values import MAX_SAFE_INTEGER
from ..logical.legacy import StaleShape, render_json
from ..logical.log import StreamedLog
from ..logical.records import PACKED_TAGS, KeptLine, MalformedRow, Piece, kept_line, unpack_line
from .errors import corrupt

_PACKED_TAG_BYTES = {tag.encode(): tag for tag in PACKED_TAGS}


class Unparsable(Exception):
    """A line that is not JSON, or a malformed packed row."""


def is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _valid_utf8(line: bytes) -> bytes:
    # dsh decodes with replacement; msgspec would keep invalid bytes inside raw ``data``.
    return line if is_utf8(line) else line.decode("utf-8", "replace").encode("utf-8")


def record_events(line: bytes) -> list[Event] | None:
    """The events one record line stands for; None when it is JSON but not an object."""
    return _events(line if line.isascii() else _valid_utf8(line))


def _events(line: bytes) -> list[Event] | None:
    """``record_events`` of a line that is valid UTF-8."""
    try:
        event = Event.from_json(line)
    except ValueError:
        try:
            jsoncodec.loads(line)
        except jsoncodec.JSONDecodeError:
            raise Unparsable from None
        return None
    kind = event.type
    if type(kind) is str and kind in PACKED_TAGS:
        try:
            return unpack_line(line, kind)
        except MalformedRow:
            raise Unparsable from None
    return [event]


def _kept(line: bytes) -> KeptLine | None:
    """A line that is valid UTF-8 as a KeptLine, when it is a packed row's canonical compact
    JSON (one typed decode, no member events built)."""
    if not line.startswith(b'{"type":"'):
        return None
    tag = _PACKED_TAG_BYTES.get(line[9 : line.find(b'"', 9)])
    return None if tag is None else kept_line(line, tag)


def _yields_turn_end(line: bytes) -> bool:
    try:
        events = record_events(line)
    except Unparsable:
        return False
    return events is not None and any(event.type == "turn/end" for event in events)


def _render_seq(events: list[Event] | None) -> str:
    if events is None:
        return "non-object"
    seq = events[0].seq
    return "missing" if seq is UNSET else render_json(seq)


class LineScanner:
    """§4.5 steps 2–4 over the plaintext after the header, fed in pieces (lines may span them).

    Events are accepted up to the first defect; after it, the scanner only looks for a
    ``turn/end`` that proves the defect was committed."""

    def __init__(
        self,
        mark_every: int = 0,
        sink: StreamedLog | None = None,
        pieces: list[Piece] | None = None,
    ) -> None:
        self.events: list[Event] = []
        # Accepted events go to ``events``, or to ``sink`` (a streamed verification keeps none),
        # or to ``pieces``, sync's read: there a canonical packed line goes as its KeptLine.
        self.pieces = pieces
        self.count = 0
        self._extend: Callable[[list[Event]], None] = (
            pieces.extend
            if pieces is not None
            else self.events.extend
            if sink is None
            else sink.extend
        )
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
            raise corrupt(self.defect)

    def _line(self, line: bytes, end: int) -> None:
        self.line_no += 1
        if self.defect is not None:
            self.confirmed = _yields_turn_end(line)
            return
        expected = self.count
        text = line if line.isascii() else _valid_utf8(line)
        pieces = self.pieces
        if pieces is not None and (kept := _kept(text)) is not None:
            if kept.start != expected:  # a canonical row's seqs are safe integers
                self.defect = (
                    f"corrupt session log: seq gap in committed region at line "
                    f"{self.line_no} (expected {expected}, got {kept.start})"
                )
                return
            self._accepted(line, end, expected, kept.members)
            pieces.append(kept)
            return
        try:
            events = _events(text)
        except Unparsable:
            self.defect = f"corrupt session log: unparsable committed event at line {self.line_no}"
            return
        # The usual seq (an int where expected) is checked inline; is_valid_seq_at decides the rest.
        if events is None or not (
            (type(first := events[0].seq) is int and first == expected <= MAX_SAFE_INTEGER)
            or is_valid_seq_at(first, expected)
        ):
            self.defect = (
                f"corrupt session log: seq gap in committed region at line "
                f"{self.line_no} (expected {expected}, got {_render_seq(events)})"
            )
            self.confirmed = events is not None and any(e.type == "turn/end" for e in events)
            return
        self._accepted(line, end, expected, len(events))
        self._extend(events)

    def _accepted(self, line: bytes, end: int, expected: int, count: int) -> None:
        if self.mark_every and (self.line_no - 1) % self.mark_every == 0:
            self.marks.append((end - len(line) - 1, expected))
        self.count = expected + count
        self.accepted_end = end


def span_events(lines: list[bytes], lo: int, hi: int, expected: int, events: list[Event]) -> int:
    """Decode verified lines (exactly as the scanner does), keeping events ``lo..hi``; returns
    the seq expected after them, stopping once it is past ``hi``. Raises Unparsable, or
    StaleShape when a line is not where verification saw it."""
    for line in lines:
        decoded = record_events(line)
        if decoded is None or not is_valid_seq_at(decoded[0].seq, expected):
            raise StaleShape(f"expected seq {expected} at a verified line")
        events.extend(e for e in decoded if lo <= e.seq <= hi)
        expected += len(decoded)
        if expected > hi:
            break
    return expected
