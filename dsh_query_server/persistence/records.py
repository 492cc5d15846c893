"""The shared logical encoding of persistence.md §3: packed chunk rows, interrupted-turn closers
and legacy shape normalization. Both backends use these; neither re-implements them.

(API contract — implementation pending; see the functions' docstrings.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.event import Event

PACKED_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


class MalformedRow(Exception):
    """A packed row failed §3.2 row validation; message ``malformed <tag> storage row: <reason>``."""


@dataclass(frozen=True, slots=True)
class PackedRow:
    """One packed chunk row (persistence.md §3.2). ``data`` keys are in the spec's order."""

    tag: str
    seq0: int
    time0: int
    data: dict[str, Any]

    @property
    def members(self) -> int:
        raise NotImplementedError

    def data_json(self) -> bytes:
        """Compact JSON of ``data``."""
        raise NotImplementedError

    def to_json(self) -> bytes:
        """Compact JSON of the whole row ``{type, seq0, time0, data}`` (a JSONL line body)."""
        raise NotImplementedError


def pack(
    events: list[Event], *, max_members: int | None = None, max_data_bytes: int | None = None
) -> list[Event | PackedRow]:
    """Split one write batch into storage records: runs of >= 3 eligible chunk events become
    PackedRows, everything else stays a verbatim Event. ``max_members``/``max_data_bytes`` are the
    sqlite bounds (1024 members, 1 MiB of data JSON, greedy split of §5.5); None = unbounded."""
    raise NotImplementedError


def unpack_row(row: dict[str, Any], *, sqlite: bool = False) -> list[Event]:
    """Validate a packed row object ``{type: tag, seq0, time0, data}`` (checks 1-10 of §3.2, with
    the sqlite member bounds when ``sqlite``) and reconstruct its member events exactly.
    Raises MalformedRow."""
    raise NotImplementedError


def closers(events: list[Event]) -> list[Event]:
    """The in-memory closers of §3.3 for a prefix that ends inside an open turn ([] otherwise)."""
    raise NotImplementedError


def normalize_legacy(session_id: str, events: list[Event]) -> list[Event]:
    """§3.4 legacy shape rewrites, in log order. Raises SessionPersistenceCorruptionError."""
    raise NotImplementedError


def logical_log(session_id: str, events: list[Event]) -> list[Event]:
    """What ``inspect`` returns after storage decoding: normalized prefix plus closers."""
    normalized = normalize_legacy(session_id, events)
    return normalized + closers(normalized)
