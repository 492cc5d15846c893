"""Small value helpers shared by the importers: RFC 3339 times, UUIDs, JSON kinds."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_SAFE = 2**53 - 1


def _day_ms(year: int, month: int, day: int) -> int | None:
    """Epoch milliseconds of a calendar day's midnight UTC, or None for no such day."""
    try:
        return (datetime(year, month, day, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)
    except ValueError:
        return None


_DAYS: dict[str, int | None] = {}  # "YYYY-MM-DD" -> _day_ms: a transcript spans few days


_MINUTES: dict[str, int | None] = {}  # "YYYY-MM-DDTHH:MM" -> its start, by parse_rfc3339


def parse_time(value: object) -> int | None:
    """An RFC 3339 timestamp floored to epoch milliseconds, or None when it is not one."""
    # Nearly every record's time is "YYYY-MM-DDTHH:MM:SS.mmmZ": its minute memoised, only the
    # seconds and milliseconds read (the regular expression cost a tenth of mapping a record).
    if (
        type(value) is str
        and len(value) == 24
        and value[23] == "Z"
        and value[19] == "."
        and value[16] == ":"
        and value.isascii()
    ):
        sec, frac = value[17:19], value[20:23]
        if sec.isdigit() and frac.isdigit():  # ASCII, so only 0-9, as the pattern's \\d
            minute = value[:16]
            base = _MINUTES.get(minute, False)
            if base is False:
                base = parse_rfc3339(minute + ":00.000Z")
                if len(_MINUTES) >= 4096:
                    _MINUTES.clear()
                _MINUTES[minute] = base
            if base is None:
                return None
            ms = base + min(int(sec), 59) * 1000 + int(frac)
            return ms if -MAX_SAFE <= ms <= MAX_SAFE else None
    if not isinstance(value, str):
        return None
    return parse_rfc3339(value)


def parse_rfc3339(value: str) -> int | None:
    """``parse_time`` of any string, by the regular expression."""
    m = _RFC3339.match(value)
    if m is None:
        return None
    date = value[:10]
    base = _DAYS.get(date, False)
    if base is False:
        base = _day_ms(int(m[1]), int(m[2]), int(m[3]))
        if len(_DAYS) >= 4096:
            _DAYS.clear()
        _DAYS[date] = base
    hour, minute = int(m[4]), int(m[5])
    if base is None or hour > 23 or minute > 59:
        return None
    ms = base + ((hour * 60 + minute) * 60 + min(int(m[6]), 59)) * 1000
    if m[7]:
        ms += int((m[7] + "00")[:3])
    if m[9]:
        offset = (int(m[10]) * 60 + int(m[11])) * 60_000
        ms += -offset if m[9] == "+" else offset
    return ms if -MAX_SAFE <= ms <= MAX_SAFE else None


def is_uuid(text: str) -> bool:
    return _UUID.fullmatch(text) is not None


def trailing_uuid(stem: str) -> str | None:
    """The UUID ending a file stem (Codex rollout names), or None."""
    if len(stem) < 36 or not is_uuid(stem[-36:]):
        return None
    return stem[-36:]


def uuid7_ms(text: object) -> int | None:
    """The 48-bit millisecond time of a version-7 UUID, or None for anything else."""
    if not isinstance(text, str) or not is_uuid(text) or text[14] != "7":
        return None
    return int(text[:8] + text[9:13], 16)


def text_of(value: object) -> str | None:
    return value if isinstance(value, str) else None


def nonempty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def obj(value: object) -> dict[str, object] | None:
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def arr(value: object) -> list[object] | None:
    return value if isinstance(value, list) else None  # pyright: ignore[reportUnknownVariableType]


def text_blocks(blocks: list[object]) -> list[str]:
    """The texts of a mapped content array's text blocks, in order."""
    out: list[str] = []
    for b in blocks:
        d = obj(b)
        if d is not None and d.get("type") == "text" and isinstance(d.get("text"), str):
            out.append(str(d["text"]))
    return out


def content_of(value: object) -> str | list[object] | None:
    """A message's content when it is a string or a list (the shapes both agents write)."""
    return value if isinstance(value, str) else arr(value)


def json_equal(a: object, b: object) -> bool:
    """Deep JSON equality where booleans are never numbers."""
    da, db = obj(a), obj(b)
    if da is not None:
        return (
            db is not None and da.keys() == db.keys() and all(json_equal(da[k], db[k]) for k in da)
        )
    la, lb = arr(a), arr(b)
    if la is not None:
        return (
            lb is not None
            and len(la) == len(lb)
            and all(json_equal(x, y) for x, y in zip(la, lb, strict=True))
        )
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    return a == b
