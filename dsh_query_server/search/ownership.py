"""Index ownership (semantics.md §6.1: an index is never shared between processes; hub.md §1):
every process that opens an index file holds an exclusive ``flock`` on ``<index>.lock`` for as
long as it has the file open. A process that cannot take the lock never touches the file: it
takes the next slot, ``<stem>-1<ext>`` … ``<stem>-7<ext>`` (each with its own lock, named as
tools.md §1.1 names them), or ``:memory:`` after that.

Ownership is per process: a path this process holds already is held again (counted), so the
MCP server, which picks its slot before it builds the search service, and the service itself
agree on one file.
"""

from __future__ import annotations

import fcntl
import os
import threading
from dataclasses import dataclass

from ..files import make_private_dirs

MEMORY = ":memory:"
SLOTS = 8  # the file itself, then -1 … -7


@dataclass(frozen=True, slots=True)
class Claim:
    requested: str  # the path that was asked for
    path: str  # the file this process now holds, or ":memory:"

    @property
    def moved(self) -> bool:
        return self.path != self.requested


_lock = threading.Lock()
_held: dict[str, tuple[int | None, int]] = {}  # path -> (locked fd, holders in this process)


def slot_path(path: str, slot: int) -> str:
    if not slot:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}-{slot}{ext}"


def _take(path: str) -> int | None | bool:
    """The locked fd; None when no lock file can be made (the open then fails on its own,
    naming the path); False when another process holds it."""
    try:
        make_private_dirs(os.path.dirname(os.path.abspath(path)))
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return fd


def claim(path: str) -> Claim:
    """The first slot of ``path`` this process holds or can lock."""
    if path == MEMORY:
        return Claim(path, path)
    with _lock:
        for slot in range(SLOTS):
            candidate = slot_path(path, slot)
            held = _held.get(candidate)
            if held is not None:
                _held[candidate] = (held[0], held[1] + 1)
                return Claim(path, candidate)
            fd = _take(candidate)
            if fd is False:
                continue
            _held[candidate] = (fd if isinstance(fd, int) else None, 1)
            return Claim(path, candidate)
    return Claim(path, MEMORY)


def release(held: Claim) -> None:
    """Give the claim back; the lock goes with the last holder in this process."""
    with _lock:
        entry = _held.get(held.path)
        if entry is None:
            return
        fd, count = entry
        if count > 1:
            _held[held.path] = (fd, count - 1)
            return
        del _held[held.path]
    if fd is not None:
        os.close(fd)


def describe(held: Claim, who: str) -> str | None:
    """The stderr line for a claim that did not get the file asked for."""
    if not held.moved:
        return None
    if held.path == MEMORY:
        return f"{who}: every slot of the search index {held.requested} is in use by another process; using an in-memory index"
    return (
        f"{who}: the search index {held.requested} is in use by another process; using {held.path}"
    )


__all__ = ["Claim", "MEMORY", "SLOTS", "claim", "describe", "release", "slot_path"]
