"""The eight tools' declarations and their argument rules (tools.md §1.4, §1.5).

Arguments are checked here from the raw JSON the client sent: the spec fixes the text of every
argument error, so nothing relies on a schema library's own messages. Every limit a tool enforces
is in its schema (``minimum``/``maximum``, ``additionalProperties: false``) **[ours]**, so an agent
can read it before it calls.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ..resolve import READ_WINDOW_MAX
from ..values import MAX_SAFE_INTEGER, collapse_whitespace, is_blank, trim

INVALID_ARGS = "INVALID_ARGS"
INVALID_QUERY = "SESSION_QUERY_INVALID_QUERY"
INVALID_FILTER = "SESSION_QUERY_INVALID_FILTER"


class ToolError(Exception):
    """A tool failure with its final code and message (never sanitized again). ``reason`` is
    what the sanitizer hid (the service's own code and message), for the one log line the
    failed call writes; it never reaches the wire."""

    def __init__(self, code: str, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Prop:
    name: str
    type: str  # "string", "integer", "boolean", "array"
    description: str
    enum: tuple[str, ...] | None = None  # array items restricted to these strings
    minimum: int = 0  # integers: the bounds the tool checks (§1.5)
    maximum: int = MAX_SAFE_INTEGER
    window: bool = False  # bounded by the configured readWindowMax instead (before/after)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    props: tuple[Prop, ...]
    required: tuple[str, ...]
    search: bool  # exclusive scheduling and the deadline (§1.10)

    def input_schema(self, window_max: int = READ_WINDOW_MAX) -> dict[str, Any]:
        """``window_max`` is the configured ``readWindowMax``, the bound of before/after."""
        properties: dict[str, Any] = {}
        for p in self.props:
            entry: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.type == "integer":
                entry["minimum"] = p.minimum
                entry["maximum"] = window_max if p.window else p.maximum
            if p.type == "array":
                items: dict[str, Any] = {"type": "string"}
                if p.enum is not None:
                    items["enum"] = list(p.enum)
                entry["items"] = items
            properties[p.name] = entry
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if self.required:
            schema["required"] = list(self.required)
        schema["additionalProperties"] = False  # an unknown argument is an error (§1.5)
        return schema


_ID = "Target session id. Omit for the current session."
_S = "Inclusive event sequence lower bound."
_S2 = "Inclusive event sequence upper bound."
_C = "Inclusive timezone-qualified ISO 8601 creation-time lower bound."
_C2 = "Inclusive timezone-qualified ISO 8601 creation-time upper bound."
_T = "Inclusive timezone-qualified ISO 8601 event-time lower bound."
_T2 = "Inclusive timezone-qualified ISO 8601 event-time upper bound."
_TYPES = "Event types to include."
_SURFACES = "Event surfaces to include."
SURFACES = ("current", "shadowed", "log-only")
AVAILABILITY = ("live", "persisted")
_SEQ = Prop("seq", "integer", "Target event sequence number.")
# session_list and session_read (tools.md §1.6) [ours]
LIST_LIMIT_DEFAULT = 20
LIST_LIMIT_MAX = 100
READ_CHARS_DEFAULT = 12_000
READ_CHARS_MIN = 1_000
READ_CHARS_MAX = 50_000


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "session_search",
        "Search prior sessions in the caller workspace and return the strongest matching event "
        "from each session.",
        (
            Prop("query", "string", "Literal full-text query over prior session history."),
            Prop("session_ids", "array", "Optional session ids to include."),
            Prop("created_at_from", "string", _C),
            Prop("created_at_to", "string", _C2),
            Prop("parent_session_ids", "array", "Optional direct parent session ids."),
            Prop(
                "include_root_sessions",
                "boolean",
                "Include sessions with no parent in the parent filter.",
            ),
            Prop(
                "availability",
                "array",
                "Require at least one selected source availability.",
                AVAILABILITY,
            ),
            Prop("event_seq_from", "integer", _S),
            Prop("event_seq_to", "integer", _S2),
            Prop("event_time_from", "string", _T),
            Prop("event_time_to", "string", _T2),
            Prop("event_types", "array", _TYPES),
            Prop("event_surfaces", "array", _SURFACES, SURFACES),
        ),
        ("query",),
        True,
    ),
    ToolSpec(
        "session_event_search",
        "Search prior events in one authorized session; the current session excludes the step "
        "performing this call.",
        (
            Prop("session_id", "string", _ID),
            Prop("query", "string", "Literal full-text query over the target session."),
            Prop("seq_from", "integer", _S),
            Prop("seq_to", "integer", _S2),
            Prop("time_from", "string", _T),
            Prop("time_to", "string", _T2),
            Prop("event_types", "array", _TYPES),
            Prop("surfaces", "array", _SURFACES, SURFACES),
        ),
        ("query",),
        True,
    ),
    ToolSpec(
        "session_trace",
        "Read the authorized session lineage around one session, including complete visible "
        "ancestor and descendant relationships.",
        (Prop("session_id", "string", _ID),),
        (),
        False,
    ),
    ToolSpec(
        "session_event_trace",
        "Read every direct replacement and relationship to a cited source event for one event in "
        "an authorized session.",
        (Prop("session_id", "string", _ID), _SEQ),
        ("seq",),
        False,
    ),
    ToolSpec(
        "session_event_read",
        "Read one full unabridged event and optional neighboring raw-event summaries from an "
        "authorized session.",
        (
            Prop("session_id", "string", _ID),
            _SEQ,
            Prop(
                "before",
                "integer",
                "Number of preceding raw events to summarize. Omit for none.",
                window=True,
            ),
            Prop(
                "after",
                "integer",
                "Number of following raw events to summarize. Omit for none.",
                window=True,
            ),
        ),
        ("seq",),
        False,
    ),
    ToolSpec(
        "session_usage",
        "Read the tokens and estimated cost an authorized session recorded, each model response "
        "counted once, optionally with its visible descendant sessions.",
        (
            Prop("session_id", "string", _ID),
            Prop(
                "include_descendants",
                "boolean",
                "Also total the descendant sessions in the caller workspace.",
            ),
        ),
        (),
        False,
    ),
    ToolSpec(
        "session_list",
        "List the most recent sessions in the caller workspace, newest first: id, title, agent, "
        "creation time, working directory and event count. Use it to find a session to read "
        "without a query.",
        (
            Prop(
                "limit",
                "integer",
                f"Most sessions to list (default {LIST_LIMIT_DEFAULT}).",
                minimum=1,
                maximum=LIST_LIMIT_MAX,
            ),
            Prop(
                "agent",
                "string",
                "Only sessions of this agent: dsh, claude-code (or claude), codex, gemini-cli, "
                "opencode, copilot-cli, qwen-code.",
            ),
            Prop("since", "string", "Only sessions created at or after this ISO 8601 time."),
        ),
        (),
        False,
    ),
    ToolSpec(
        "session_read",
        "Read a window of one authorized session's transcript as text, oldest first, each event "
        "with its seq, type, class (current, shadowed or log-only) and text; page with seq_from.",
        (
            Prop("session_id", "string", _ID),
            Prop("seq_from", "integer", "First event sequence number to read (default 0)."),
            Prop(
                "max_chars",
                "integer",
                f"Most characters of transcript text to return (default {READ_CHARS_DEFAULT}).",
                minimum=READ_CHARS_MIN,
                maximum=READ_CHARS_MAX,
            ),
        ),
        (),
        False,
    ),
)
TOOL_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


# -- schema check ------------------------------------------------------------------------------


def is_json_integer(value: object) -> bool:
    """A number with an integral value (3.0 counts); booleans, NaN and infinities do not."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


_KIND = {"string": "a string", "integer": "an integer", "boolean": "a boolean", "array": "an array"}


def _type_ok(kind: str, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return is_json_integer(value)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, list)


def check_schema(spec: ToolSpec, args: dict[str, Any]) -> None:
    """INVALID_ARGS with every violation, in the spec's order (§1.5): missing, then unknown
    properties (in the order sent) **[ours]**, then wrong kinds."""
    problems = [f'missing required property "{name}"' for name in spec.required if name not in args]
    known = {p.name for p in spec.props}
    unknown = [name for name in args if name not in known]
    if unknown:
        allowed = ", ".join(p.name for p in spec.props)
        names = ", ".join(json.dumps(n, ensure_ascii=False) for n in unknown)
        word = "property" if len(unknown) == 1 else "properties"
        problems.append(f"unknown {word} {names} (allowed: {allowed})")
    for prop in spec.props:
        if prop.name not in args:
            continue
        value = args[prop.name]
        if not _type_ok(prop.type, value):
            problems.append(f'"{prop.name}" must be {_KIND[prop.type]}')
            continue
        if prop.type == "array":
            assert isinstance(value, list)
            items: list[object] = value
            for i, item in enumerate(items):
                if not isinstance(item, str):
                    problems.append(f'"{prop.name}[{i}]" must be a string')
                elif prop.enum is not None and item not in prop.enum:
                    enum = json.dumps(list(prop.enum), separators=(",", ":"))
                    problems.append(f'"{prop.name}[{i}]" must be one of {enum}')
    if problems:
        raise ToolError(INVALID_ARGS, "invalid arguments: " + "; ".join(problems))


# -- tool-owned checks -------------------------------------------------------------------------


def query_text(value: str) -> str:
    text = collapse_whitespace(trim(value))
    if is_blank(text):
        raise ToolError(INVALID_QUERY, "session-search query must contain non-whitespace text")
    if "\x00" in text:
        raise ToolError(INVALID_QUERY, "session-search query must not contain NUL")
    return text


def nonneg(value: object, name: str) -> int | None:
    """A schema-checked integer or None; must be a safe integer >= 0."""
    if value is None:
        return None
    assert isinstance(value, (int, float))
    if not (0 <= value <= MAX_SAFE_INTEGER):
        raise ToolError(INVALID_FILTER, f"{name} must be a non-negative safe integer")
    return int(value)


def seq_range(lo: object, hi: object) -> tuple[int | None, int | None]:
    a = nonneg(lo, "sequence lower bound")
    b = nonneg(hi, "sequence upper bound")
    if a is not None and b is not None and a > b:
        raise ToolError(
            INVALID_FILTER, "session sequence range from must be less than or equal to to"
        )
    return a, b


def nonempty(value: object, name: str) -> list[str] | None:
    if value is None:
        return None
    assert isinstance(value, list)
    if not value:
        raise ToolError(INVALID_FILTER, f"{name} must contain at least one value when supplied")
    return [str(v) for v in value]


_STAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]+))?)?(Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (year 0 included)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _month_days(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


Stamp = tuple[int, str]  # (epoch ms, the fraction digits past the third, trailing zeros stripped)


def parse_stamp(value: str, name: str) -> Stamp:
    match = _STAMP.fullmatch(value)
    if match is None:
        raise ToolError(
            INVALID_FILTER,
            f"session {name} range must be an ISO 8601 timestamp with Z or a numeric offset",
        )
    y, mo, d, h, mi = (int(match.group(i)) for i in range(1, 6))
    s = int(match.group(6) or 0)
    fraction = match.group(7) or ""
    zone = match.group(8)
    off_h = off_m = 0
    if zone != "Z":
        off_h, off_m = int(zone[1:3]), int(zone[4:6])
    if not (
        1 <= mo <= 12
        and 1 <= d <= _month_days(y, mo)
        and h <= 23
        and mi <= 59
        and s <= 59
        and off_h <= 23
        and off_m <= 59
    ):
        raise ToolError(INVALID_FILTER, f"session {name} range must be a valid ISO 8601 timestamp")
    offset = (off_h * 60 + off_m) * (-1 if zone.startswith("-") else 1)
    minutes = (_days_from_civil(y, mo, d) * 24 + h) * 60 + mi - offset
    ms = (minutes * 60 + s) * 1000 + int((fraction[:3] + "000")[:3])
    return ms, fraction[3:].rstrip("0")


def _stamp_key(stamp: Stamp, width: int) -> tuple[int, str]:
    return stamp[0], stamp[1].ljust(width, "0")


def stamp_range(lo: object, hi: object, name: str) -> tuple[float | None, float | None]:
    """Both bounds parsed (lower first), compared, and turned into the numbers sent (§1.5)."""
    a = None if lo is None else parse_stamp(str(lo), f"{name}_from")
    b = None if hi is None else parse_stamp(str(hi), f"{name}_to")
    if a is not None and b is not None:
        width = max(len(a[1]), len(b[1]))
        if _stamp_key(a, width) > _stamp_key(b, width):
            raise ToolError(
                INVALID_FILTER, f"session {name} range from must be less than or equal to to"
            )
    low = None if a is None else (float(a[0]) if not a[1] else math.nextafter(a[0], math.inf))
    high = None if b is None else (float(b[0]) if not b[1] else math.nextafter(b[0] + 1, -math.inf))
    return _int_if_integral(low), _int_if_integral(high)


def _int_if_integral(value: float | None) -> float | None:
    if value is None or not value.is_integer():
        return value
    return int(value)


def range_clause(kind: str, lo: float | None, hi: float | None) -> dict[str, Any] | None:
    if lo is None and hi is None:
        return None
    clause: dict[str, Any] = {"kind": kind}
    if lo is not None:
        clause["from"] = lo
    if hi is not None:
        clause["to"] = hi
    return clause


INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"


def bounded(value: object, name: str, low: int, high: int) -> int | None:
    """A schema-checked integer within the bounds its schema states, or None when absent."""
    if value is None:
        return None
    assert isinstance(value, (int, float))
    if not (low <= value <= high):
        raise ToolError(INVALID_FILTER, f"{name} must be an integer from {low} to {high}")
    return int(value)


def window_side(value: object, name: str, window_max: int) -> int | None:
    """``before``/``after``: a non-negative safe integer, then at most ``readWindowMax``, which
    the schema states; said here with the limit rather than the service's sanitized
    ``session event window is invalid`` **[ours]**."""
    side = nonneg(value, name)
    if side is not None and side > window_max:
        raise ToolError(
            INVALID_WINDOW, f"{name} must be at most {window_max} (the server's readWindowMax)"
        )
    return side
