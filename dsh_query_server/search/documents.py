"""The documents a session gives the index (semantics.md §6.4): one per event with text, with the
event's surface from the fold of the whole log.

A persisted log is read whole, except a long one from a backend that reads windows cheaply (it
verifies a log once per revision and then reads only a window's rows): the mount's door decides
(``StoredLogs.sequence``). Such a log is read window by window: the first pass folds the surface
and keeps each document's text, the documents are made from those once the fold is done. The build then holds one window
and the texts, not the log: a 100,000-event transcript held whole costs ~50 MB. When the texts
outgrow TEXT_BUDGET they are dropped and a second pass reads the windows again for them.

Consistency needs nothing new: every window is read at the log's current revision, and the
reconcile lists the backend again after its inspections (§6.5 step 2.3). A log that changed
between two windows has a new revision there, so that attempt is retried; a change of length
seen between windows is reported the same way at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import msgspec

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError
from ..model.event import Event, Header
from ..model.text import TEXT_TYPES, extract_text
from ..persistence.contract.results import Digest, EventOutline, Inspection, Reading
from ..persistence.reads import StoredLogs
from ..session.fold import Fold, FoldError, fold_events
from ..session.store import LiveSnapshot
from .plan import Document, stored

# Logs longer than this many events are read window by window (see above).
WINDOW = 8192
# What a long log's kept texts may cost (characters, plus _DOC_COST per document) before the
# documents are made by a second read instead.
TEXT_BUDGET = 16 * 1024 * 1024
_DOC_COST = 128
# The types whose text the documents are made of: a bulk read may give any event as an outline,
# its envelope (all the fold reads) and that text (issue 28).
PAYLOADS = Reading(texts=TEXT_TYPES)


def _text(event: Event) -> str:
    """The event's text; an outline of a bulk read carries its own."""
    return event.text if isinstance(event, EventOutline) else extract_text(event)


def _documents(events: Iterable[Event], fold: Fold) -> Iterator[Document]:
    # A generator: the write plan inserts documents as they are made (see WritePlan._replace).
    surface = fold.surface
    for event in events:
        text = _text(event)
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
                text = _text(event)
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


# The documents of a log as a bulk read's worker process makes them (issue 28) [ours]: what
# ``persisted_documents`` gives, as the index stores them (``plan.stored``: sanitized text, a
# time that is a number or NULL), msgpack-encoded, so that only they cross the pipe and this
# process only inserts them. A document msgpack would not give back exactly (a type that is no
# string, an int past 64 bits) makes the digest raise: the id is then read in this process.
DIGEST = Digest(__name__, "digest")
_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[tuple[int, str, int | float | None, str, str]]).decode


_PART = 512  # documents per encoded part: the worker never holds them all decoded and encoded


def digest(session_id: str, inspection: Inspection) -> list[bytes]:
    """results.Digest: run in the worker on the Inspection it read, which it consumes: each
    event leaves the Inspection as its document is made, so a long log's texts are held once,
    as events or as encoded parts, never both (the worker drops the Inspection afterwards)."""
    parts: list[bytes] = []
    docs: list[Document] = []
    events = inspection.events
    for doc in _documents(_consumed(events), _folded(session_id, events, events)):
        doc = stored(doc)  # what the insert would make of it: the server then only inserts
        if type(doc[1]) is not str:
            raise ValueError("a document msgpack would not give back as it is")
        docs.append(doc)
        if len(docs) == _PART:
            parts.append(_encode(docs))
            docs.clear()
    if docs:
        parts.append(_encode(docs))
    return parts


def _consumed(events: list[Event]) -> Iterator[Event]:
    """Each event in turn, its place in ``events`` emptied as it is handed out."""
    for k in range(len(events)):
        event = events[k]
        events[k] = cast(Event, None)
        yield event


class BadDigest(ValueError):
    """Bytes that are no digest of documents (never from our own worker)."""


def undigest(data: memoryview, ends: list[int]) -> Iterator[Document]:
    """The documents ``digest`` encoded, part by part, as they are decoded: the write plan
    inserts them meanwhile, so a long log's are never all held decoded beside their bytes
    (raises BadDigest for anything else)."""
    start = 0
    for end in ends:
        try:
            docs = _decode(data[start:end])
        except msgspec.DecodeError as exc:
            raise BadDigest(f"not a digest of documents: {exc}") from None
        yield from docs
        start = end


def live_documents(snapshot: LiveSnapshot) -> Iterator[Document]:
    return _documents(snapshot.events, snapshot.fold)  # the live store folds every append


class Read:
    """A persisted log's header and documents. ``docs`` is consumed by the write plan. When it
    still reads the log (``reading``), an error met while the plan inserts is kept in ``error``
    for the caller to raise afterwards: raised inside the insert, it would be taken for an index
    write failure."""

    def __init__(
        self, meta: Header, docs: Iterable[Document], reading: bool = False, ready: bool = False
    ) -> None:
        self.meta = meta
        self._docs = docs
        self._reading = reading
        self.ready = ready  # the documents are ``plan.stored`` already
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


def read_persisted(logs: StoredLogs, session_id: Any, token: CancelToken) -> Read:
    """The stored log's documents, as ``inspect`` gives the log (the same events and errors; a
    log that moves between two windows raises LogMoved)."""
    log = logs.sequence(session_id, WINDOW, token)
    if log.whole is not None:
        return Read(log.meta, persisted_documents(session_id, log.whole))
    kept = _Kept()
    fold = _folded(session_id, kept.tap(log.events()), log)
    if not kept.full and kept.seen == len(log):
        return Read(log.meta, kept.documents(fold))
    kept.docs.clear()  # the second pass reads every window again
    return Read(log.meta, _documents(log.events(), fold), reading=True)
