"""Column codecs (persistence.md §5.5): text exactly as stored, the provenance varints, and the
``data`` column (TEXT, or a Zstandard BLOB when that is smaller)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import zstandard
from msgspec import UNSET

from ... import jsoncodec
from ...values import MAX_SAFE_INTEGER
from ..logical import records

MAX_PACKED_MEMBERS = 1024
MAX_PACKED_DATA_BYTES = 1_048_576
COMPRESSION_THRESHOLD = 4096
ZSTD_LEVEL = 3

_msgspec_decode = msgspec.json.decode

# Compressed input is fed in slices so a packed row's 1 MiB output limit is enforced while
# decompressing, not after a hostile frame has expanded in memory.
_DECOMPRESS_SLICE = 1024


class MalformedProvenance(ValueError):
    """A ``source_event_seqs`` BLOB that does not decode (§5.5)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"malformed source_event_seqs storage value: {reason}")


class InvalidRow(Exception):
    """A physical row whose contents do not decode (§5.6 step 3)."""


# Everything that makes a row invalid under the committed-prefix rule.
ROW_DEFECTS = (InvalidRow, MalformedProvenance, records.MalformedRow)


class Text(bytes):
    """A TEXT value exactly as stored (installed as the connection's ``text_factory``)."""


def to_text(value: str | None) -> bytes | None:
    """The bytes bound through ``CAST(? AS TEXT)`` for a text column."""
    return None if value is None else value.encode("utf-8", "surrogatepass")


def from_text(value: bytes) -> str:
    """The string for a stored text column; UnicodeDecodeError when it is not (WTF-)UTF-8."""
    return value.decode("utf-8", "surrogatepass")


def render(value: Any) -> str:
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
                f"varint at byte {start} out of range (more than 8 continuation steps)"
            )


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


def zstd_frame(text: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(text)


def stored_data(text: bytes) -> str | bytes:
    """The ``data`` column for serialized data: TEXT, or a Zstandard BLOB when that is smaller."""
    if len(text) < COMPRESSION_THRESHOLD:
        return text.decode()
    frame = zstd_frame(text)
    return frame if len(frame) < len(text) else text.decode()


def _decompress(frame: bytes, limit: int | None) -> bytes:
    """The plaintext of exactly one complete Zstandard frame, at most ``limit`` bytes."""
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    out = bytearray()
    consumed = 0
    try:
        while consumed < len(frame) and not decompressor.eof:
            piece = frame[consumed : consumed + _DECOMPRESS_SLICE]
            consumed += len(piece)
            out += decompressor.decompress(piece)
            if limit is not None and len(out) > limit:
                raise InvalidRow(f"stored data exceeds {limit} bytes")
    except zstandard.ZstdError as exc:
        raise InvalidRow(f"bad Zstandard data: {exc}") from None
    if not decompressor.eof or decompressor.unused_data or consumed < len(frame):
        raise InvalidRow("bad Zstandard data: not exactly one complete frame")
    return bytes(out)


def data_text(value: bytes, limit: int | None = None) -> bytes:
    """The text of a ``data`` column (a BLOB decompressed), not parsed yet."""
    if isinstance(value, Text):
        text = bytes(value)
        if limit is not None and len(text) > limit:  # checked before parsing (§3.2 check 11)
            raise InvalidRow(f"stored data exceeds {limit} bytes")
        return text
    return _decompress(value, limit)


def data_json(value: bytes, limit: int | None = None) -> bytes:
    """The JSON text of a ``data`` column, checked to be strict UTF-8 and one JSON value."""
    text = data_text(value, limit)
    parse_json(text, "data")
    return text


def parse_json(text: bytes, column: str) -> Any:
    try:
        # msgspec reads the bytes directly and validates UTF-8 as strictly as Python's decoder;
        # whatever it refuses goes the exact way below (decode, then the lenient fallbacks).
        return _msgspec_decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    try:
        return jsoncodec.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidRow(f"{column} is not valid UTF-8") from None
    except jsoncodec.JSONDecodeError as exc:
        raise InvalidRow(f"{column} is not JSON: {exc}") from None
