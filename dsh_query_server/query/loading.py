"""Observing the corpus and one session (semantics.md §3.0.4, §3.0.5): live-preferred, re-read on
every call, with every backend failure mapped to the query error the spec names."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, TypeVar

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import QueryError, cancelled, inner_message
from ..model.event import Header, headers_compatible
from ..persistence.adapters import list_headers, read_log, read_window
from ..persistence.contract.errors import SessionPersistenceCorruptionError
from ..persistence.contract.results import Inspection, Window
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..session.store import SessionStore
from .loaded import Loaded, LoadedWindow, Record, check_cancelled, conflict, not_found

T = TypeVar("T")
Entry = tuple[Header, bool, bool]  # (header, live, persisted) of one corpus entry
Observed = TypeVar("Observed", Inspection, Window)


class Loader:
    """Reads of the live store and the current binding, shared by every query operation."""

    def __init__(self, store: SessionStore, binding: PersistenceBinding) -> None:
        self.store = store
        self.binding = binding
        # The last observation and what proves it still holds (``observe``): the binding, the
        # live store's generation and the very header objects the backend listed.
        self._last: tuple[Binding | None, int, list[Header], list[Entry]] | None = None

    def list_persisted(self, binding: Binding, token: CancelToken) -> list[Header]:
        """Call ``list`` and wrap its failure (§3.0.4 step 2)."""
        return _listing_call(token, lambda: list_headers(binding, token))

    def listed_header(self, binding: Binding, session_id: str, token: CancelToken) -> Header | None:
        """§3.0.5 step 4: ``list`` wrapped as in §3.0.4 step 2, then the id looked for; through
        the backend's ListedLookup when it has one (the same header and failures)."""
        lookup = binding.capabilities.listed
        if lookup is None:
            listed = self.list_persisted(binding, token)
            return next((h for h in listed if h.id == session_id), None)
        found = _listing_call(token, lambda: lookup.list_one(session_id, token))
        if found is not None and not (isinstance(found, Header) and found.id == session_id):
            # A backend that breaks the contract fails like a listing of non-headers.
            return _listing_call(token, _not_a_header)
        return found

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
        listed = [] if binding is None else self.list_persisted(binding, token)
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
        found = self._load_persisted(
            session_id, token, lambda b: read_log(b, session_id, token, outline=outline)
        )
        if isinstance(found, Loaded):
            return found
        return Loaded(session_id, found.meta, list(found.events), False)

    def load_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> LoadedWindow:
        """§3.0.5 for the logical events ``first..last`` (first >= 0) only: a backend that reads
        windows reads just those; any other is inspected whole (same result)."""
        live = self.live(session_id, token)
        if live is not None:
            return LoadedWindow.of(live, first, last)
        found = self._load_persisted(
            session_id, token, lambda b: read_window(b, session_id, first, last, token)
        )
        if isinstance(found, Loaded):
            return LoadedWindow.of(found, first, last)
        return LoadedWindow(session_id, found.meta, found.length, found.start, found.events)

    def live(self, session_id: str, token: CancelToken) -> Loaded | None:
        """Steps 1–2: a live target is returned without consulting persistence."""
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is None:
            return None
        check_cancelled(token)
        return Loaded(session_id, live.header, live.events, True, live.fold)

    def _load_persisted(
        self, session_id: str, token: CancelToken, read: Callable[[Binding], Observed]
    ) -> Observed | Loaded:
        """Steps 3–8 around one inspecting call ``read(binding)``. When the id became live
        meanwhile, that live ``Loaded`` is returned instead."""
        binding = self.binding.current()
        if binding is None:
            raise not_found(session_id)
        listed = self.listed_header(binding, session_id, token)
        check_cancelled(token)
        if listed is None:
            raise not_found(session_id)
        observed = inspect_call(session_id, token, lambda: read(binding))
        check_cancelled(token)
        live = self.store.snapshot(session_id)
        if live is not None:  # attached while we inspected: live wins, no list/inspect check
            return Loaded(session_id, live.header, live.events, True, live.fold)
        if not headers_compatible(listed, observed.meta):
            raise conflict(session_id)
        check_cancelled(token)
        return observed


def _not_a_header() -> Header:
    raise TypeError("persistence listing is not a list of session headers")


def _listing_call(token: CancelToken, call: Callable[[], T]) -> T:
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
        if token.cancelled:
            raise cancelled() from None
        raise QueryError(
            errors.PERSISTENCE_FAILED,
            f"session persistence listing failed: {inner_message(exc)}",
            cause=inner_message(exc),
        ) from None


def inspect_call(session_id: str, token: CancelToken, call: Callable[[], T]) -> T:
    """Run one inspecting backend call, mapping its failure (§3.0.5 step 5)."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - any backend failure is mapped
        raise stored_log_failure(session_id, exc, token, "inspect session") from None


def stored_log_failure(
    session_id: str, exc: Exception, token: CancelToken, action: str
) -> QueryError:
    """A backend's failure to read one stored log, as the service reports it: cancelled, corrupt
    (``stored session "<id>" is corrupt``) or ``failed to <action> "<id>"``."""
    if token.cancelled:
        return cancelled()
    inner = inner_message(exc)
    if isinstance(exc, SessionPersistenceCorruptionError):
        return QueryError(
            errors.CORRUPT_SESSION,
            f'stored session "{session_id}" is corrupt: {inner}',
            cause=inner,
            session_id=session_id,
        )
    return QueryError(
        errors.PERSISTENCE_FAILED,
        f'failed to {action} "{session_id}": {inner}',
        cause=inner,
        session_id=session_id,
    )


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
