"""The documents a session gives the index (semantics.md §6.4): one per event with text, with the
event's surface from the fold of the whole log.

A persisted log is read whole, except a long one from a backend that reads windows cheaply
(``cheap_windows``: it verifies a log once per revision and then reads only a window's rows).
Such a log is read window by window: the first pass folds the surface and keeps each document's
text, the documents are made from those once the fold is done. The build then holds one window
and the texts, not the log: a 100,000-event transcript held whole costs ~50 MB. When the texts
outgrow TEXT_BUDGET they are dropped and a second pass reads the windows again for them.

Consistency needs nothing new: every window is read at the log's current revision, and the
reconcile lists the backend again after its inspections (§6.5 step 2.3). A log that changed
between two windows has a new revision there, so that attempt is retried; a change of length
seen between windows is reported the same way at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError
from ..model.event import Event, Header
from ..persistence.adapters import checked_window
from ..persistence.contract.capabilities import WindowReader
from ..persistence.mount.binding import Binding
from ..query.text import extract_text
from ..session.fold import Fold, FoldError, fold_events
from ..session.store import LiveSnapshot
from .plan import Document

# Logs longer than this many events are read window by window (see above).
WINDOW = 8192
# What a long log's kept texts may cost (characters, plus _DOC_COST per document) before the
# documents are made by a second read instead.
TEXT_BUDGET = 16 * 1024 * 1024
_DOC_COST = 128


class Moved(Exception):
    """The log changed between two windows; the reconcile retries its observation."""


def _documents(events: Iterable[Event], fold: Fold) -> Iterator[Document]:
    # A generator: the write plan inserts documents as they are made (see WritePlan._replace).
    surface = fold.surface
    for event in events:
        text = extract_text(event)
        if text:
            seq = int(event.seq)  # the fold checked that seq is the log index
            yield seq, event.type, event.time, surface(seq), text


class _Kept:
    """The texts of a long log's documents, taken while its fold pass reads it (what
    ``_documents`` would make, but the surface), until they outgrow TEXT_BUDGET."""

    def __init__(self) -> None:
        self.docs: list[tuple[Any, Any, Any, str]] = []
        self.seen = 0
        self.full = False

    def tap(self, events: Iterable[Event]) -> Iterator[Event]:
        docs, cost, seen = self.docs, 0, 0
        for event in events:
            seen += 1
            if not self.full:
                text = extract_text(event)
                if text:
                    docs.append((event.seq, event.type, event.time, text))
                    cost += len(text) + _DOC_COST
                    if cost > TEXT_BUDGET:
                        self.full = True
                        docs.clear()
            self.seen = seen
            yield event

    def documents(self, fold: Fold) -> Iterator[Document]:
        surface = fold.surface
        for seq, type_, time, text in self.docs:
            seq = int(seq)  # the fold checked that seq is the log index
            yield seq, type_, time, surface(seq), text


def _folded(session_id: Any, events: Iterable[Event], log: Sequence[Event]) -> Fold:
    """The fold, run before anything is written (INVALID_SURFACE first)."""
    try:
        return fold_events(events, log)
    except FoldError as exc:
        raise QueryError(
            errors.INVALID_SURFACE,
            f"invalid session surface: {exc.message}",
            session_id=session_id if isinstance(session_id, str) else None,
        ) from None


def persisted_documents(session_id: Any, events: Sequence[Event]) -> Iterator[Document]:
    """The fold runs now (INVALID_SURFACE before anything is written); documents come lazily."""
    return _documents(events, _folded(session_id, events, events))


def live_documents(snapshot: LiveSnapshot) -> Iterator[Document]:
    return _documents(snapshot.events, snapshot.fold)  # the live store folds every append


class Read:
    """A persisted log's header and documents. ``docs`` is consumed by the write plan. When it
    still reads the log (``reading``), an error met while the plan inserts is kept in ``error``
    for the caller to raise afterwards: raised inside the insert, it would be taken for an index
    write failure."""

    def __init__(self, meta: Header, docs: Iterable[Document], reading: bool = False) -> None:
        self.meta = meta
        self._docs = docs
        self._reading = reading
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[Document]:
        return self._guarded() if self._reading else iter(self._docs)

    def _guarded(self) -> Iterator[Document]:
        try:
            yield from self._docs
        except Exception as exc:  # noqa: BLE001 - raised by the caller once the insert is over
            self.error = exc

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def read_persisted(binding: Binding, session_id: Any, token: CancelToken) -> Read:
    """The stored log's documents, as ``inspect`` gives the log (the same events and errors)."""
    reader = binding.capabilities.windows
    if reader is None or not binding.capabilities.cheap_windows:
        inspection = binding.backend.inspect(session_id, token)
        return Read(inspection.meta, persisted_documents(session_id, inspection.events))
    first = checked_window(reader.inspect_window(session_id, 0, WINDOW - 1, token), 0, WINDOW - 1)
    if first.length <= WINDOW:
        return Read(first.meta, persisted_documents(session_id, first.events))
    meta, log = first.meta, _Windows(reader, session_id, token, first.length)
    kept = _Kept()
    fold = _folded(session_id, kept.tap(log.events(first.events)), log)
    del first
    if not kept.full and kept.seen == len(log):
        return Read(meta, kept.documents(fold))
    kept.docs.clear()  # the second pass reads every window again
    return Read(meta, _documents(log.events(None), fold), reading=True)


class _Windows(Sequence[Event]):
    """A long log read through ``inspect_window``: its events in order, window by window, and
    any one event by seq (the fold's look back at a rewritten tool result)."""

    def __init__(
        self, reader: WindowReader, session_id: Any, token: CancelToken, length: int
    ) -> None:
        self._reader = reader
        self._session_id = session_id
        self._token = token
        self._length = length
        # The windows just read, by start: the fold's look backs mostly land in them, and each
        # would otherwise be one more read (all are read at the log's one revision, so equal).
        self._recent: dict[int, list[Event]] = {}

    def events(self, first: list[Event] | None) -> Iterator[Event]:
        """Every event; ``first`` is the first window when it was already read."""
        for start in range(0, self._length, WINDOW):
            if start == 0 and first is not None:
                events, first = first, None
            else:
                events = self._read(start, start + WINDOW - 1)
            self._recent = {start - WINDOW: self._recent.get(start - WINDOW, []), start: events}
            yield from events

    def _read(self, first: int, last: int) -> list[Event]:
        window = checked_window(
            self._reader.inspect_window(self._session_id, first, last, self._token), first, last
        )
        if window.length != self._length:
            raise Moved
        return window.events

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, seq: Any) -> Any:
        if not isinstance(seq, int):
            raise TypeError("the fold looks events up one seq at a time")
        start = seq - seq % WINDOW if seq >= 0 else -1
        kept = self._recent.get(start)
        if kept and seq - start < len(kept):
            return kept[seq - start]
        return self._read(seq, seq)[0]
