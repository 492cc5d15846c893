"""One window read of a stored log, for every backend (persistence.md §2.1 ``inspect``;
memo.py says why the memo is not a cache).

At a revision the backend's memo has verified, only the rows or lines holding the window are
read, and the logical window is built from them and the memo's shape; if the storage disagrees
with what was verified (a change that kept the revision), the memo entry is dropped and the log
is verified again. Otherwise the whole stored prefix is validated exactly as ``inspect``
validates it, streamed, keeping only the window and the facts the memo needs; a legacy replace
lookup that needs earlier events makes it read the (same) log whole instead.

A backend supplies a ``WindowSource``: its access to one session for one read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ...cancel import CancelToken
from ...model.event import Event, Header
from ..contract.results import Window
from . import log as logical
from .legacy import NeedsHistory, StaleShape
from .log import LogShape, StreamedLog, logical_window, stored_span
from .memo import VerificationMemo

H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class Verified(Generic[H]):
    """A memo entry: the verified log's shape and the backend's own seek hints."""

    shape: LogShape
    hints: H


@dataclass(frozen=True, slots=True)
class Verification(Generic[H]):
    """What a full validating pass read: the header, the revision of exactly what was read, and
    the backend's seek hints for it."""

    header: Header
    revision: str
    hints: H


class WindowSource(Protocol[H]):
    """One backend's access to one stored session, for one window read."""

    @property
    def session_id(self) -> str: ...

    @property
    def stale_errors(self) -> tuple[type[Exception], ...]:
        """Errors of ``read_known`` (besides StaleShape) that mean "verify again"."""
        ...

    def revision(self) -> str:
        """The session's current revision, from the authoritative source."""
        ...

    def read_known(self, hints: H, lo: int, hi: int) -> tuple[Header, list[Event]]:
        """The header and the stored events ``lo..hi`` (none when lo > hi) of a log verified
        with ``hints`` at ``revision()``; raises StaleShape (or a ``stale_errors`` error) when
        the storage no longer matches."""
        ...

    def verify(self, sink: StreamedLog) -> Verification[H]:
        """Validate the whole stored prefix exactly as ``inspect`` does, feeding its events to
        ``sink``; raises ``inspect``'s storage errors, or NeedsHistory from the sink."""
        ...

    def verify_whole(self) -> tuple[Verification[H], list[Event]]:
        """After ``verify`` raised NeedsHistory: the same log decoded whole, as ``inspect``
        decodes it."""
        ...


def read_window(
    memo: VerificationMemo[Verified[H]],
    source: WindowSource[H],
    first: int,
    last: int,
    token: CancelToken,
) -> Window:
    """The logical events ``first..last`` (clipped) with exactly the result and errors of
    ``inspect``."""
    session_id = source.session_id
    revision = source.revision()
    known = memo.get(session_id, revision)
    if known is not None:
        shape = known.shape
        lo, hi = stored_span(shape, first, last)
        try:
            header, stored = source.read_known(known.hints, lo, hi)
            events = logical_window(session_id, shape, stored, first, last)
        except (StaleShape, *source.stale_errors):
            memo.forget(session_id)
        else:
            token.raise_if_cancelled()
            return Window(header, shape.length, first, events, shape.title, revision)
    streamed = StreamedLog(session_id, first, last)
    try:
        verified = source.verify(streamed)
    except NeedsHistory:
        verified, whole = source.verify_whole()
        logical_log, shape = logical.verified_log(session_id, whole)
        events = logical_log[first : last + 1]
    else:
        events, shape = streamed.finish()
    memo.put(session_id, verified.revision, Verified(shape, verified.hints))
    return Window(verified.header, shape.length, first, events, shape.title, verified.revision)
