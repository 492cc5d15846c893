"""A backend's optional read paths (persistence.md §2): one protocol each, and ``Capabilities``,
which resolves them once when a backend is mounted. Only the mount's door (reads.py) and a
composite (for its members) look at them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Header
from .backend import PersistenceBackend
from .results import (
    BulkResult,
    Digest,
    Inspection,
    Payloads,
    SessionLocation,
    SessionRawArtifact,
    SkippedArtifact,
    Snapshot,
    Window,
)


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


@runtime_checkable
class BulkInspector(Protocol):
    """Optional: ``inspect`` of many ids in few round trips, for the search index build.

    Yields ``(id, result)`` for every id of ``session_ids``, in order. ``result`` is what
    ``inspect(id)`` would give at some moment during the call: the Inspection, or the exception
    it would raise (returned, not raised). It is None for an id whose stored log holds more than
    ``limit`` events (or that the backend cannot read in bulk): the caller reads it its own way.
    A failure of the store itself, or cancellation, raises from the iterator. With ``payloads``,
    an event may come as a ``results.EventOutline`` (its envelope and text). With ``digest``,
    a result may come ``results.Digested`` (never required: the caller digests the others)."""

    def inspect_many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken = NULL_TOKEN,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[tuple[str, BulkResult]]: ...


@runtime_checkable
class ShapeReader(Protocol):
    """Optional: the shapes (a header, a length, the last ``session/title``) of many logs in
    one pass, for a batch of titles (importing/shapes.py) [ours].

    Yields ids of ``session_ids``, each at most once and in any order, as their shapes are read:
    remembered (the title's own reads then answer from them) or not (they read the log as
    before). An id it does not yield is left to the caller's own reads. Never changes what a
    read answers; cancellation raises from the iterator."""

    def read_shapes(
        self, session_ids: Sequence[str], token: CancelToken = NULL_TOKEN
    ) -> Iterator[str]: ...


@runtime_checkable
class BulkPreparer(Protocol):
    """Optional, with BulkInspector: a large ``inspect_many`` is likely soon (a cold search
    index's first build): start now what it will use (a worker process), so that its start
    overlaps the listing before it. Never required, and no result depends on it."""

    def prepare_bulk(self) -> None: ...


@runtime_checkable
class ListedLookup(Protocol):
    """Optional, the point lookup of a single-target load (semantics.md §3.0.5 step 4): exactly
    the header ``list(token)`` would list for ``session_id`` whenever ``list`` succeeds (None
    when it would list none), without reading the whole listing. It need not fail because of
    other sessions; a failure of its own is mapped like a listing's."""

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None: ...


@runtime_checkable
class ListedRevisions(Protocol):
    """Optional: ``list`` with each header's revision, in one call that costs what ``list``
    costs: exactly the headers ``list(token)`` would return, in its order, each in a Snapshot with
    the revision ``list_snapshots`` would give. A backend offers it when its ``list`` is its
    snapshot listing's headers, so the call *is* the listing of semantics.md §3.8 step 6; title
    reads prove their memo with these revisions (query/titlememo.py)."""

    def list_revisions(self, token: CancelToken = NULL_TOKEN) -> Sequence[Snapshot]: ...


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


@runtime_checkable
class SkippedReporter(Protocol):
    """Optional: the damaged artifacts the backend's last listing skipped, without I/O (a
    status report; semantics.md §6.5 [ours])."""

    def skipped_artifacts(self) -> Sequence[SkippedArtifact]: ...


@dataclass(frozen=True, slots=True)
class Capabilities:
    """A mounted backend's optional read paths, checked once when it is mounted."""

    windows: WindowReader | None
    outline: OutlineReader | None
    cheap_windows: bool
    raw: RawArtifactReader | None = None
    listed: ListedLookup | None = None
    bulk: BulkInspector | None = None
    shapes: ShapeReader | None = None
    skipped: SkippedReporter | None = None
    revisions: ListedRevisions | None = None
    prepare: BulkPreparer | None = None

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
            shapes=backend if isinstance(backend, ShapeReader) else None,
            skipped=backend if isinstance(backend, SkippedReporter) else None,
            revisions=backend if isinstance(backend, ListedRevisions) else None,
            prepare=backend if isinstance(backend, BulkPreparer) else None,
        )
