"""The result shape of ``sessionQuery/readSessionView`` (views.md §3.2 [ours]), in the style of
wire.py: what the session view reads, from one load of the session."""

from __future__ import annotations

from msgspec import UNSET, Raw, UnsetType

from .timeline import SessionTimeline
from .wire import SessionEventRecord, SessionTitleObservationResult, Wire


class SessionView(Wire):
    """``readTimeline``'s, ``listEvents``' and ``readTitle``'s answers (the title as a
    ``readTitles`` entry: a malformed title is its rejection, not the view's), and with
    ``log: true`` ``readSession``'s events."""

    timeline: SessionTimeline
    events: list[SessionEventRecord]
    title: SessionTitleObservationResult
    log: list[Raw] | UnsetType = UNSET
