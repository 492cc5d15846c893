"""The logical log (persistence.md §2.1 ``inspect``): a stored valid prefix after legacy
normalization, followed by the closers; whole (``verified_log``), as a window of a log verified
before (``LogShape``, ``logical_window``), or verified while it streams past (``StreamedLog``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...model.event import Event
from ...values import MAX_SAFE_INTEGER, is_nonneg_safe_integer
from .closers import StreamedTurn, closers
from .legacy import LEGACY_TYPES, NeedsHistory, Normalizer, StaleShape

TITLE = "session/title"


@dataclass(frozen=True, slots=True)
class LogShape:
    """What a window read needs to know about the rest of a verified log: how many events the
    stored valid prefix holds, the closers after it, and the message ids that legacy replace
    lookups found (rewrite 4 of §3.4 is the one rewrite that looks at earlier events), and
    where the last ``session/title`` event is, so a title read needs one event, not the log.

    It is small by construction (closers are a handful of events; ``resolved_ids`` is empty for
    current-form logs), so backends may keep one per session in memory."""

    stored: int
    closers: tuple[Event, ...]
    resolved_ids: dict[Any, Any] = field(default_factory=dict[Any, Any])
    title: int | None = None

    @property
    def length(self) -> int:
        return self.stored + len(self.closers)


def verified_log(session_id: str, events: list[Event]) -> tuple[list[Event], LogShape]:
    """The logical log of a stored valid prefix (normalized, plus closers) and its shape."""
    normalizer = Normalizer(session_id)
    normalized = normalizer.run(events)
    tail = closers(normalized)
    title = next(
        (i for i in range(len(normalized) - 1, -1, -1) if normalized[i].type == TITLE), None
    )
    return normalized + tail, LogShape(len(events), tuple(tail), normalizer.resolved, title)


def logical_log(session_id: str, events: list[Event]) -> list[Event]:
    """What ``inspect`` returns after storage decoding: normalized prefix plus closers."""
    return verified_log(session_id, events)[0]


def stored_span(shape: LogShape, first: int, last: int) -> tuple[int, int]:
    """The stored seqs ``[lo, hi]`` a window ``[first, last]`` (first >= 0) needs; lo > hi when
    the window holds no stored event."""
    return first, min(last, shape.stored - 1)


_INT_ONLY = frozenset({int})


def _covers(stored: list[Event], lo: int) -> bool:
    """Event ``i`` of ``stored`` has seq ``lo + i``: compared in C when every seq is an int (a
    window holds up to thousands), else one by one (integral floats count, bools do not)."""
    seqs = [e.seq for e in stored]
    if set(map(type, seqs)) <= _INT_ONLY:
        in_range = not seqs or 0 <= lo and lo + len(seqs) - 1 <= MAX_SAFE_INTEGER
        return in_range and seqs == list(range(lo, lo + len(seqs)))
    return all(is_nonneg_safe_integer(seq) and seq == lo + i for i, seq in enumerate(seqs))


def logical_window(
    session_id: str, shape: LogShape, stored: list[Event], first: int, last: int
) -> list[Event]:
    """Logical events ``first..last`` (clipped to the log), from the stored events of
    ``stored_span`` exactly. Raises StaleShape when ``stored`` is not that span."""
    lo, hi = stored_span(shape, first, last)
    expected = max(0, hi - lo + 1)
    if len(stored) != expected or not _covers(stored, lo):
        raise StaleShape(f"stored events do not cover seqs {lo}..{hi}")
    window = Normalizer(session_id, shape.resolved_ids).run(stored)
    end = min(last, shape.length - 1)
    if end >= shape.stored:
        window.extend(
            shape.closers[max(first, shape.stored) - shape.stored : end - shape.stored + 1]
        )
    return window


class StreamedLog:
    """``verified_log`` for a stored valid prefix fed one event at a time (``append``/``extend``,
    in seq order), keeping only the logical events ``first..last`` and what a LogShape needs.

    The storage pass that feeds it must finish before a normalization error counts (``inspect``
    decodes the whole prefix before it normalizes, so a storage error later in the log wins):
    the first such error is held and raised by ``finish``. A legacy replace lookup raises
    NeedsHistory at once; the caller then verifies with the whole log."""

    def __init__(self, session_id: str, first: int, last: int) -> None:
        self.count = 0
        self._normalizer = Normalizer(session_id, streaming=True)
        self._turn = StreamedTurn()
        self._first = first
        self._last = last
        self._last_event: Event | None = None
        self._error: Exception | None = None
        self._window: list[Event] = []
        self._title: int | None = None

    def append(self, event: Event) -> None:
        index = self.count
        self.count = index + 1
        if self._error is not None:
            return
        try:
            if event.type in LEGACY_TYPES:
                event = self._normalizer.rewrite(event)
        except NeedsHistory:
            raise
        except Exception as exc:  # noqa: BLE001 - held until the storage pass is done (see above)
            self._error = exc
            return
        self._turn.observe(event)
        self._last_event = event
        if event.type == TITLE:
            self._title = index
        if self._first <= index <= self._last:
            self._window.append(event)

    def extend(self, events: list[Event]) -> None:
        """``append`` of each event in turn; current-form events take an inlined path (a long
        log streams ~100,000 of them through here)."""
        if self._error is not None:
            self.count += len(events)
            return
        observe, window = self._turn.observe, self._window
        first, last = self._first, self._last
        index, title, last_event = self.count, self._title, self._last_event
        for position, event in enumerate(events):
            kind = event.type
            if type(kind) is not str or kind in LEGACY_TYPES:
                self.count, self._title, self._last_event = index, title, last_event
                self.append(event)
                if self._error is not None:
                    self.count += len(events) - position - 1
                    return
                index, title, last_event = self.count, self._title, self._last_event
                continue
            observe(event)
            last_event = event
            if kind == TITLE:
                title = index
            if first <= index <= last:
                window.append(event)
            index += 1
        self.count, self._title, self._last_event = index, title, last_event

    def finish(self) -> tuple[list[Event], LogShape]:
        """The logical events ``first..last`` (clipped) and the log's shape."""
        if self._error is not None:
            raise self._error
        tail = [] if self._last_event is None else self._turn.closers(self._last_event)
        window = self._window
        for index, closer in enumerate(tail, self.count):
            if self._first <= index <= self._last:
                window.append(closer)
        return window, LogShape(self.count, tuple(tail), self._normalizer.resolved, self._title)
