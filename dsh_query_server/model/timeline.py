"""The result shapes of ``sessionQuery/readTimeline`` (views.md §2), in the style of wire.py.

Fields that views.md says may be ``null`` are typed ``int | None`` without a default, so msgspec
always writes them (``null`` is an answer: "not recorded", never 0).
"""

from __future__ import annotations

from typing import Any

from msgspec import Raw

from .wire import Wire


class SurfaceSize(Wire):
    """A surface measured (views.md §2): its events, the code points of their text
    (semantics.md §6.4) and ``ceil(chars / 4)``, an estimate every view labels "≈ tokens"."""

    events: int
    chars: int
    approxTokens: int


class RecordedUsage(Wire):
    """The usage the agent recorded for one response, normalised (views.md §2); a field the
    source does not record is null. ``context`` is the whole prompt as the provider counted it."""

    input: int | None
    cacheRead: int | None
    cacheWrite: int | None
    output: int | None
    reasoning: int | None
    context: int | None


class TimelineStep(Wire):
    """One model response: the ``assistant/message`` at ``seq``, and the surface before it."""

    seq: int
    time: Any
    turn: int | None
    step: int | None
    model: str | None
    surface: SurfaceSize
    recorded: RecordedUsage | None


class ShadowedSpan(Wire):
    """What a replacement shadowed: how many events, the first and last in surface order."""

    count: int
    firstSeq: int
    lastSeq: int


class TimelineReplacement(Wire):
    """One ``replace`` surface op: ``before`` is the surface through ``seq - 1``, ``after``
    through ``seq``."""

    seq: int
    time: Any
    type: str
    kind: str
    shadowed: ShadowedSpan
    before: SurfaceSize
    after: SurfaceSize


class TimelinePeak(Wire):
    """The step with the largest ``approxTokens`` (the earliest on a tie)."""

    seq: int
    approxTokens: int
    recordedContext: int | None


class SessionTimeline(Wire):
    session: Raw
    capturedThroughSeq: int | None
    contextWindow: int | None
    steps: list[TimelineStep]
    replacements: list[TimelineReplacement]
    peak: TimelinePeak | None
