"""Where transcripts live (persistence.md §4.1–§4.3): project directory keys and session-id
escaping, both lossless and traversal-free."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator

COMPRESSIONS = ("auto", "zstd", "none")
TRANSCRIPT = {"zstd": "session.jsonl.zstd", "none": "session.jsonl"}
SUFFIX = {"zstd": ".jsonl.zstd", "none": ".jsonl"}
OPPOSITE = {"zstd": "none", "none": "zstd"}
NO_CWD = "_no-cwd"
MAX_PROJECT_KEY = 251

_SAFE_UNITS = frozenset(
    map(ord, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
)
_SEPARATOR_UNITS = frozenset(map(ord, "/\\:"))
_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")


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


@functools.lru_cache(maxsize=4096)
def project_dir(cwd: str | None) -> str:
    """The project directory name for a header's cwd (None when the header has none). Memoized:
    a pure function that a listing asks once per session, of a few cwds."""
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


def unescape_segment(segment: str) -> str:
    """The session id ``escape_segment`` made ``segment`` from (best effort: for reports)."""
    units: list[int] = []
    i = 0
    while i < len(segment):
        if segment[i] == "~" and i + 5 <= len(segment):
            try:
                units.append(int(segment[i + 1 : i + 5], 16))
                i += 5
                continue
            except ValueError:
                pass
        units.append(ord(segment[i]))
        i += 1
    data = b"".join(u.to_bytes(2, "little") for u in units if u <= 0xFFFF)
    return data.decode("utf-16-le", "replace")


def transcript_path(root: str, cwd: str | None, session_id: str, encoding: str) -> str:
    """Where a header's transcript lives (§4.1). Listing checks it once per header read: an
    exact match is remembered with the header (survey.ListedHeader.exact)."""
    return os.path.join(root, project_dir(cwd), escape_segment(session_id), TRANSCRIPT[encoding])
