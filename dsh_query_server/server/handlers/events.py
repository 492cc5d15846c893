"""Methods that read one session's log: its events, a window, the surface, the whole log, an
event's relationships (semantics.md §3.3–§3.7, §3.10)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET

from ... import errors as E
from ...cancel import CancelToken
from ...core.runtime import Runtime
from ...model import wire
from ...model.filters import EventFilter
from ...model.params import Expect, Params, Seq, SessionId, SessionIdParams, Spec
from ...model.timeline import SessionTimeline
from ...model.view import SessionView
from ...values import is_nonneg_safe_integer
from ..registry import method


class FilterEventsParams(Params):
    sessionId: SessionId
    filters: Annotated[Any, Spec(list[EventFilter])]  # the filter language checks it (§4)


class ReadEventParams(Params):
    """``seq`` is any number: one that names no event is EVENT_NOT_FOUND (semantics.md §3.0.2).
    ``before`` and ``after`` are integers from 0 to ``readWindowMax`` (INVALID_WINDOW)."""

    sessionId: SessionId
    seq: Seq
    # Bounded by the configuration, so the service checks them: after sessionId and seq, before
    # the load (§3.12).
    before: Annotated[Any, Spec(int)] = UNSET
    after: Annotated[Any, Spec(int)] = UNSET


def _absent_or_seq(value: Any) -> bool:
    return value is None or is_nonneg_safe_integer(value)


class ReadSurfaceParams(Params):
    """``throughSeq``: the surface after events 0..throughSeq (views.md §1); absent or null, the
    current surface. Checked after sessionId, before the load (semantics.md §3.12)."""

    sessionId: SessionId
    throughSeq: Annotated[
        Any,
        Spec(int | None),
        Expect("a non-negative safe integer", check=_absent_or_seq),
    ] = None


class ReadSessionViewParams(Params):
    """``log``: also the whole log, as readSession gives it (absent or null: false)."""

    sessionId: SessionId
    log: Annotated[bool | None, Expect("a boolean")] = None


class TraceEventParams(Params):
    sessionId: SessionId
    seq: Seq


@method(
    "sessionQuery/listEvents",
    params=SessionIdParams,
    result=list[wire.SessionEventRecord],
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD, E.INVALID_SURFACE),
)
def list_events(
    rt: Runtime, p: SessionIdParams, token: CancelToken
) -> list[wire.SessionEventRecord]:
    """Every event of one session with its surface class (semantics.md §3.3)."""
    return rt.service.list_events(p.sessionId, token)


@method(
    "sessionQuery/filterEvents",
    params=FilterEventsParams,
    result=list[wire.SessionEventSearchDocument],
    errors=(E.INVALID_REQUEST, E.INVALID_FILTER, E.ABORTED, *E.LOAD, E.INVALID_SURFACE),
)
def filter_events(
    rt: Runtime, p: FilterEventsParams, token: CancelToken
) -> list[wire.SessionEventSearchDocument]:
    """The events every clause accepts, with their text (semantics.md §3.4, §4.2)."""
    return rt.service.filter_events(p.sessionId, p.filters, token)


@method(
    "sessionQuery/readEvent",
    params=ReadEventParams,
    result=wire.SessionEventWindow,
    errors=(E.INVALID_REQUEST, E.INVALID_WINDOW, E.ABORTED, *E.LOAD, E.EVENT_NOT_FOUND),
)
def read_event(rt: Runtime, p: ReadEventParams, token: CancelToken) -> wire.SessionEventWindow:
    """One event with up to `before` events before it and `after` after (semantics.md §3.5)."""
    return rt.service.read_event(p.sessionId, p.seq, p.before, p.after, token)


@method(
    "sessionQuery/readSurface",
    params=ReadSurfaceParams,
    result=wire.SessionSurfaceSnapshot,
    errors=(
        E.INVALID_REQUEST,
        E.ABORTED,
        *E.LOAD,
        E.INVALID_SURFACE,
        E.EVENT_NOT_FOUND,
    ),
)
def read_surface(
    rt: Runtime, p: ReadSurfaceParams, token: CancelToken
) -> wire.SessionSurfaceSnapshot:
    """The surface in model-history order: the current one (semantics.md §3.6), or the one after
    events 0..throughSeq (views.md §1)."""
    through = None if p.throughSeq is None else int(p.throughSeq)
    return rt.service.read_surface(p.sessionId, token, through)


@method(
    "sessionQuery/readTimeline",
    params=SessionIdParams,
    result=SessionTimeline,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD, E.INVALID_SURFACE),
)
def read_timeline(rt: Runtime, p: SessionIdParams, token: CancelToken) -> SessionTimeline:
    """Context size before each model step, recorded usage, every replacement and the peak
    (views.md §2)."""
    return rt.service.read_timeline(p.sessionId, token)


@method(
    "sessionQuery/readSessionView",
    params=ReadSessionViewParams,
    result=SessionView,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD, E.INVALID_SURFACE),
)
def read_session_view(rt: Runtime, p: ReadSessionViewParams, token: CancelToken) -> SessionView:
    """What the session view shows, from one read of the log: readTimeline, listEvents and
    readTitle, and with `log` readSession (views.md §3.2)."""
    return rt.service.read_session_view(p.sessionId, p.log is True, token)


@method(
    "sessionQuery/readSession",
    params=SessionIdParams,
    result=wire.SessionLogSnapshot,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD),
)
def read_session(rt: Runtime, p: SessionIdParams, token: CancelToken) -> wire.SessionLogSnapshot:
    """The whole log, replay-validated (semantics.md §3.7)."""
    return rt.service.read_session(p.sessionId, token)


@method(
    "sessionQuery/traceEvent",
    params=TraceEventParams,
    result=wire.SessionEventTraceObservation,
    errors=(E.INVALID_REQUEST, E.ABORTED, *E.LOAD, E.EVENT_NOT_FOUND, E.INVALID_SURFACE),
)
def trace_event(
    rt: Runtime, p: TraceEventParams, token: CancelToken
) -> wire.SessionEventTraceObservation:
    """What replaced an event, what it replaced, its sources and derived events
    (semantics.md §3.10, §5.2)."""
    return rt.service.trace_event(p.sessionId, p.seq, token)
