"""The exact query service (semantics.md §3–§5): live-preferred reads over the live store and the
persistence binding, re-read on every call.

Every operation is synchronous and runs in a worker thread; a started backend call is therefore
always awaited until it settles, and cancellation is observed at the checkpoints the spec names.
The service keeps no cache, no listener and no persisted state between calls. Loading is in
``loading``, titles in ``titles``; both titles and the tree's labels (``labels``) run on the
service's one worker pool, ``self.pool``.

Requests arrive decoded: each method's params struct (model/params.py, server/handlers/) has
checked the JSON kind of every field it can (semantics.md §3.0.2). What the service still checks
is what depends on its configuration or its own language: window bounds and filters.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET, Raw

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import QueryError
from ..model import wire
from ..model.event import Event, Header
from ..model.timeline import SessionTimeline
from ..model.usage import SessionUsage, UsageSummary
from ..model.view import SessionView
from ..persistence.mount.binding import PersistenceBinding
from ..session.store import SessionStore
from ..session.validate import message_shape_error, replay_error
from ..values import is_integer, is_nonneg_safe_integer, json_number
from . import lineage, timeline, trace
from .filters import (
    EventPredicate,
    session_matches,
    validate_event_filters,
    validate_session_filters,
)
from .loaded import (
    Loaded,
    Record,
    check_cancelled,
    target_in,
    target_index,
)
from .loading import Entry, Loader
from .text import documents
from .titlefold import last_title_event
from .titles import Titles, title_result
from .usage_service import UsageService
from .workers import WorkerPool

# What follows a SessionRecord's raw header on the wire, by (live, persisted), as msgspec encodes
# it: its other members, then the next record's opening or the array's end.
_FLAGS = {
    (live, persisted): b',"live":%s,"persisted":%s}'
    % (b"true" if live else b"false", b"true" if persisted else b"false")
    for live in (False, True)
    for persisted in (False, True)
}
_NEXT = {key: flags + b',{"header":' for key, flags in _FLAGS.items()}
_LAST = {key: flags + b"]" for key, flags in _FLAGS.items()}
_NO_SESSIONS = Raw(b"[]")


class SessionQueryService:
    def __init__(
        self,
        store: SessionStore,
        binding: PersistenceBinding,
        *,
        read_window_max: int = 50,
        inspect_concurrency: int = 4,
        prices: str | None = None,
    ) -> None:
        self.store = store
        self.binding = binding
        self.read_window_max = read_window_max
        self.inspect_concurrency = inspect_concurrency
        self.instance = str(uuid.uuid4())
        self.loader = Loader(store, binding)
        # The one pool for reads that fan out over sessions (titles, sidebar labels).
        self.pool = WorkerPool(inspect_concurrency)
        self.titles = Titles(self.loader, self.pool, inspect_concurrency)
        self.usage = UsageService(self.loader, prices)  # readUsage, usageSummary (usage.md)
        # listSessions' JSON of the last observation (list_sessions_json)
        self._listed_json: tuple[list[Entry], Raw] | None = None

    # -- observations (§3.0.4, §3.0.5), shared with the tree views ----------------------------

    def corpus(self, token: CancelToken = NULL_TOKEN) -> list[Record]:
        return self.loader.corpus(token)

    def load(
        self, session_id: str, token: CancelToken = NULL_TOKEN, *, outline: bool = False
    ) -> Loaded:
        return self.loader.load(session_id, token, outline=outline)

    # -- listing (§3.1, §3.2) ----------------------------------------------------------------

    def list_sessions(self, token: CancelToken = NULL_TOKEN) -> list[wire.SessionRecord]:
        return [r.to_wire() for r in self.corpus(token)]

    def list_sessions_json(self, token: CancelToken = NULL_TOKEN) -> Raw:
        """``list_sessions`` as the exact JSON msgspec encodes it to, joined from the headers'
        raw bytes in one copy: no Record, SessionRecord or Raw per session (listSessions on
        the wire). Each raw header is followed by its flags and the next record's opening."""
        entries = self.loader.observe(token)
        last = self._listed_json
        if last is not None and last[0] is entries:  # the same observation (Loader.observe)
            return last[1]
        if not entries:
            return _NO_SESSIONS
        pieces = [b'[{"header":'] * (2 * len(entries) + 1)
        pieces[1::2] = [h.raw for h, _, _ in entries]
        pieces[2::2] = [_NEXT[live, persisted] for _, live, persisted in entries]
        _, live, persisted = entries[-1]
        pieces[-1] = _LAST[live, persisted]
        listed = Raw(b"".join(pieces))
        self._listed_json = (entries, listed)
        return listed

    def filter_sessions(
        self, filters: Any, token: CancelToken = NULL_TOKEN
    ) -> list[wire.SessionRecord]:
        """``filters`` as the request holds them: validated here first (§3.2 step 1)."""
        clauses = validate_session_filters(filters)
        return [
            r.to_wire()
            for r in self.corpus(token)
            if session_matches(clauses, r.header, r.live, r.persisted)
        ]

    # -- one session (§3.3–§3.7) ---------------------------------------------------------------

    def list_events(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> list[wire.SessionEventRecord]:
        loaded = self.load(session_id, token, outline=True)  # records carry no payloads
        return _records(session_id, loaded.events, loaded.fold().classes())

    def filter_events(
        self, session_id: str, filters: Any, token: CancelToken = NULL_TOKEN
    ) -> list[wire.SessionEventSearchDocument]:
        """``filters`` as the request holds them: validated here, before the load (§3.4)."""
        clauses = validate_event_filters(filters)
        loaded = self.load(session_id, token)
        fold = loaded.fold()
        loaded.stage("filtering")  # every event's text: about half the read's time
        predicate = EventPredicate(clauses)
        out = []
        for event, text in documents(loaded.events):
            seq = int(event.seq)
            surface = fold.surface(seq)
            if predicate(seq, event.type, event.time, surface, text):
                out.append(
                    wire.SessionEventSearchDocument(
                        sessionId=session_id,
                        seq=seq,
                        type=event.type,
                        time=event.time,
                        surface=surface,
                        text=text,
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
        session_id: str,
        seq: int | float,
        before: Any = UNSET,
        after: Any = UNSET,
        token: CancelToken = NULL_TOKEN,
    ) -> wire.SessionEventWindow:
        """``seq`` is any JSON number; ``before`` and ``after`` are as the request holds them
        (UNSET when absent): their bound is the configuration's, checked here before the load."""
        before = self._window_bound(before, "before")
        after = self._window_bound(after, "after")
        # The window around a seq that can name an event; other seqs load nothing but still
        # run the load, whose errors come first (§3.12).
        first, last = 0, -1
        if is_nonneg_safe_integer(seq):
            first, last = max(0, int(seq) - before), int(seq) + after
        loaded = self.loader.load_window(session_id, first, last, token)
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

    def read_surface(
        self, session_id: str, token: CancelToken = NULL_TOKEN, through_seq: int | None = None
    ) -> wire.SessionSurfaceSnapshot:
        """The current surface, or with ``through_seq`` the surface after events
        ``0..through_seq`` (views.md §1): past the last seq only after the whole log folded."""
        loaded = self.load(session_id, token)
        fold = loaded.fold()
        if through_seq is None:
            nodes = fold.nodes
        else:
            target_index(loaded, through_seq)  # EVENT_NOT_FOUND past the last seq
            nodes = timeline.surface_through(loaded.events, fold, through_seq)
        surface = [loaded.events[s] for s in nodes]
        for event in surface:
            _check_message_shape(event, session_id)
        last = loaded.events[-1].seq if loaded.events else None
        return wire.SessionSurfaceSnapshot(
            session=wire.raw(loaded.header),
            capturedThroughSeq=last if through_seq is None else through_seq,
            events=[wire.raw(e) for e in surface],
        )

    def read_timeline(self, session_id: str, token: CancelToken = NULL_TOKEN) -> SessionTimeline:
        """views.md §2: one single-target load, one fold, one pass."""
        loaded = self.load(session_id, token, outline=True)  # no chunk payload is read
        fold = loaded.fold()
        check_cancelled(token)
        return timeline.build_timeline(
            wire.raw(loaded.header), loaded.header, loaded.events, fold, loaded.progress
        )

    def read_session(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> wire.SessionLogSnapshot:
        loaded = self.load(session_id, token)
        loaded.stage("folding")
        _check_replay(session_id, loaded.header, loaded.events)
        return wire.SessionLogSnapshot(
            session=wire.raw(loaded.header), events=[wire.raw(e) for e in loaded.events]
        )

    def read_session_view(
        self, session_id: str, with_log: bool, token: CancelToken = NULL_TOKEN
    ) -> SessionView:
        """views.md §3.2 [ours]: ``read_timeline``, ``list_events``, ``read_title`` and with
        ``with_log`` ``read_session``, from one load (each of them reads the log whole), with
        their errors in that order."""
        loaded = self.load(session_id, token, outline=not with_log)
        fold = loaded.fold()
        check_cancelled(token)
        header = loaded.header
        view = SessionView(
            timeline=timeline.build_timeline(
                wire.raw(header), header, loaded.events, fold, loaded.progress
            ),
            events=_records(session_id, loaded.events, fold.classes()),
            title=title_result(session_id, header, last_title_event(loaded.events)),
        )
        if with_log:
            _check_replay(session_id, header, loaded.events)
            view.log = [wire.raw(e) for e in loaded.events]
        return view

    # -- usage (usage.md) -------------------------------------------------------------------

    def read_usage(
        self, session_id: str, include_descendants: bool = False, token: CancelToken = NULL_TOKEN
    ) -> SessionUsage:
        return self.usage.read_usage(session_id, include_descendants, token)

    def usage_summary(
        self,
        filters: Any,
        group_by: str,
        since: Any = None,
        until: Any = None,
        time_zone: str | None = None,
        token: CancelToken = NULL_TOKEN,
    ) -> UsageSummary:
        """``filters`` as the request holds them (UNSET when absent: every session); the bounds
        as decoded (a safe integer or None); no zone is UTC."""
        return self.usage.usage_summary(
            [] if filters is UNSET else filters,
            group_by,
            None if since is None else int(since),
            None if until is None else int(until),
            time_zone or "UTC",
            token,
        )

    # -- titles (§3.8) ------------------------------------------

    def read_titles(
        self, session_ids: list[str], token: CancelToken = NULL_TOKEN
    ) -> list[wire.SessionTitleObservationResult]:
        return self.titles.read_titles(session_ids, token)

    def read_title(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> wire.SessionTitleObservation:
        return self.titles.read_title(session_id, token)

    # -- lineage and traces (§3.9, §3.10, §5) --------------------------------------------

    def trace_session(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> wire.SessionLineageTrace:
        records = self.corpus(token)
        check_cancelled(token)
        return lineage.trace(records, session_id)

    def trace_event(
        self, session_id: str, seq: int | float, token: CancelToken = NULL_TOKEN
    ) -> wire.SessionEventTraceObservation:
        loaded = self.load(session_id, token, outline=True)  # relationships need no payloads
        check_cancelled(token)
        index = target_index(loaded, seq)
        return trace.trace_event(loaded, index)


def _records(
    session_id: str, events: Sequence[Event], classes: list[str]
) -> list[wire.SessionEventRecord]:
    record = wire.SessionEventRecord  # positional: sessionId, seq, type, time, surface
    return [
        record(session_id, i, e.type, e.time, surface)
        for i, (e, surface) in enumerate(zip(events, classes, strict=False))
    ]


def _check_replay(session_id: str, header: Header, events: Sequence[Event]) -> None:
    """§3.7: a log that does not replay is CORRUPT_SESSION."""
    problem = replay_error(header.to_value(), events, session_id)
    if problem:
        raise QueryError(errors.CORRUPT_SESSION, problem, session_id=session_id)


def _check_message_shape(event: Event, session_id: str) -> None:
    problem = message_shape_error(event, f"session event at seq {json_number(event.seq)}")
    if problem:
        raise QueryError(errors.CORRUPT_SESSION, problem, session_id=session_id)
