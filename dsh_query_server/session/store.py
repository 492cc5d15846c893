"""The live store (semantics.md §1.7, protocol.md §4): sessions in this process, fed by producers.

A session's header is immutable and its log only grows. Every read takes a detached snapshot
under the store lock, so a reader sees a batch wholly or not at all. Appends are validated with the
same transitions as the surface fold before anything is committed.
"""

from __future__ import annotations

import hashlib
import threading
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..model.event import Event, Header
from ..values import is_array, is_object, is_safe_integer
from .fold import Concat, Fold, FoldState, Step, SurfaceManager, apply_step, freeze, undo_step
from .packed import LogView, PackedLog
from .validate import ReplayError, event_replay_step, header_error

END_SEED = "session/end-seed"
TITLE = "session/title"
APPEND_KEYS = frozenset(
    {"type", "data", "time", "surfaceOp", "sourceEventSeqs", "ignorable", "seq"}
)


def now_ms() -> int:
    return int(_time.time() * 1000)


@dataclass(frozen=True, slots=True)
class LiveSnapshot:
    """A detached observation of one live session. ``changes`` counts committed batches.
    ``fingerprint`` is a digest of the header and every event's JSON, kept up to date on each
    append, so equal content gives an equal fingerprint without re-hashing the log. ``events`` is
    an immutable view of the compact log (session/packed.py)."""

    header: Header
    events: LogView
    changes: int
    fold: Fold
    fingerprint: str
    title_seq: int | None = None  # the last session/title event, so title reads need no scan


class _LiveSession:
    __slots__ = (
        "header",
        "events",
        "manager",
        "changes",
        "digest",
        "title_seq",
        "_frozen",
        "_fingerprint",
    )

    def __init__(self, header: Header) -> None:
        self.header = header
        self.events = PackedLog()
        self.manager = SurfaceManager()
        self.changes = 0
        self.title_seq: int | None = None
        self.digest = hashlib.sha256(len(header.raw).to_bytes(8, "big") + header.raw)
        self._frozen: tuple[int, Fold] | None = None
        self._fingerprint: tuple[int, str] | None = None

    def extend(self, events: list[Event]) -> None:
        self.events.extend(events)
        for event in events:
            self.digest.update(len(event.raw).to_bytes(8, "big") + event.raw)
            if event.type == TITLE:
                self.title_seq = event.seq

    def fold(self) -> Fold:
        # Freezing copies the surface; readers between two appends share one frozen copy.
        if self._frozen is None or self._frozen[0] != self.changes:
            self._frozen = (self.changes, freeze(self.manager.state))
        return self._frozen[1]

    def fingerprint(self) -> str:
        # Finishing a digest copies the hash state; a search over thousands of unchanged
        # sessions reads the string kept since their last append instead.
        if self._fingerprint is None or self._fingerprint[0] != self.changes:
            self._fingerprint = (self.changes, self.digest.hexdigest())
        return self._fingerprint[1]

    def snapshot(self) -> LiveSnapshot:
        return LiveSnapshot(
            self.header,
            self.events.view(),
            self.changes,
            self.fold(),
            self.fingerprint(),
            self.title_seq,
        )


Listener = Callable[[str, str], None]


