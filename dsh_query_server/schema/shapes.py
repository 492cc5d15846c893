"""What the schema adds to the wire structs (docs/semantics.md §1.2, §1.3, §1.8; protocol.md).

What the documents that travel as ``msgspec.Raw`` hold (model/documents.py), the types the spec
promises for result fields the structs pass through untyped, names for literal sets and unions,
and the shapes that are no method's: the error data and the notification.
"""

from __future__ import annotations

import enum
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from .. import errors
from ..model.documents import SessionEvent, SessionHeader, SessionLineageNode, TitleSource
from ..model.filters import EventFilter, SessionFilter
from ..search.wire import SearchEventFilter

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

# Unions the schema names (each inline occurrence becomes a $ref), so clients can name them too.
NAMED_UNIONS: dict[str, object] = {
    "SessionFilter": SessionFilter,
    "EventFilter": EventFilter,
    "TitleSource": TitleSource,
    "SearchEventFilter": SearchEventFilter,
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
    ("CreateResult", "header"): SessionHeader,
    ("SessionTimeline", "session"): SessionHeader,
    ("SessionView", "log"): list[SessionEvent],
    ("SessionUsage", "session"): SessionHeader,
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
    ("TreeNode", "surface"): Surface,
    ("IdFilter", "values"): list[str],
    ("CwdFilter", "values"): list[str | None],
    ("ParentFilter", "values"): list[str | None],
    ("AvailabilityFilter", "values"): list[Availability],
    ("TypeFilter", "values"): list[str],
    ("SurfaceFilter", "values"): list[Surface],
    ("TimelineStep", "time"): int,
    ("TimelineReplacement", "time"): int,
    ("TimelineReplacement", "type"): SurfaceType,
    ("TimelineReplacement", "kind"): ReplacementKind,
    ("UsageStep", "time"): int,
    ("SkippedSession", "sessionId"): str,
    ("SkippedSession", "code"): ErrorCode,
    ("DescendantUsage", "parentSession"): str,
    ("UsageRow", "key"): str | None,
    ("UsageSummary", "since"): int | None,
    ("UsageSummary", "until"): int | None,
}

# -- shapes that are no method's params or result --------------------------------------------


class DidChangeParams(msgspec.Struct, omit_defaults=True):
    sessionIds: list[str] | UnsetType = UNSET
    corpus: Literal[True] | UnsetType = UNSET


class ErrorData(msgspec.Struct, omit_defaults=True):
    """``data`` of every coded JSON-RPC error (protocol.md §2)."""

    code: str  # one of ErrorCode (FIELD_TYPES)
    sessionId: str | UnsetType = UNSET
    seq: float | UnsetType = UNSET
    cause: str | UnsetType = UNSET


NOTIFICATIONS: dict[str, tuple[object, str]] = {
    "sessionQuery/didChange": (
        DidChangeParams,
        "Server to client, at most one per 250 ms, after live changes and mount changes.",
    ),
}
