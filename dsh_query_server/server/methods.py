"""The method table: each JSON-RPC method is one call on the runtime (protocol.md §3–§5, §7).

A call receives the params object as plain JSON values and the request's cancellation token; the
service validates every field itself, so error precedence lives in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from .. import errors
from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..errors import QueryError
from ..export.archive import export_method
from ..export.params import export_options
from .tree import commands, tree_children, tree_parent

Call = Callable[[Runtime, dict[str, Any], CancelToken], Any]


def _create(rt: Runtime, p: dict[str, Any], t: CancelToken) -> Any:
    seed = p.get("seed", None)
    header = rt.store.create(p.get("header"), seed)
    return {"header": header.to_value()}


def _append(rt: Runtime, p: dict[str, Any], t: CancelToken) -> Any:
    session_id = p.get("sessionId")
    if not isinstance(session_id, str):
        raise QueryError(errors.STORE_INVALID_EVENT, "sessionId must be a string")
    events: Any = p.get("events")  # any JSON value: the store validates it
    first, last = rt.store.append(session_id, events)
    return {"firstSeq": first, "lastSeq": last}


def _remove(rt: Runtime, p: dict[str, Any], t: CancelToken) -> Any:
    session_id = p.get("sessionId")
    if not isinstance(session_id, str):
        raise QueryError(errors.INVALID_REQUEST, "sessionId must be a string")
    return rt.remove(session_id)


def _checkpoint(rt: Runtime, p: dict[str, Any], t: CancelToken) -> Any:
    session_id = p.get("sessionId")
    if session_id is not None and not isinstance(session_id, str):
        raise QueryError(errors.INVALID_REQUEST, "sessionId must be a string")
    return {"flushed": rt.checkpointer.flush(session_id)}


METHODS: dict[str, Call] = {
    "sessionQuery/listSessions": lambda rt, p, t: rt.service.list_sessions_json(t),
    "sessionQuery/filterSessions": lambda rt, p, t: rt.service.filter_sessions(
        p.get("filters", UNSET), t
    ),
    "sessionQuery/listEvents": lambda rt, p, t: rt.service.list_events(
        p.get("sessionId", UNSET), t
    ),
    "sessionQuery/filterEvents": lambda rt, p, t: rt.service.filter_events(
        p.get("sessionId", UNSET), p.get("filters", UNSET), t
    ),
    "sessionQuery/readEvent": lambda rt, p, t: rt.service.read_event(
        p.get("sessionId", UNSET),
        p.get("seq", UNSET),
        p.get("before", UNSET),
        p.get("after", UNSET),
        t,
    ),
    "sessionQuery/readSurface": lambda rt, p, t: rt.service.read_surface(
        p.get("sessionId", UNSET), t, p.get("throughSeq", UNSET)
    ),
    "sessionQuery/readTimeline": lambda rt, p, t: rt.service.read_timeline(
        p.get("sessionId", UNSET), t
    ),
    "sessionQuery/readSession": lambda rt, p, t: rt.service.read_session(
        p.get("sessionId", UNSET), t
    ),
    "sessionQuery/readTitle": lambda rt, p, t: rt.service.read_title(p.get("sessionId", UNSET), t),
    "sessionQuery/readTitles": lambda rt, p, t: rt.service.read_titles(
        p.get("sessionIds", UNSET), t
    ),
    "sessionQuery/traceSession": lambda rt, p, t: rt.service.trace_session(
        p.get("sessionId", UNSET), t
    ),
    "sessionQuery/traceEvent": lambda rt, p, t: rt.service.trace_event(
        p.get("sessionId", UNSET), p.get("seq", UNSET), t
    ),
    "sessionQuery/searchSessions": lambda rt, p, t: rt.search.search_sessions(p, t),
    "sessionQuery/searchEvents": lambda rt, p, t: rt.search.search_events(p, t),
    "sessionQuery/exportSession": lambda rt, p, t: export_method(
        rt.service, p, t, export_options(rt.config.raw)
    ),
    "sessionQuery/treeChildren": tree_children,
    "sessionQuery/treeParent": tree_parent,
    "sessionStore/create": _create,
    "sessionStore/append": _append,
    "sessionStore/remove": _remove,
    "sessionStore/checkpoint": _checkpoint,
    "sessionPersistence/mount": lambda rt, p, t: rt.mount(p.get("uri", UNSET)),
    "sessionPersistence/unmount": lambda rt, p, t: rt.unmount(),
    "sessionPersistence/status": lambda rt, p, t: rt.status(),
}

# Answered on the event loop, no worker thread: calls that do no I/O and read only counters.
# status takes the live store's lock, which a producer call holds for a whole batch, so it runs
# inline only while no other request is in flight (QueryProtocol._request).
INLINE: frozenset[str] = frozenset({"sessionPersistence/status"})

COMMANDS: dict[str, Call] = {
    commands.SERVER_MOUNT: METHODS["sessionPersistence/mount"],
    commands.SERVER_UNMOUNT: METHODS["sessionPersistence/unmount"],
    commands.SERVER_CHECKPOINT: METHODS["sessionStore/checkpoint"],
    commands.SERVER_STATUS: METHODS["sessionPersistence/status"],
}
