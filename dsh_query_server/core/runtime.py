"""Everything one server process owns once it is initialized: the live store, the persistence
binding, the checkpointer, the exact query service and the search service."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from .. import errors
from ..config import embedded_store
from ..errors import QueryError
from ..model.params import Spec
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.importing.pool import POOL
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..persistence.mount.composite import CompositeBackend, open_persistence
from ..persistence.mount.uri import display_uri, open_backend
from ..progress import Broadcast, Tracker
from ..query.service import SessionQueryService
from ..search.service import SearchService
from ..search.unreadable import UnreadableSession, capped, skipped_entry
from ..session.store import SessionStore
from .checkpoint import Checkpointer
from .config import ServerConfig
from .freshness import ChangeFeed, ChangeListeners, FreshnessPoller, members

WARM_UP_TITLE = "dsh-query warmUp"  # after search.warmUp, the setting that turns it off

log = logging.getLogger(__name__)


# A mount's members, each with itself again when it is a ChangeFeed (else None).
Members = tuple[tuple[PersistenceBackend, ChangeFeed | None], ...]


def _classify(backend: PersistenceBackend | CompositeBackend) -> Members:
    """isinstance against the runtime-checkable ChangeFeed inspects the protocol's attributes on
    every check, which costs as much as the rest of a status request: done once per mount, not
    per status."""
    return tuple((m, m if isinstance(m, ChangeFeed) else None) for m in members(backend))


class PostgresMemberStatus(msgspec.Struct, omit_defaults=True):
    """A ``postgres:`` member's connection (postgres.md §1.4); ``lastError`` is scrubbed."""

    reachable: bool
    notifications: Literal["listening", "polling", "reconnecting", "off"]
    lastError: str | UnsetType = UNSET


class PersistenceMember(msgspec.Struct, omit_defaults=True):
    uri: str
    writable: bool
    postgres: Annotated[Any, Spec(PostgresMemberStatus)] = UNSET


class MountResult(msgspec.Struct):
    """``uri`` echoes what was mounted; ``members`` lists the mounted backends in order."""

    uri: str | list[str]
    writable: bool
    members: list[PersistenceMember]


class StatusResult(msgspec.Struct):
    uri: str | list[str] | None
    writable: bool
    pendingEvents: int
    members: list[PersistenceMember]
    # [ours] (semantics.md §6.5): damaged artifacts the last listing skipped and sessions the
    # last search found unreadable, with their paths; present only when there are any.
    unreadable: list[UnreadableSession] | UnsetType = UNSET
    unreadableCount: int | UnsetType = UNSET


def _entries(classified: Members) -> list[PersistenceMember]:
    return [
        PersistenceMember(
            member.uri,
            bool(member.writable),
            UNSET if feed is None else feed.status(),  # postgres.md §1.4
        )
        for member, feed in classified
    ]


