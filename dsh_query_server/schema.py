"""The JSON Schema of the wire protocol: every method's params, result and error data.

Built from the msgspec structs the server encodes (model/wire.py, search/wire.py, the tree's
TreeNode) and the method table (server/methods.py). Three things the structs cannot say are added
here, each checked against the structs when the schema is built:

- what a ``msgspec.Raw`` field holds (a header, an event, lineage nodes: ``RAW_FIELDS``);
- the type the spec promises for a field the struct passes through untyped (``FIELD_TYPES``);
- the params of each method (the handlers take plain JSON and validate it themselves, with the
  error precedence of semantics.md §3.12) and the codes each method can answer (``METHODS``).

``python -m dsh_query_server.schema`` (``dsh-query schema``) prints it; the extension's
protocol types and docs/reference.md are generated from it (dsh_query_server/devtools/).
"""

from __future__ import annotations

import enum
import json
import sys
import typing
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from . import errors
from .errors import QueryError
from .model import wire
from .model.filters import (
    EventFilter,
    SeqFilter,
    SessionFilter,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from .search import wire as search_wire
from .server.app import to_rpc_error
from .server.methods import COMMANDS, METHODS
from .server.tree import TreeNode

SCHEMA_VERSION = 1
_REF = "#/$defs/{name}"

# -- named literal sets (enums give the schema, and the TypeScript, a name for each) ------------


class Surface(enum.Enum):
    CURRENT = "current"
    SHADOWED = "shadowed"
    LOG_ONLY = "log-only"


class Availability(enum.Enum):
    LIVE = "live"
    PERSISTED = "persisted"


class Collapsible(enum.Enum):
    NONE = "none"
    COLLAPSED = "collapsed"
    EXPANDED = "expanded"


class ServerView(enum.Enum):
    SESSIONS = "sessions"
    LINEAGE = "lineage"
    EVENTS = "events"
    EVENT_TRACE = "eventTrace"


class TitleStatus(enum.Enum):
    FULFILLED = "fulfilled"
    REJECTED = "rejected"


def _codes() -> list[str]:
    names = sorted(n for n in vars(errors) if n.isupper())
    values = [vars(errors)[n] for n in names]
    return sorted({v for v in values if isinstance(v, str) and v.startswith("SESSION_")})


ErrorCode = enum.Enum("ErrorCode", {code: code for code in _codes()})

# -- documents that travel as msgspec.Raw (semantics.md §1.2, §1.3, §1.8) ------------------------


class Doc(msgspec.Struct, omit_defaults=True, kw_only=True):
    pass


class SessionHeader(Doc):
    """semantics.md §1.2; unknown extra keys are kept and returned unchanged."""

    version: int
    id: str
    createdAt: int
    cwd: str | UnsetType = UNSET
    parentSession: str | UnsetType = UNSET
    seedLength: int | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegationDepth: int | UnsetType = UNSET
    agentPreset: str | UnsetType = UNSET


class SurfaceReplace(Doc):
    op: Literal["replace"]
    start: int
    end: int


class SessionEvent(Doc):
    """semantics.md §1.3; ``data`` is any JSON value, ``null`` included."""

    type: str
    seq: int
    time: int
    data: Any
    surfaceOp: Literal["append"] | SurfaceReplace | UnsetType = UNSET
    sourceEventSeqs: list[int] | UnsetType = UNSET
    ignorable: Literal[True] | UnsetType = UNSET


class SessionLineageNode(Doc):
    session: wire.SessionRecord
    descendants: list[SessionLineageNode]


class FallbackTitleSource(Doc, tag_field="kind", tag="fallback"):
    pass


class UserTitleSource(Doc, tag_field="kind", tag="user"):
    pass


class ProviderTitleSource(Doc, tag_field="kind", tag="provider"):
    provider: str
    model: dict[str, Any] | UnsetType = UNSET


TitleSource = FallbackTitleSource | UserTitleSource | ProviderTitleSource

# Unions the schema names (each inline occurrence becomes a $ref), so clients can name them too.
NAMED_UNIONS: dict[str, object] = {
    "SessionFilter": SessionFilter,
    "EventFilter": EventFilter,
    "TitleSource": TitleSource,
}

# Open objects: unknown keys are part of the value (semantics.md §1.2, §1.3).
OPEN_OBJECTS = frozenset({"SessionHeader", "SessionEvent"})

# (struct, field) -> what the Raw bytes of that field hold.
RAW_FIELDS: dict[tuple[str, str], object] = {
    ("SessionRecord", "header"): SessionHeader,
    ("SessionSearchHit", "header"): SessionHeader,
    ("SessionLogSnapshot", "session"): SessionHeader,
    ("SessionLogSnapshot", "events"): list[SessionEvent],
    ("SessionSurfaceSnapshot", "session"): SessionHeader,
    ("SessionSurfaceSnapshot", "events"): list[SessionEvent],
    ("SessionEventWindow", "session"): SessionHeader,
    ("SessionEventWindow", "target"): SessionEvent,
    ("SessionEventWindow", "events"): list[SessionEvent],
    ("SessionEventTraceObservation", "session"): SessionHeader,
    ("SessionLineageTrace", "descendants"): list[SessionLineageNode],
    ("SessionTitleObservation", "session"): SessionHeader,
    ("SessionEventSearchPage", "session"): SessionHeader,
}

_RECORD_TYPES: dict[str, object] = {"type": str, "time": int, "surface": Surface}
# (struct, field) -> the type the spec promises where the struct says Any or str.
FIELD_TYPES: dict[tuple[str, str], object] = {
    **{
        (s, f): t
        for s in ("SessionEventRecord", "SessionEventSearchDocument", "SessionEventSearchHit")
        for f, t in _RECORD_TYPES.items()
    },
    ("SessionEventTraceObservation", "sourceEventSeqs"): list[int],
    ("SessionTitleSnapshot", "title"): str,
    ("SessionTitleSnapshot", "messageSeqs"): list[int],
    ("SessionTitleSnapshot", "source"): TitleSource,
    ("SessionTitleSnapshot", "eventSeq"): int,
    ("SessionTitleSnapshot", "updatedAt"): int,
    ("SessionTitleObservationResult", "status"): TitleStatus,
    ("RejectionReason", "code"): ErrorCode,
    ("ErrorData", "code"): ErrorCode,
    ("TreeNode", "collapsible"): Collapsible,
    ("IdFilter", "values"): list[str],
    ("CwdFilter", "values"): list[str | None],
    ("ParentFilter", "values"): list[str | None],
    ("AvailabilityFilter", "values"): list[Availability],
    ("TypeFilter", "values"): list[str],
    ("SurfaceFilter", "values"): list[Surface],
}

# -- params and the small results the handlers build as dicts (protocol.md §3–§6) -----------------


class Params(msgspec.Struct, omit_defaults=True, kw_only=True):
    pass


class NoParams(Params):
    pass


class SessionIdParams(Params):
    sessionId: str


class FilterSessionsParams(Params):
    filters: list[SessionFilter]


class FilterEventsParams(Params):
    sessionId: str
    filters: list[EventFilter]


class ReadEventParams(Params):
    """``seq`` is any number: one that names no event is EVENT_NOT_FOUND (semantics.md §3.0.2)."""

    sessionId: str
    seq: float
    before: int | UnsetType = UNSET
    after: int | UnsetType = UNSET


class ReadTitlesParams(Params):
    sessionIds: list[str]


class TraceEventParams(Params):
    sessionId: str
    seq: float


SearchEventFilter = SeqFilter | TimeFilter | TypeFilter | SurfaceFilter
NAMED_UNIONS["SearchEventFilter"] = SearchEventFilter


class SessionSearchRequest(Params):
    query: str
    sessionFilters: list[SessionFilter] | UnsetType = UNSET
    eventFilters: list[SearchEventFilter] | UnsetType = UNSET
    limit: int | UnsetType = UNSET
    cursor: str | UnsetType = UNSET


class SessionEventSearchRequest(Params):
    sessionId: str
    query: str
    filters: list[SearchEventFilter] | UnsetType = UNSET
    limit: int | UnsetType = UNSET
    cursor: str | UnsetType = UNSET


class TreeArgs(Params):
    sessionId: str | UnsetType = UNSET
    seq: int | UnsetType = UNSET


class TreeChildrenParams(Params):
    view: ServerView
    nodeId: str | UnsetType = UNSET
    args: TreeArgs | UnsetType = UNSET


class TreeParentParams(Params):
    view: ServerView
    nodeId: str


class TreeChildrenResult(Params):
    nodes: list[TreeNode]


class TreeParentResult(Params):
    nodeId: str | UnsetType = UNSET


class CreateParams(Params):
    header: SessionHeader
    seed: list[SessionEvent] | UnsetType = UNSET


class CreateResult(Params):
    header: SessionHeader


class AppendEvent(Params):
    """The server assigns ``seq``, and ``time`` (now, epoch ms) when it is absent."""

    type: str
    data: Any
    time: int | UnsetType = UNSET
    surfaceOp: Literal["append"] | SurfaceReplace | UnsetType = UNSET
    sourceEventSeqs: list[int] | UnsetType = UNSET


class AppendParams(Params):
    sessionId: str
    events: list[AppendEvent]


class AppendResult(Params):
    firstSeq: int
    lastSeq: int


class EmptyResult(Params):
    pass


class CheckpointParams(Params):
    sessionId: str | UnsetType = UNSET


class CheckpointResult(Params):
    """Per targeted live session with events: the last seq the backend now holds."""

    flushed: dict[str, int]


class MountParams(Params):
    uri: str


class MountResult(Params):
    uri: str
    writable: bool


class StatusResult(Params):
    uri: str | None
    writable: bool
    pendingEvents: int


class DidChangeParams(Params):
    sessionIds: list[str] | UnsetType = UNSET
    corpus: Literal[True] | UnsetType = UNSET


class ErrorData(Params):
    """``data`` of every coded JSON-RPC error (protocol.md §2)."""

    code: str  # one of ErrorCode (FIELD_TYPES)
    sessionId: str | UnsetType = UNSET
    seq: float | UnsetType = UNSET
    cause: str | UnsetType = UNSET


# -- the methods ----------------------------------------------------------------------------------

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
        SessionIdParams, wire.SessionSurfaceSnapshot,
        (E.INVALID_REQUEST, E.ABORTED, *_LOAD, E.INVALID_SURFACE),
        "The current surface in model-history order (semantics.md §3.6)."),
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


