"""The persistence contract (persistence.md §2) that the query service and the checkpointer use.

Backends are synchronous objects: the server runs every request in a worker thread, so a backend
call that has started is always awaited until it settles (semantics.md §3.0.6) simply because the
request's own thread is the one making it. Cancellation reaches a backend through ``token``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..model.event import Event, Header


class SessionPersistenceCorruptionError(Exception):
    """Stored bytes or rows exist but are damaged or inconsistent (persistence.md §6)."""


class SessionFormatUnsupportedError(Exception):
    """The artifact is intact but its format version is not 0."""


class SessionPersistenceReadOnlyError(Exception):
    """A write on a backend mounted with readOnly=true."""


class SessionQueryCancelled(Exception):
    """A backend noticed that its cancellation token fired."""


class CancelToken:
    """A cancellation token: ``cancelled`` turns true once ``cancel()`` is called. One token
    belongs to one request, so a backend may share work among the calls made with it (the jsonl
    backend's root survey); callers never pass one token to two requests."""

    __slots__ = ("_event", "__weakref__")

    def __init__(self) -> None:
        self._event = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise SessionQueryCancelled("cancelled")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or the timeout passes; returns ``cancelled``."""
        return self._event.wait(timeout)


def check(token: CancelToken | None) -> None:
    """Raise SessionQueryCancelled when ``token`` has fired (None means not cancellable)."""
    if token is not None and token.cancelled:
        raise SessionQueryCancelled("cancelled")


@dataclass(frozen=True, slots=True)
class Snapshot:
    header: Header
    revision: str


@dataclass(frozen=True, slots=True)
class Inspection:
    """The logical log: stored valid prefix, normalized, plus in-memory closers."""

    meta: Header
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Window:
    """A slice of the logical log that ``inspect`` would return, read without decoding the rest.

    ``events`` are the logical events ``start`` .. ``start + len(events) - 1``: the requested
    range clipped to the log, whose length is ``length``. A backend offers it through the optional
    ``inspect_window(id, first, last, token)``, with the errors ``inspect`` would raise."""

    meta: Header
    length: int
    start: int
    events: list[Event] = field(default_factory=list)
    title: int | None = None  # seq of the log's last session/title event (title reads), if any


@dataclass(frozen=True, slots=True)
class StoredLog:
    """What the storage holds for one session, before legacy normalization and closers.

    ``torn`` is true when the physical log has a torn tail (or a torn Zstandard frame) that an
    append must refuse. ``revision`` is the revision of exactly the bytes or rows read."""

    header: Header
    events: list[Event]
    torn: bool
    revision: str


@runtime_checkable
class PersistenceBackend(Protocol):
    """persistence.md §2.1. ``uri`` and ``writable`` describe the mount."""

    uri: str
    writable: bool

    def list(self, token: CancelToken | None = None) -> list[Header]: ...

    def list_snapshots(self, token: CancelToken | None = None) -> list[Snapshot]: ...

    def inspect(self, session_id: str, token: CancelToken | None = None) -> Inspection: ...

    def create(self, header: Header) -> None: ...

    def append(self, session_id: str, events: list[Event]) -> None: ...

    # Optional read paths the query service uses when a backend has them (checked with hasattr;
    # backends without them are read through ``inspect``):
    #
    # - ``inspect_window(id, first, last, token) -> Window``: the logical events first..last
    #   (first >= 0), clipped, with exactly the errors of ``inspect``;
    # - ``inspect_outline(id, token) -> Inspection``: ``inspect`` whose packed chunk members are
    #   ``records.ChunkOutline``s (seq and time only), for reads that need no chunk payloads;
    # - ``cheap_windows = True``: once a log is verified at a revision, ``inspect_window`` reads
    #   only the window, so the search index reads long logs window by window.

    def stored_count(self, session_id: str) -> int | None:
        """Writer helper: how many events the stored log holds (its valid prefix), or None when
        nothing is stored for the id. Raises like ``inspect`` for damaged logs."""
        ...

    def close(self) -> None: ...
