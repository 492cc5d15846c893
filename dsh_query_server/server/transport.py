"""LSP base-protocol framing (``Content-Length: N`` header lines, a blank line, N body bytes),
the one implementation used by the server, ``client.py``, ``bench/`` and the tests.

Header rules are pygls' (``run_async``): the first exact ``Content-Length: N`` line with N > 0
counts, other header lines are skipped, and a blank line after it starts the body. ``Frames``
applies them to a byte stream pushed in chunks (the server's stdin thread); ``read_frame`` pulls
one frame from a blocking binary stream (clients reading a server's output).

Imports nothing from the rest of the package, so a client can use it without loading the server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")
HEADER_LINE = re.compile(rb"[!-9;-~]+: [^\r\n]*\r\n")  # token ": " value CRLF
LINE_LIMIT = 1 << 20  # no header line is this long: longer lines are skipped unread
JOIN_BELOW = 1 << 16  # bodies below this are sent in one write with their header


def header(length: int) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % length


def frame(body: bytes) -> bytes:
    """One frame as one byte string."""
    return header(len(body)) + body


def frame_parts(body: bytes) -> tuple[bytes, ...]:
    """A frame as the parts to write in order: one for a small body; a large body is written
    after its header rather than copied behind it (a 10 MB answer would briefly take twice its
    size)."""
    head = header(len(body))
    return (head + body,) if len(body) < JOIN_BELOW else (head, body)


def header_length(line: bytes | bytearray) -> int:
    """N of a ``Content-Length: N`` header line (with its CRLF), or 0 for any other line."""
    match = CONTENT_LENGTH.fullmatch(line)
    return int(match.group(1)) if match else 0


class FramingError(ValueError):
    """A strict stream (a socket connection) sent bytes that are not LSP framing."""


class Frames:
    """Frame bodies out of a byte stream fed in chunks. Bytes without a usable header are skipped
    up to the next one, and a huge N only holds the bytes that actually arrive. ``strict``
    (a hub or TCP connection, hub.md §2) raises FramingError instead of skipping: a header line
    that is not ``Name: value``, an over-long line, or a blank line before ``Content-Length``."""

    def __init__(self, on_body: Callable[[bytearray], None], strict: bool = False) -> None:
        self._on_body = on_body
        self._strict = strict
        self._buf = bytearray()
        self._length = 0  # Content-Length of the frame being read; 0 while none was seen
        self._in_body = False
        self._skipping = False  # inside an over-long line: drop it up to its newline

    def feed(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos = 0
        try:
            while True:
                if self._in_body:
                    end = pos + self._length
                    if len(buf) < end:
                        return
                    body = buf[pos:end]
                    pos = end
                    self._in_body, self._length = False, 0
                    self._on_body(body)
                    continue
                newline = buf.find(b"\n", pos)
                if newline < 0:
                    if len(buf) - pos > LINE_LIMIT:
                        if self._strict:
                            raise FramingError("a header line longer than any header")
                        pos, self._skipping = len(buf), True
                    return
                line = buf[pos : newline + 1]
                pos = newline + 1
                if self._skipping:
                    self._skipping = False
                elif not self._length:
                    self._length = header_length(line)
                    if self._strict and not self._length and not HEADER_LINE.fullmatch(line):
                        raise FramingError("not an LSP header line")
                elif not line.strip():
                    self._in_body = True
                elif self._strict and not HEADER_LINE.fullmatch(line):
                    raise FramingError("not an LSP header line")
        finally:
            del buf[:pos]


class ByteReader(Protocol):
    """What read_frame needs of a stream: a pipe, a socket file or a BytesIO."""

    def readline(self, size: int = -1, /) -> bytes: ...
    def read(self, size: int = -1, /) -> bytes: ...


def read_frame(stream: ByteReader) -> bytes | None:
    """The next frame's body from a blocking stream, or None at end of input (also when the
    stream ends inside a frame)."""
    length = 0
    while True:
        line = stream.readline(LINE_LIMIT)
        if not line:
            return None
        if not length:
            length = header_length(line)
        elif not line.strip():
            break
    body = stream.read(length)
    if len(body) == length:
        return body
    # An unbuffered pipe returns what has arrived so far: the pieces are joined once at the end
    # (appending each to the body copied it again, quadratic in a large answer's pieces).
    pieces, got = [body], len(body)
    while got < length:
        piece = stream.read(length - got)
        if not piece:
            return None
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


__all__ = [
    "Frames",
    "FramingError",
    "frame",
    "frame_parts",
    "header",
    "header_length",
    "read_frame",
]
