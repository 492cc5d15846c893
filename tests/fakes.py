"""In-process persistence doubles implementing the contract of persistence.md §2: they return the
typed results (Header, Inspection, Snapshot) real backends return."""

from __future__ import annotations

import threading
from typing import Any

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.contract.backend import PersistenceBackend
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.contract.results import Inspection, Snapshot


class MemoryBackend:
    """A dict of sessions; every call is recorded; failures and hangs can be injected."""

    writable = True

    def __init__(self, uri: str = "memory:test") -> None:
        self.uri = uri
        self.sessions: dict[str, tuple[Header, list[Event]]] = {}
        self.revisions: dict[str, int] = {}
        self.calls: list[tuple[str, Any]] = []
        self.fail: dict[str, Exception] = {}  # operation -> error to raise
        self.corrupt: set[str] = set()
        self.inspect_meta: dict[str, Header] = {}  # override what inspect reports
        self.created: dict[str, Header] = {}
        self.gate: threading.Event | None = None  # when set, calls block until it is set
        self.started = threading.Event()
        self._lock = threading.Lock()

    def put(self, header: dict[str, Any] | Header, events: list[Event] | None = None) -> None:
        h = header if isinstance(header, Header) else Header.from_value(header)
        self.sessions[h.id] = (h, list(events or []))
        self.revisions[h.id] = self.revisions.get(h.id, 0) + 1

    def _enter(self, op: str, arg: Any, token: CancelToken) -> None:
        with self._lock:
            self.calls.append((op, arg))
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        if op in self.fail:
            raise self.fail[op]

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        self._enter("list", None, token)
        return [h for h, _ in self.sessions.values()]

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        self._enter("list_snapshots", None, token)
        return [Snapshot(h, f"rev-{self.revisions[sid]}") for sid, (h, _) in self.sessions.items()]

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        self._enter("inspect", session_id, token)
        if session_id in self.corrupt:
            raise SessionPersistenceCorruptionError("bad bytes")
        if session_id not in self.sessions:
            raise KeyError(f'session "{session_id}" not found')
        header, events = self.sessions[session_id]
        return Inspection(self.inspect_meta.get(session_id, header), list(events))

    def create(self, header: Header) -> None:
        self.calls.append(("create", header.id))
        self.created[header.id] = header

    def append(self, session_id: str, events: list[Event]) -> None:
        """Like real backends: the first append materializes a created session."""
        self.calls.append(("append", session_id))
        if session_id not in self.sessions:
            self.sessions[session_id] = (self.created.pop(session_id), [])
        self.sessions[session_id][1].extend(events)
        self.revisions[session_id] = self.revisions.get(session_id, 0) + 1

    def stored_count(self, session_id: str) -> int | None:
        entry = self.sessions.get(session_id)
        return None if entry is None else len(entry[1])

    def close(self) -> None:
        pass


def _conforms(backend: MemoryBackend) -> PersistenceBackend:
    return backend  # pyright checks that the double has the contract's shape


def ops(backend: MemoryBackend) -> list[str]:
    return [op for op, _ in backend.calls]


__all__ = ["MemoryBackend", "ops"]
