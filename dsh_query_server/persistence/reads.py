"""The one door to a mounted backend's reads (persistence.md §2): ``StoredLogs``, made once per
mount and held by its Binding. It is the only code that looks at the backend's optional read
paths (contract/capabilities.py), the only code that checks what the backend returns (checks.py),
and, for the exact reads, the only code that maps the backend's failures to the service's errors.

Each verb answers one question and chooses the read path inside: a window read or the whole log
sliced, the outline or the whole log, the point lookup or the listing searched.

- Exact reads (semantics.md §3.0.4, §3.0.5, §3.8; tools.md §2.6): ``headers``, ``listing``,
  ``header``, ``log``, ``outline``, ``window``, ``windows``, ``raw``. Each checks the token before the backend
  call it starts (§3.0.6: none starts after a cancel) and raises the QueryError the spec names.
- Search's observation (semantics.md §6.5): ``snapshots``, ``many``, ``sequence``; and the
  checkpointer's comparison (postgres.md §3.8): ``reads_windows``, ``stored_window``. These raise
  what the backend raised, checked: each of those callers maps every failure of its whole
  operation in one place (§6.5 step 2.4; the checkpoint's STORE_PERSISTENCE_FAILED).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import QueryError, cancelled, inner_message
from ..model.event import Event, Header
from .checks import (
    Snapshots,
    bulk_results,
    checked_headers,
    checked_lookup,
    checked_snapshots,
    checked_window,
)
from .contract.backend import PersistenceBackend
from .contract.capabilities import Capabilities
from .contract.errors import SessionPersistenceCorruptionError, SessionRawArtifactsUnsupportedError
from .contract.results import (
    BulkResult,
    Digest,
    Inspection,
    Payloads,
    SessionRawArtifact,
    SkippedArtifact,
    Window,
)


class LogMoved(Exception):
    """A log read window by window changed length between two windows (``sequence``)."""


def listing_failure(exc: Exception, token: CancelToken) -> QueryError:
    """A failed listing (semantics.md §3.0.4 step 2): cancelled, or PERSISTENCE_FAILED."""
    if token.cancelled:
        return cancelled()
    inner = inner_message(exc)
    return QueryError(
        errors.PERSISTENCE_FAILED, f"session persistence listing failed: {inner}", cause=inner
    )


def stored_log_failure(
    session_id: str, exc: Exception, token: CancelToken, action: str
) -> QueryError:
    """A backend's failure to read one stored log (§3.0.5 step 5): cancelled, corrupt
    (``stored session "<id>" is corrupt``) or ``failed to <action> "<id>"``."""
    if token.cancelled:
        return cancelled()
    inner = inner_message(exc)
    if isinstance(exc, SessionPersistenceCorruptionError):
        return QueryError(
            errors.CORRUPT_SESSION,
            f'stored session "{session_id}" is corrupt: {inner}',
            cause=inner,
            session_id=session_id,
        )
    return QueryError(
        errors.PERSISTENCE_FAILED,
        f'failed to {action} "{session_id}": {inner}',
        cause=inner,
        session_id=session_id,
    )


def _check_cancelled(token: CancelToken) -> None:
    if token.cancelled:
        raise cancelled()


def _sliced(inspection: Inspection, first: int, last: int) -> Window:
    """The window ``inspect``'s log gives, for a backend without window reads."""
    events = inspection.events
    title = next((e.seq for e in reversed(events) if e.type == "session/title"), None)
    return Window(inspection.meta, len(events), first, list(events[first : last + 1]), title)


@dataclass(frozen=True, slots=True)
class Listing:
    """``list``'s headers (also by id), and each id's revision when the backend lists them in the
    same call (None when it does not). Shared between requests while the backend lists the very same
    snapshots again: read it, never change it."""

    headers: list[Header]
    revisions: dict[str, str] | None
    by_id: dict[str, Header]
    checked: Snapshots | None = None

    @staticmethod
    def of(headers: list[Header]) -> Listing:
        """A listing without revisions."""
        return Listing(headers, None, {h.id: h for h in headers})


