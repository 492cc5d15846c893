"""What one read of a session observed (semantics.md §3.0.4, §3.0.5), and the errors that name a
session or an event of it. Lineage and traces work on these; the loader makes them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError, cancelled
from ..model import wire
from ..model.event import Event, Header
from ..progress import NULL_TRACKER, Tracker
from ..session.fold import Fold, FoldError, fold_surface
from ..values import is_number, is_safe_integer, json_number


@dataclass(frozen=True, slots=True)
class Record:
    """One corpus entry: the reported header and where the session lives."""

    header: Header
    live: bool
    persisted: bool

    def to_wire(self) -> wire.SessionRecord:
        return wire.SessionRecord(
            header=wire.raw(self.header), live=self.live, persisted=self.persisted
        )


@dataclass(frozen=True, slots=True)
class Loaded:
    """One session observed once: header, events, and its fold when already known (live).
    ``progress``: the progress of the request that observed it, told what the request does
    with the log once a read of it is over (``stage``)."""

    session_id: str
    header: Header
    events: Sequence[Event]
    live: bool
    known_fold: Fold | None = None
    progress: Tracker = NULL_TRACKER

    def stage(self, verb: str) -> None:
        """The read's progress goes on to what the request does with the log: ``folding
        200,000 events`` (the fold, or the replay check, which folds too), or ``filtering``
        them (a timeline counts its own pass, timeline.py). Without it the bar would stay on
        ``reading 28 of 28 MB`` while the request still works, which looks stuck (protocol.md
        §8)."""
        self.progress.report(f"{verb} {len(self.events):,} events")

    def fold(self) -> Fold:
        if self.known_fold is not None:
            return self.known_fold
        self.stage("folding")
        try:
            return fold_surface(self.events)
        except FoldError as exc:
            raise QueryError(
                errors.INVALID_SURFACE,
                f"invalid session surface: {exc.message}",
                session_id=self.session_id,
            ) from None


@dataclass(frozen=True, slots=True)
class LoadedWindow:
    """One session observed once, but only events ``start``.. of its ``length`` (readEvent)."""

    session_id: str
    header: Header
    length: int
    start: int
    events: Sequence[Event]

    @classmethod
    def of(cls, loaded: Loaded, first: int, last: int) -> LoadedWindow:
        return cls(
            loaded.session_id,
            loaded.header,
            len(loaded.events),
            first,
            loaded.events[first : last + 1],
        )


def check_cancelled(token: CancelToken) -> None:
    """The service reports a fired token as the ABORTED query error (§3.0.6)."""
    if token.cancelled:
        raise cancelled()


def not_found(session_id: str) -> QueryError:
    return QueryError(
        errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id
    )


def conflict(session_id: Any) -> QueryError:
    return QueryError(
        errors.SOURCE_CONFLICT,
        f'session source headers conflict for session "{session_id}"',
        session_id=session_id if isinstance(session_id, str) else None,
    )


def target_index(loaded: Loaded, seq: Any) -> int:
    """The event at array index ``seq`` whose own seq is ``seq``; EVENT_NOT_FOUND otherwise."""
    return target_in(loaded.session_id, len(loaded.events), seq, loaded.events.__getitem__)


def target_in(session_id: str, length: int, seq: Any, event_at: Callable[[int], Event]) -> int:
    """The index ``seq`` of a log of ``length`` events when ``event_at(seq)`` has that own seq;
    EVENT_NOT_FOUND otherwise."""
    if is_safe_integer(seq) and 0 <= seq < length:
        index = int(seq)
        own = event_at(index).seq
        if is_number(own) and own == index:
            return index
    raise QueryError(
        errors.EVENT_NOT_FOUND,
        f'session "{session_id}" has no event at seq {json_number(seq)}',
        session_id=session_id,
        seq=seq,
    )
