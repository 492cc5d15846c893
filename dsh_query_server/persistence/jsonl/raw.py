"""Raw artifacts of a transcript (tools.md §2.1): the bytes export writes for a ``jsonl:``
session. Raw: the whole file, torn tail included. Zstandard: the plaintext of the complete
frames, a torn final frame left out. Either way the first line must be a valid header line with
the requested id; nothing else of the body is judged (export copies, it does not read)."""

from __future__ import annotations

import zstandard

from ...model.event import Header
from .errors import corrupt
from .frames import decode_frame, scan_frames
from .header import listed_header

FILENAME = "session.jsonl"


def zstd_plaintext(content: bytes) -> bytes:
    """The concatenated plaintext of the complete frames, with the frame errors of §4.6."""
    frames, _ = scan_frames(content)  # structural errors (magic, reserved bits) raise here
    if not frames:
        raise corrupt("empty or header-less Zstandard session log")
    decompressor = zstandard.ZstdDecompressor()
    parts: list[bytes] = []
    for start, end in frames:
        plain = decode_frame(decompressor, content[start:end])
        if plain is None:
            raise corrupt(f"corrupt Zstandard session log: frame at byte {start} failed validation")
        parts.append(plain)
    return b"".join(parts)


def raw_content(session_id: str, content: bytes, encoding: str, path: str) -> tuple[Header, bytes]:
    """The artifact bytes of a stable copy of a transcript, and its header."""
    data = zstd_plaintext(content) if encoding == "zstd" else content
    newline = data.find(b"\n")
    header = None if newline < 0 else listed_header(data[:newline])
    if header is None or header.id != session_id:
        raise corrupt(f'corrupt session log: invalid header line in "{path}"')
    return header, data
