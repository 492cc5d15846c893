"""What the model saw (views.md §1, §2): the surface at a past point and the context timeline.

Both work on a log whose whole fold is already known and valid (semantics.md §2.1), so they re-apply
the fold's own steps without validating again: every surface-type event of a valid log is either
an append or one of ``fold.replacements``. The timeline keeps the size of the surface as it goes
(a running count and a running sum of text lengths, each event's length kept until a replacement
takes it off), so the surface before every step is known without folding any prefix again: one
pass, one text extraction per surface-type event.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Any

from msgspec import Raw

from ..model.event import SURFACE_TYPES, Event, Header
from ..model.text import text_of
from ..model.timeline import (
    SessionTimeline,
    ShadowedSpan,
    SurfaceSize,
    TimelinePeak,
    TimelineReplacement,
    TimelineStep,
)
from ..progress import NULL_TRACKER, Tracker
from ..session.fold import Fold
from ..values import is_nonneg_safe_integer
from .usage import StepData, rule_for

CHART_STEP = 4095  # events between two counts of the timeline's pass (a mask: 4,096)


def surface_through(events: Sequence[Event], fold: Fold, through: int) -> list[int]:
    """``fold(events[0 .. through]).nodes`` (views.md §1), ``fold`` being the whole log's."""
    nodes: list[int] = []
    replacement_of = fold.replacement_of
    for seq, event in enumerate(islice(events, through + 1)):
        if event.type not in SURFACE_TYPES:
            continue
        rep = replacement_of.get(seq)
        if rep is None:
            nodes.append(seq)
        else:
            p = nodes.index(rep.shadowed_seqs[0])
            nodes[p : p + len(rep.shadowed_seqs)] = [seq]
    return nodes


def size(events: int, chars: int) -> SurfaceSize:
    return SurfaceSize(events=events, chars=chars, approxTokens=-(-chars // 4))


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _count(value: Any) -> int | None:
    return int(value) if is_nonneg_safe_integer(value) else None


def _model(data: Any) -> str | None:
    model = _get(_get(_get(data, "message"), "source"), "model")
    return model if isinstance(model, str) else None


def build_timeline(
    session: Raw,
    header: Header,
    events: Sequence[Event],
    fold: Fold,
    progress: Tracker = NULL_TRACKER,
) -> SessionTimeline:
    """views.md §2 from one observation: ``session`` is the header's JSON as loaded. The
    request's ``progress`` is told ``charting 4,096 of 150,000 events`` as the events are gone
    through: every surface event's text makes this longer than the fold, and on a long log than
    its read (protocol.md §8 "After a read")."""
    total = len(events)
    replacement_of = fold.replacement_of
    length_of: dict[int, int] = {}  # text length of every event now on the surface
    count = chars = 0
    context_window: int | None = None
    steps: list[StepData] = []
    before_steps: list[SurfaceSize] = []
    replacements: list[TimelineReplacement] = []
    for seq, event in enumerate(events):
        if not seq & CHART_STEP:
            progress.report(f"charting {seq:,} of {total:,} events")
        etype = event.type
        if etype not in SURFACE_TYPES:
            if etype == "request/context":
                window = _count(_get(event.data(), "contextWindow"))
                if window is not None:
                    context_window = window
            continue
        data = event.data()
        length = len(text_of(etype, data))
        if etype == "assistant/message":
            steps.append(StepData(seq, event, data))
            before_steps.append(size(count, chars))
            window = _count(_get(data, "contextWindow"))  # Qwen Code's, importers.md §10.5
            if window is not None:
                context_window = window
        rep = replacement_of.get(seq)
        if rep is None:
            count += 1
            chars += length
        else:
            before = size(count, chars)
            shadowed = rep.shadowed_seqs
            chars += length - sum(length_of.pop(s) for s in shadowed)
            count += 1 - len(shadowed)
            replacements.append(
                TimelineReplacement(
                    seq=seq,
                    time=event.time,
                    type=etype,
                    kind="tool-result-rewrite" if etype == "tool/result" else "compaction",
                    shadowed=ShadowedSpan(
                        count=len(shadowed), firstSeq=shadowed[0], lastSeq=shadowed[-1]
                    ),
                    before=before,
                    after=size(count, chars),
                )
            )
        length_of[seq] = length
    recorded = rule_for(header)(events, steps)
    timeline_steps = [
        TimelineStep(
            seq=step.seq,
            time=step.event.time,
            turn=_count(_get(step.data, "turn")),
            step=_count(_get(step.data, "step")),
            model=_model(step.data),
            surface=surface,
            recorded=usage,
        )
        for step, surface, usage in zip(steps, before_steps, recorded, strict=True)
    ]
    return SessionTimeline(
        session=session,
        capturedThroughSeq=len(events) - 1 if len(events) else None,
        contextWindow=context_window,
        steps=timeline_steps,
        replacements=replacements,
        peak=_peak(timeline_steps),
    )


def _peak(steps: list[TimelineStep]) -> TimelinePeak | None:
    best: TimelineStep | None = None
    for step in steps:
        if best is None or step.surface.approxTokens > best.surface.approxTokens:
            best = step
    if best is None:
        return None
    context = best.recorded.context if best.recorded is not None else None
    return TimelinePeak(
        seq=best.seq, approxTokens=best.surface.approxTokens, recordedContext=context
    )
