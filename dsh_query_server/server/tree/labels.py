"""Session labels and lag counts for the tree views (protocol.md §6), read through the service.

A label is a session's title, else its first user message, plus its event count. Live sessions
are projected from memory. Persisted-only ones are read like ``readTitles`` reads titles
(semantics.md §3.8): on the shared worker pool (``workers.run_claims``, at most
``persistedInspectConcurrency`` at a time), each backend failure mapped by the service, the
inspected header checked against the listed one, a session that went live meanwhile read live.
A failure only loses that label (the tree shows the id instead).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...cancel import NULL_TOKEN, CancelToken
from ...errors import QueryError
from ...model.event import Event, Header
from ...model.text import extract_text
from ...persistence.contract.backend import PersistenceBackend
from ...persistence.contract.results import Window
from ...persistence.mount.binding import Binding
from ...persistence.reads import StoredLogs
from ...progress import Tally
from ...query.loaded import Record, check_cancelled, conflict
from ...query.titlefold import title_from, title_window
from ...query.titles import TITLES_READ
from ...query.workers import run_claims
from ...session.store import LiveSnapshot
from ...values import is_nonneg_safe_integer

if TYPE_CHECKING:
    from ...query.service import SessionQueryService

log = logging.getLogger(__name__)

LABEL_EVENTS = 64  # events a persisted label reads from the start of the log (and of its seed)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The part of a log the labels need; projected right after each load, never retained."""

    title: str | None
    first_message: str | None
    events: int | None


@dataclass(frozen=True, slots=True)
class Lag:
    """Live-versus-persisted event counts of a session that is both."""

    live: int
    persisted: int | None  # None: unknown

    @property
    def lagging(self) -> bool:
        return self.persisted is not None and self.persisted < self.live


# -- projections -----------------------------------------------------------------------------


def _seed(header: Header) -> int:
    return int(header.seed_length) if is_nonneg_safe_integer(header.seed_length) else 0


def _first_text(events: Iterable[Event]) -> str | None:
    for event in events:
        if event.type == "user/message":
            text = extract_text(event)
            if text:
                return text
    return None


def first_user_text(header: Header, events: Sequence[Event]) -> str | None:
    # A forked or sub-agent log starts with its seed (the parent's history), whose first message
    # is the parent's; the first message after the seed is what this session was about.
    seed = _seed(header)
    for start in (seed, 0) if seed else (0,):
        # by index: a live log builds only the events it reads
        text = _first_text(events[index] for index in range(start, len(events)))
        if text:
            return text
    return None


def _title_text(session_id: str, title_event: Event | None) -> str | None:
    try:
        snapshot = title_from(session_id, title_event)
    except QueryError:  # a malformed title event just falls back, like a rejected readTitles entry
        return None
    if snapshot is None or not isinstance(snapshot.title, str):
        return None
    return snapshot.title or None


def project(
    session_id: str, header: Header, events: Sequence[Event], title_event: Event | None
) -> SessionInfo:
    return SessionInfo(
        _title_text(session_id, title_event), first_user_text(header, events), len(events)
    )


@dataclass(frozen=True, slots=True)
class _Head:
    """A persisted label as read, with the title read the title memo may keep: the header and
    title event read, and the revision they were read at (None: unknown, or the log moved
    between the label's windows)."""

    meta: Header
    info: SessionInfo
    title: Event | None
    revision: str | None


def _project_head(session_id: str, read: Callable[[int, int], Window]) -> _Head:
    head = read(0, LABEL_EVENTS - 1)
    seed = _seed(head.meta)
    if seed < LABEL_EVENTS:
        after_seed = head.events[seed:]
    else:
        after_seed = read(seed, seed + LABEL_EVENTS - 1).events
    first = _first_text(after_seed) or (_first_text(head.events) if seed else None)
    found = None if head.title is None else title_window(read, head.title)
    title_event = None if found is None else found.events[0]
    info = SessionInfo(_title_text(session_id, title_event), first, head.length)
    if head.title is None:
        revision = head.revision
    else:  # the title window's own revision, where it is that of the head read
        same = found is not None and found.revision == head.revision
        revision = head.revision if same else None
    return _Head(head.meta, info, title_event, revision)


def project_windows(session_id: str, read: Callable[[int, int], Window]) -> SessionInfo:
    """The label of a persisted log read window by window (``read(first, last)``, the door's
    ``LogWindows``): a backend that reads windows verifies the log once per revision and knows
    where its title is, so a label costs a few small windows instead of the whole log (any other
    backend's log is inspected once). The first message is looked for among the first
    LABEL_EVENTS events after the seed (then of the log), not further, whatever the backend."""
    return _project_head(session_id, read).info


