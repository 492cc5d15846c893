"""Native transcript bytes -> records (importers.md §0.1).

Lines split only at 0x0A; NUL padding is stripped; a line is one record, several fused records
after a damaged stub, or one bad segment. The bytes after the last 0x0A are a record only when
they decode as one object (else a torn tail, silently ignored).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from json.scanner import make_scanner
from typing import BinaryIO, Protocol, cast

import msgspec
import zstandard

from ... import jsoncodec
from ...cancel import CancelToken

CHUNK = 1 << 20
ZSTD_PIECE = 1 << 14
_JSON_SPACE = b" \t\r\n"


def _reject_constant(name: str) -> object:
    raise ValueError(f"invalid JSON constant {name}")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
Scan = Callable[[str, int], tuple[dict[str, object], int]]


def _scanner() -> Scan:
    """A fresh scanner per damaged line: scanners keep a key memo, so threads do not share one.
    (typeshed types make_scanner as a class taking itself; at runtime it takes the decoder.)"""
    return cast(Scan, make_scanner(_DECODER))  # pyright: ignore[reportArgumentType]


class Record(msgspec.Struct, frozen=True, gc=False):
    """One JSON object read from a transcript. ``size`` is the byte length of its line."""

    line: int
    offset: int
    value: dict[str, object]
    size: int


class BadSegment(msgspec.Struct, frozen=True, gc=False):
    """Bytes of a line that are no record (importers.md §0.1 step 4)."""

    line: int
    offset: int
    length: int
    preview: str


Item = Record | BadSegment


def _one_object(text: bytes) -> dict[str, object] | None:
    try:
        value = jsoncodec.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _objects_from(scan: Scan, text: str, pos: int) -> list[dict[str, object]] | None:
    """The line from ``pos`` as one or more whitespace-separated objects, or None. Uses the
    scanner directly: a failed candidate then costs its own parse, not a JSONDecodeError whose
    line and column count every character before it."""
    out: list[dict[str, object]] = []
    end = len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos == end:
            return out or None
        if text[pos] != "{":
            return None
        try:
            value, pos = scan(text, pos)
        except (StopIteration, ValueError, RecursionError):
            return None
        out.append(value)  # an object: it started with "{"


def _preview(data: bytes) -> str:
    return data[:800].decode("utf-8", "replace")[:200]


def split_line(raw: bytes, line: int, offset: int) -> list[Item]:
    """§0.1 steps 2–5 for one 0x0A-terminated line (without its 0x0A)."""
    lead = len(raw) - len(raw.lstrip(b"\0"))
    body = raw.strip(b"\0")
    if not body.strip(_JSON_SPACE):
        return []
    start = offset + lead
    value = _one_object(body)
    if value is not None:
        return [Record(line, start, value, len(body))]
    # Decode once: '{"' is ASCII, so the k-th one in the bytes is the k-th one in the text.
    text = body.decode("utf-8", "replace")
    at, at_text = body.find(b'{"', 1), text.find('{"', 1)
    candidates = [(0, 0)]
    scan = _scanner()
    while at >= 0 and at_text >= 0:
        candidates.append((at, at_text))
        at, at_text = body.find(b'{"', at + 1), text.find('{"', at_text + 1)
    for o, o_text in candidates:
        objects = _objects_from(scan, text, o_text)
        if objects is None:
            continue
        items: list[Item] = []
        if o:
            items.append(BadSegment(line, start, o, _preview(body[:o])))
        items.extend(Record(line, start + o, v, len(body) - o) for v in objects)
        return items
    return [BadSegment(line, start, len(body), _preview(body))]


def final_fragment(raw: bytes, line: int, offset: int) -> list[Item]:
    """§0.1 step 6: the unterminated last bytes are a record or nothing (a torn tail)."""
    lead = len(raw) - len(raw.lstrip(b"\0"))
    body = raw.strip(b"\0")
    value = _one_object(body) if body.strip(_JSON_SPACE) else None
    return [Record(line, offset + lead, value, len(body))] if value is not None else []


def _chunks(
    stream: BinaryIO, limit: int, token: CancelToken, first: int = CHUNK
) -> Iterator[bytes]:
    """Pieces of up to 1 MiB; the first is ``first`` bytes (a header scan mostly needs less)."""
    left, size = limit, first
    while left > 0:
        token.raise_if_cancelled()
        data = stream.read(min(size, left))
        size = CHUNK
        if not data:
            return
        left -= len(data)
        yield data


def _zstd_chunks(stream: BinaryIO, limit: int, token: CancelToken) -> Iterator[bytes]:
    """Plaintext of a Zstandard file cut at ``limit`` compressed bytes, frame after frame; stops
    at the first decoding error (§0.1 step 7: the rest is a torn tail). Small input pieces keep
    what decoded before the error."""
    source = _Bounded(stream, limit)
    dctx = cast(_Context, zstandard.ZstdDecompressor())
    dobj = dctx.decompressobj()
    while True:
        token.raise_if_cancelled()
        data = source.read(ZSTD_PIECE)
        if not data:
            return
        while data:
            try:
                out = dobj.decompress(data)
            except _ZSTD_ERROR:
                raise _TornStream() from None
            if out:
                yield out
            if dobj.eof:
                data, dobj = dobj.unused_data, dctx.decompressobj()
            else:
                data = b""


class _Decoder(Protocol):
    """The part of zstandard's decompression object used here (the package ships no types)."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


