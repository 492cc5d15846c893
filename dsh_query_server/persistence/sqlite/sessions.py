"""Sessions rows (persistence.md §5.4, §5.6 step 2): the header columns, their rules, and the
format-version refusal (§2.3)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from ...model.event import Header
from ..contract.errors import SessionFormatUnsupportedError, SessionPersistenceCorruptionError
from .codec import Text, from_text, to_text
from .rows import is_int

UUID_PATTERN = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)

# Session columns in table order, with the header's wire names (§5.4).
_HEADER_COLUMNS = (
    ("id", "id"),
    ("version", "version"),
    ("created_at", "createdAt"),
    ("cwd", "cwd"),
    ("parent_session", "parentSession"),
    ("seed_length", "seedLength"),
    ("origin", "origin"),
    ("delegation_depth", "delegationDepth"),
    ("agent_preset", "agentPreset"),
)

# ---------------------------------------------------------------------------------------------
# Sessions rows (§5.4, §5.6 step 2)


def _null_or_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _null_or_count(value: Any) -> bool:
    return value is None or (is_int(value) and value >= 0)


_HEADER_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "id": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "version": (is_int, "a safe integer"),
    "created_at": (lambda v: is_int(v) and v >= 0, "a non-negative safe integer"),
    "cwd": (
        lambda v: v is None or (isinstance(v, str) and os.path.isabs(v)),
        "absent or an absolute path",
    ),
    "parent_session": (_null_or_str, "absent or a string"),
    "seed_length": (_null_or_count, "absent or a non-negative safe integer"),
    "origin": (lambda v: v is None or v == "subagent", 'absent or "subagent"'),
    "delegation_depth": (_null_or_count, "absent or a non-negative safe integer"),
    "agent_preset": (_null_or_str, "absent or a string"),
}


def _header_problem(values: Sequence[Any]) -> str | None:
    """The first header column that breaks its rule, as text; None when every column holds."""
    for (column, _), value in zip(_HEADER_COLUMNS, values, strict=True):
        rule, expectation = _HEADER_RULES[column]
        if not rule(value):
            return f"{column} must be {expectation}"
    return None


def _integral(value: Any) -> Any:
    """3.0 is the integer 3 (semantics.md §0.2); integer columns store it as 3."""
    return int(value) if type(value) is float and value.is_integer() else value


def header_columns(header: Header) -> tuple[Any, ...]:
    """The header's values in session-column order; ValueError when a row could not hold them."""
    values: list[Any] = []
    for _, wire in _HEADER_COLUMNS:
        value = header.get(wire)
        if value is None:
            raise ValueError(f"cannot store the session header: {wire} is null")
        values.append(None if value is UNSET else _integral(value))
    problem = _header_problem(values)
    if problem is not None:
        raise ValueError(f"cannot store the session header: {problem}")
    return tuple(values)


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A validated sessions row."""

    header: Header
    incarnation: str
    revision: int

    @property
    def id(self) -> str:
        return self.header.id


def _session_problem(values: Sequence[Any]) -> str | None:
    problem = _header_problem(values[:9])
    if problem is not None:
        return problem
    if not (isinstance(values[9], str) and UUID_PATTERN.fullmatch(values[9])):
        return "incarnation must be a UUID"
    if not (is_int(values[10]) and values[10] >= 0):
        return "revision must be a non-negative safe integer"
    return None


def session_row(raw: tuple[Any, ...]) -> SessionRow:
    """Step 2 of §5.6 for a sessions row; any failure is corruption."""
    values: list[Any]
    try:
        values = [from_text(v) if isinstance(v, Text) else v for v in raw]
        problem = _session_problem(values)
    except UnicodeDecodeError:
        values, problem = list(raw), "a text column is not valid text"
    if problem is not None:
        raise SessionPersistenceCorruptionError(
            f"corrupt session log: invalid sessions row for session {values[0]!r}: {problem}"
        )
    header = Header.build(
        **{
            wire: value
            for (_, wire), value in zip(_HEADER_COLUMNS, values[:9], strict=True)
            if value is not None
        }
    )
    return SessionRow(header, values[9], values[10])


def require_format_v0(header: Header) -> None:
    """§2.3: an intact log in another format version is refused, without a path suffix."""
    version = header.version
    if version > 0:
        raise SessionFormatUnsupportedError(
            f'session "{header.id}" uses log format v{version}, but this harness reads only v0:'
            " the log was written by a newer harness — upgrade the harness to open it"
        )
    if version < 0:
        raise SessionFormatUnsupportedError(
            f'session "{header.id}" uses log format v{version}, older than the supported v0,'
            " and this build ships no upgrade path for it"
        )


def bind_text(value: Any) -> Any:
    """A session-column value as bound: strings as bytes for ``CAST(? AS TEXT)``."""
    return to_text(value) if isinstance(value, str) else value
