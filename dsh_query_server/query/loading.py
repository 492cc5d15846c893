"""Observing the corpus and one session (semantics.md §3.0.4, §3.0.5): live-preferred, re-read on
every call. Persistence is read through the mount's door (persistence/reads.py), which maps every
backend failure to the query error the spec names."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..cancel import NULL_TOKEN, CancelToken
from ..model.event import Header, headers_compatible
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..persistence.reads import StoredLogs
from ..session.store import SessionStore
from .loaded import Loaded, LoadedWindow, Record, check_cancelled, conflict, not_found

Entry = tuple[Header, bool, bool]  # (header, live, persisted) of one corpus entry


def megabytes(size: int, total: int) -> str:
    """``size`` in MB (10^6 bytes) as the progress of a read of ``total`` shows it: one
    decimal below 10 MB, so a small log's bar does not say "reading 0 of 3 MB"."""
    return f"{size / 1e6:.1f}" if total < 10_000_000 else f"{size / 1e6:,.0f}"


@contextmanager
def metered(token: CancelToken) -> Iterator[None]:
    """While one session's log is read: the backend's bytes read of the log's size become the
    request's progress, ``reading 12 of 28 MB`` with its percentage, or, from a backend whose
    bytes mean nothing (a database's rows), its items, ``reading 2,048 of 9,000 events``
    (protocol.md §8)."""
    progress = token.progress
    if not progress.active or token.reading is not None:
        yield
        return

    def reading(done: int, total: int) -> None:
        progress.report(
            f"reading {megabytes(done, total)} of {megabytes(total, total)} MB", done, total
        )

    def reading_items(done: int, total: int, noun: str) -> None:
        progress.report(f"reading {done:,} of {total:,} {noun}", done, total)

    token.reading, token.reading_items = reading, reading_items
    try:
        yield
    finally:
        token.reading = token.reading_items = None


class Loader:
    """Reads of the live store and the current binding, shared by every query operation."""

    def __init__(self, store: SessionStore, binding: PersistenceBinding) -> None:
        self.store = store
        self.binding = binding
        # The last observation and what proves it still holds (``observe``): the binding, the
        # live store's generation and the very header objects the backend listed.
        self._last: tuple[Binding | None, int, list[Header], list[Entry]] | None = None

    def corpus(self, token: CancelToken = NULL_TOKEN) -> list[Record]:
        """§3.0.4: one observation of live + persisted, newest first."""
        return [Record(h, live, persisted) for h, live, persisted in self.observe(token)]

    def observe(self, token: CancelToken = NULL_TOKEN) -> list[Entry]:
        """``corpus`` as (header, live, persisted) tuples: a listing of 10,000 sessions makes
        no Record (listSessions encodes these directly). The backend is listed on every call;
        when it lists the very header objects it listed last time (a backend's memo proved its
        listing unchanged), under the same binding, and no live commit happened since, the
        result is the previous one, the same list: callers must not change it."""
        check_cancelled(token)
        generation = self.store.generation  # read first: a commit after it misses the memo
        binding = self.binding.current()
        with token.counting(share=True):  # unless the caller counts: a phase follows
            listed = [] if binding is None else binding.logs.headers(token)
        check_cancelled(token)
        last = self._last
        if (
            last is not None
            and last[0] is binding
            and last[1] == generation
            and len(last[2]) == len(listed)
            and all(map(operator.is_, last[2], listed))
        ):
            return last[3]
        observed = self._merged(listed)
        self._last = (binding, generation, listed, observed)
        return observed

    def _merged(self, listed: list[Header]) -> list[Entry]:
        # By id: a repeated id keeps its first position and its last header.
        entries: dict[Any, Entry] = {h.id: (h, False, True) for h in listed}
        live = self.store.headers()
        persisted = {sid: entry[0] for sid, entry in entries.items()} if live else {}
        for header in live:
            stored = persisted.get(header.id)
            if stored is not None and not headers_compatible(header, stored):
                raise conflict(header.id)
            entries[header.id] = (header, True, stored is not None)
        return newest_first(list(entries.values()))

    def load(
        self, session_id: str, token: CancelToken = NULL_TOKEN, *, outline: bool = False
    ) -> Loaded:
        """§3.0.5 single-target load. ``outline``: the caller reads no chunk payloads, so a
        backend that can may return packed chunk members as ``records.ChunkOutline``s."""
        live = self.live(session_id, token)
        if live is not None:
            return live
        logs, listed = self._listed(session_id, token)
        with metered(token):
            found = logs.outline(session_id, token) if outline else logs.log(session_id, token)
        now_live = self._settled(session_id, listed, found.meta, token)
        if now_live is not None:
            return now_live
        return Loaded(session_id, found.meta, list(found.events), False, progress=token.progress)

    def load_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> LoadedWindow:
        """§3.0.5 for the logical events ``first..last`` (first >= 0) only."""
        live = self.live(session_id, token)
        if live is not None:
            return LoadedWindow.of(live, first, last)
        logs, listed = self._listed(session_id, token)
        with metered(token):
            found = logs.window(session_id, first, last, token)
        now_live = self._settled(session_id, listed, found.meta, token)
        if now_live is not None:
            return LoadedWindow.of(now_live, first, last)
        return LoadedWindow(session_id, found.meta, found.length, found.start, found.events)

    def live(self, session_id: str, token: CancelToken) -> Loaded | None:
        """Steps 1–2: a live target is returned without consulting persistence."""
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is None:
            return None
        check_cancelled(token)
        return Loaded(session_id, live.header, live.events, True, live.fold, token.progress)

    def _listed(self, session_id: str, token: CancelToken) -> tuple[StoredLogs, Header]:
        """Steps 3–4: the mount's reads and the target's listed header."""
        binding = self.binding.current()
        if binding is None:
            raise not_found(session_id)
        with token.counting(share=False):  # the read's bytes own the percentage
            listed = binding.logs.header(session_id, token)
        check_cancelled(token)
        if listed is None:
            raise not_found(session_id)
        return binding.logs, listed

    def _settled(
        self, session_id: str, listed: Header, inspected: Header, token: CancelToken
    ) -> Loaded | None:
        """Steps 5 (after the read) to 8: the live copy when the id went live meanwhile (live
        wins, no list/inspect check); None when the read stands."""
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is not None:
            return Loaded(session_id, live.header, live.events, True, live.fold, token.progress)
        if not headers_compatible(listed, inspected):
            raise conflict(session_id)
        check_cancelled(token)
        return None


def newest_first(entries: list[Entry]) -> list[Entry]:
    """Sorted by createdAt descending (a non-number counts as 0), then by id in code-point order
    (a non-string id after every string one, by its repr): two stable sorts of indices whose keys
    are looked up in C, not a key function called per entry."""
    headers = [entry[0] for entry in entries]
    ids: list[Any] = [header.id for header in headers]
    if set(map(type, ids)) - {str}:
        ids = [(0, i) if isinstance(i, str) else (1, repr(i)) for i in ids]
    created: list[Any] = [header.created_at for header in headers]
    if set(map(type, created)) <= {int}:
        created = [-c for c in created]
    else:
        created = [
            -c if type(c) is int or (type(c) is float and math.isfinite(c)) else 0 for c in created
        ]
    order = sorted(range(len(entries)), key=ids.__getitem__)
    order.sort(key=created.__getitem__)
    return [entries[i] for i in order]
