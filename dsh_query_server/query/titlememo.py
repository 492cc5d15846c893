"""The title memo: what a title read found in a persisted log at one revision (semantics.md §3.8).

A title batch over every session (the CLI's ``sessions``, a sidebar) would otherwise read every
log on every request: a window read proves nothing about the rest of a log until the log is
verified whole at its revision, and the backends' verification memos keep only a few hundred
logs. A title is a function of the log, and a revision changes with any append, truncation,
repair or replacement of the log (persistence.md §2.4). So a title read remembers its answer
under the revision of exactly what it read (``Window.revision``), and a later batch serves it
only when the revision its own listing gives for the id (``StoredLogs.listing``, the batch's one
``list``) is that same revision.

Not a result cache and not an invalidation listener: every batch re-reads the revisions from
storage, and nothing is served for a revision that was not read. The memo belongs to one mounted
door (a new binding starts empty) and is LRU-capped, so memory stays bounded.

A batch that read no log (every listed id answered from the memo, the others from the live store
or as not found) is kept as a ``TitleBatch``, and the next batch of the same ids gives back its
results without looking at each id again when the live store's generation is the same (no commit
since) and the door's listing is the very same object (the door hands back its previous listing
only while the backend lists the very same snapshots, so every id has the same revision and the
same header). That is the per-id proof above, checked once for the whole batch: each memo answer
was read at the revision the listing still gives.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..model.event import Event, Header, headers_compatible
from ..model.wire import SessionTitleObservationResult
from ..persistence.reads import Listing, StoredLogs

# Room for every session of a large store (a title entry is a header, one event and a result).
CAPACITY = 50_000


@dataclass(frozen=True, slots=True)
class KnownTitle:
    """One log's title read: the inspected header, its last ``session/title`` event (None: no
    title) and the result made from them (never changed once made, so shared by batches); the
    listed header the read was checked against (§3.8 step 7), with the check's answer, so a
    listing that hands back the very same header object needs no new check; and the log's
    length when the read knew it."""

    meta: Header
    title: Event | None
    result: SessionTitleObservationResult
    listed: Header
    compatible: bool
    length: int | None = None  # the log's length at the revision (a sidebar label's count)

    def fits(self, header: Header) -> bool:
        """Whether the read is compatible with ``header``, listed now (§3.8 step 7)."""
        return self.compatible if header is self.listed else headers_compatible(header, self.meta)


@dataclass(frozen=True, slots=True)
class TitleBatch:
    """A batch that read no log, with what proves it again: the live store's generation read
    before the store was looked at, and the listing its revisions and headers came from."""

    ids: list[str]
    live: int
    listing: Listing
    results: list[SessionTitleObservationResult]


class TitleMemo:
    """session id -> (revision, KnownTitle) for one door, least recently used evicted."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._logs: StoredLogs | None = None
        self._entries: OrderedDict[str, tuple[str, KnownTitle]] = OrderedDict()

    def get(self, logs: StoredLogs, wanted: list[tuple[str, str]]) -> list[KnownTitle | None]:
        """For each (session id, revision), what was read at exactly that revision through this
        door, or None."""
        found: list[KnownTitle | None] = []
        with self._lock:
            self._bind(logs)
            entries = self._entries
            for session_id, revision in wanted:
                entry = entries.get(session_id)
                if entry is None or entry[0] != revision:
                    found.append(None)
                else:
                    entries.move_to_end(session_id)
                    found.append(entry[1])
        return found

    def put(self, logs: StoredLogs, session_id: str, revision: str, known: KnownTitle) -> None:
        with self._lock:
            self._bind(logs)
            self._entries[session_id] = (revision, known)
            self._entries.move_to_end(session_id)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def _bind(self, logs: StoredLogs) -> None:
        if logs is not self._logs:  # another binding: what the old one read is of no use
            self._logs = logs
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
