"""Mapped logs kept for window reads (importers.md §8.6): per session, the log of its last read
and the proof of the rows it came from, least recently used first out, bounded in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..contract.results import Inspection

CACHE_BYTES = 64 * 1024 * 1024


class InspectionCache:
    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._logs: OrderedDict[str, tuple[str, Inspection, int]] = OrderedDict()
        self._bytes = 0

    def __contains__(self, sid: str) -> bool:
        with self._lock:
            return sid in self._logs

    def get(self, sid: str, proof: str) -> Inspection | None:
        """The log read under ``proof``, or None (another proof means the rows changed)."""
        with self._lock:
            hit = self._logs.get(sid)
            if hit is None or hit[0] != proof:
                return None
            self._logs.move_to_end(sid)
            return hit[1]

    def put(self, sid: str, proof: str, ins: Inspection) -> None:
        size = sum(len(e.raw) for e in ins.events)
        with self._lock:
            old = self._logs.pop(sid, None)
            if old is not None:
                self._bytes -= old[2]
            if size > self.limit // 4:
                return
            self._logs[sid] = (proof, ins, size)
            self._bytes += size
            while self._bytes > self.limit:
                _, (_, _, dropped) = self._logs.popitem(last=False)
                self._bytes -= dropped
