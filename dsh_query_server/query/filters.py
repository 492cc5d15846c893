"""Filter validation into owned clauses, and matching (semantics.md §4)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .. import errors
from ..errors import QueryError
from ..model.filters import (
    EVENT_KINDS,
    LITERALS,
    NULLABLE_KINDS,
    SESSION_KINDS,
    AvailabilityFilter,
    CreatedAtFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    SeqFilter,
    SurfaceFilter,
    TextFilter,
    TimeFilter,
    TypeFilter,
    _List,
    _Range,
)
from ..values import is_number
from .text import compile_literal


def _invalid(message: str) -> QueryError:
    return QueryError(errors.INVALID_FILTER, f"session {message}")


def validate_filters(value: Any, kinds: dict[str, type]) -> list[Any]:
    """Validate a filter array against the allowed kinds; return owned clauses."""
    if not isinstance(value, list):
        raise _invalid("filters must be an array")
    return [validate_clause(entry, kinds) for entry in value]


def validate_clause(entry: Any, kinds: dict[str, type]) -> Any:
    kind = entry.get("kind") if isinstance(entry, dict) else None
    if not isinstance(kind, str):
        raise _invalid("unknown filter kind (missing)")
    cls = kinds.get(kind)
    if cls is None:
        raise _invalid(f'unknown filter kind "{kind}"')
    if issubclass(cls, _List):
        return cls(values=_values(kind, entry.get("values")))
    if issubclass(cls, _Range):
        bounds = {}
        for key, attr in (("from", "lo"), ("to", "hi")):
            if key in entry:
                if not is_number(entry[key]):
                    raise _invalid(f"{kind} filter {key} must be finite")
                bounds[attr] = entry[key]
        if "lo" in bounds and "hi" in bounds and bounds["lo"] > bounds["hi"]:
            raise _invalid(f"{kind} filter from must be less than or equal to to")
        return cls(**bounds)
    text = entry.get("text")
    if not isinstance(text, str):
        raise _invalid("text filter text must be a string")
    return TextFilter(text=text)


def _values(kind: str, values: Any) -> tuple[Any, ...]:
    nullable = kind in NULLABLE_KINDS
    ok = isinstance(values, list) and all(
        isinstance(v, str) or (nullable and v is None) for v in values
    )
    if not ok:
        suffix = " or null" if nullable else ""
        raise _invalid(f"{kind} filter values must be an array of strings{suffix}")
    literals = LITERALS.get(kind)
    if literals is not None:
        for v in values:
            if v not in literals:
                raise _invalid(f'{kind} filter contains unknown value "{v}"')
    return tuple(values)


def validate_session_filters(value: Any) -> list[Any]:
    return validate_filters(value, SESSION_KINDS)


def validate_event_filters(value: Any) -> list[Any]:
    return validate_filters(value, EVENT_KINDS)


# -- matching ------------------------------------------------------------------------------


def session_matches(clauses: Sequence[Any], header: Any, live: bool, persisted: bool) -> bool:
    """All clauses accept the record (values inside one clause are ORed)."""
    from msgspec import UNSET

    for clause in clauses:
        if isinstance(clause, IdFilter):
            ok = header.id in clause.values
        elif isinstance(clause, CwdFilter):
            ok = (None if header.cwd is UNSET else header.cwd) in clause.values
        elif isinstance(clause, ParentFilter):
            parent = None if header.parent_session is UNSET else header.parent_session
            ok = parent in clause.values
        elif isinstance(clause, AvailabilityFilter):
            ok = ("live" in clause.values and live) or ("persisted" in clause.values and persisted)
        elif isinstance(clause, CreatedAtFilter):
            ok = is_number(header.created_at) and clause.accepts(header.created_at)
        else:  # pragma: no cover - validation admits nothing else
            raise TypeError(clause)
        if not ok:
            return False
    return True


class EventPredicate:
    """Compiled event clauses. Building it is where a blank text clause fails (§3.4 step 4)."""

    def __init__(self, clauses: Sequence[Any]) -> None:
        self.clauses = list(clauses)
        self.patterns: list[re.Pattern[str]] = []
        for clause in self.clauses:
            if isinstance(clause, TextFilter):
                pattern = compile_literal(clause.text)
                if pattern is None:
                    raise _invalid("text filter must contain non-whitespace text")
                self.patterns.append(pattern)

    def __call__(self, seq: int, etype: Any, time: Any, surface: str, text: str) -> bool:
        for clause in self.clauses:
            if isinstance(clause, SeqFilter):
                ok = clause.accepts(seq)
            elif isinstance(clause, TimeFilter):
                ok = is_number(time) and clause.accepts(time)
            elif isinstance(clause, TypeFilter):
                ok = etype in clause.values
            elif isinstance(clause, SurfaceFilter):
                ok = surface in clause.values
            else:
                continue  # text clauses are checked below
            if not ok:
                return False
        return all(p.search(text) for p in self.patterns)
