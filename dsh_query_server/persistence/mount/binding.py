"""The persistence binding (semantics.md §3.0.3): the one backend mounted right now, if any.

Each mount creates a binding with a fresh identity, even for the same URI, so readers can tell a
remount from "nothing changed". Readers take ``current()`` at the moment they need persistence and
keep no other state about it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..contract.backend import PersistenceBackend
from ..reads import StoredLogs

_identities = itertools.count(1)


@dataclass(frozen=True, slots=True, eq=False)
class Binding:
    """One mount: the backend, the door to its reads (made once, here) and an identity."""

    backend: PersistenceBackend
    identity: int
    logs: StoredLogs


class PersistenceBinding:
    """Holds the current binding; listeners hear about every mount and unmount.

    A replaced backend is not closed here: requests that captured it may still be using it, and
    it releases its resources when the last of them lets go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Binding | None = None
        # Every mount and unmount, counted where it happens: a mount undone before anyone looked
        # is still a change (semantics.md §6.12), though the binding reads the same again.
        self._changes = 0
        self._listeners: list[Callable[[Binding | None], None]] = []

    def subscribe(self, listener: Callable[[Binding | None], None]) -> None:
        self._listeners.append(listener)

    def current(self) -> Binding | None:
        return self._current

    def observe(self) -> tuple[Binding | None, int]:
        """The current binding and the number of mounts and unmounts so far, read together."""
        with self._lock:
            return self._current, self._changes

    def mount(self, backend: PersistenceBackend) -> Binding:
        binding = Binding(backend, next(_identities), StoredLogs(backend))
        with self._lock:
            self._current = binding
            self._changes += 1
        self._notify(binding)
        return binding

    def unmount(self, binding: Binding | None = None) -> bool:
        """Clear the binding; an unmount naming a binding that is no longer current does nothing."""
        with self._lock:
            if self._current is None or (binding is not None and binding is not self._current):
                return False
            self._current = None
            self._changes += 1
        self._notify(None)
        return True

    def _notify(self, binding: Binding | None) -> None:
        for listener in self._listeners:
            listener(binding)
