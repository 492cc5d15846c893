"""Cancellation: one token per request (semantics.md §3.0.6).

A request's worker thread owns its token; ``$/cancelRequest`` fires it, and every layer below
checks it with ``token.raise_if_cancelled()``. Code that is not cancellable passes
``NULL_TOKEN`` instead of ``None``, so no caller tests for a missing token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager

from .progress import NULL_TRACKER, Count, Tracker


class SessionQueryCancelled(Exception):
    """A layer noticed that its request's token fired."""


class CancelToken:
    """``cancelled`` turns true once ``cancel()`` is called. One token belongs to one request, so
    a backend may share work among the calls made with it (the jsonl backend's root survey);
    callers never pass one token to two requests.

    ``progress`` is the request's work-done progress (progress.py): it rides on the token so
    that code deep below the handler reports without another parameter."""

    __slots__ = ("_event", "progress", "reading", "reading_items", "listing", "__weakref__")

    def __init__(self, progress: Tracker = NULL_TRACKER) -> None:
        self._event = threading.Event()
        self.progress = progress
        # Told (bytes read, the log's size) while one session's log is read for a request
        # (query/loading.py sets it); None otherwise: an index build reads many logs under one
        # token and reports transcripts, not bytes.
        self.reading: Callable[[int, int], None] | None = None
        # The same for a log whose bytes mean nothing to its reader (rows of a database): told
        # (items read, items in the log, the items' plural noun: "events", "records").
        self.reading_items: Callable[[int, int, str], None] | None = None
        # Counts the transcripts a listing of this request reads while ``counting`` runs
        # (progress.Count); None otherwise.
        self.listing: Count | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise SessionQueryCancelled("cancelled")

    @contextmanager
    def counting(self, share: bool, upto: int = 100) -> Generator[None, None, None]:
        """While the listings of this request run: their transcripts counted as its progress,
        with the percentage (up to ``upto``) when ``share`` (see progress.Count). An inner
        ``counting`` keeps the outer one's count: the caller that knows what follows the listing
        decides."""
        if not self.progress.active or self.listing is not None:
            yield
            return
        self.listing = Count(self.progress, share, upto)
        try:
            yield
        finally:
            self.listing = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or the timeout passes; returns ``cancelled``."""
        return self._event.wait(timeout)


class _NullToken(CancelToken):
    """A token nobody can fire: for work that is not part of a cancellable request."""

    __slots__ = ()

    def cancel(self) -> None:
        raise RuntimeError("the null token cannot be cancelled")


NULL_TOKEN: CancelToken = _NullToken()


def check(token: CancelToken | None) -> None:
    """Raise SessionQueryCancelled when ``token`` has fired (None means not cancellable)."""
    if token is not None and token.cancelled:
        raise SessionQueryCancelled("cancelled")