class Runtime:
    def __init__(
        self, config: ServerConfig, notify: Callable[[list[str], bool], None] | None
    ) -> None:
        """``notify`` sends ``sessionQuery/didChange``; a host without clients to tell (the MCP
        server) passes None, and then nothing polls or listens for changes."""
        self.config = config
        self._closed = False
        self._mounted: tuple[int, Any] = (0, None)  # (binding identity, the mounted value)
        self._classified: tuple[int, Members] = (0, ())  # (binding identity, its members)
        self.store = SessionStore()
        self.binding = PersistenceBinding()
        self.service = SessionQueryService(
            self.store,
            self.binding,
            read_window_max=config.read_window_max,
            inspect_concurrency=config.persisted_inspect_concurrency,
            prices=config.prices,
        )
        self.checkpointer = Checkpointer(
            self.store,
            self.binding,
            mode=config.checkpoint_mode,
            interval_ms=config.checkpoint_interval_ms,
            on_flushed=None if notify is None else (lambda ids: notify(ids, True)),
        )
        self.search = SearchService(
            self.store, self.binding, config.search, quiet=self.checkpointer.quiet
        )
        self.checkpointer.before_wait = self.search.stop_warm_up
        self.freshness: FreshnessPoller | None = None
        self.listeners: ChangeListeners | None = None
        # The warm-up's progress (semantics.md §6.5 [ours]), shown to every connection whose
        # client can create a work-done token, from its initialized on (server/app.py).
        self.warm_up_progress = Broadcast()
        # Why the configured backend is not mounted, when start could not mount it: a shared
        # server (the hub) reports it to clients that find nothing mounted.
        self.start_failure: QueryError | None = None
        if notify is not None:
            self.freshness = FreshnessPoller(self.binding, notify)  # importers.md §4.5
            self.listeners = ChangeListeners(self.binding, notify)  # postgres.md §5
            self.store.subscribe(lambda kind, sid: notify([sid], kind != "append"))
            self.binding.subscribe(lambda _binding: notify([], True))

    def start(self) -> None:
        """Mount the configured backend, open the index when openAt is startup, start flushing.

        A configured backend that cannot be opened leaves the server running unbound (logged):
        a failing backend must never make live sessions unreadable."""
        if self.config.persistence is not None:
            try:
                self.mount(self.config.persistence)
            except QueryError as exc:
                self.start_failure = exc
                log.error(
                    "persistence %s not mounted: %s",
                    display_uri(self.config.persistence),
                    exc.message,
                )
        if self.config.search.open_at == "startup":
            self.search.open()
            if self.binding.current() is not None:
                self.warm_up()
        self.checkpointer.start()
        if self.freshness is not None:
            self.freshness.start()

    def warm_up(self) -> None:
        """Reconcile the index in the background, shown through ``warm_up_progress`` (semantics.md
        §6.5 [ours]: the first search finds it built). Once per runtime: start calls it."""
        self.search.warm_up(Tracker(self.warm_up_progress, WARM_UP_TITLE))

    def mount(self, uri: Any) -> MountResult:
        """importers.md §4.1-§4.3: ``"auto"``, one URI or an array, mounted atomically (every
        member opens or the previous binding stays); ``uri`` echoes what was asked. ``uri`` is
        the request's value, checked here (INVALID_CONFIG)."""
        if isinstance(uri, str) and uri != "auto":
            backend = open_backend(uri)  # also a registered scheme (the test harness's test:)
            echo: Any = backend.uri
        else:
            backend = open_persistence(uri, embedded_store(), os.environ)
            # an array echoes as given, with any password redacted (postgres.md §1.3)
            echo = [display_uri(u) for u in uri] if isinstance(uri, list) else uri
        binding = self.binding.mount(backend)
        self._mounted = (binding.identity, echo)
        return MountResult(echo, bool(backend.writable), self._members(binding))

    def unmount(self) -> None:
        self.binding.unmount()

    def status(self) -> StatusResult:
        binding = self.binding.current()
        if binding is None:
            return StatusResult(None, False, 0, [])
        identity, echo = self._mounted
        result = StatusResult(
            echo if identity == binding.identity else binding.backend.uri,
            bool(binding.backend.writable),
            self.checkpointer.pending_events(),
            self._members(binding),
        )
        entries = [skipped_entry(a) for a in binding.logs.skipped()]
        entries += [u.entry() for u in self.search.unreadable_under(binding).values()]
        listed, count = capped(entries)
        if count:
            result.unreadable, result.unreadableCount = listed, count
        return result

    def _members(self, binding: Binding) -> list[PersistenceMember]:
        identity, classified = self._classified
        if identity != binding.identity:
            classified = _classify(binding.backend)
            self._classified = (binding.identity, classified)
        return _entries(classified)

    def remove(self, session_id: str) -> None:
        """Flush the session's pending events first; if that fails it stays live (no data loss)."""
        if not self.store.is_live(session_id):
            raise QueryError(
                errors.STORE_SESSION_NOT_FOUND,
                f'session "{session_id}" is not live',
                session_id=session_id,
            )
        binding = self.binding.current()
        if binding is not None and binding.backend.writable:
            self.checkpointer.flush(session_id)
        self.store.remove(session_id)

    def close(self) -> None:
        """Idempotent: shutdown and the end of input both call it."""
        if self._closed:
            return
        self._closed = True
        if self.freshness is not None:
            self.freshness.stop()
        if self.listeners is not None:
            self.listeners.close()
        # Manual mode writes only when asked, so a shutdown does not write either.
        self.checkpointer.stop(flush=self.config.checkpoint_mode == "auto")
        self.search.close()
        # The bulk reads' idle worker (issue 28): no child outlives the server's shutdown.
        POOL.close()
