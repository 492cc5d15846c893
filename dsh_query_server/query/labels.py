"""What a sidebar label shows of a session: its title, the first user message after its seed and
its length, projected right after each read and never retained."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import QueryError
from ..model.event import Event, Header
from ..persistence.base import Window
from ..values import is_nonneg_safe_integer
from .text import extract_text
from .titlefold import title_from, title_window

LABEL_EVENTS = 64  # events a persisted label reads from the start of the log (and of its seed)


@dataclass(frozen=True, slots=True)
class SessionLabel:
    """The part of a log a label needs."""

    title: str | None
    first_message: str | None
    events: int | None


def _seed(header: Header) -> int:
    return int(header.seed_length) if is_nonneg_safe_integer(header.seed_length) else 0


def _first_text(events: Iterable[Event]) -> str | None:
    for event in events:
        if event.type == "user/message":
            text = extract_text(event)
            if text:
                return text
    return None


def first_user_text(header: Header, events: Sequence[Event]) -> str | None:
    # A forked or sub-agent log starts with its seed (the parent's history), whose first message
    # is the parent's; the first message after the seed is what this session was about.
    seed = _seed(header)
    for start in (seed, 0) if seed else (0,):
        # by index: a live log builds only the events it reads
        text = _first_text(events[index] for index in range(start, len(events)))
        if text:
            return text
    return None


def _title_text(session_id: str, title_event: Event | None) -> str | None:
    try:
        snapshot = title_from(session_id, title_event)
    except QueryError:  # a malformed title event just falls back, like a rejected readTitles entry
        return None
    if snapshot is None or not isinstance(snapshot.title, str):
        return None
    return snapshot.title or None


def project(
    session_id: str, header: Header, events: Sequence[Event], title_event: Event | None
) -> SessionLabel:
    return SessionLabel(
        _title_text(session_id, title_event), first_user_text(header, events), len(events)
    )


def project_windows(session_id: str, read: Callable[[int, int], Window]) -> SessionLabel:
    """The label of a persisted log read window by window (``read(first, last)``): the backend
    verifies the log once per revision and knows where its title is, so a label costs a few
    small windows instead of the whole log. The first message is looked for among the first
    LABEL_EVENTS events after the seed (then of the log), not further."""
    head = read(0, LABEL_EVENTS - 1)
    seed = _seed(head.meta)
    after_seed = (
        head.events[seed:] if seed < LABEL_EVENTS else read(seed, seed + LABEL_EVENTS - 1).events
    )
    first = _first_text(after_seed) or (_first_text(head.events) if seed else None)
    found = None if head.title is None else title_window(read, head.title)
    title_event = None if found is None else found.events[0]
    return SessionLabel(_title_text(session_id, title_event), first, head.length)
