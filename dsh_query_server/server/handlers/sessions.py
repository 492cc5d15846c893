"""Methods over the corpus and one session's identity: listing, filtering, titles, lineage
(semantics.md §3.1, §3.2, §3.8, §3.9)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Raw

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...model import wire
from ...model.filters import SessionFilter
from ...model.params import Expect, NoParams, Params, SessionIdParams, Spec
from ..registry import method


class FilterSessionsParams(Params):
    filters: Annotated[Any, Spec(list[SessionFilter])]  # the filter language checks it (§4)


class ReadTitlesParams(Params):
    sessionIds: Annotated[list[str], Expect("an array of strings")]


@method(
    "sessionQuery/listSessions",
    params=NoParams,
    result=list[wire.SessionRecord],
    errors=(E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT),
)
def list_sessions(rt: Runtime, p: NoParams, token: CancelToken) -> Raw:
    """Every session of the corpus, live copy preferred (semantics.md §3.1)."""
    return rt.service.list_sessions_json(token)  # the records, encoded as one JSON array


@method(
    "sessionQuery/filterSessions",
    params=FilterSessionsParams,
    result=list[wire.SessionRecord],
    errors=(E.INVALID_FILTER, E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT),
)
def filter_sessions(
    rt: Runtime, p: FilterSessionsParams, token: CancelToken
) -> list[wire.SessionRecord]:
    """The sessions every filter clause accepts (semantics.md §3.2, §4.1)."""
    return rt.service.filter_sessions(p.filters, token)


@method(
    "sessionQuery/readTitle",
    params=SessionIdParams,
    result=wire.SessionTitleObservation,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD),
)
def read_title(rt: Runtime, p: SessionIdParams, token: CancelToken) -> wire.SessionTitleObservation:
    """The header and the last title of one session (semantics.md §3.8)."""
    return rt.service.read_title(p.sessionId, token)


@method(
    "sessionQuery/readTitles",
    params=ReadTitlesParams,
    result=list[wire.SessionTitleObservationResult],
    errors=(E.INVALID_REQUEST, E.ABORTED),
)
def read_titles(
    rt: Runtime, p: ReadTitlesParams, token: CancelToken
) -> list[wire.SessionTitleObservationResult]:
    """Titles of many sessions; a failing id is a rejected entry (semantics.md §3.8)."""
    return rt.service.read_titles(p.sessionIds, token)


@method(
    "sessionQuery/traceSession",
    params=SessionIdParams,
    result=wire.SessionLineageTrace,
    errors=(
        E.INVALID_REQUEST,
        E.ABORTED,
        E.PERSISTENCE_FAILED,
        E.SOURCE_CONFLICT,
        E.SESSION_NOT_FOUND,
        E.INVALID_LINEAGE,
    ),
)
def trace_session(rt: Runtime, p: SessionIdParams, token: CancelToken) -> wire.SessionLineageTrace:
    """Ancestors and descendants of a session (semantics.md §3.9, §5.1)."""
    return rt.service.trace_session(p.sessionId, token)
