"""Text the tools print the way the reference's JavaScript does (tools.md §1.7): times as
``Date.prototype.toISOString``, events as ``JSON.stringify(event, null, 2)``."""

from __future__ import annotations

import math
from typing import Any

from ..values import is_number

_MS_PER_DAY = 86_400_000


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, proleptic Gregorian."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def iso_time(value: object) -> str:
    """``toISOString()`` of a millisecond time; beyond ±8.64e15 it is ``invalid time (<t>)``."""
    if not is_number(value):
        return f"invalid time ({js_number(value)})"
    assert isinstance(value, (int, float))
    if abs(value) > 8.64e15:
        return f"invalid time ({js_number(value)})"
    ms = math.trunc(value)  # Date keeps whole milliseconds, truncated toward zero
    days, rest = divmod(ms, _MS_PER_DAY)
    y, mo, d = _civil_from_days(days)
    h, rest = divmod(rest, 3_600_000)
    mi, rest = divmod(rest, 60_000)
    s, milli = divmod(rest, 1000)
    year = f"{y:04d}" if 0 <= y <= 9999 else f"{'-' if y < 0 else '+'}{abs(y):06d}"
    return f"{year}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{milli:03d}Z"


def js_number(value: object) -> str:
    """``Number.prototype.toString()`` of a JSON number (integers as the doubles JS holds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    number = float(value) if not isinstance(value, float) else value
    if not math.isfinite(number):
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, exponent = _shortest(abs(number))
    k = len(digits)
    n = exponent + k  # the decimal point sits after n digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _shortest(number: float) -> tuple[str, int]:
    """The shortest round-tripping digits and exponent: number == int(digits) * 10**exponent."""
    text = repr(number)
    mantissa, _, exp = text.partition("e")
    exponent = int(exp) if exp else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    exponent -= len(frac)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    return stripped or "0", exponent


def _js_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            out.append(_CONTROL.get(ch, f"\\u{code:04x}"))
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_CONTROL = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def js_stringify(value: Any, indent: int = 2) -> str:
    """``JSON.stringify(value, null, indent)`` of a decoded JSON value, keys in stored order.
    Iterative, so a deeply nested payload cannot exhaust the stack."""
    out: list[str] = []
    # Work items: a value to write at a depth, or a literal string.
    stack: list[tuple[Any, int] | str] = [(value, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, depth = item
        if isinstance(node, dict) and node:
            pad = "\n" + " " * (indent * (depth + 1))
            parts: list[tuple[Any, int] | str] = ["{"]
            entries: list[tuple[str, Any]] = list(node.items())
            for i, (key, child) in enumerate(entries):
                parts.append(("," if i else "") + pad + _js_string(key) + ": ")
                parts.append((child, depth + 1))
            parts.append("\n" + " " * (indent * depth) + "}")
            stack.extend(reversed(parts))
        elif isinstance(node, list) and node:
            pad = "\n" + " " * (indent * (depth + 1))
            parts = ["["]
            elements: list[Any] = node
            for i, child in enumerate(elements):
                parts.append(("," if i else "") + pad)
                parts.append((child, depth + 1))
            parts.append("\n" + " " * (indent * depth) + "]")
            stack.extend(reversed(parts))
        elif isinstance(node, dict):
            out.append("{}")
        elif isinstance(node, list):
            out.append("[]")
        elif node is None:
            out.append("null")
        elif isinstance(node, bool):
            out.append("true" if node else "false")
        elif isinstance(node, str):
            out.append(_js_string(node))
        else:
            out.append(js_number(node))
    return "".join(out)


def availability(live: bool, persisted: bool) -> str:
    if live and persisted:
        return "live, persisted"
    if live:
        return "live"
    return "persisted" if persisted else "unavailable"


def indent_text(text: str) -> str:
    """Two spaces before the text and after each inner newline."""
    return "  " + text.replace("\n", "\n  ")
