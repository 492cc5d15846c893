"""The persistence contract (persistence.md §2) that the query service and the checkpointer use.

Backends are synchronous objects: the server runs every request in a worker thread, so a backend
call that has started is always awaited until it settles (semantics.md §3.0.6) simply because the
request's own thread is the one making it. Cancellation reaches a backend through ``token``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..cancel import NULL_TOKEN, CancelToken
from ..model.event import Event, Header


class SessionPersistenceCorruptionError(Exception):
    """Stored bytes or rows exist but are damaged or inconsistent (persistence.md §6)."""


class SessionFormatUnsupportedError(Exception):
    """The artifact is intact but its format version is not 0."""


class SessionPersistenceReadOnlyError(Exception):
    """A write on a backend mounted with readOnly=true."""


RAW_ARTIFACTS_UNSUPPORTED = "this session persistence backend does not expose raw artifacts"


class SessionRawArtifactsUnsupportedError(Exception):
    """``read_raw`` on a backend (or a composite member) without raw artifacts (tools.md §2.1)."""

    def __init__(self, message: str = RAW_ARTIFACTS_UNSUPPORTED) -> None:
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class SessionRawArtifact:
    """A session's stored log as bytes (tools.md §2.1): what export writes verbatim."""

    meta: Header
    filename: str
    content: bytes


@dataclass(frozen=True, slots=True)
class SessionLocation:
    """Where a session's artifact lives (informational, tools.md §2.1)."""

    kind: str
    path: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    header: Header
    revision: str


@dataclass(frozen=True, slots=True)
class Inspection:
    """The logical log: stored valid prefix, normalized, plus in-memory closers."""

    meta: Header
    events: list[Event] = field(default_factory=list[Event])


@dataclass(frozen=True, slots=True)
class Window:
    """A slice of the logical log that ``inspect`` would return, read without decoding the rest.

    ``events`` are the logical events ``start`` .. ``start + len(events) - 1``: the requested
    range clipped to the log, whose length is ``length``. A backend offers it through the optional
    ``inspect_window(id, first, last, token)``, with the errors ``inspect`` would raise."""

    meta: Header
    length: int
    start: int
    events: list[Event] = field(default_factory=list[Event])
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
    """persistence.md §2.1: the operations every backend has. ``uri`` and ``writable`` describe
    the mount. Optional read paths are the capability protocols below, resolved once at mount
    (``Capabilities.of``), never probed per call."""

    @property
    def uri(self) -> str: ...

    @property
    def writable(self) -> bool: ...

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]: ...

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> Sequence[Snapshot]: ...

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection: ...

    def create(self, header: Header) -> None: ...

    def append(self, session_id: str, events: list[Event]) -> None: ...

    def stored_count(self, session_id: str) -> int | None:
        """Writer helper: how many events the stored log holds (its valid prefix), or None when
        nothing is stored for the id. Raises like ``inspect`` for damaged logs."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class WindowReader(Protocol):
    """Optional: the logical events first..last (first >= 0) of ``inspect``'s log, clipped, with
    exactly the errors of ``inspect``."""

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window: ...


@runtime_checkable
class CheapWindows(Protocol):
    """Optional, with WindowReader: ``cheap_windows`` is true when, once a log is verified at a
    revision, a window reads only its own rows (the search index then reads long logs window by
    window)."""

    @property
    def cheap_windows(self) -> bool: ...


@runtime_checkable
class OutlineReader(Protocol):
    """Optional: ``inspect`` whose packed chunk members are ``records.ChunkOutline``s (seq and time
    only), for reads that need no chunk payloads (listEvents, traceEvent)."""

    def inspect_outline(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection: ...


# What ``BulkInspector.inspect_many`` gives for one id: the Inspection ``inspect`` would return,
# the exception it would raise, or None when the id is left to the caller's own read.
BulkResult = Inspection | Exception | None


@runtime_checkable
class BulkInspector(Protocol):
    """Optional: ``inspect`` of many ids in few round trips, for the search index build.

    Yields ``(id, result)`` for every id of ``session_ids``, in order. ``result`` is what
    ``inspect(id)`` would give at some moment during the call: the Inspection, or the exception
    it would raise (returned, not raised). It is None for an id whose stored log holds more than
    ``limit`` events (or that the backend cannot read in bulk): the caller reads it its own way.
    A failure of the store itself, or cancellation, raises from the iterator."""

    def inspect_many(
        self, session_ids: Sequence[str], limit: int, token: CancelToken = NULL_TOKEN
    ) -> Iterator[tuple[str, BulkResult]]: ...


@runtime_checkable
class ListedLookup(Protocol):
    """Optional: the header ``list(token)`` would list for ``session_id`` (None when it lists
    none), failing exactly when and as ``list`` would, for a single-target load (semantics.md
    §3.0.5 step 4) that needs one id's listed header, not a copy of the whole listing."""

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None: ...


@runtime_checkable
class RawArtifactReader(Protocol):
    """Optional (tools.md §2.1): a session's stored bytes, for export only. ``read_raw`` is
    None when no artifact is stored, never mutates and never changes a revision; its errors are
    classified as persistence.md §2.3. A backend offers it when ``supports_raw_artifacts``."""

    @property
    def supports_raw_artifacts(self) -> bool: ...

    def locate(self, header: Header) -> SessionLocation | None: ...

    def read_raw(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> SessionRawArtifact | None: ...


@dataclass(frozen=True, slots=True)
class Capabilities:
    """A mounted backend's optional read paths, checked once when it is mounted."""

    windows: WindowReader | None
    outline: OutlineReader | None
    cheap_windows: bool
    raw: RawArtifactReader | None = None
    listed: ListedLookup | None = None
    bulk: BulkInspector | None = None

    @staticmethod
    def of(backend: PersistenceBackend) -> Capabilities:
        windows = backend if isinstance(backend, WindowReader) else None
        return Capabilities(
            windows=windows,
            outline=backend if isinstance(backend, OutlineReader) else None,
            cheap_windows=(
                windows is not None and isinstance(backend, CheapWindows) and backend.cheap_windows
            ),
            raw=(
                backend
                if isinstance(backend, RawArtifactReader) and backend.supports_raw_artifacts
                else None
            ),
            listed=backend if isinstance(backend, ListedLookup) else None,
            bulk=backend if isinstance(backend, BulkInspector) else None,
        )
