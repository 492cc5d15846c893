"""Search configuration (semantics.md §6.1): the ``search`` group of the one configuration
struct (dsh_query_server/config.py), validated by the server's configuration loader."""

from __future__ import annotations

from ..config import JOURNAL_MODES, OPEN_AT, SearchConfig

__all__ = ["JOURNAL_MODES", "OPEN_AT", "SearchConfig"]
