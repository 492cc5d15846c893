"""The exact query service (semantics.md §3–§5): live-preferred reads over the live store and the
persistence binding, re-read on every call.

Every operation is synchronous and runs in a worker thread; a started backend call is therefore
always awaited until it settles, and cancellation is observed at the checkpoints the spec names.
The service keeps no cache, no listener and no persisted state between calls.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from msgspec import UNSET

from .. import errors
from ..cancel import CancelToken
from ..errors import QueryError, cancelled, inner_message
from ..model import wire
from ..model.event import Event, Header, headers_compatible
from ..persistence.base import Inspection, SessionPersistenceCorruptionError, Window
from ..persistence.binding import PersistenceBinding
from ..session.fold import Fold, FoldError, fold_surface
from ..session.store import LiveSnapshot, SessionStore
from ..session.validate import message_shape_error, replay_error
from ..values import (
    is_integer,
    is_nonneg_safe_integer,
    is_number,
    is_safe_integer,
    json_number,
)
from . import lineage, trace
from .filters import (
    EventPredicate,
    session_matches,
    validate_event_filters,
    validate_session_filters,
)
from .text import documents


@dataclass(frozen=True, slots=True)
class Record:
    """One corpus entry: the reported header and where the session lives."""

    header: Header
    live: bool
    persisted: bool

    def to_wire(self) -> wire.SessionRecord:
        return wire.SessionRecord(header=wire.raw(self.header), live=self.live, persisted=self.persisted)


@dataclass(frozen=True, slots=True)
class Loaded:
    """One session observed once: header, events, and its fold when already known (live)."""

    session_id: str
    header: Header
    events: list[Event]
    live: bool
    known_fold: Fold | None = None

    def fold(self) -> Fold:
        if self.known_fold is not None:
            return self.known_fold
        try:
            return fold_surface(self.events)
        except FoldError as exc:
            raise QueryError(errors.INVALID_SURFACE, f"invalid session surface: {exc.message}",
                             session_id=self.session_id) from None


@dataclass(frozen=True, slots=True)
class LoadedWindow:
    """One session observed once, but only events ``start``.. of its ``length`` (readEvent)."""

    session_id: str
    header: Header
    length: int
    start: int
    events: list[Event]

    @classmethod
    def of(cls, loaded: Loaded, first: int, last: int) -> LoadedWindow:
        return cls(loaded.session_id, loaded.header, len(loaded.events), first,
                   loaded.events[first:last + 1])


def check_cancelled(token: CancelToken | None) -> None:
    if token is not None and token.cancelled:
        raise cancelled()


def require_string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise QueryError(errors.INVALID_REQUEST, f"{field} must be a string")
    return value


def require_number(value: Any, field: str) -> Any:
    if not is_number(value):
        raise QueryError(errors.INVALID_REQUEST, f"{field} must be a number")
    return value


def not_found(session_id: str) -> QueryError:
    return QueryError(errors.SESSION_NOT_FOUND, f'session "{session_id}" not found', session_id=session_id)


def conflict(session_id: Any) -> QueryError:
    return QueryError(
        errors.SOURCE_CONFLICT,
        f'session source headers conflict for session "{session_id}"',
        session_id=session_id if isinstance(session_id, str) else None,
    )


def as_header(value: Any) -> Header:
    """Backends return Header objects; in-process test doubles may return plain dicts."""
    if isinstance(value, Header):
        return value
    if isinstance(value, dict):
        return Header.from_value(value)
    raise TypeError("persistence returned a header that is not a JSON object")


def as_inspection(value: Any) -> Inspection:
    if isinstance(value, Inspection):
        return value
    if isinstance(value, dict) and isinstance(value.get("events"), list):
        return Inspection(
            as_header(value.get("meta")),
            [e if isinstance(e, Event) else Event.from_value(e) for e in value["events"]],
        )
    raise TypeError("persistence returned an inspection that is not {meta, events}")


def as_window(value: Any, first: int, last: int) -> Window:
    """A backend's window, checked to hold exactly the logical events first..last (clipped)."""
    if not isinstance(value, Window) or not isinstance(value.meta, Header):
        raise TypeError("persistence returned a window that is not a Window")
    expected = max(0, min(last, value.length - 1) - first + 1)
    if value.start != first or len(value.events) != expected or not all(
            isinstance(e, Event) for e in value.events):
        raise TypeError(f"persistence returned a window that does not hold events {first}..{last}")
    return value