class SessionStore:
    """Thread-safe; listeners are called after each commit with (kind, session_id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _LiveSession] = {}
        self._listeners: list[Listener] = []
        # Bumped under the lock by every commit (create, append, remove): equal generations mean
        # the whole store is unchanged, which lets derived indexes skip their observation.
        self._generation = 0

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _notify(self, kind: str, session_id: str) -> None:
        for listener in self._listeners:
            listener(kind, session_id)

    # -- producers -------------------------------------------------------------------------

    def create(self, header_value: Any, seed: list[Any] | None = None) -> Header:
        """Create a live session; with a seed (even []), end it with ``session/end-seed``."""
        if not is_object(header_value):
            raise QueryError(
                errors.STORE_INVALID_HEADER, "session header is not a plain JSON record"
            )
        # createdAt is required (semantics.md §1.2): a stamped time would make two servers that
        # create the same session disagree on its header.
        header_value = {"version": 0, **header_value}
        session_id = header_value.get("id")
        if not isinstance(session_id, str):
            raise QueryError(errors.STORE_INVALID_HEADER, "session header id must be a string")
        problem = header_error(header_value, session_id)
        if problem:
            raise QueryError(errors.STORE_INVALID_HEADER, problem, session_id=session_id)
        header = Header.from_value(header_value)
        live = _LiveSession(header)
        if seed is not None:
            events = self._seed_events(seed, session_id)
            if not events or events[-1].type != END_SEED:
                events.append(_build_event({"type": END_SEED, "data": {}}, len(events)))
            live.manager.admit(events, [])  # replay already checked the seed; this builds state
            live.extend(events)
        with self._lock:
            if session_id in self._sessions:
                raise QueryError(
                    errors.STORE_DUPLICATE_SESSION,
                    f'session "{session_id}" is already live',
                    session_id=session_id,
                )
            self._sessions[session_id] = live
            self._generation += 1
        self._notify("create", session_id)
        return header

    @staticmethod
    def _seed_events(seed: Any, session_id: str) -> list[Event]:
        if not is_array(seed):
            raise QueryError(errors.STORE_INVALID_EVENT, "seed must be an array of events")
        events: list[Event] = []
        state = FoldState()
        for index, value in enumerate(seed):
            try:
                if not is_object(value):
                    raise ValueError
                event = Event.from_value(value)
            except ValueError:
                raise QueryError(
                    errors.STORE_INVALID_EVENT,
                    f"seed event at index {index} has an invalid event envelope",
                    session_id=session_id,
                ) from None
            events.append(event)
            try:
                apply_step(state, event_replay_step(event, index, state, events))
            except ReplayError as exc:
                raise QueryError(
                    errors.STORE_INVALID_EVENT, exc.message, session_id=session_id
                ) from None
        return events

    def append(self, session_id: str, batch: Any) -> tuple[int, int]:
        """Append a batch atomically; returns (firstSeq, lastSeq). An empty batch is refused."""
        if not is_array(batch) or not batch:
            raise QueryError(errors.STORE_INVALID_EVENT, "events must be a non-empty array")
        with self._lock:
            live = self._sessions.get(session_id)
            if live is None:
                raise QueryError(
                    errors.STORE_SESSION_NOT_FOUND,
                    f'session "{session_id}" is not live',
                    session_id=session_id,
                )
            base = len(live.events)
            stamp = now_ms()
            events = [_check_input(value, base + i, i, stamp) for i, value in enumerate(batch)]
            state = live.manager.state
            log = Concat(live.events.view(), events)
            applied: list[Step] = []
            try:
                for i, event in enumerate(events):
                    step = event_replay_step(event, base + i, state, log, subject="appended")
                    apply_step(state, step)
                    applied.append(step)
            except ReplayError as exc:
                for step in reversed(applied):
                    undo_step(state, step)
                raise QueryError(
                    errors.STORE_INVALID_EVENT,
                    f"events[{len(applied)}] is invalid: {exc.message}",
                    session_id=session_id,
                ) from None
            live.extend(events)
            live.changes += 1
            self._generation += 1
        self._notify("append", session_id)
        return base, base + len(events) - 1

    def remove(self, session_id: str) -> bool:
        with self._lock:
            removed = self._sessions.pop(session_id, None) is not None
            if removed:
                self._generation += 1
        if removed:
            self._notify("remove", session_id)
        return removed

    # -- readers ---------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """A counter that changes on every commit; reading it takes no lock (an int load)."""
        return self._generation

    def is_live(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._sessions

    def ids(self) -> list[str]:
        """Live ids in creation order."""
        with self._lock:
            return list(self._sessions)

    def headers(self) -> list[Header]:
        with self._lock:
            return [live.header for live in self._sessions.values()]

    def snapshot(self, session_id: str) -> LiveSnapshot | None:
        with self._lock:
            live = self._sessions.get(session_id)
            return None if live is None else live.snapshot()

    def snapshots(self) -> list[LiveSnapshot]:
        """Every live session, in creation order, in one atomic observation."""
        with self._lock:
            return [live.snapshot() for live in self._sessions.values()]

    def events_from(self, session_id: str, start: int) -> tuple[Header, list[Event]] | None:
        """Header and the events from ``start`` on (the checkpointer's view); the events are
        built outside the lock."""
        with self._lock:
            live = self._sessions.get(session_id)
            if live is None:
                return None
            header, view = live.header, live.events.view()
        return header, view[start:]

    def fingerprints(self) -> dict[str, tuple[Header, str]]:
        """Header and content fingerprint of every live session (creation order), without
        copying any log: the cheap no-change check for derived indexes."""
        with self._lock:
            return {sid: (live.header, live.fingerprint()) for sid, live in self._sessions.items()}

    def length(self, session_id: str) -> int:
        """Events in one live session (0 when it is not live)."""
        with self._lock:
            live = self._sessions.get(session_id)
            return 0 if live is None else len(live.events)

    def lengths(self) -> dict[str, int]:
        with self._lock:
            return {sid: len(live.events) for sid, live in self._sessions.items()}


def _check_input(value: Any, seq: int, index: int, stamp: int) -> Event:
    """Turn one producer event into a log event with the server-assigned seq and time."""
    if not is_object(value):
        raise QueryError(errors.STORE_INVALID_EVENT, f"events[{index}] is invalid: not an object")
    extra = value.keys() - APPEND_KEYS
    if extra:
        raise QueryError(
            errors.STORE_INVALID_EVENT,
            f"events[{index}] is invalid: unknown key {sorted(extra)[0]!r}",
        )
    if "seq" in value and value["seq"] != seq:
        raise QueryError(
            errors.STORE_INVALID_EVENT,
            f"events[{index}] is invalid: seq {value['seq']!r} is not the next seq {seq}",
        )
    if "time" in value and not is_safe_integer(value["time"]):
        raise QueryError(
            errors.STORE_INVALID_EVENT, f"events[{index}] is invalid: time must be a safe integer"
        )
    value = {k: v for k, v in value.items() if k != "seq"}
    value.setdefault("time", stamp)
    return _build_event(value, seq)


def _build_event(value: dict[str, Any], seq: int) -> Event:
    ordered: dict[str, Any] = {"type": value.get("type", UNSET), "seq": seq}
    ordered["time"] = value.get("time", now_ms())
    for key in ("data", "surfaceOp", "sourceEventSeqs", "ignorable"):
        if key in value:
            ordered[key] = value[key]
    if ordered["type"] is UNSET:
        del ordered["type"]
    return Event.from_value(ordered)
