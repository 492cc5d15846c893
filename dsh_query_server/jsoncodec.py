"""JSON text <-> values, the way the spec's JSON value model (semantics.md §0.2) needs it.

msgspec is the fast path. It refuses two things real logs contain: lone UTF-16 surrogates
escaped as ``\\uD800`` (dsh writes them for ids and text taken from JavaScript strings) and
numbers beyond float range. For those rare inputs we fall back to the stdlib parser, configured to
reject NaN/Infinity, which JSON cannot express.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec

_decode = msgspec.json.decode
_encode = msgspec.json.encode


class JSONDecodeError(ValueError):
    """The text is not one strict JSON value."""


def _reject_constant(name: str) -> Any:
    raise JSONDecodeError(f"invalid JSON constant {name}")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONDecodeError(f"number {text} is out of range")
    return value


def _fallback_loads(data: bytes | str) -> Any:
    try:
        return json.loads(data, parse_constant=_reject_constant, parse_float=_parse_float)
    except (ValueError, RecursionError, TypeError) as exc:
        raise JSONDecodeError(str(exc)) from None


def loads(data: bytes | str) -> Any:
    """Parse one JSON value; raise JSONDecodeError for anything that is not strict JSON."""
    try:
        return _decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _fallback_loads(data)


def decode(data: bytes | str, type: Any) -> Any:
    """Decode into a msgspec type; on the rare inputs msgspec refuses, go through the stdlib."""
    try:
        return _decode(data, type=type)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError:
        return msgspec.convert(_fallback_loads(data), type=type)


def dumps(value: Any) -> bytes:
    """Compact JSON bytes. Lone surrogates are escaped as \\uXXXX (they have no UTF-8 form)."""
    try:
        return _encode(value)
    except UnicodeEncodeError:
        return json.dumps(
            to_builtins(value), ensure_ascii=True, separators=(",", ":"), allow_nan=False
        ).encode("ascii")


def to_builtins(value: Any) -> Any:
    """Plain Python values for a tree that may hold msgspec Structs and Raw fragments."""
    if isinstance(value, msgspec.Raw):
        return loads(bytes(value))
    if isinstance(value, msgspec.Struct):
        return {
            encoded: to_builtins(getattr(value, name))
            for name, encoded in zip(
                value.__struct_fields__, value.__struct_encode_fields__, strict=True
            )
            if getattr(value, name) is not msgspec.UNSET
        }
    if isinstance(value, dict):
        return {k: to_builtins(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtins(v) for v in value]
    return value