def rpc_code(code: str) -> int:
    """The JSON-RPC error number the server answers a coded failure with."""
    return to_rpc_error(QueryError(code, "")).code


def _walk_structs(tp: object, out: dict[str, type[msgspec.Struct]]) -> None:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if tp.__name__ in out:
            if out[tp.__name__] is not tp:
                raise ValueError(f"two structs are named {tp.__name__}")
            return
        out[tp.__name__] = tp
        for field in msgspec.structs.fields(tp):
            _walk_structs(field.type, out)
        return
    for arg in typing.get_args(tp):
        _walk_structs(arg, out)


def _holds_raw(tp: object) -> bool:
    return tp is Raw or any(_holds_raw(a) for a in typing.get_args(tp))


def _wire_name(cls: type[msgspec.Struct], name: str) -> str:
    fields = {f.name: f.encode_name for f in msgspec.structs.fields(cls)}
    if name not in fields:
        raise ValueError(f"{cls.__name__} has no field {name}")
    return fields[name]


def _name_unions(node: Any, named: dict[str, Any]) -> Any:
    for name, union in named.items():
        if node == union:
            return {"$ref": _REF.format(name=name)}
    if isinstance(node, dict):
        return {k: _name_unions(v, named) for k, v in node.items()}  # pyright: ignore
    if isinstance(node, list):
        return [_name_unions(v, named) for v in node]  # pyright: ignore
    return node


