"""The header line (persistence.md §4.4): written in a fixed key order, parsed keeping negative
zeros, validated for reading a log (§4.5 step 1) or for listing it (§4.8 step 4.5), and read from
the start of a transcript without reading the rest."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Generator
from typing import Any, cast

import zstandard
from msgspec import UNSET

from ... import jsoncodec
from ...cancel import CancelToken
from ...model.event import HEADER_FIELDS, Header
from ...values import is_nonneg_safe_integer, is_number, json_number
from ..contract.errors import SessionFormatUnsupportedError, SessionPersistenceCorruptionError
from .errors import corrupt
from .frames import decode_frame, frame_end, header_frame_line

RETIRED_HEADER_KEYS = frozenset({"sandboxMode", "approvalPolicy"})
# Header reads start small (a header line is ~150 bytes, a header frame a little more) and double,
# so listing 10,000 sessions reads kilobytes per file, not 64 KiB; long headers still work.
HEADER_READ_FIRST = 1024
HEADER_READ_MAX = 64 * 1024


def header_line(header: Header) -> bytes:
    """The header record as written: fixed key order, delegationDepth always present."""
    value: dict[str, Any] = {"type": "session"}
    for name in HEADER_FIELDS:
        field = header.depth_or_zero if name == "delegationDepth" else header.get(name)
        if field is not UNSET:
            value[name] = field
    return jsoncodec.dumps(value) + b"\n"


def _int_or_negative_zero(text: str) -> int | float:
    # json turns "-0" into the integer 0; keep the sign so the header check can see it.
    if text == "-0":
        return -0.0
    # int() refuses thousands of digits; no number that long is a safe integer anyway.
    return int(text) if len(text) < 18 else float(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def _parse_header_json(line: bytes) -> Any:
    """The header line as a JSON value, negative zeros kept; raises ValueError."""
    text = line.decode("utf-8", "replace")
    try:
        return json.loads(
            text,
            parse_int=_int_or_negative_zero,
            parse_float=_finite_float,
            parse_constant=_reject_constant,
        )
    except RecursionError as exc:
        raise ValueError("header line nests too deeply") from exc


def _is_negative_zero(value: Any) -> bool:
    return type(value) is float and value == 0 and math.copysign(1.0, value) < 0


def _is_count(value: Any) -> bool:
    """A non-negative safe integer that is not written as a negative zero."""
    return is_nonneg_safe_integer(value) and not _is_negative_zero(value)


def _optional(value: dict[str, Any], key: str, valid: Callable[[Any], bool]) -> bool:
    return key not in value or valid(value[key])


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_subagent(value: Any) -> bool:
    return value == "subagent"


def _as_object(value: Any) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _header_from_value(raw: Any) -> Header:
    """A valid header line's header (§4.4); other keys are dropped. Raises corruption."""
    value = _as_object(raw)
    if value is None or value.get("type") != "session":
        raise corrupt("corrupt session log: first line is not a session header")
    if value.keys() & RETIRED_HEADER_KEYS:
        raise corrupt("session header uses retired policy baseline fields")
    valid = (
        is_number(value.get("version"))
        and isinstance(value.get("id"), str)
        and _is_count(value.get("createdAt"))
        and _is_count(value.get("delegationDepth"))
        and _optional(value, "origin", _is_subagent)
        and _optional(value, "agentPreset", _is_string)
        and _optional(value, "cwd", _is_string)
        and _optional(value, "parentSession", _is_string)
        and _optional(value, "seedLength", _is_count)
    )
    if not valid:
        raise corrupt("corrupt session log: first line is not a session header")
    return Header.build(**{name: value.get(name, UNSET) for name in HEADER_FIELDS})


def _format_refusal(value: dict[str, Any], path: str) -> SessionFormatUnsupportedError:
    version = value["version"]
    raw_id = value.get("id", UNSET)
    shown_id = (
        raw_id
        if isinstance(raw_id, str)
        else ("undefined" if raw_id is UNSET else jsoncodec.dumps(raw_id).decode())
    )
    if version > 0:
        reason = (
            f"uses log format v{json_number(version)}, but this harness reads only v0: "
            "the log was written by a newer harness — upgrade the harness to open it"
        )
    else:
        reason = (
            f"uses log format v{json_number(version)}, older than the supported v0, and this "
            "build ships no upgrade path for it"
        )
    return SessionFormatUnsupportedError(f'session "{shown_id}" {reason} (raw log: {path})')


def stored_header(line: bytes, path: str) -> Header:
    """§4.5 step 1 for a header line (without its newline) of a log being read in full."""
    try:
        raw = _parse_header_json(line)
    except ValueError:
        raise corrupt("corrupt session log: header line is not valid JSON") from None
    value = _as_object(raw)
    if value is not None and is_number(value.get("version")) and value["version"] != 0:
        raise _format_refusal(value, path)
    return _header_from_value(raw)


def listed_header(line: bytes) -> Header | None:
    """A header for listing, or None to skip the directory (§4.8 step 4.5)."""
    found = listed_header_or_defect(line)
    return found if isinstance(found, Header) else None


def listed_header_or_defect(line: bytes) -> Header | str:
    """``listed_header``, or instead of None why the directory is skipped: the corruption
    message ``inspect`` would give that line (reported by sessionPersistence/status)."""
    try:
        raw = _parse_header_json(line)
    except ValueError:
        return "corrupt session log: header line is not valid JSON"
    try:
        return _header_from_value(raw)
    except SessionPersistenceCorruptionError as exc:
        return str(exc)


# ---------------------------------------------------------------------------------------------
# reading a transcript's first line only (listing)


def _pieces(path: str, token: CancelToken) -> Generator[bytes]:
    """A file's bytes in pieces growing from 1 KiB (headers are short, but may be long)."""
    with open(path, "rb") as file:
        size = HEADER_READ_FIRST
        while True:
            token.raise_if_cancelled()
            chunk = file.read(size)
            token.raise_if_cancelled()
            if not chunk:
                return
            yield chunk
            size = min(size * 2, HEADER_READ_MAX)


def read_raw_header(path: str, token: CancelToken) -> bytes | None:
    """The bytes before the first newline (any length), or None when there is none yet."""
    head = b""
    with contextlib.closing(_pieces(path, token)) as pieces:
        for chunk in pieces:
            newline = chunk.find(b"\n")
            if newline >= 0:
                return head + chunk[:newline]
            head += chunk
    return None


def read_zstd_header(path: str, token: CancelToken) -> bytes | None:
    """The header line from the first frame, or None while that frame is incomplete."""
    data = b""
    end: int | None = None
    with contextlib.closing(_pieces(path, token)) as pieces:
        for chunk in pieces:
            data += chunk
            end = frame_end(data, 0)
            if end is not None:
                break
    if end is None:
        return None
    plain = decode_frame(zstandard.ZstdDecompressor(), data[:end])
    if plain is None:
        raise corrupt("corrupt Zstandard session log: header frame failed validation")
    return header_frame_line(plain)