class SessionQueryService:
    def __init__(
        self,
        store: SessionStore,
        binding: PersistenceBinding,
        *,
        read_window_max: int = 50,
        inspect_concurrency: int = 4,
    ) -> None:
        self.store = store
        self.binding = binding
        self.read_window_max = read_window_max
        self.inspect_concurrency = inspect_concurrency
        self.instance = str(uuid.uuid4())

    # -- shared machinery (§3.0) -----------------------------------------------------------

    def _list_persisted(self, backend: Any, token: CancelToken | None) -> list[Header]:
        """Call ``list`` and wrap its failure (§3.0.4 step 2)."""
        try:
            return [as_header(h) for h in backend.list(token)]
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            if token is not None and token.cancelled:
                raise cancelled() from None
            raise QueryError(
                errors.PERSISTENCE_FAILED,
                f"session persistence listing failed: {inner_message(exc)}",
                cause=inner_message(exc),
            ) from None

    def corpus(self, token: CancelToken | None = None) -> list[Record]:
        """§3.0.4: one observation of live + persisted, newest first."""
        check_cancelled(token)
        binding = self.binding.current()
        persisted: dict[Any, Header] = {}
        if binding is not None:
            for header in self._list_persisted(binding.backend, token):
                persisted[header.id] = header
        check_cancelled(token)
        records: dict[Any, Record] = {sid: Record(h, False, True) for sid, h in persisted.items()}
        for header in self.store.headers():
            stored = persisted.get(header.id)
            if stored is not None and not headers_compatible(header, stored):
                raise conflict(header.id)
            records[header.id] = Record(header, True, stored is not None)
        return sorted(records.values(), key=_newest_first)

    def load(self, session_id: str, token: CancelToken | None = None, *,
             outline: bool = False) -> Loaded:
        """§3.0.5 single-target load. ``outline``: the caller reads no chunk payloads, so a
        backend that can may return packed chunk members as ``records.ChunkOutline``s."""
        live = self._live(session_id, token)
        if live is not None:
            return live

        def read(backend: Any) -> tuple[Header, list[Event]]:
            method = getattr(backend, "inspect_outline", None) if outline else None
            if method is None:
                method = backend.inspect
            inspection = as_inspection(method(session_id, token))
            return inspection.meta, inspection.events

        meta, events = self._load_persisted(session_id, token, read)
        if isinstance(events, Loaded):
            return events
        return Loaded(session_id, meta, list(events), False)

    def load_window(self, session_id: str, first: int, last: int,
                    token: CancelToken | None = None) -> LoadedWindow:
        """§3.0.5 for the logical events ``first..last`` (first >= 0) only: a backend with
        ``inspect_window`` reads just those; any other is inspected whole (same result)."""
        live = self._live(session_id, token)
        if live is not None:
            return LoadedWindow.of(live, first, last)

        def read(backend: Any) -> tuple[Header, Window]:
            method = getattr(backend, "inspect_window", None)
            if method is not None:
                window = as_window(method(session_id, first, last, token), first, last)
            else:
                inspection = as_inspection(backend.inspect(session_id, token))
                events = inspection.events
                window = Window(inspection.meta, len(events), first, list(events[first:last + 1]))
            return window.meta, window

        meta, window = self._load_persisted(session_id, token, read)
        if isinstance(window, Loaded):
            return LoadedWindow.of(window, first, last)
        return LoadedWindow(session_id, meta, window.length, window.start, window.events)

    def _live(self, session_id: str, token: CancelToken | None) -> Loaded | None:
        """Steps 1–2: a live target is returned without consulting persistence."""
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is None:
            return None
        check_cancelled(token)
        return Loaded(session_id, live.header, live.events, True, live.fold)

    def _load_persisted(self, session_id: str, token: CancelToken | None,
                        read: Any) -> tuple[Header, Any]:
        """Steps 3–8 around one inspecting call ``read(backend) -> (meta, payload)``. When the id
        became live meanwhile, the payload is that live ``Loaded`` instead."""
        binding = self.binding.current()
        if binding is None:
            raise not_found(session_id)
        backend = binding.backend
        listed = next((h for h in self._list_persisted(backend, token) if h.id == session_id), None)
        check_cancelled(token)
        if listed is None:
            raise not_found(session_id)
        meta, payload = self._inspect_call(backend, session_id, token, read)
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is not None:  # attached while we inspected: live wins, no list/inspect check
            return live.header, Loaded(session_id, live.header, live.events, True, live.fold)
        if not headers_compatible(listed, meta):
            raise conflict(session_id)
        check_cancelled(token)
        return meta, payload

    @staticmethod
    def _inspect(backend: Any, session_id: str, token: CancelToken | None) -> Inspection:
        def read(b: Any) -> tuple[None, Inspection]:
            return None, as_inspection(b.inspect(session_id, token))

        return SessionQueryService._inspect_call(backend, session_id, token, read)[1]

    @staticmethod
    def _inspect_call(backend: Any, session_id: str, token: CancelToken | None, read: Any) -> Any:
        """Run one inspecting backend call, mapping its failure (§3.0.5 step 5)."""
        try:
            return read(backend)
        except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
            if token is not None and token.cancelled:
                raise cancelled() from None
            inner = inner_message(exc)
            if isinstance(exc, SessionPersistenceCorruptionError):
                raise QueryError(
                    errors.CORRUPT_SESSION,
                    f'stored session "{session_id}" is corrupt: {inner}',
                    cause=inner,
                    session_id=session_id,
                ) from None
            raise QueryError(
                errors.PERSISTENCE_FAILED,
                f'failed to inspect session "{session_id}": {inner}',
                cause=inner,
                session_id=session_id,
            ) from None

    # -- listing (§3.1, §3.2) ----------------------------------------------------------------

    def list_sessions(self, token: CancelToken | None = None) -> list[wire.SessionRecord]:
        return [r.to_wire() for r in self.corpus(token)]

    def filter_sessions(self, filters: Any, token: CancelToken | None = None) -> list[wire.SessionRecord]:
        clauses = validate_session_filters(filters)
        return [
            r.to_wire()
            for r in self.corpus(token)
            if session_matches(clauses, r.header, r.live, r.persisted)
        ]

    # -- one session (§3.3–§3.7) ---------------------------------------------------------------

    def list_events(self, session_id: Any, token: CancelToken | None = None) -> list[wire.SessionEventRecord]:
        session_id = require_string(session_id, "sessionId")
        loaded = self.load(session_id, token, outline=True)  # records carry no payloads
        classes = loaded.fold().classes()
        record = wire.SessionEventRecord  # positional: sessionId, seq, type, time, surface
        return [record(session_id, i, e.type, e.time, surface)
                for i, (e, surface) in enumerate(zip(loaded.events, classes))]

    def filter_events(
        self, session_id: Any, filters: Any, token: CancelToken | None = None
    ) -> list[wire.SessionEventSearchDocument]:
        session_id = require_string(session_id, "sessionId")
        clauses = validate_event_filters(filters)
        loaded = self.load(session_id, token)
        fold = loaded.fold()
        predicate = EventPredicate(clauses)
        out = []
        for event, text in documents(loaded.events):
            seq = int(event.seq)
            surface = fold.surface(seq)
            if predicate(seq, event.type, event.time, surface, text):
                out.append(
                    wire.SessionEventSearchDocument(
                        sessionId=session_id, seq=seq, type=event.type, time=event.time,
                        surface=surface, text=text,
                    )
                )
        return out

    def _window_bound(self, value: Any, name: str) -> int:
        if value is UNSET:
            return 0
        if not (is_integer(value) and 0 <= value <= self.read_window_max):
            raise QueryError(
                errors.INVALID_WINDOW,
                f"{name} must be an integer between 0 and {self.read_window_max}",
            )
        return int(value)

    def read_event(
        self,
        session_id: Any,
        seq: Any,
        before: Any = UNSET,
        after: Any = UNSET,
        token: CancelToken | None = None,
    ) -> wire.SessionEventWindow:
        session_id = require_string(session_id, "sessionId")
        require_number(seq, "seq")
        before = self._window_bound(before, "before")
        after = self._window_bound(after, "after")
        # The window around a seq that can name an event; other seqs load nothing but still
        # run the load, whose errors come first (§3.12).
        first, last = 0, -1
        if is_nonneg_safe_integer(seq):
            first, last = max(0, int(seq) - before), int(seq) + after
        loaded = self.load_window(session_id, first, last, token)
        check_cancelled(token)
        index = target_in(session_id, loaded.length, seq, lambda i: loaded.events[i - loaded.start])
        start = max(0, index - before)
        end = min(loaded.length - 1, index + after)
        window = loaded.events[start - loaded.start : end - loaded.start + 1]
        target = window[index - start]
        for event in [target] + [e for e in window if e is not target]:
            _check_message_shape(event, session_id)
        return wire.SessionEventWindow(
            session=wire.raw(loaded.header),
            target=wire.raw(target),
            events=[wire.raw(e) for e in window],
            startSeq=start,
            endSeq=end,
        )

    def read_surface(self, session_id: Any, token: CancelToken | None = None) -> wire.SessionSurfaceSnapshot:
        session_id = require_string(session_id, "sessionId")
        loaded = self.load(session_id, token)
        fold = loaded.fold()
        surface = [loaded.events[s] for s in fold.nodes]
        for event in surface:
            _check_message_shape(event, session_id)
        last = loaded.events[-1].seq if loaded.events else None
        return wire.SessionSurfaceSnapshot(
            session=wire.raw(loaded.header),
            capturedThroughSeq=last,
            events=[wire.raw(e) for e in surface],
        )

    def read_session(self, session_id: Any, token: CancelToken | None = None) -> wire.SessionLogSnapshot:
        session_id = require_string(session_id, "sessionId")
        loaded = self.load(session_id, token)
        problem = replay_error(loaded.header.to_value(), loaded.events, session_id)
        if problem:
            raise QueryError(errors.CORRUPT_SESSION, problem, session_id=session_id)
        return wire.SessionLogSnapshot(
            session=wire.raw(loaded.header), events=[wire.raw(e) for e in loaded.events]
        )

    # -- titles (§3.8) ---------------------------------------------------------------------

    def read_titles(self, session_ids: Any, token: CancelToken | None = None) -> list[wire.SessionTitleObservationResult]:
        if not isinstance(session_ids, list) or not all(isinstance(s, str) for s in session_ids):
            raise QueryError(errors.INVALID_REQUEST, "sessionIds must be an array of strings")
        unique = list(dict.fromkeys(session_ids))
        if not unique:
            return []
        check_cancelled(token)
        results: dict[str, wire.SessionTitleObservationResult] = {}
        pending: list[str] = []
        for sid in unique:
            live = self.store.snapshot(sid)
            if live is None:
                pending.append(sid)
            else:
                results[sid] = _live_title_result(sid, live)
        if pending:
            self._resolve_persisted_titles(pending, results, token)
        return [results[sid] for sid in unique]

    def _resolve_persisted_titles(
        self, pending: list[str], results: dict[str, Any], token: CancelToken | None
    ) -> None:
        binding = self.binding.current()
        if binding is None:
            for sid in pending:
                results[sid] = _rejected(sid, not_found(sid))
            return
        backend = binding.backend
        try:
            listed = {h.id: h for h in self._list_persisted(backend, token)}
        except QueryError as exc:
            if exc.code == errors.ABORTED:
                raise
            for sid in pending:
                results[sid] = _rejected(sid, exc)
            return
        claims = iter(pending)
        claim_lock = threading.Lock()

        def next_id() -> str | None:
            with claim_lock:
                if token is not None and token.cancelled:
                    return None
                return next(claims, None)

        def worker() -> None:
            while (sid := next_id()) is not None:
                results[sid] = self._persisted_title(backend, sid, listed.get(sid), token)

        workers = [threading.Thread(target=worker, daemon=True)
                   for _ in range(min(self.inspect_concurrency, len(pending)))]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        check_cancelled(token)

    def _persisted_title(
        self, backend: Any, sid: str, listed: Header | None, token: CancelToken | None
    ) -> wire.SessionTitleObservationResult:
        try:
            if listed is None:
                live = self.store.snapshot(sid)
                if live is None:
                    raise not_found(sid)
                return _live_title_result(sid, live)
            meta, title = self._persisted_title_event(backend, sid, token)
            live = self.store.snapshot(sid)
            if live is not None:
                return _live_title_result(sid, live)
            if not headers_compatible(listed, meta):
                raise conflict(sid)
            return _title_result(sid, meta, title)
        except QueryError as exc:
            return _rejected(sid, exc)

    def _persisted_title_event(self, backend: Any, sid: str,
                               token: CancelToken | None) -> tuple[Header, Event | None]:
        """The header and last ``session/title`` event of a persisted log, with the errors of
        ``inspect``. A backend with ``inspect_window`` verifies the log (once per revision) and
        says where the title is, so only that event is read; if the log moved between the two
        reads, it is inspected whole."""
        method = getattr(backend, "inspect_window", None)
        if method is not None:
            def window(first: int, last: int) -> Window:
                check_cancelled(token)  # no backend call starts after a cancel
                return self._inspect_call(
                    backend, sid, token, lambda b: (None, as_window(method(sid, first, last, token), first, last)))[1]

            shape = window(0, -1)  # nothing read but the verification and where the title is
            if shape.title is None:
                return shape.meta, None
            found = title_window(window, shape.title)
            if found is not None:
                return found.meta, found.events[0]
            check_cancelled(token)
        inspection = self._inspect(backend, sid, token)
        return inspection.meta, last_title_event(inspection.events)

    def read_title(self, session_id: Any, token: CancelToken | None = None) -> wire.SessionTitleObservation:
        session_id = require_string(session_id, "sessionId")
        result = self.read_titles([session_id], token)[0]
        if result.status == "fulfilled":
            return result.value  # type: ignore[return-value]
        reason = result.reason
        raise QueryError(
            reason.code, reason.message,  # type: ignore[union-attr]
            cause=None if reason.cause is UNSET else reason.cause,  # type: ignore[union-attr]
            session_id=session_id,
        )

    # -- lineage and traces (§3.9, §3.10, §5) --------------------------------------------

    def trace_session(self, session_id: Any, token: CancelToken | None = None) -> wire.SessionLineageTrace:
        session_id = require_string(session_id, "sessionId")
        records = self.corpus(token)
        check_cancelled(token)
        return lineage.trace(records, session_id)

    def trace_event(self, session_id: Any, seq: Any, token: CancelToken | None = None) -> wire.SessionEventTraceObservation:
        session_id = require_string(session_id, "sessionId")
        require_number(seq, "seq")
        loaded = self.load(session_id, token, outline=True)  # relationships need no payloads
        check_cancelled(token)
        index = target_index(loaded, seq)
        return trace.trace_event(loaded, index)


