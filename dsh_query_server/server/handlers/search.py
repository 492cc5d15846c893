"""Full-text search (semantics.md §6): its params are lenient (search/wire.py), so the search
service answers SEARCH_DISABLED before it checks any field (§3.12)."""

from __future__ import annotations

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...search.wire import (
    SessionEventSearchPage,
    SessionEventSearchRequest,
    SessionSearchPage,
    SessionSearchRequest,
)
from ..registry import method

_SEARCH = (
    E.SEARCH_DISABLED, E.INVALID_REQUEST, E.INVALID_FILTER, E.INVALID_CURSOR, E.INVALID_QUERY,
    E.INVALID_LIMIT, E.INDEX_FAILED, E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT,
    E.INVALID_SURFACE, E.STALE_CURSOR,
)  # fmt: skip


@method(
    "sessionQuery/searchSessions",
    params=SessionSearchRequest,
    result=SessionSearchPage,
    errors=_SEARCH,
)
def search_sessions(rt: Runtime, p: SessionSearchRequest, token: CancelToken) -> SessionSearchPage:
    """Full-text search over the corpus, one hit per session (semantics.md §6)."""
    return rt.search.search_sessions(p, token)


@method(
    "sessionQuery/searchEvents",
    params=SessionEventSearchRequest,
    result=SessionEventSearchPage,
    errors=(*_SEARCH, E.SESSION_NOT_FOUND),
)
def search_events(
    rt: Runtime, p: SessionEventSearchRequest, token: CancelToken
) -> SessionEventSearchPage:
    """Full-text search inside one session (semantics.md §6)."""
    return rt.search.search_events(p, token)
