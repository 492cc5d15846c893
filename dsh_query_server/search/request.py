"""Search request normalization (semantics.md §6.6), run before a search joins the queue.

The request arrives decoded leniently (search/wire.py): every field is checked here, in §6.6's
order. The result is an owned, immutable copy of the request: filter clauses are frozen structs
with tuple values, so a caller that mutates its request afterwards changes nothing (§0.4). The
canonical fingerprint that cursors bind is computed here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..model.filters import EVENT_KINDS
from ..query.filters import validate_clause, validate_filters, validate_session_filters
from ..values import MAX_SAFE_INTEGER, collapse_whitespace, is_safe_integer
from .config import SearchConfig
from .cursor import events_fingerprint, sessions_fingerprint
from .schema import sanitize
from .wire import SessionEventSearchRequest, SessionSearchRequest

SEARCH_EVENT_KINDS = {kind: cls for kind, cls in EVENT_KINDS.items() if kind != "text"}
LIMIT_CEILING = MAX_SAFE_INTEGER - 1  # 2^53-2: limit + 1 must stay a safe integer


@dataclass(frozen=True, slots=True)
class SessionSearch:
    query: str
    session_filters: tuple[Any, ...]
    event_filters: tuple[Any, ...]
    limit: int
    cursor: str | None
    fingerprint: str


@dataclass(frozen=True, slots=True)
class EventSearch:
    session_id: str
    query: str
    filters: tuple[Any, ...]
    limit: int
    cursor: str | None
    fingerprint: str


def _session_filters(value: Any) -> tuple[Any, ...]:
    if value is None or value is UNSET:
        return ()
    return tuple(validate_session_filters(value))


def _event_filters(value: Any) -> tuple[Any, ...]:
    if value is None or value is UNSET:
        return ()
    if isinstance(value, list):
        # Kinds are checked across the whole list first: a text clause is refused with its own
        # message even when an earlier clause has a bad value.
        for entry in value:
            kind = entry.get("kind") if isinstance(entry, dict) else None
            if kind == "text":
                raise QueryError(
                    errors.INVALID_FILTER,
                    "session-search metadata filters do not accept text clauses",
                )
            if kind not in SEARCH_EVENT_KINDS:
                validate_clause(entry, SEARCH_EVENT_KINDS)  # raises the unknown-kind error
    return tuple(validate_filters(value, SEARCH_EVENT_KINDS))


def _cursor(cursor: Any) -> str | None:
    if cursor is UNSET:
        return None
    if not isinstance(cursor, str):
        raise QueryError(errors.INVALID_CURSOR, "session-search cursor must be text")
    return cursor


def _query(value: Any) -> str:
    if not isinstance(value, str):
        raise QueryError(errors.INVALID_QUERY, "session-search query must be text")
    query = collapse_whitespace(value)
    if not query:
        raise QueryError(
            errors.INVALID_QUERY, "session-search query must contain non-whitespace text"
        )
    if "\x00" in query:
        raise QueryError(errors.INVALID_QUERY, "session-search query must not contain NUL")
    return sanitize(query)


def _limit(value: Any, config: SearchConfig) -> int:
    if value is None or value is UNSET:
        return config.default_limit
    ceiling = min(config.max_limit, LIMIT_CEILING)
    if not (is_safe_integer(value) and 1 <= value <= ceiling):
        raise QueryError(
            errors.INVALID_LIMIT, f"session-search limit must be an integer between 1 and {ceiling}"
        )
    return int(value)


def normalize_sessions(request: SessionSearchRequest, config: SearchConfig) -> SessionSearch:
    session_filters = _session_filters(request.sessionFilters)
    event_filters = _event_filters(request.eventFilters)
    cursor = _cursor(request.cursor)
    query = _query(request.query)
    limit = _limit(request.limit, config)
    fingerprint = sessions_fingerprint(query, session_filters, event_filters, limit)
    return SessionSearch(query, session_filters, event_filters, limit, cursor, fingerprint)


def normalize_events(request: SessionEventSearchRequest, config: SearchConfig) -> EventSearch:
    session_id = request.sessionId
    if not isinstance(session_id, str):
        raise QueryError(errors.INVALID_FILTER, "session-search session id must be text")
    filters = _event_filters(request.filters)
    cursor = _cursor(request.cursor)
    query = _query(request.query)
    limit = _limit(request.limit, config)
    fingerprint = events_fingerprint(session_id, query, filters, limit)
    return EventSearch(session_id, query, filters, limit, cursor, fingerprint)


def phrase(query: str) -> str:
    """The normalized query as one FTS5 phrase: the caller's text is always data."""
    return '"' + query.replace('"', '""') + '"'
