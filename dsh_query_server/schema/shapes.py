"""The shapes the schema adds to the wire structs (docs/semantics.md §1.2, §1.3, §1.8; protocol.md).

Documents that travel as ``msgspec.Raw``, the types the spec promises for fields the structs pass
through untyped, and the params and small results the handlers take and build as plain JSON.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from .. import errors
from ..model import wire
from ..model.filters import (
    EventFilter,
    SeqFilter,
    SessionFilter,
    SurfaceFilter,
    TimeFilter,
    TypeFilter,
)
from ..server.tree.nodes import TreeNode

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


class SurfaceType(enum.Enum):
    USER_MESSAGE = "user/message"
    ASSISTANT_MESSAGE = "assistant/message"
    TOOL_RESULT = "tool/result"


class ReplacementKind(enum.Enum):
    COMPACTION = "compaction"
    TOOL_RESULT_REWRITE = "tool-result-rewrite"


class TitleStatus(enum.Enum):
    FULFILLED = "fulfilled"
    REJECTED = "rejected"


def codes() -> list[str]:
    names = sorted(n for n in vars(errors) if n.isupper())
    values = [vars(errors)[n] for n in names]
    return sorted({v for v in values if isinstance(v, str) and v.startswith("SESSION_")})


ErrorCode = enum.Enum("ErrorCode", {code: code for code in codes()})

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
    ("SessionTimeline", "session"): SessionHeader,
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
    ("TimelineStep", "time"): int,
    ("TimelineReplacement", "time"): int,
    ("TimelineReplacement", "type"): SurfaceType,
    ("TimelineReplacement", "kind"): ReplacementKind,
    ("SessionTitleSnapshot", "title"): str,
    ("SessionTitleSnapshot", "messageSeqs"): list[int],
    ("SessionTitleSnapshot", "source"): TitleSource,
    ("SessionTitleSnapshot", "eventSeq"): int,
    ("SessionTitleSnapshot", "updatedAt"): int,
    ("SessionTitleObservationResult", "status"): TitleStatus,
    ("RejectionReason", "code"): ErrorCode,
    ("ErrorData", "code"): ErrorCode,
    ("TreeNode", "collapsible"): Collapsible,
    ("TreeNode", "surface"): Surface,
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


class ReadSurfaceParams(Params):
    """``throughSeq``: the surface after events 0..throughSeq (views.md §1); absent or null:
    the current surface."""

    sessionId: str
    throughSeq: int | None | UnsetType = UNSET


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


class TreeGrouping(enum.Enum):
    NONE = "none"
    AGENT = "agent"
    WORKSPACE = "workspace"


class TreeArgs(Params):
    sessionId: str | UnsetType = UNSET
    seq: int | UnsetType = UNSET
    groupBy: TreeGrouping | UnsetType = UNSET  # sessions view roots only (server/tree/groups.py)


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
    """``"auto"``, one URI, or an array of 1-8 distinct URIs mounted as one (importers.md §4.3)."""

    uri: str | list[str]


class PersistenceMember(Params):
    uri: str
    writable: bool


class MountResult(Params):
    """``uri`` echoes what was mounted; ``members`` lists the mounted backends in order."""

    uri: str | list[str]
    writable: bool
    members: list[PersistenceMember]


class StatusResult(Params):
    uri: str | list[str] | None
    writable: bool
    pendingEvents: int
    members: list[PersistenceMember]


class DidChangeParams(Params):
    sessionIds: list[str] | UnsetType = UNSET
    corpus: Literal[True] | UnsetType = UNSET


class ErrorData(Params):
    """``data`` of every coded JSON-RPC error (protocol.md §2)."""

    code: str  # one of ErrorCode (FIELD_TYPES)
    sessionId: str | UnsetType = UNSET
    seq: float | UnsetType = UNSET
    cause: str | UnsetType = UNSET
