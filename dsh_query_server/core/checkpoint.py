"""The checkpointer: moves live events that are not yet persisted into the mounted backend.

It remembers, per binding, how many events of each live session the backend holds. The first
time it meets a session under a binding it asks the backend (``stored_count``), so a restart or a
remount never writes a seq twice; after a failure it forgets that count and asks again, which
also covers an append that reached the disk but reported an error. Flushes are serialized by one
lock; readers never wait for it because the store is only locked while a batch is copied.

A backend that reads windows gets the reconciliation of postgres.md §3.8 (written by another
server, by ``sync``, or by an in-doubt commit): see ``reconcile``. A failed session is retried
after 0.5 s, doubling to 30 s, on its own (postgres.md §4); a diverged one is suspended until the
next mount, and the others carry on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import errors, jsoncodec
from ..errors import QueryError, inner_message
from ..model.event import Event, Header, headers_compatible
from ..persistence.contract.errors import SessionPersistenceReadOnlyError
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..persistence.reads import StoredLogs
from ..session.store import SessionStore

log = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
COMPARE_WINDOW = 1000  # stored events read per window while reconciling


class Diverged(Exception):
    """The stored log is not a prefix of the live one, nor the live one of it (§3.8)."""

    def __init__(self, session_id: str, where: str) -> None:
        super().__init__(
            f'session "{session_id}" diverged from its persisted copy at {where};'
            " checkpointing it is suspended"
        )


def same_event(live: Event, stored: Event) -> bool:
    """Byte for byte; bytes a backend re-encoded (e.g. a packed row) compare as compact JSON."""
    if live.raw == stored.raw:
        return True
    try:
        return jsoncodec.dumps(jsoncodec.loads(live.raw)) == jsoncodec.dumps(
            jsoncodec.loads(stored.raw)
        )
    except (ValueError, TypeError):
        return False


def reconcile(
    logs: StoredLogs,
    session_id: str,
    header: Header,
    live: list[Event],
    stored: int,
    matched: int,
) -> int:
    """postgres.md §3.8: compare the live log with the stored events below ``stored`` (read
    window by window through the door), from ``matched`` on (events already proven equal, rows being
    immutable). Returns how many leading events now match; raises Diverged at the first
    difference, or for incompatible headers (semantics.md §1.2)."""
    upto = min(stored, len(live))
    pos = min(matched, upto)
    window = None
    if pos == 0:  # the header is compared once, with the first window
        window = logs.stored_window(session_id, 0, max(0, min(upto, COMPARE_WINDOW) - 1))
        if not headers_compatible(header, window.meta):
            raise Diverged(session_id, "its header")
    while pos < upto:
        last = min(upto, pos + COMPARE_WINDOW) - 1
        if window is None:
            window = logs.stored_window(session_id, pos, last)
        for offset in range(last - pos + 1):
            seq = pos + offset
            found = window.events[offset] if offset < len(window.events) else None
            if found is None or found.seq != seq or not same_event(live[seq], found):
                raise Diverged(session_id, f"seq {seq}")
        pos, window = last + 1, None
    return upto


class Checkpointer:
    def __init__(
        self,
        store: SessionStore,
        binding: PersistenceBinding,
        *,
        mode: str = "auto",
        interval_ms: int = 200,
        on_flushed: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.store = store
        self.binding = binding
        self.mode = mode
        self.interval = interval_ms / 1000
        self.on_flushed = on_flushed
        self._flush_lock = threading.Lock()
        # Held by search while it observes the backend (semantics.md §6.5: a revision that moves
        # between its two listings makes it retry, twice and it fails). Our own flushes are the
        # usual mover, so they wait for it; the auto loop just tries again next interval.
        self.quiet = threading.Lock()
        # Called when a flush finds ``quiet`` held: the runtime stops the search index's warm-up
        # (semantics.md §6.5 [ours]), so a checkpoint never waits for a whole background build.
        self.before_wait: Callable[[], None] | None = None
        self._identity: int | None = None
        self._persisted: dict[str, int] = {}
        self._created: set[str] = set()
        self._dirty: set[str] = set()
        self._writing = False
        self._matched: dict[str, int] = {}  # stored events proven equal to the live ones
        self._suspended: dict[str, QueryError] = {}  # diverged sessions (postgres.md §3.8)
        self._backoff: dict[str, tuple[float, float]] = {}  # id -> (retry at, last delay)
        # Bumped after every flush; with the store's generation it keys the pending count, so a
        # status request with nothing changed costs O(1) instead of a pass over every session.
        self._flushes = 0
        self._pending: tuple[tuple[Any, ...], int] | None = None
        self._wake = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        store.subscribe(self._on_store_change)
        binding.subscribe(self._on_mount)

    # -- auto mode -------------------------------------------------------------------------

    def start(self) -> None:
        if self.mode == "auto" and self._thread is None:
            self._dirty.update(self.store.ids())
            self._thread = threading.Thread(target=self._run, name="checkpointer", daemon=True)
            self._thread.start()

    def stop(self, flush: bool = True) -> None:
        """Stop the background loop; by default flush what is pending first (best effort)."""
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(5)
        if flush and self._writable():
            try:
                self.flush()
            except QueryError as exc:
                log.warning("final checkpoint failed: %s", exc.message)

    def _on_store_change(self, kind: str, session_id: str) -> None:
        if kind in ("create", "append"):
            with self._wake:
                self._dirty.add(session_id)
                self._wake.notify_all()

    def _on_mount(self, binding: Binding | None) -> None:
        with self._wake:
            self._dirty.update(self.store.ids())
            self._backoff.clear()  # a new binding is tried at once
            self._wake.notify_all()

    def _ready(self, now: float) -> set[str]:
        """Dirty sessions that are not waiting out a back-off (under ``_wake``)."""
        return {sid for sid in self._dirty if self._backoff.get(sid, (0.0, 0.0))[0] <= now}

    def _next_wait(self, now: float) -> float | None:
        waits = [self._backoff[sid][0] - now for sid in self._dirty if sid in self._backoff]
        return max(0.0, min(waits)) if waits else None

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and not self._ready(time.monotonic()):
                    self._wake.wait(self._next_wait(time.monotonic()))
                if self._stopped:
                    return
            time.sleep(self.interval)  # gather a burst of appends into one batch per session
            with self._wake:
                dirty = self._ready(time.monotonic())
                self._dirty -= dirty
            if not self._writable():
                continue
            if not self.quiet.acquire(blocking=False):  # a search is observing: next interval
                with self._wake:
                    self._dirty |= dirty
                continue
            try:
                # A suspended session waits for a remount (or a manual checkpoint's answer).
                targets = sorted(sid for sid in dirty if sid not in self._suspended)
                _, failures = self._flush_each(targets)
            except QueryError as exc:
                log.warning("checkpoint failed, will retry: %s", exc.message)
                failures = {sid: exc for sid in dirty}
            finally:
                self.quiet.release()
            self._schedule_retries(dirty, failures)

    def _schedule_retries(self, tried: set[str], failures: dict[str, QueryError]) -> None:
        """postgres.md §4: each failed session is retried after 0.5 s, doubling up to 30 s."""
        now = time.monotonic()
        with self._wake:
            for sid in tried:
                if sid not in failures or sid in self._suspended:
                    self._backoff.pop(sid, None)
                    continue
                log.warning("checkpoint failed, will retry: %s", failures[sid].message)
                last = self._backoff.get(sid, (0.0, 0.0))[1]
                delay = min(RETRY_MAX_SECONDS, last * 2) if last else RETRY_FIRST_SECONDS
                self._backoff[sid] = (now + delay, delay)
                self._dirty.add(sid)
            self._wake.notify_all()

    def _writable(self) -> bool:
        binding = self.binding.current()
        return binding is not None and binding.backend.writable

    # -- flushing --------------------------------------------------------------------------

    def pending_events(self) -> int:
        binding = self.binding.current()
        if binding is None or not binding.backend.writable:
            return 0
        # The key is read before counting: a change during the count changes it for the next call.
        key = (binding.identity, self.store.generation, self._flushes)
        memo = self._pending
        if memo is not None and memo[0] == key:
            return memo[1]
        persisted = self.persisted_counts(
            binding.identity
        )  # lock-free: status never waits on a flush
        pending = sum(max(0, n - persisted.get(sid, 0)) for sid, n in self.store.lengths().items())
        self._pending = (key, pending)
        return pending

    def persisted_counts(self, identity: int) -> dict[str, int]:
        """What this checkpointer knows the backend of binding ``identity`` holds, per session.
        Read without the flush lock so a slow flush never stalls a reader; counts only grow, so a
        stale read is at worst one flush behind."""
        persisted = self._persisted
        return dict(persisted) if self._identity == identity else {}

    def flush(
        self, session_id: str | None = None, sessions: list[str] | None = None
    ) -> dict[str, int]:
        """Write every not-yet-persisted live event (of one session, or all); returns, for each
        session flushed, the last seq the backend now holds. Waits while a search observes."""
        if not self.quiet.acquire(blocking=False):
            if self.before_wait is not None:
                self.before_wait()
            self.quiet.acquire()
        try:
            return self._flush(session_id, sessions)
        finally:
            self.quiet.release()

    def _flush(
        self, session_id: str | None = None, sessions: list[str] | None = None
    ) -> dict[str, int]:
        if session_id is not None:
            sessions = [session_id]
        flushed, failures = self._flush_each(sessions, session_id)
        if failures:
            raise next(iter(failures.values()))
        return flushed

    def _flush_each(
        self, sessions: list[str] | None, session_id: str | None = None
    ) -> tuple[dict[str, int], dict[str, QueryError]]:
        """Flush each session; what was flushed, and each failure in order."""
        binding = self.binding.current()
        if session_id is not None and not self.store.is_live(session_id):
            raise QueryError(
                errors.STORE_SESSION_NOT_FOUND,
                f'session "{session_id}" is not live',
                session_id=session_id,
            )
        if binding is None:
            return {}, {}
        if not binding.backend.writable:
            raise QueryError(errors.STORE_READ_ONLY, "the mounted persistence backend is read-only")
        targets = sessions if sessions is not None else self.store.ids()
        flushed: dict[str, int] = {}
        failures: dict[str, QueryError] = {}
        with self._flush_lock:
            try:
                if binding.identity != self._identity:
                    self._identity, self._persisted, self._created = binding.identity, {}, set()
                    self._matched, self._suspended = {}, {}
                for sid in targets:
                    try:
                        last = self._flush_one(binding, sid)
                    except QueryError as exc:
                        failures[sid] = exc
                        continue
                    if last is not None:
                        flushed[sid] = last
            finally:
                self._flushes += 1
        if flushed and self.on_flushed is not None:
            self.on_flushed(list(flushed))
        return flushed, failures

    def _flush_one(self, binding: Binding, sid: str) -> int | None:
        suspended = self._suspended.get(sid)
        if suspended is not None:
            raise suspended
        # With windows, a failed write is reconciled at once and tried once more (§3.8): a
        # conflict or an in-doubt commit usually resolves to "continue from n". A failed read
        # (the store is down) is left to the back-off.
        attempts = 2 if binding.logs.reads_windows else 1
        for attempt in range(attempts):
            self._writing = False  # set by create and append; the flush lock is held
            try:
                count = self._persisted.get(sid)
                if count is None:
                    count = self._resume(binding, sid)
                    if count is None:
                        return None
                    self._persisted[sid] = count
                observed = self.store.events_from(sid, count)
                if observed is None:
                    return None
                _, events = observed
                if events:
                    self._writing = True
                    binding.backend.append(sid, events)
                    count += len(events)
                    self._persisted[sid] = count
                return count - 1 if count else None
            except Diverged as exc:
                self._persisted.pop(sid, None)
                failure = QueryError(
                    errors.STORE_PERSISTENCE_FAILED, str(exc), cause=str(exc), session_id=sid
                )
                self._suspended[sid] = failure
                log.warning("%s", exc)
                raise failure from None
            except Exception as exc:  # noqa: BLE001 - keep the live data, retry later
                self._persisted.pop(sid, None)
                if self._writing and attempt + 1 < attempts:
                    continue
                code = (
                    errors.STORE_READ_ONLY
                    if isinstance(exc, SessionPersistenceReadOnlyError)
                    else errors.STORE_PERSISTENCE_FAILED
                )
                raise QueryError(
                    code,
                    f'checkpoint of session "{sid}" failed: {inner_message(exc)}',
                    cause=inner_message(exc),
                    session_id=sid,
                ) from None
        return None

    def _resume(self, binding: Binding, sid: str) -> int | None:
        """Where this session's writes continue in the backend, or None when there is nothing
        to write yet (not live; or, §3.8, the stored log is ahead and the live one a prefix)."""
        backend = binding.backend
        stored = backend.stored_count(sid)
        if stored is None:
            if sid not in self._created:
                observed = self.store.events_from(sid, 0)
                if observed is None:
                    return None
                self._writing = True  # create may find a log stored meanwhile (§3.8)
                backend.create(observed[0])
                self._created.add(sid)
            return 0
        if not binding.logs.reads_windows:
            if stored > self.store.length(sid):
                # The stored log is not a prefix of the live one: never write into it.
                raise ValueError("the persisted log is longer than the live log")
            return stored
        observed = self.store.events_from(sid, 0)
        if observed is None:
            return None
        header, events = observed
        matched = reconcile(binding.logs, sid, header, events, stored, self._matched.get(sid, 0))
        self._matched[sid] = matched
        return stored if stored <= len(events) else None