class StoredLogs:
    """The reads of one mounted backend (see the module's docstring)."""

    def __init__(self, backend: PersistenceBackend) -> None:
        self._backend = backend
        caps = Capabilities.of(backend)  # resolved once, here
        self._windows = caps.windows
        self._outline = caps.outline
        self._cheap_windows = caps.cheap_windows
        self._raw = caps.raw
        self._listed = caps.listed
        self._bulk = caps.bulk
        self._shapes = caps.shapes
        self._skipped = caps.skipped
        self._revisions = caps.revisions
        self._prepare = caps.prepare
        # The last ``listing`` with revisions: a backend that lists the very same snapshots
        # again (SQLite's unchanged listing) gets it back without a pass over every row.
        self._last: Listing | None = None

    # -- exact reads: failures mapped to the service's errors ------------------------------------

    def headers(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        """``list`` (§3.0.4 step 2): the very header objects the backend listed."""
        _check_cancelled(token)
        try:
            return checked_headers(self._backend.list(token))
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise listing_failure(exc, token) from None

    @property
    def lists_revisions(self) -> bool:
        """Whether ``listing`` gives revisions (the backend is ListedRevisions)."""
        return self._revisions is not None

    def listing(self, token: CancelToken = NULL_TOKEN) -> Listing:
        """``headers`` (failures mapped alike), with each id's revision when the backend lists
        them in that one call (ListedRevisions); revisions None otherwise."""
        if self._revisions is None:
            return Listing.of(self.headers(token))
        _check_cancelled(token)
        last = self._last
        try:
            checked = checked_snapshots(
                self._revisions.list_revisions(token), None if last is None else last.checked
            )
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise listing_failure(exc, token) from None
        if last is not None and checked is last.checked:
            return last
        by_id = checked.by_id
        listing = Listing(
            [s.header for s in checked.snapshots],
            {i: s.revision for i, s in by_id.items()},
            {i: s.header for i, s in by_id.items()},
            checked,
        )
        self._last = listing
        return listing

    def header(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """The header ``list`` lists for the id, or None (§3.0.5 step 4, failures as a
        listing's): the backend's point lookup, or, without one, its listing searched."""
        _check_cancelled(token)
        try:
            if self._listed is not None:
                return checked_lookup(self._listed.list_one(session_id, token), session_id)
            listed = checked_headers(self._backend.list(token))
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise listing_failure(exc, token) from None
        return next((h for h in listed if h.id == session_id), None)

    def log(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        """``inspect`` (§3.0.5 step 5)."""
        _check_cancelled(token)
        try:
            return self._backend.inspect(session_id, token)
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise stored_log_failure(session_id, exc, token, "inspect session") from None

    def outline(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        """``log`` for a reader of no chunk payloads: packed chunk members may come as
        ``records.ChunkOutline``s (seq and time only) when the backend reads outlines."""
        if self._outline is None:
            return self.log(session_id, token)
        _check_cancelled(token)
        try:
            return self._outline.inspect_outline(session_id, token)
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise stored_log_failure(session_id, exc, token, "inspect session") from None

    def window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """The logical events first..last (first >= 0, clipped) of ``log``'s log, with its
        errors: a window read, or the whole log inspected and sliced."""
        if self._windows is None:
            return _sliced(self.log(session_id, token), first, last)
        _check_cancelled(token)
        try:
            window = self._windows.inspect_window(session_id, first, last, token)
            return checked_window(window, first, last)
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            raise stored_log_failure(session_id, exc, token, "inspect session") from None

    def windows(self, session_id: str, token: CancelToken = NULL_TOKEN) -> LogWindows:
        """Several windows of one log for one request (titles, tree labels)."""
        return LogWindows(self, session_id, token, self._windows is not None)

    def raw(self, session_id: str, token: CancelToken = NULL_TOKEN) -> SessionRawArtifact | None:
        """The session's stored bytes (tools.md §2.1), None when none are stored; raises
        SessionRawArtifactsUnsupportedError when the backend (or the composite member that
        lists the id) exposes none. Other failures as tools.md §2.6 maps them."""
        if self._raw is None:
            raise SessionRawArtifactsUnsupportedError
        _check_cancelled(token)
        try:
            return self._raw.read_raw(session_id, token)
        except SessionRawArtifactsUnsupportedError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified as persistence.md §2.3
            action = "read the stored log of session"
            raise stored_log_failure(session_id, exc, token, action) from None

    def skipped(self) -> Sequence[SkippedArtifact]:
        """The damaged artifacts the last listing skipped (no I/O: a status report)."""
        return () if self._skipped is None else self._skipped.skipped_artifacts()

    # -- search's observation and the checkpointer: failures raised as the backend raised them ---

    def snapshots(self, token: CancelToken, known: Snapshots | None = None) -> Snapshots:
        """``list_snapshots`` checked (§6.5 step 2.1); a result that lists exactly ``known``
        again is ``known`` itself."""
        return checked_snapshots(self._backend.list_snapshots(token), known)

    def prepare_many(self) -> None:
        """A large ``many`` is likely soon (a cold index's first build): the backend may start
        ahead what it will use for it (capabilities.BulkPreparer)."""
        if self._prepare is not None:
            self._prepare.prepare_bulk()

    def many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[BulkResult]:
        """For each id, in order, what ``inspect`` gives (the Inspection or the exception it
        would raise), in few round trips when the backend reads in bulk; None for an id the
        caller reads its own way (``sequence``): a log longer than ``limit``, or every id of a
        backend that does not read in bulk. With ``payloads`` (the types whose text the
        caller reads), events may be ``results.EventOutline``s carrying their texts; with ``digest``, a
        result may come ``results.Digested`` (read and digested by a worker process)."""
        if self._bulk is None:
            return iter([None] * len(session_ids))
        answers = self._bulk.inspect_many(session_ids, limit, token, payloads, digest)
        return bulk_results(session_ids, answers)

    def shapes(self, session_ids: Sequence[str], token: CancelToken) -> Iterator[str]:
        """Ids whose logs' shapes the backend read in one bulk pass (capabilities.ShapeReader),
        each once as it is read; the others are left to the caller's own reads."""
        if self._shapes is None:
            return iter(())
        return self._shapes.read_shapes(session_ids, token)

    def sequence(self, session_id: str, size: int, token: CancelToken) -> LogSequence:
        """The log, to be read once in order: whole, from ``inspect``, unless the backend reads
        windows cheaply (once a log is verified at a revision, a window reads only its rows)
        and the log is longer than ``size``; then window by window (see LogSequence)."""
        if self._windows is None or not self._cheap_windows:
            inspection = self._backend.inspect(session_id, token)
            return LogSequence(self, session_id, token, size, inspection.meta, inspection.events)
        head = self.stored_window(session_id, 0, size - 1, token)
        return LogSequence(self, session_id, token, size, head.meta, head.events, head.length)

    @property
    def reads_windows(self) -> bool:
        """Whether the backend reads a window of a log without the rest: postgres.md §3.8's
        reconciliation applies to such mounts only (``stored_window``)."""
        return self._windows is not None

    def stored_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """``window`` with the backend's own failures."""
        if self._windows is None:
            return _sliced(self._backend.inspect(session_id, token), first, last)
        window = self._windows.inspect_window(session_id, first, last, token)
        return checked_window(window, first, last)


class LogWindows:
    """Windows of one log in one request. Through the backend's window read when it has one;
    otherwise sliced from one inspection made at the first read, so the request inspects the
    log once however many windows it reads."""

    def __init__(
        self, logs: StoredLogs, session_id: str, token: CancelToken, windowed: bool
    ) -> None:
        self._logs = logs
        self._session_id = session_id
        self._token = token
        self._windowed = windowed
        self._whole: Inspection | None = None

    def read(self, first: int, last: int) -> Window:
        """``StoredLogs.window``: the logical events first..last (first >= 0, clipped)."""
        if self._windowed:
            return self._logs.window(self._session_id, first, last, self._token)
        if self._whole is None:
            self._whole = self._logs.log(self._session_id, self._token)
        return _sliced(self._whole, first, last)


class LogSequence(Sequence[Event]):
    """A log read once in order (``StoredLogs.sequence``). ``whole`` holds every event when the
    first read gave them all; otherwise ``events()`` reads the log window by window and any one
    event is read by seq (the fold's look back at a rewritten tool result). Every window is read
    at the log's current revision: one whose length differs from the first's raises LogMoved."""

    def __init__(
        self,
        logs: StoredLogs,
        session_id: Any,
        token: CancelToken,
        size: int,
        meta: Header,
        head: list[Event],
        length: int | None = None,
    ) -> None:
        self.meta = meta
        self._logs = logs
        self._session_id = session_id
        self._token = token
        self._size = size
        self._length = len(head) if length is None else length
        self.whole = head if len(head) >= self._length else None
        self._head: list[Event] | None = head
        # The windows just read, by start: the fold's look backs mostly land in them, and each
        # would otherwise be one more read (all are read at the log's one revision, so equal).
        self._recent: dict[int, list[Event]] = {}

    def events(self) -> Iterator[Event]:
        """Every event, window by window (the first window is the one already read, once)."""
        size = self._size
        for start in range(0, self._length, size):
            if start == 0 and self._head is not None:
                events, self._head = self._head, None
            else:
                events = self._read(start, start + size - 1)
            self._recent = {start - size: self._recent.get(start - size, []), start: events}
            yield from events

    def _read(self, first: int, last: int) -> list[Event]:
        window = self._logs.stored_window(self._session_id, first, last, self._token)
        if window.length != self._length:
            raise LogMoved
        return window.events

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, seq: Any) -> Any:
        if not isinstance(seq, int):
            raise TypeError("the fold looks events up one seq at a time")
        if self.whole is not None:
            return self.whole[seq]
        size = self._size
        start = seq - seq % size if seq >= 0 else -1
        kept = self._recent.get(start)
        if kept and seq - start < len(kept):
            return kept[seq - start]
        return self._read(seq, seq)[0]


__all__ = [
    "Listing",
    "LogMoved",
    "LogSequence",
    "LogWindows",
    "StoredLogs",
    "listing_failure",
    "stored_log_failure",
]
