"""Whole-transcript decoding (persistence.md §4.5 raw, §4.6 Zstandard): the header, the stored
valid prefix, whether the tail is torn, and seek hints for later window reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import zstandard

from ...model.event import Event, Header
from ..logical.log import StreamedLog
from ..logical.records import Piece
from .errors import corrupt
from .frames import decode_frame, decode_torn_frame, header_frame_line, scan_frames
from .header import stored_header
from .lines import LineScanner

# Lines between seek hints: a window read parses at most this many lines before its first event
# (Zstandard: this many, plus the rest of the frame the next hint would have started at).
MARK_EVERY = 64
METER_STEP = 1 << 20  # a metered decode reports every MiB of the stored file

# Told (stored bytes decoded, the file's size) while a request reads this one log (cancel.py).
Meter = Callable[[int, int], None]


# A stored log's header and its events as pieces (JsonlBackend.read_stored_pieces).
StoredPieces = tuple[Header, list[Piece]]


@dataclass(frozen=True, slots=True)
class Decoded:
    header: Header
    events: list[Event]
    torn: bool
    # Where the lines after the header start (raw: after its newline; zstd: after its frame),
    # and seek hints (file offset, seq of the first event there) about every MARK_EVERY lines:
    # raw at lines, zstd at frames that start on a line boundary.
    body: int = 0
    marks: tuple[tuple[int, int], ...] = ()


def _feed_metered(scanner: LineScanner, content: bytes, start: int, meter: Meter) -> None:
    """``scanner.feed(content, start)`` in pieces of about a MiB that end after a 0x0A (so no
    line is held across pieces), telling ``meter`` where each piece starts."""
    total = len(content)
    while start < total and not scanner.confirmed:
        meter(start, total)
        newline = content.find(b"\n", start + METER_STEP)
        stop = total if newline < 0 else newline + 1
        scanner.feed(content[start:stop])
        start = stop


def decode_raw(
    content: bytes,
    path: str,
    sink: StreamedLog | None = None,
    pieces: list[Piece] | None = None,
    meter: Meter | None = None,
) -> Decoded:
    """Decode a whole ``session.jsonl`` (§4.5); with ``sink`` or ``pieces``, the accepted events
    go there and ``events`` stays empty (``pieces``: a canonical packed line as its KeptLine).
    ``meter`` is told the bytes decoded as the decode goes."""
    newline = content.find(b"\n")
    if newline < 0:
        raise corrupt("empty or header-less session log")
    header = stored_header(content[:newline], path)
    scanner = LineScanner(MARK_EVERY, sink, pieces)
    if meter is None:
        scanner.feed(content, newline + 1)
    else:
        _feed_metered(scanner, content, newline + 1, meter)
    scanner.raise_if_confirmed()
    body = newline + 1
    return Decoded(
        header,
        scanner.events,
        body + scanner.accepted_end < len(content),
        body,
        tuple((body + offset, seq) for offset, seq in scanner.marks),
    )


def decode_zstd(
    content: bytes,
    path: str,
    sink: StreamedLog | None = None,
    pieces: list[Piece] | None = None,
    meter: Meter | None = None,
) -> Decoded:
    """Decode a whole ``session.jsonl.zstd`` (§4.6); with ``sink`` or ``pieces``, the accepted
    events go there and ``events`` stays empty; ``meter``: see ``decode_raw``.

    Frames are decoded and scanned one at a time, so the plaintext is never all in memory; the
    errors keep the order of §4.6: a frame that fails to decode is met in frame order, and the
    header (step 3) and the scan (step 5) are judged once every complete frame has decoded (the
    scanner only records its first defect). ``marks`` are seek hints for window reads: (byte
    offset of a frame that starts on a line boundary, seq of its first event), about every
    MARK_EVERY lines."""
    frames, torn_start = scan_frames(content)
    if not frames:
        raise corrupt("empty or header-less Zstandard session log")
    decompressor = zstandard.ZstdDecompressor()
    scanner = LineScanner(0, sink, pieces)
    marks: list[tuple[int, int]] = []
    marked_at = -MARK_EVERY
    head = b""
    next_report = 0
    for index, (start, end) in enumerate(frames):
        if meter is not None and start >= next_report:
            meter(start, len(content))
            next_report = start + METER_STEP
        plain = decode_frame(decompressor, content[start:end])
        if plain is None:
            raise corrupt(f"corrupt Zstandard session log: frame at byte {start} failed validation")
        if index == 0:
            head = plain
            continue
        if (
            not scanner.unterminated
            and scanner.defect is None
            and scanner.line_no - marked_at >= MARK_EVERY
        ):
            marks.append((start, scanner.count))
            marked_at = scanner.line_no
        scanner.feed(plain)
    header = stored_header(header_frame_line(head), path)
    if scanner.defect is not None or scanner.unterminated:
        raise corrupt("corrupt Zstandard session log: complete frame contains a torn JSONL record")
    if torn_start is not None:
        if scanner.line_no - marked_at >= MARK_EVERY:
            marks.append((torn_start, scanner.count))
        scanner.feed(decode_torn_frame(decompressor, content[torn_start:]))
        scanner.raise_if_confirmed()
    return Decoded(header, scanner.events, torn_start is not None, frames[0][1], tuple(marks))
