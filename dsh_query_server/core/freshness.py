"""Views stay fresh while an agent writes (importers.md §4.5): a poll of the read-only members'
revisions, at most once a second, turned into ``sessionQuery/didChange`` for the ids whose
revision changed (and ``corpus`` when ids came or went).

Only ``(id, revision)`` pairs are kept, never content. Writable members need no poll: everything
written to them goes through this server, which notifies already. A poll that takes long backs
off (ten times its own duration), so a huge home costs at most a tenth of a core.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..cancel import NULL_TOKEN
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..persistence.mount.composite import CompositeBackend

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 1.0
BACKOFF = 10.0


# Stores on disk that another process may write. The test harness's ``test:`` backends are
# steered call by call by their tests, so a background poll would disturb what they count.
POLLED_SCHEMES = frozenset(
    {"jsonl", "sqlite", "claude", "codex", "gemini", "opencode", "copilot", "qwen"}
)


def members(backend: PersistenceBackend | CompositeBackend) -> list[PersistenceBackend]:
    return list(backend.members) if isinstance(backend, CompositeBackend) else [backend]


def read_only_members(backend: PersistenceBackend | CompositeBackend) -> list[PersistenceBackend]:
    return [
        m for m in members(backend) if not m.writable and m.uri.partition(":")[0] in POLLED_SCHEMES
    ]


class ListenerControl(Protocol):
    def start(self, notify: Callable[[list[str], bool], None]) -> None: ...
    def stop(self, wait: float | None = None) -> None: ...


@runtime_checkable
class ChangeFeed(Protocol):
    """A member that hears other writers itself (postgres.md §5) and reports it in status."""

    @property
    def listener(self) -> ListenerControl: ...
    def status(self) -> dict[str, object]: ...


class ChangeListeners:
    """The listeners of the mounted members (postgres.md §1.4, §5): started at mount, stopped
    when the binding is replaced or unmounted and at shutdown, so none outlives its binding."""

    def __init__(
        self, binding: PersistenceBinding, notify: Callable[[list[str], bool], None]
    ) -> None:
        self._notify = notify
        self._lock = threading.Lock()
        self._running: list[ListenerControl] = []
        self._closed = False
        binding.subscribe(self._on_mount)

    def _on_mount(self, binding: Binding | None) -> None:
        feeds = [] if binding is None else members(binding.backend)
        with self._lock:
            for listener in self._running:
                listener.stop()  # its thread ends within a second and closes its connection
            self._running = (
                [] if self._closed else [m.listener for m in feeds if isinstance(m, ChangeFeed)]
            )
            for listener in self._running:
                listener.start(self._notify)

    def close(self, wait: float = 5.0) -> None:
        with self._lock:
            self._closed = True
            running, self._running = self._running, []
        for listener in running:
            listener.stop(wait)


class FreshnessPoller:
    def __init__(
        self,
        binding: PersistenceBinding,
        notify: Callable[[list[str], bool], None],
        interval: float = INTERVAL_SECONDS,
    ) -> None:
        self._binding = binding
        self._notify = notify
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._identity = 0  # the binding the revisions below belong to
        self._revisions: dict[str, str] = {}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dsh-freshness", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - a failing home must not stop the poll
                log.debug("freshness poll failed: %s", exc)
            elapsed = time.monotonic() - started
            self._stop.wait(max(self._interval, BACKOFF * elapsed))

    def poll(self) -> None:
        binding = self._binding.current()
        if binding is None:
            self._identity, self._revisions = 0, {}
            return
        members = read_only_members(binding.backend)
        revisions: dict[str, str] = {}
        for i, member in enumerate(members):
            for snap in member.list_snapshots(NULL_TOKEN):
                revisions[str(snap.header.id)] = f"{i}/{snap.revision}"
        if binding.identity != self._identity:
            # A new mount notified the corpus already: this listing is the baseline.
            self._identity, self._revisions = binding.identity, revisions
            return
        before = self._revisions
        self._revisions = revisions
        changed = sorted(sid for sid, rev in revisions.items() if before.get(sid) != rev)
        gone = sorted(sid for sid in before if sid not in revisions)
        if changed or gone:
            self._notify(changed + gone, bool(gone) or any(sid not in before for sid in changed))


__all__ = ["ChangeFeed", "ChangeListeners", "FreshnessPoller", "members", "read_only_members"]
