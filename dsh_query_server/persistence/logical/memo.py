"""The verification memo: what one full read proved about a log at one revision.

Validating a stored log (persistence.md §4.5, §5.6) needs every row or line: a defect anywhere up
to the last committed ``turn/end`` makes the whole log corrupt. A window read (``readEvent``)
cannot see that from the window alone. So the first window read of a session at a revision runs
the full validation, exactly as ``inspect`` does, and the backend remembers here only the small
facts a later window needs (a ``logical.LogShape``, plus a backend's own seek hints). Later reads
re-read the revision from the authoritative source, inside the same read as the window, and use
the facts only when the revision is still the one that was verified (windows.py does this once
for every backend).

This is not a result cache and not an invalidation listener: nothing is served that was not read
from storage in the same call, and any append, repair or replacement changes the revision
(persistence.md §2.4), which makes the next read verify again. Entries are small and the memo is
LRU-capped, so memory stays bounded however many sessions are read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

DEFAULT_CAPACITY = 256

F = TypeVar("F")


class VerificationMemo(Generic[F]):
    """Per backend instance: session id -> (revision, facts), least recently used evicted."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[str, tuple[str, F]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str, revision: str) -> F | None:
        """The facts verified for exactly this revision, or None."""
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is None or entry[0] != revision:
                return None
            self._entries.move_to_end(session_id)
            return entry[1]

    def get_any(self, session_id: str) -> F | None:
        """The facts verified for the id at any revision (a hint that a read may use them)."""
        with self._lock:
            entry = self._entries.get(session_id)
            return None if entry is None else entry[1]

    def put(self, session_id: str, revision: str, facts: F) -> None:
        with self._lock:
            self._entries[session_id] = (revision, facts)
            self._entries.move_to_end(session_id)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._entries.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
