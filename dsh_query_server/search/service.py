"""The full-text search service (semantics.md §6): one FIFO queue in front of one SQLite index.

Every method is synchronous and thread-safe; the server calls them from worker threads. A search
is validated in the caller's thread, then waits for its turn. Opening, reconciling and querying
run only while a search holds the turn, so searches never overlap and the single connection is
never shared. Backend calls are made in the searching thread, so a started call is always awaited.

**Warm-up [ours] (§6.5).** A server that mounts persistence at start reconciles the index in a
background thread of low priority (``warm_up``), so a person's first search usually finds it
built. The warm-up takes the queue's turn like a search, and any search that joins the queue
cancels it: the search waits (its progress says so) until the warm-up has stopped, then runs its
own reconcile, which resumes from the batches the warm-up committed (plan.py). A search never
answers from an index the warm-up left half built.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from .. import errors
from ..cancel import (
    NULL_TOKEN,  # backends take a token, never None
    CancelToken,
    SessionQueryCancelled,
)
from ..errors import QueryError, cancelled
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..progress import NULL_TRACKER, Tracker
from ..session.store import SessionStore
from . import ownership
from .config import SearchConfig
from .cursor import EVENTS, SESSIONS, decode_cursor, encode_cursor
from .query import Match, compile_filters, select_events, select_sessions
from .reconcile import SearchIndex, View, check
from .request import normalize_events, normalize_sessions
from .scope import Scope, ScopeReader, visible_ids
from .snippet import snippet_at
from .unreadable import Unreadable, reported
from .wire import (
    SessionEventSearchHit,
    SessionEventSearchPage,
    SessionEventSearchRequest,
    SessionSearchHit,
    SessionSearchPage,
    SessionSearchRequest,
    header_raw,
)

log = logging.getLogger("dsh_query_server")

# CancelToken offers no callback, so a queued search looks at its token this often.
CANCEL_POLL_SECONDS = 0.02

DISABLED_MESSAGE = 'session search is disabled: this deployment configures the session-query index with openAt "never"'


def _lower_priority() -> None:
    """Nice +10 for the calling thread (Linux gives each thread its own nice value): the
    warm-up yields the cores to the person's own work."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at normal priority
        pass


def _closed() -> QueryError:
    return QueryError(errors.INDEX_FAILED, "session-search SQLite index is closed")


