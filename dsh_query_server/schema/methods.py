"""Each method's params, result and error codes (protocol.md §3–§6, semantics.md §3.12)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import errors
from ..export import params as export
from ..model import timeline, wire
from ..search import wire as search_wire
from .shapes import (
    AppendParams,
    AppendResult,
    CheckpointParams,
    CheckpointResult,
    CreateParams,
    CreateResult,
    DidChangeParams,
    EmptyResult,
    FilterEventsParams,
    FilterSessionsParams,
    MountParams,
    MountResult,
    NoParams,
    ReadEventParams,
    ReadSurfaceParams,
    ReadTitlesParams,
    SessionEventSearchRequest,
    SessionIdParams,
    SessionSearchRequest,
    StatusResult,
    TraceEventParams,
    TreeChildrenParams,
    TreeChildrenResult,
    TreeParentParams,
    TreeParentResult,
)

E = errors
_LOAD = (E.SESSION_NOT_FOUND, E.PERSISTENCE_FAILED, E.CORRUPT_SESSION, E.SOURCE_CONFLICT)
_SEARCH = (
    E.SEARCH_DISABLED, E.INVALID_REQUEST, E.INVALID_FILTER, E.INVALID_CURSOR, E.INVALID_QUERY,
    E.INVALID_LIMIT, E.INDEX_FAILED, E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT,
    E.INVALID_SURFACE, E.STALE_CURSOR,
)  # fmt: skip


@dataclass(frozen=True)
class Method:
    params: object
    result: object
    errors: tuple[str, ...]  # in the order of semantics.md §3.12 where it gives one
    summary: str


METHOD_SHAPES: dict[str, Method] = {
    "sessionQuery/listSessions": Method(
        NoParams, list[wire.SessionRecord],
        (E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT),
        "Every session of the corpus, live copy preferred (semantics.md §3.1)."),
    "sessionQuery/filterSessions": Method(
        FilterSessionsParams, list[wire.SessionRecord],
        (E.INVALID_FILTER, E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT),
        "The sessions every filter clause accepts (semantics.md §3.2, §4.1)."),
    "sessionQuery/listEvents": Method(
        SessionIdParams, list[wire.SessionEventRecord],
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.INVALID_SURFACE),
        "Every event of one session with its surface class (semantics.md §3.3)."),
    "sessionQuery/filterEvents": Method(
        FilterEventsParams, list[wire.SessionEventSearchDocument],
        (E.INVALID_REQUEST, E.INVALID_FILTER, E.ABORTED, *_LOAD, E.INVALID_SURFACE),
        "The events every clause accepts, with their text (semantics.md §3.4, §4.2)."),
    "sessionQuery/readEvent": Method(
        ReadEventParams, wire.SessionEventWindow,
        (E.INVALID_REQUEST, E.INVALID_WINDOW, E.ABORTED, *_LOAD, E.EVENT_NOT_FOUND),
        "One event with up to `before` events before it and `after` after (semantics.md §3.5)."),
    "sessionQuery/readSurface": Method(
        ReadSurfaceParams, wire.SessionSurfaceSnapshot,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.INVALID_SURFACE, E.EVENT_NOT_FOUND),
        "The current surface in model-history order (semantics.md §3.6), or the surface after "
        "events 0..throughSeq: what the model saw when it wrote event throughSeq + 1 "
        "(views.md §1)."),
    "sessionQuery/readTimeline": Method(
        SessionIdParams, timeline.SessionTimeline,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.INVALID_SURFACE),
        "The context before every model response, every replacement with what it shadowed, and "
        "the usage the agent recorded (views.md §2)."),
    "sessionQuery/readSession": Method(
        SessionIdParams, wire.SessionLogSnapshot,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD),
        "The whole log, replay-validated (semantics.md §3.7)."),
    "sessionQuery/readTitle": Method(
        SessionIdParams, wire.SessionTitleObservation,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD),
        "The header and the last title of one session (semantics.md §3.8)."),
    "sessionQuery/readTitles": Method(
        ReadTitlesParams, list[wire.SessionTitleObservationResult],
        (E.INVALID_REQUEST, E.ABORTED),
        "Titles of many sessions; a failing id is a rejected entry (semantics.md §3.8)."),
    "sessionQuery/traceSession": Method(
        SessionIdParams, wire.SessionLineageTrace,
        (E.INVALID_REQUEST, E.ABORTED, E.PERSISTENCE_FAILED, E.SOURCE_CONFLICT,
         E.SESSION_NOT_FOUND, E.INVALID_LINEAGE),
        "Ancestors and descendants of a session (semantics.md §3.9, §5.1)."),
    "sessionQuery/traceEvent": Method(
        TraceEventParams, wire.SessionEventTraceObservation,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.EVENT_NOT_FOUND, E.INVALID_SURFACE),
        "What replaced an event, what it replaced, its sources and derived events "
        "(semantics.md §3.10, §5.2)."),
    "sessionQuery/exportSession": Method(
        export.ExportParams, export.ExportResult,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.INVALID_LINEAGE, E.EXPORT_FAILED),
        "Write a session (and its descendants) as the tools.md §2.4 ZIP to a server-side path."),
    "sessionQuery/searchSessions": Method(
        SessionSearchRequest, search_wire.SessionSearchPage, _SEARCH,
        "Full-text search over the corpus, one hit per session (semantics.md §6)."),
    "sessionQuery/searchEvents": Method(
        SessionEventSearchRequest, search_wire.SessionEventSearchPage,
        (*_SEARCH, E.SESSION_NOT_FOUND),
        "Full-text search inside one session (semantics.md §6)."),
    "sessionQuery/treeChildren": Method(
        TreeChildrenParams, TreeChildrenResult, (E.INVALID_REQUEST, E.ABORTED),
        "A view's roots, or a node's children; failures inside a view are error nodes "
        "(protocol.md §6)."),
    "sessionQuery/treeParent": Method(
        TreeParentParams, TreeParentResult, (E.INVALID_REQUEST,),
        "A node's parent id, absent for a root (protocol.md §6)."),
    "sessionStore/create": Method(
        CreateParams, CreateResult,
        (E.STORE_INVALID_HEADER, E.STORE_INVALID_EVENT, E.STORE_DUPLICATE_SESSION),
        "Create a live session, optionally with a seed log (protocol.md §4)."),
    "sessionStore/append": Method(
        AppendParams, AppendResult,
        (E.STORE_INVALID_EVENT, E.STORE_SESSION_NOT_FOUND),
        "Append events to a live session, atomically (protocol.md §4)."),
    "sessionStore/remove": Method(
        SessionIdParams, EmptyResult,
        (E.INVALID_REQUEST, E.STORE_SESSION_NOT_FOUND, E.STORE_PERSISTENCE_FAILED),
        "Drop a live session after flushing its pending events (protocol.md §4)."),
    "sessionStore/checkpoint": Method(
        CheckpointParams, CheckpointResult,
        (E.INVALID_REQUEST, E.STORE_SESSION_NOT_FOUND, E.STORE_READ_ONLY,
         E.STORE_PERSISTENCE_FAILED),
        "Write every not-yet-persisted live event to the mounted backend now (protocol.md §4)."),
    "sessionPersistence/mount": Method(
        MountParams, MountResult, (E.INVALID_CONFIG, E.PERSISTENCE_FAILED),
        "Mount a backend by URI, replacing any mounted one (protocol.md §5)."),
    "sessionPersistence/unmount": Method(
        NoParams, EmptyResult, (), "Unmount the backend (protocol.md §5)."),
    "sessionPersistence/status": Method(
        NoParams, StatusResult, (), "The binding and the live events not yet persisted."),
}  # fmt: skip

NOTIFICATIONS: dict[str, tuple[object, str]] = {
    "sessionQuery/didChange": (
        DidChangeParams,
        "Server to client, at most one per 250 ms, after live changes and mount changes.",
    ),
}