class _Context(Protocol):
    def decompressobj(self) -> _Decoder: ...


_ZSTD_ERROR = cast(type[Exception], zstandard.ZstdError)


class _TornStream(Exception):
    pass


class _Bounded:
    """A read-only view of the first ``limit`` bytes of a stream."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        size = self._left if size < 0 else min(size, self._left)
        data = self._stream.read(size)
        self._left -= len(data)
        return data


class Line(msgspec.Struct, frozen=True, gc=False):
    """One stored line: its plaintext start, length (without its 0x0A), whether it is the final
    fragment, its bytes and its items (a window read re-splits it from ``start`` and ``length``)."""

    start: int
    length: int
    final: bool
    raw: bytes
    items: list[Item]


def read_items(
    stream: BinaryIO,
    limit: int,
    token: CancelToken,
    *,
    compressed: bool = False,
    max_line_end: int | None = None,
) -> Iterator[Item]:
    """Every item of the first ``limit`` stored bytes. With ``max_line_end`` (the header scan)
    reading stops before a line that would end past that plaintext offset."""
    for found in read_lines(stream, limit, token, compressed=compressed, max_line_end=max_line_end):
        yield from found.items


def read_lines(
    stream: BinaryIO,
    limit: int,
    token: CancelToken,
    *,
    compressed: bool = False,
    max_line_end: int | None = None,
    first_chunk: int = CHUNK,
) -> Iterator[Line]:
    """``read_items`` line by line, with where each line is."""
    source = (
        _zstd_chunks(stream, limit, token)
        if compressed
        else _chunks(stream, limit, token, first_chunk)
    )
    # Bytes, not a bytearray: a line is then one slice, copied once. Pieces without a 0x0A wait
    # in ``held`` and are joined once a 0x0A comes, so a line of many pieces is not copied per
    # piece (importers.md §0.1 [ours]).
    held: list[bytes] = []
    waiting = 0  # bytes in ``held``, which hold no 0x0A
    base = 0  # plaintext offset of held[0]
    line = 0
    torn = False
    try:
        for data in source:
            if data.find(b"\n") < 0:
                held.append(data)
                waiting += len(data)
                if max_line_end is not None and base + waiting > max_line_end:
                    return
                continue
            pending = b"".join((*held, data)) if held else data
            cut = 0
            while True:
                nl = pending.find(b"\n", max(cut, waiting))
                if nl < 0:
                    break
                if max_line_end is not None and base + nl + 1 > max_line_end:
                    return
                line += 1
                raw = pending[cut:nl]
                yield Line(base + cut, nl - cut, False, raw, split_line(raw, line, base + cut))
                cut = nl + 1
            base += cut
            held = [pending[cut:]] if cut < len(pending) else []
            waiting = len(pending) - cut
            if max_line_end is not None and base + waiting > max_line_end:
                return
    except _TornStream:
        torn = True
    if held and not torn:
        raw = b"".join(held)
        yield Line(base, len(raw), True, raw, final_fragment(raw, line + 1, base))


def plaintext(
    stream: BinaryIO, limit: int, token: CancelToken, compressed: bool
) -> Iterator[bytes]:
    """The plaintext of the first ``limit`` stored bytes, piece by piece (stops at a torn
    Zstandard frame)."""
    source = _zstd_chunks(stream, limit, token) if compressed else _chunks(stream, limit, token)
    try:
        yield from source
    except _TornStream:
        return
