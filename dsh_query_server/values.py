"""The JSON value model and text conventions of semantics.md §0.2–§0.3.

Python's ``bool`` is an ``int`` and ``str.strip()`` uses a different whitespace set than the spec,
so every numeric and whitespace check in the project goes through this module.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeGuard

from msgspec import UNSET

MAX_SAFE_INTEGER = 2**53 - 1

# semantics.md §0.3: exactly these code points are whitespace.
WHITESPACE_CHARS = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_WS_CLASS = "[" + "".join(re.escape(c) for c in WHITESPACE_CHARS) + "]"
WHITESPACE_RUN = re.compile(_WS_CLASS + "+")
WHITESPACE_SET = frozenset(WHITESPACE_CHARS)


def is_object(value: object) -> TypeGuard[dict[str, Any]]:
    """A decoded JSON object (its keys are strings), typed for the checker."""
    return isinstance(value, dict)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """A decoded JSON array, typed for the checker."""
    return isinstance(value, list)


def is_number(value: Any) -> bool:
    """A JSON number that is finite (NaN/Infinity are never numbers here)."""
    t = type(value)
    if t is int:
        return True
    return t is float and math.isfinite(value)


def is_integer(value: Any) -> bool:
    t = type(value)
    if t is int:
        return True
    return t is float and math.isfinite(value) and value.is_integer()


def is_safe_integer(value: Any) -> bool:
    return is_integer(value) and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def is_nonneg_safe_integer(value: Any) -> bool:
    return is_safe_integer(value) and value >= 0


def get_path(value: Any, *path: str) -> Any:
    """``value[path0][path1]…`` through objects only; UNSET when any link is missing."""
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return UNSET
        value = value[key]
    return value


def json_number(value: Any) -> str:
    """Render a number as JSON text; integral values without a fractional part."""
    if type(value) is float and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if type(value) is float:
        return repr(value)
    return str(value)


def trim(text: str) -> str:
    # str.strip touches only the ends; the regex it replaces walked every code point.
    return text.strip(WHITESPACE_CHARS)


def split_whitespace(text: str) -> list[str]:
    """Split on whitespace runs, dropping empty pieces."""
    return [piece for piece in WHITESPACE_RUN.split(text) if piece]


def collapse_whitespace(text: str) -> str:
    """Trim, then collapse every whitespace run to one space."""
    return " ".join(split_whitespace(text))


def is_blank(text: str) -> bool:
    return not split_whitespace(text)
