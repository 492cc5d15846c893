"""Result shapes on the wire (semantics.md §1.8). Field names are the wire's camelCase names.

Headers and events travel as ``msgspec.Raw``: the exact JSON they were read or built from, so a
result is encoded without re-serializing payloads, and it is detached from the store by
construction (bytes are immutable). Absent optional keys are UNSET and omitted.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .event import Event, Header


class Wire(msgspec.Struct, omit_defaults=True, gc=False):
    """Results are trees built fresh for one response (no reference cycles), so the garbage
    collector need not track them: a 100,000-event listing would otherwise trigger full
    collections over the whole heap."""


def raw(item: Event | Header) -> Raw:
    return Raw(item.raw)


class SessionRecord(Wire):
    header: Raw
    live: bool
    persisted: bool


class SessionEventRecord(Wire):
    sessionId: str
    seq: int
    type: Any
    time: Any
    surface: str


class SessionEventSearchDocument(Wire):
    sessionId: str
    seq: int
    type: Any
    time: Any
    surface: str
    text: str


class SessionLogSnapshot(Wire):
    session: Raw
    events: list[Raw]


class SessionSurfaceSnapshot(Wire):
    session: Raw
    capturedThroughSeq: int | None
    events: list[Raw]


class SessionEventWindow(Wire):
    session: Raw
    target: Raw
    events: list[Raw]
    startSeq: int
    endSeq: int


class SessionEventTraceObservation(Wire):
    target: SessionEventRecord
    replacementChain: list[int]
    replacedEventSeqs: list[int]
    sourceEventSeqs: list[Any]
    derivedEventSeqs: list[int]
    session: Raw
    replacedBy: int | UnsetType = UNSET


class SessionLineageTrace(Wire):
    target: SessionRecord
    ancestors: list[SessionRecord]
    descendants: Raw  # SessionLineageNode[], encoded iteratively (chains can be thousands deep)
    complete: bool
    root: SessionRecord | UnsetType = UNSET
    unresolvedParentId: str | UnsetType = UNSET


class SessionTitleSnapshot(Wire):
    title: Any
    messageSeqs: Any
    source: Any
    eventSeq: Any
    updatedAt: Any


class SessionTitleObservation(Wire):
    session: Raw
    title: SessionTitleSnapshot | UnsetType = UNSET


class RejectionReason(Wire):
    code: str
    message: str
    cause: str | UnsetType = UNSET


class SessionTitleObservationResult(Wire):
    sessionId: str
    status: str
    value: SessionTitleObservation | UnsetType = UNSET
    reason: RejectionReason | UnsetType = UNSET
