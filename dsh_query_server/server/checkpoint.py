"""The checkpointer: moves live events that are not yet persisted into the mounted backend.

It remembers, per binding, how many events of each live session the backend holds. The first
time it meets a session under a binding it asks the backend (``stored_count``), so a restart or a
remount never writes a seq twice; after a failure it forgets that count and asks again, which
also covers an append that reached the disk but reported an error. Flushes are serialized by one
lock; readers never wait for it because the store is only locked while a batch is copied.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import errors
from ..errors import QueryError, inner_message
from ..persistence.base import SessionPersistenceReadOnlyError
from ..persistence.binding import Binding, PersistenceBinding
from ..session.store import SessionStore

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0


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
        self._identity: int | None = None
        self._persisted: dict[str, int] = {}
        self._created: set[str] = set()
        self._dirty: set[str] = set()
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
            self._wake.notify_all()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._dirty and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
            time.sleep(self.interval)  # gather a burst of appends into one batch per session
            with self._wake:
                dirty, self._dirty = self._dirty, set()
            if not self._writable():
                continue
            if not self.quiet.acquire(blocking=False):  # a search is observing: next interval
                with self._wake:
                    self._dirty |= dirty
                continue
            try:
                self._flush(sessions=sorted(dirty))
                failed = False
            except QueryError as exc:
                log.warning("checkpoint failed, will retry: %s", exc.message)
                with self._wake:
                    self._dirty |= dirty
                failed = True
            finally:
                self.quiet.release()
            if failed:
                time.sleep(RETRY_SECONDS)

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
        with self.quiet:
            return self._flush(session_id, sessions)

    def _flush(
        self, session_id: str | None = None, sessions: list[str] | None = None
    ) -> dict[str, int]:
        binding = self.binding.current()
        if session_id is not None and not self.store.is_live(session_id):
            raise QueryError(
                errors.STORE_SESSION_NOT_FOUND,
                f'session "{session_id}" is not live',
                session_id=session_id,
            )
        if binding is None:
            return {}
        if not binding.backend.writable:
            raise QueryError(errors.STORE_READ_ONLY, "the mounted persistence backend is read-only")
        targets = (
            [session_id]
            if session_id is not None
            else sessions
            if sessions is not None
            else self.store.ids()
        )
        flushed: dict[str, int] = {}
        failure: QueryError | None = None
        with self._flush_lock:
            try:
                if binding.identity != self._identity:
                    self._identity, self._persisted, self._created = binding.identity, {}, set()
                for sid in targets:
                    try:
                        last = self._flush_one(binding, sid)
                    except QueryError as exc:
                        failure = failure or exc
                        continue
                    if last is not None:
                        flushed[sid] = last
            finally:
                self._flushes += 1
        if flushed and self.on_flushed is not None:
            self.on_flushed(list(flushed))
        if failure is not None:
            raise failure
        return flushed

    def _flush_one(self, binding: Binding, sid: str) -> int | None:
        backend = binding.backend
        try:
            count = self._persisted.get(sid)
            if count is None:
                count = backend.stored_count(sid)
                if count is None:
                    if sid not in self._created:
                        observed = self.store.events_from(sid, 0)
                        if observed is None:
                            return None
                        backend.create(observed[0])
                        self._created.add(sid)
                    count = 0
                elif count > self.store.length(sid):
                    # The stored log is not a prefix of the live one: never write into it.
                    raise ValueError("the persisted log is longer than the live log")
                self._persisted[sid] = count
            observed = self.store.events_from(sid, count)
            if observed is None:
                return None
            _, events = observed
            if events:
                backend.append(sid, events)
                count += len(events)
                self._persisted[sid] = count
        except Exception as exc:  # noqa: BLE001 - keep the live data, retry later
            self._persisted.pop(sid, None)
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
        return count - 1 if count else None