def _live_info(session_id: str, live: LiveSnapshot) -> SessionInfo:
    title = None if live.title_seq is None else live.events[live.title_seq]
    return project(session_id, live.header, live.events, title)


# -- reads through the service ---------------------------------------------------------------


def read_labels(
    service: SessionQueryService,
    records: Sequence[Record],
    token: CancelToken = NULL_TOKEN,
    budget_seconds: float | None = None,
) -> dict[str, SessionInfo]:
    """Labels for the records of one level. Persisted-only logs are read on the shared pool and
    projected to their small SessionInfo before the worker claims the next id. Past
    ``budget_seconds`` no further log is read (the rest keep their id as label)."""
    out: dict[str, SessionInfo] = {}
    pending: dict[str, Header] = {}
    for record in records:
        sid = record.header.id
        live = service.store.snapshot(sid) if record.live else None
        if live is not None:
            out[sid] = _live_info(sid, live)
        elif record.persisted and isinstance(sid, str):
            pending[sid] = record.header
    binding = service.binding.current()
    if not pending or binding is None:
        return out
    # A titled log whose title was read at the revision listed now (title memo): its label is
    # that title and its length, with no log read; a later label without a title reads it.
    for sid, known in service.titles.known(list(pending), token).items():
        title = _title_text(sid, known.title)
        if title is not None and known.length is not None and service.store.snapshot(sid) is None:
            out[sid] = SessionInfo(title, None, known.length)
            del pending[sid]

    # "reading titles 12 of 50 sessions" as readTitles counts: the logs read for their labels,
    # over what the level's listing left of the bar (context.py gives it the first half).
    tally = Tally(token.progress, len(pending), TITLES_READ)

    def work(sid: str) -> None:
        try:
            out[sid] = _persisted_info(service, binding.logs, sid, pending[sid], token)
        except QueryError:  # mapped by the service; the label falls back to the id
            pass
        except Exception:  # a bug in a projection: logged, and only this label is lost
            log.exception("label of session %s failed", sid)
        tally.one()

    # A persisted label costs a whole-log read the first time a log is seen at a revision (then
    # a few window reads); a page of long logs could keep the sidebar waiting for many seconds.
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    run_claims(pending, work, service.inspect_concurrency, token, deadline, pool=service.pool)
    check_cancelled(token)
    return out


def _persisted_info(
    service: SessionQueryService,
    logs: StoredLogs,
    sid: str,
    listed: Header,
    token: CancelToken,
) -> SessionInfo:
    head = _project_head(sid, logs.windows(sid, token).read)
    info = head.info
    known = service.titles.remember(
        logs, sid, head.revision, listed, head.meta, head.title, info.events
    )
    check_cancelled(token)
    live = service.store.snapshot(sid)
    if live is not None:  # attached while we read: live wins, as in readTitles
        return _live_info(sid, live)
    if not known.compatible:
        raise conflict(sid)
    return info


def read_lags(
    service: SessionQueryService,
    records: Sequence[Record],
    known: Callable[[Binding], Mapping[str, int]],
    token: CancelToken = NULL_TOKEN,
) -> dict[str, Lag]:
    """ "lagging" = live and persisted, and the persisted copy holds fewer events than the live
    log. ``known(binding)`` is what the checkpointer already knows it holds under that binding
    (every live session in auto mode); only a session it has not met (manual mode, read-only
    mount, first 200 ms) costs one ``stored_count`` (cached by the JSONL backend). A failure
    there just leaves the count unknown (no badge)."""
    both = [r.header.id for r in records if r.live and r.persisted]
    if not both:
        return {}
    lengths = service.store.lengths()
    binding = service.binding.current()
    counts = {} if binding is None else known(binding)
    out: dict[str, Lag] = {}
    for sid in both:
        if sid not in lengths:
            continue
        count = counts.get(sid)
        if count is None and binding is not None:
            check_cancelled(token)
            count = _stored_count(binding.backend, sid)
        out[sid] = Lag(lengths[sid], count)
    return out


def _stored_count(backend: PersistenceBackend, sid: str) -> int | None:
    try:
        return backend.stored_count(sid)
    except Exception:  # noqa: BLE001 - any failure: count unknown, no badge
        return None


__all__ = [
    "LABEL_EVENTS",
    "Lag",
    "SessionInfo",
    "first_user_text",
    "project",
    "project_windows",
    "read_labels",
    "read_lags",
]
