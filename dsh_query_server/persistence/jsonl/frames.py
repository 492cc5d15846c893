"""Zstandard frame structure (persistence.md §4.6): frames found without decoding them, decoded
one at a time, torn final frames tolerated."""

from __future__ import annotations

import zstandard

from .errors import corrupt

ZSTD_MAGIC = 0xFD2FB528
ZSTD_LEVEL = 3


def frame_end(data: bytes, start: int) -> int | None:
    """The end of the frame at ``start`` found structurally, or None when it is torn."""
    size = len(data)
    if size - start < 4:
        return None
    if int.from_bytes(data[start : start + 4], "little") != ZSTD_MAGIC:
        raise corrupt(f"corrupt Zstandard session log: invalid frame magic at byte {start}")
    pos = start + 4
    if pos >= size:
        return None
    descriptor = data[pos]
    if descriptor & 0x18:
        raise corrupt(f"corrupt Zstandard session log: reserved frame-header bit at byte {pos}")
    single_segment = bool(descriptor & 0x20)
    window = 0 if single_segment else 1
    dictionary = (0, 1, 2, 4)[descriptor & 0x03]
    content_size = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    pos += 1 + window + dictionary + content_size
    last = False
    while not last:
        if pos + 3 > size:
            return None
        block = int.from_bytes(data[pos : pos + 3], "little")
        kind = (block >> 1) & 0x03
        if kind == 3:
            raise corrupt(f"corrupt Zstandard session log: reserved block type at byte {pos}")
        pos += 3 + (1 if kind == 1 else block >> 3)
        last = bool(block & 1)
    if descriptor & 0x04:
        pos += 4
    return pos if pos <= size else None


def scan_frames(data: bytes) -> tuple[list[tuple[int, int]], int | None]:
    """The complete frames ``(start, end)`` and the torn final frame's start, if any."""
    frames: list[tuple[int, int]] = []
    pos = 0
    while pos < len(data):
        end = frame_end(data, pos)
        if end is None:
            return frames, pos
        frames.append((pos, end))
        pos = end
    return frames, None


def decode_frame(decompressor: zstandard.ZstdDecompressor, frame: bytes) -> bytes | None:
    """A complete frame's plaintext, or None when it fails decoding or its checksum."""
    stream = decompressor.decompressobj()  # streaming: frames need not declare their size
    try:
        plain = stream.decompress(frame)
    except zstandard.ZstdError:
        return None
    return plain if stream.eof and not stream.unused_data else None


def decode_torn_frame(decompressor: zstandard.ZstdDecompressor, data: bytes) -> bytes:
    """Whatever a torn final frame's bytes yield; a decoder error yields nothing."""
    try:
        return decompressor.decompressobj().decompress(data)
    except zstandard.ZstdError:
        return b""


def is_one_line(plain: bytes) -> bool:
    return plain.endswith(b"\n") and plain.count(b"\n") == 1


def header_frame_line(plain: bytes) -> bytes:
    if not is_one_line(plain):
        raise corrupt("corrupt Zstandard session log: first frame is not exactly one header line")
    return plain[:-1]


def zstd_frame(plain: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compress(plain)
