"""Window reads of a verified transcript (windows.py): seek to a hint, then read lines (raw)
or frames (Zstandard) until the window's last stored event."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import zstandard

from ...cancel import CancelToken
from ...model.event import Event, Header
from ..contract.errors import SessionFormatUnsupportedError, SessionPersistenceCorruptionError
from ..logical.legacy import NeedsHistory, StaleShape
from ..logical.log import StreamedLog
from ..logical.windows import Verification, WindowSource
from .decode import Decoded, decode_raw, decode_zstd
from .frames import decode_frame, decode_torn_frame, frame_end, is_one_line
from .header import stored_header
from .lines import Unparsable, span_events
from .survey import revision_of

_WINDOW_READ = 64 * 1024


@dataclass(frozen=True, slots=True)
class Located:
    path: str
    encoding: str


@dataclass(frozen=True, slots=True)
class TranscriptHints:
    """What a full read of a transcript proved about where things are (see memo.py)."""

    path: str
    encoding: str
    body: int  # file offset just past the header (its line, or its frame)
    marks: tuple[tuple[int, int], ...]  # (file offset of a line or frame, seq of its first event)
    marked_seqs: tuple[int, ...]  # the marks' seqs, for bisect


def _known_header_frame(frame: bytes) -> bytes:
    plain = decode_frame(zstandard.ZstdDecompressor(), frame)
    if plain is None or not is_one_line(plain):
        raise StaleShape("the header frame changed")
    return plain[:-1]


def _seek_hint(file: BinaryIO, known: TranscriptHints, lo: int) -> int:
    """Seek to the last hint at or before stored seq ``lo``; the seq expected there."""
    if not known.marks:
        raise StaleShape("no seek hints for a non-empty prefix")
    offset, expected = known.marks[bisect_right(known.marked_seqs, lo) - 1]
    file.seek(offset)
    return expected


def _read_frames_span(
    file: BinaryIO, known: TranscriptHints, lo: int, hi: int, token: CancelToken
) -> list[Event]:
    """Stored events ``lo..hi`` of a verified Zstandard transcript: seek to the last hinted frame
    at or before ``lo`` (it starts on a line boundary) and decode frames in order until ``hi``
    is reached; the torn final frame, if the span reaches it, yields what its bytes yield."""
    expected = _seek_hint(file, known, lo)
    decompressor = zstandard.ZstdDecompressor()
    events: list[Event] = []
    data, pos, pending, eof = b"", 0, b"", False
    while expected <= hi:
        token.raise_if_cancelled()
        end = frame_end(data, pos)
        if end is None and not eof:
            piece = file.read(_WINDOW_READ)
            eof = not piece
            data = data[pos:] + piece
            pos = 0
            continue
        if end is None:  # the torn final frame: whatever its available bytes yield
            if pos == len(data):
                raise StaleShape("the transcript ends before the verified prefix does")
            plain, pos = decode_torn_frame(decompressor, data[pos:]), len(data)
        else:
            frame_plain = decode_frame(decompressor, data[pos:end])
            if frame_plain is None:
                raise StaleShape("a verified frame no longer decodes")
            plain, pos = frame_plain, end
        lines = (pending + plain).split(b"\n")
        pending = lines.pop()
        expected = span_events(lines, lo, hi, expected, events)
    return events


def _read_span(
    file: BinaryIO, known: TranscriptHints, lo: int, hi: int, token: CancelToken
) -> list[Event]:
    """Stored events ``lo..hi`` of a verified raw transcript: seek to the last hint at or before
    ``lo`` and decode lines (exactly as the scanner does) until ``hi`` is reached."""
    expected = _seek_hint(file, known, lo)
    events: list[Event] = []
    pending = b""
    while expected <= hi:
        token.raise_if_cancelled()
        piece = file.read(_WINDOW_READ)
        if not piece:
            raise StaleShape("the transcript ends before the verified prefix does")
        lines = (pending + piece).split(b"\n")
        pending = lines.pop()
        expected = span_events(lines, lo, hi, expected, events)
    return events


StableRead = Callable[[str, CancelToken], tuple[bytes, str]]
IdentityCheck = Callable[[str, Header, Located], None]


class TranscriptWindows:
    """windows.WindowSource for one located transcript. The backend lends it its stable read
    and its identity check (§4.9 step 5), so both paths check exactly what ``inspect`` does."""

    stale_errors: tuple[type[Exception], ...] = (
        Unparsable,
        SessionPersistenceCorruptionError,
        SessionFormatUnsupportedError,
        OSError,
    )

    def __init__(
        self,
        session_id: str,
        located: Located,
        token: CancelToken,
        stable_read: StableRead,
        check_identity: IdentityCheck,
    ) -> None:
        self.session_id = session_id
        self._located = located
        self._token = token
        self._stable_read = stable_read
        self._check_identity = check_identity
        self._current = ""  # the revision the memo was asked about (read_known checks it)
        self._content = b""  # kept only for verify_whole after NeedsHistory
        self._revision = ""

    def revision(self) -> str:
        self._token.raise_if_cancelled()
        st = os.stat(self._located.path)
        self._token.raise_if_cancelled()
        self._current = revision_of(st)
        return self._current

    def read_known(self, hints: TranscriptHints, lo: int, hi: int) -> tuple[Header, list[Event]]:
        located = self._located
        if hints.path != located.path or hints.encoding != located.encoding:
            raise StaleShape("the transcript was verified at another path")
        zstd = hints.encoding == "zstd"
        with open(located.path, "rb") as file:
            head = file.read(hints.body)
            line = _known_header_frame(head) if zstd else head[:-1]
            header = stored_header(line, located.path)
            self._check_identity(self.session_id, header, located)
            read_span = _read_frames_span if zstd else _read_span
            stored = [] if lo > hi else read_span(file, hints, lo, hi, self._token)
            if revision_of(os.fstat(file.fileno())) != self._current:
                raise StaleShape("the transcript changed while it was read")
        return header, stored

    def _decode(self, content: bytes, sink: StreamedLog | None) -> Decoded:
        decode = decode_zstd if self._located.encoding == "zstd" else decode_raw
        decoded = decode(content, self._located.path, sink, None, self._token.reading)
        self._check_identity(self.session_id, decoded.header, self._located)
        return decoded

    def _verification(self, decoded: Decoded, revision: str) -> Verification[TranscriptHints]:
        located = self._located
        hints = TranscriptHints(
            located.path,
            located.encoding,
            decoded.body,
            decoded.marks,
            tuple(seq for _, seq in decoded.marks),
        )
        return Verification(decoded.header, revision, hints)

    def verify(self, sink: StreamedLog) -> Verification[TranscriptHints]:
        content, revision = self._stable_read(self._located.path, self._token)
        try:
            decoded = self._decode(content, sink)
        except NeedsHistory:
            self._content, self._revision = content, revision
            raise
        return self._verification(decoded, revision)

    def verify_whole(self) -> tuple[Verification[TranscriptHints], list[Event]]:
        decoded = self._decode(self._content, None)
        self._content = b""
        return self._verification(decoded, self._revision), decoded.events


if TYPE_CHECKING:  # windows.WindowSource, checked by pyright
    _source: type[WindowSource[TranscriptHints]] = TranscriptWindows