def _newest_first(record: Record) -> tuple[Any, Any]:
    created = record.header.created_at
    return (-created if is_number(created) else 0, _sort_id(record.header.id))


def _sort_id(value: Any) -> tuple[int, str]:
    # Code-point order for string ids; anything else (never from our backends) sorts last.
    return (0, value) if isinstance(value, str) else (1, repr(value))


def target_index(loaded: Loaded, seq: Any) -> int:
    """The event at array index ``seq`` whose own seq is ``seq``; EVENT_NOT_FOUND otherwise."""
    return target_in(loaded.session_id, len(loaded.events), seq, loaded.events.__getitem__)


def target_in(session_id: str, length: int, seq: Any, event_at: Any) -> int:
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


def _check_message_shape(event: Event, session_id: str) -> None:
    problem = message_shape_error(event, f"session event at seq {json_number(event.seq)}")
    if problem:
        raise QueryError(errors.CORRUPT_SESSION, problem, session_id=session_id)


def _rejected(sid: str, exc: QueryError) -> wire.SessionTitleObservationResult:
    reason = wire.RejectionReason(code=exc.code, message=exc.message)
    if exc.cause is not None:
        reason.cause = exc.cause
    return wire.SessionTitleObservationResult(sessionId=sid, status="rejected", reason=reason)


