"""The operations every persistence backend has (persistence.md §2.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Event, Header
from .results import Inspection, Snapshot


@runtime_checkable
class PersistenceBackend(Protocol):
    """persistence.md §2.1: the operations every backend has. ``uri`` and ``writable`` describe
    the mount. Optional read paths are the capability protocols of capabilities.py, resolved
    once at mount by the mount's door (reads.py), never probed per call."""

    @property
    def uri(self) -> str: ...

    @property
    def writable(self) -> bool: ...

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]: ...

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> Sequence[Snapshot]: ...

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection: ...

    def create(self, header: Header) -> None: ...

    def append(self, session_id: str, events: list[Event]) -> None: ...

    def stored_count(self, session_id: str) -> int | None:
        """Writer helper: how many events the stored log holds (its valid prefix), or None when
        nothing is stored for the id. Raises like ``inspect`` for damaged logs."""
        ...

    def close(self) -> None: ...