def build() -> dict[str, Any]:
    """The whole schema document (a JSON value)."""
    if set(METHOD_SHAPES) != set(METHODS):
        missing = sorted(set(METHODS) ^ set(METHOD_SHAPES))
        raise ValueError(f"schema and method table disagree on: {', '.join(missing)}")
    roots: list[object] = [ErrorData]
    for method in METHOD_SHAPES.values():
        roots += [method.params, method.result]
    roots += [params for params, _ in NOTIFICATIONS.values()]
    structs: dict[str, type[msgspec.Struct]] = {}
    for root in roots:
        _walk_structs(root, structs)
    patches = {**RAW_FIELDS, **FIELD_TYPES}
    for (struct, field), tp in patches.items():
        if struct not in structs:
            raise ValueError(f"a field type names {struct}, which no method uses")
        _wire_name(structs[struct], field)
        _walk_structs(tp, structs)
    for name, cls in structs.items():
        for field in msgspec.structs.fields(cls):
            if _holds_raw(field.type) and (name, field.name) not in RAW_FIELDS:
                raise ValueError(f"{name}.{field.name} is Raw: say what it holds in RAW_FIELDS")
    patch_types = list(patches.values())
    unions = list(NAMED_UNIONS.values())
    schemas, defs = msgspec.json.schema_components(
        roots + patch_types + unions, ref_template=_REF
    )
    named = dict(zip(NAMED_UNIONS, schemas[len(roots) + len(patch_types) :], strict=True))
    schemas = schemas[: len(roots) + len(patch_types)]
    for ((struct, field), _), schema in zip(patches.items(), schemas[len(roots) :], strict=True):
        props = defs[struct]["properties"]
        props[_wire_name(structs[struct], field)] = schema
    for name in OPEN_OBJECTS:
        defs[name]["additionalProperties"] = True
    for name, definition in defs.items():
        definition.pop("title", None)
        doc = structs[name].__doc__ if name in structs else None
        if doc and not doc.startswith(name + "("):  # msgspec's generated signature is no prose
            definition["description"] = " ".join(doc.split())
    schemas = [_name_unions(x, named) for x in schemas]
    defs = {name: _name_unions(x, named) for name, x in defs.items()}
    defs.update(named)
    methods: dict[str, Any] = {}
    it = iter(schemas[: len(roots)])
    error_data = next(it)
    for name, method in METHOD_SHAPES.items():
        codes = [*dict.fromkeys(method.errors), E.INTERNAL]
        methods[name] = {
            "summary": method.summary,
            "params": next(it),
            "result": next(it),
            "errors": [{"code": c, "rpcCode": rpc_code(c)} for c in codes],
        }
    notifications = {
        name: {"summary": summary, "params": next(it)}
        for name, (_, summary) in NOTIFICATIONS.items()
    }
    commands = {
        command: {"method": next(m for m, call in METHODS.items() if call is target)}
        for command, target in COMMANDS.items()
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "dsh-query-server JSON-RPC protocol",
        "version": SCHEMA_VERSION,
        "methods": methods,
        "notifications": notifications,
        "commands": commands,
        "errorData": error_data,
        "errorCodes": {code: rpc_code(code) for code in _codes()},
        "$defs": dict(sorted(defs.items())),
    }


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the schema as JSON (``dsh-query schema``)."""
    args = sys.argv[1:] if argv is None else argv
    if args:
        print("usage: dsh-query schema  (prints the protocol's JSON Schema)", file=sys.stderr)
        return 2
    sys.stdout.write(dumps(build()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