def _live_title_result(sid: str, live: LiveSnapshot) -> wire.SessionTitleObservationResult:
    # The store remembers where the last title event is: no scan of a long live log.
    event = None if live.title_seq is None else live.events[live.title_seq]
    return _title_result(sid, live.header, event)


def _title_result(sid: str, header: Header, event: Event | None) -> wire.SessionTitleObservationResult:
    try:
        value = wire.SessionTitleObservation(session=wire.raw(header))
        title = title_from(sid, event)
        if title is not None:
            value.title = title
    except QueryError as exc:
        return _rejected(sid, exc)
    return wire.SessionTitleObservationResult(sessionId=sid, status="fulfilled", value=value)


def title_window(read: Callable[[int, int], Window], seq: int) -> Window | None:
    """The window holding just the ``session/title`` event at ``seq``, where a verified log said
    its last title is (``Window.title``); None when the log has moved since and ``seq`` is no
    longer its last title."""
    found = read(seq, seq)
    if found.title == seq and found.events and found.events[0].type == "session/title":
        return found
    return None


def last_title_event(events: Sequence[Event]) -> Event | None:
    return next((e for e in reversed(events) if e.type == "session/title"), None)


def title_from(sid: str, event: Event | None) -> wire.SessionTitleSnapshot | None:
    """The title fold, given the last ``session/title`` event: its source copied by kind."""
    if event is None:
        return None
    data = event.data()
    malformed = QueryError(
        errors.CORRUPT_SESSION,
        f'session "{sid}" has a malformed session/title event at seq {json_number(event.seq)}',
        session_id=sid,
    )
    if not isinstance(data, dict) or not isinstance(data.get("title"), str):
        raise malformed
    seqs, source = data.get("messageSeqs"), data.get("source")
    if not isinstance(seqs, list) or not isinstance(source, dict):
        raise malformed
    kind = source.get("kind")
    if kind in ("fallback", "user"):
        copied: dict[str, Any] = {"kind": kind}
    elif kind == "provider":
        if not isinstance(source.get("provider"), str):
            raise malformed
        copied = {"kind": "provider", "provider": source["provider"]}
        if "model" in source:
            if not isinstance(source["model"], dict):
                raise malformed
            copied["model"] = source["model"]
    else:
        raise malformed
    return wire.SessionTitleSnapshot(
        title=data["title"], messageSeqs=seqs, source=copied, eventSeq=event.seq, updatedAt=event.time
    )
