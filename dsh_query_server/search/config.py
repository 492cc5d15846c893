"""Search configuration (semantics.md §6.1), validated by the server's configuration loader."""

from __future__ import annotations

from dataclasses import dataclass

OPEN_AT = ("startup", "first-search", "never")
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")


@dataclass(frozen=True, slots=True)
class SearchConfig:
    path: str = ":memory:"  # the `index` key; protocol.md gives the server's default
    open_at: str = "startup"
    journal_mode: str = "wal"
    default_limit: int = 20
    max_limit: int = 100
    snippet_chars: int = 240