class SearchService:
    def __init__(
        self,
        store: SessionStore,
        binding: PersistenceBinding,
        config: SearchConfig,
        quiet: threading.Lock | None = None,
    ) -> None:
        self.store = store
        self.binding = binding
        self.config = config
        self.instance = str(uuid.uuid4())
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._running = False
        self._closing: threading.Event | None = None  # set once close() has finished
        self._index: SearchIndex | None = None
        self._claim: ownership.Claim | None = None  # the index file this process holds
        self._open_error: QueryError | None = None
        self._scope = ScopeReader()
        self._warm: CancelToken | None = None  # the warm-up's token while it runs
        # Held while reconciling, so our own checkpointer does not move revisions under the
        # observation (Runtime passes the checkpointer's lock; alone, nothing contends for it).
        self.quiet = quiet or threading.Lock()

    def _reconciled(self, token: CancelToken | None) -> tuple[SearchIndex, View]:
        """The open index, reconciled (§6.5), and the view that reconcile produced. A flush in
        progress (a slow or hung backend append) holds ``quiet``; the wait for it is sliced so
        that the search stays cancellable."""
        index = self._ready(token)
        while not self.quiet.acquire(timeout=0.05):
            check(token)
        try:
            view = index.reconcile(token)
        finally:
            self.quiet.release()
        check(token)
        return index, view

    # -- lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        """The startup phase: open the index now. A failure is INDEX_FAILED and is final: later
        searches report it without another attempt. Nothing is opened when openAt is never."""
        if self.config.open_at == "never":
            return
        with self._turn(None):
            self._open()

    def warm_up(self, progress: Tracker = NULL_TRACKER) -> threading.Thread | None:
        """Start reconciling in the background (module docstring); None when the configuration
        says not to (``search.warmUp`` false, or an index not opened at startup). ``progress``
        shows it (armed here, finished when it stops)."""
        if not self.config.warm_up or self.config.open_at != "startup":
            return None
        token = CancelToken(progress)
        with self._cond:
            if self._closing is not None:
                return None
            self._warm = token
        index, binding = self._index, self.binding.current()
        if index is not None and index.cold and binding is not None:
            # Here, not in the warm-up's own reconcile: a worker started at the warm-up's
            # lowered priority could not read for a search that cancels it (pool.py).
            binding.logs.prepare_many()
        thread = threading.Thread(target=self._warm_run, args=(token,), name="index-warm-up")
        thread.daemon = True
        thread.start()
        return thread

    def stop_warm_up(self) -> None:
        """Cancel a running warm-up (a checkpoint waits for the index's quiet lock); it keeps
        the batches it committed, and the next search resumes from them."""
        with self._cond:
            if self._warm is not None:
                self._warm.cancel()

    def _warm_run(self, token: CancelToken) -> None:
        _lower_priority()
        token.progress.arm()
        outcome = "failed"
        try:
            with self._turn(token, warm=True):
                self._reconciled(token)
            outcome = "done"
        except (QueryError, SessionQueryCancelled) as exc:
            # A search reports the failure itself; a cancelled warm-up kept its batches.
            log.debug("index warm-up stopped: %s", exc)
            if token.cancelled:  # by a search, a checkpoint, the close, or its viewer
                outcome = "stopped"
            elif isinstance(exc, QueryError):
                outcome = f"failed: {exc.message}"
        except Exception:  # noqa: BLE001 - a bug, but the searches must not suffer from it
            log.exception("index warm-up failed")
        finally:
            token.progress.finish(outcome)
            with self._cond:
                if self._warm is token:
                    self._warm = None

    def close(self) -> None:
        """Idempotent: mark closed, wait for the running search, close the database. Queued and
        later searches fail with INDEX_FAILED; every call returns once closing has finished."""
        with self._cond:
            if self._warm is not None:
                self._warm.cancel()  # a warm-up stops at its next check, keeping its batches
            done = self._closing
            if done is None:
                done = self._closing = threading.Event()
                self._cond.notify_all()
                while self._running:
                    self._cond.wait()
                first = True
            else:
                first = False
        if not first:
            done.wait()
            return
        try:
            if self._index is not None:
                self._index.close()
                self._index = None
        finally:
            if self._claim is not None:
                ownership.release(self._claim)
                self._claim = None
            done.set()

    # -- searches ------------------------------------------------------------------------------

    def search_sessions(
        self, request: SessionSearchRequest, token: CancelToken = NULL_TOKEN
    ) -> SessionSearchPage:
        return self._sessions(request, token, None)[0]

    def search_sessions_scoped(
        self, request: SessionSearchRequest, scope: Scope, token: CancelToken = NULL_TOKEN
    ) -> tuple[SessionSearchPage, frozenset[str]]:
        """searchSessions restricted to ``scope`` (search/scope.py), decided against the same
        index state the page comes from; also the hits' parent ids that are visible sessions."""
        return self._sessions(request, token, scope)

    def _sessions(
        self, request: SessionSearchRequest, token: CancelToken, scope: Scope | None
    ) -> tuple[SessionSearchPage, frozenset[str]]:
        self._check_enabled()
        search = normalize_sessions(request, self.config)
        fingerprint = search.fingerprint if scope is None else f"{search.fingerprint}@{scope.key}"
        parents: frozenset[str] = frozenset()
        with self._turn(token):
            index, view = self._reconciled(token)
            generation = str(view.cross_generation)
            offset = self._offset(search.cursor, SESSIONS, fingerprint, generation)
            session_filters = search.session_filters
            matches: list[Match] = []
            scoped = None if scope is None else self._scope.clauses(index, view, scope)
            if scoped is not None:
                session_filters = (*session_filters, *scoped.clauses)
            if scoped is None or not scoped.empty:
                predicates = compile_filters(session_filters, search.event_filters)
                matches = select_sessions(
                    index.conn, search.query, predicates, view.bound, search.limit + 1, offset
                )
            if scope is not None:
                parents = visible_ids(
                    index,
                    view,
                    (m.header[4] for m in matches[: search.limit]),
                    scope.visible,
                )
        items = [
            SessionSearchHit(
                header=header_raw(m.header),
                live=m.live,
                persisted=m.persisted,
                bestMatch=self._hit(m),
            )
            for m in matches[: search.limit]
        ]
        page = SessionSearchPage(items=items)
        listed, count = reported(view.unreadable, None if scope is None else scope.visible)
        if count:
            page.unreadable, page.unreadableCount = listed, count
        if len(matches) > search.limit:
            page.nextCursor = encode_cursor(
                self.instance, SESSIONS, fingerprint, generation, offset + search.limit
            )
        return page, parents

    def search_events(
        self, request: SessionEventSearchRequest, token: CancelToken = NULL_TOKEN
    ) -> SessionEventSearchPage:
        self._check_enabled()
        search = normalize_events(request, self.config)
        with self._turn(token):
            index, view = self._reconciled(token)
            damaged = view.unreadable.get(search.session_id)
            if damaged is not None:
                # The target's log is unreadable: the answer §6.5 step 2.4 gives a corrupt log.
                raise QueryError(
                    errors.PERSISTENCE_FAILED,
                    f"session-search persistence observation failed: {damaged.cause}",
                    cause=damaged.cause,
                )
            target = index.target(search.session_id, view)
            if target is None:
                raise QueryError(
                    errors.SESSION_NOT_FOUND,
                    f'session "{search.session_id}" not found',
                    session_id=search.session_id,
                )
            offset = self._offset(search.cursor, EVENTS, search.fingerprint, target.generation)
            predicates = compile_filters((), search.filters, target=search.session_id)
            matches = select_events(
                index.conn, search.query, predicates, view.bound, search.limit + 1, offset
            )
        page = SessionEventSearchPage(
            session=target.header, items=[self._hit(m) for m in matches[: search.limit]]
        )
        if len(matches) > search.limit:
            page.nextCursor = encode_cursor(
                self.instance, EVENTS, search.fingerprint, target.generation, offset + search.limit
            )
        return page

    # -- machinery -----------------------------------------------------------------------------

    def _check_enabled(self) -> None:
        if self.config.open_at == "never":
            raise QueryError(errors.SEARCH_DISABLED, DISABLED_MESSAGE)

    @contextmanager
    def _turn(self, token: CancelToken | None, warm: bool = False) -> Iterator[None]:
        """Join the FIFO queue and hold the turn for the body. A closed service, or a token that
        fires while waiting, ends the wait at once, whatever is ahead in the queue. A search
        (not ``warm``) cancels the warm-up, so it never waits for a whole build."""
        ticket = object()
        with self._cond:
            if self._closing is not None:
                raise _closed()
            if not warm and self._warm is not None:
                self._warm.cancel()
                if token is not None:
                    token.progress.report("waiting for the index warm-up to stop")
            self._queue.append(ticket)
            try:
                while self._running or self._queue[0] is not ticket:
                    if self._closing is not None:
                        raise _closed()
                    if token is not None and token.cancelled:
                        raise cancelled(search=True)
                    self._cond.wait(None if token is None else CANCEL_POLL_SECONDS)
                if self._closing is not None:
                    raise _closed()
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.popleft()
            self._running = True
        try:
            yield
        finally:
            with self._cond:
                self._running = False
                self._cond.notify_all()

    def _open(self) -> SearchIndex:
        """The one shared opening attempt; its failure is remembered and never retried."""
        if self._index is not None:
            return self._index
        if self._open_error is not None:
            failure = self._open_error
            raise QueryError(failure.code, failure.message, cause=failure.cause)
        claim = ownership.claim(self.config.path)
        moved = ownership.describe(claim, "dsh-query")
        if moved is not None:
            log.warning("%s", moved)
        try:
            self._index = SearchIndex.open(
                claim.path, self.config.journal_mode, self.store, self.binding
            )
        except QueryError as exc:
            ownership.release(claim)
            self._open_error = exc
            raise
        self._claim = claim
        return self._index

    def unreadable_under(self, binding: Binding) -> Mapping[str, Unreadable]:
        """The sessions the last search found unreadable under ``binding`` (a status report:
        no I/O, no turn in the queue)."""
        index = self._index
        return {} if index is None else index.unreadable_under(binding)

    @property
    def index_path(self) -> str | None:
        """The file this process holds the index in (a slot when the configured one was taken),
        or None while the index is not open."""
        return None if self._claim is None else self._claim.path

    def _ready(self, token: CancelToken | None) -> SearchIndex:
        check(token)  # leaving the queue
        index = self._open()
        check(token)  # the index is ready; nothing has touched SQLite for this search yet
        return index

    def _offset(self, cursor: str | None, scope: str, fingerprint: str, generation: str) -> int:
        if cursor is None:
            return 0
        return decode_cursor(
            cursor,
            instance=self.instance,
            scope=scope,
            fingerprint=fingerprint,
            generation=generation,
        )

    def _hit(self, match: Match) -> SessionEventSearchHit:
        return SessionEventSearchHit(
            sessionId=match.session_id,
            seq=match.seq,
            type=match.type,
            time=match.time,
            surface=match.surface,
            snippet=snippet_at(match.text, match.first, self.config.snippet_chars),
        )
