"""The server's configuration as one typed struct (protocol.md §1, semantics.md §6.1). Its
defaults are the only ones: the server's loader (core/config.py), the search service, the
command line and the README's configuration table (``readme_table``, checked by
tests/core/test_config.py) all read them from here.

A base module: it imports only resolve.py, the plain defaults a client reads without msgspec.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from . import resolve
from .resolve import (
    CHECKPOINT_MODES,
    PERSISTENCE_DEFAULT,
    cache_dir,
    default_index,
    embedded_store,
    persistence_text,
    state_dir,
)

OPEN_AT = ("startup", "first-search", "never")
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")
MAX_CHECKPOINT_INTERVAL_MS = 3_600_000


class SearchConfig(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The ``search`` group; ``path`` is the top-level ``index`` key."""

    path: str = ":memory:"
    open_at: str = resolve.OPEN_AT
    journal_mode: str = resolve.JOURNAL_MODE
    default_limit: int = resolve.DEFAULT_LIMIT
    max_limit: int = resolve.MAX_LIMIT
    snippet_chars: int = resolve.SNIPPET_CHARS
    # [ours] reconcile in the background once persistence is mounted at start (semantics.md §6.5)
    warm_up: bool = True


class ServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Validated configuration. ``persistence`` None mounts nothing; ``raw`` keeps the merged
    options it was built from."""

    persistence: str | list[str] | None = None
    search: SearchConfig = msgspec.field(default_factory=SearchConfig)
    read_window_max: int = resolve.READ_WINDOW_MAX
    persisted_inspect_concurrency: int = resolve.PERSISTED_INSPECT_CONCURRENCY
    checkpoint_mode: str = resolve.CHECKPOINT_MODE
    checkpoint_interval_ms: int = resolve.CHECKPOINT_INTERVAL_MS
    prices: str | None = None
    raw: dict[str, Any] = msgspec.field(default_factory=dict)


DEFAULTS = ServerConfig()

# The defaults of ``persistence`` and ``index`` depend on the environment (resolve.py).
INDEX_DEFAULT_TEXT = "<cache dir>/dsh-query/index-<hash>.sqlite"


def default_persistence() -> str:
    return PERSISTENCE_DEFAULT


_MEANINGS = {
    "persistence": "`auto` (the embedded SQLite store plus the dsh, Claude Code, Codex, Gemini "
    "CLI, OpenCode, Copilot CLI and Qwen Code homes that exist), one URI (`jsonl:<root>`, "
    "`sqlite:<path>`, `claude:<home>`, `codex:<home>`, `gemini:<home>`, `opencode:<dir>`, "
    "`copilot:<home>`, `qwen:<home>`), an array of 1–16 URIs mounted as one, or `null`",
    "index": "full-text index path, or `:memory:`",
    "readWindowMax": "largest `before`/`after` of `readEvent`",
    "persistedInspectConcurrency": "persisted logs read at once by title batches",
    "search": "`openAt: never` disables search; `warmUp: false` builds the index at the first search only",
    "checkpoint": "`auto` flushes live events to a writable backend; `manual` only on "
    "`sessionStore/checkpoint`",
    "prices": "a prices file (usage.md §3.2) whose rates override `genai-prices`, or `null`",
}


def option_defaults() -> list[tuple[str, str]]:
    """(key, default as the README shows it) of every top-level option, in table order."""
    search = msgspec.to_builtins(DEFAULTS.search)
    del search["path"]  # the top-level index key
    checkpoint = {"mode": DEFAULTS.checkpoint_mode, "intervalMs": DEFAULTS.checkpoint_interval_ms}
    return [
        ("persistence", f"`{json.dumps(PERSISTENCE_DEFAULT)}`"),
        ("index", f"`{INDEX_DEFAULT_TEXT}`"),
        ("readWindowMax", str(DEFAULTS.read_window_max)),
        ("persistedInspectConcurrency", str(DEFAULTS.persisted_inspect_concurrency)),
        ("search", f"`{json.dumps(search)}`"),
        ("checkpoint", f"`{json.dumps(checkpoint)}`"),
        ("prices", "`null`"),
    ]


def readme_table() -> str:
    """The README's configuration table, generated from the defaults above."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    rows += [f"| `{key}` | {default} | {_MEANINGS[key]} |" for key, default in option_defaults()]
    return "\n".join(rows) + "\n"


__all__ = [
    "CHECKPOINT_MODES",
    "DEFAULTS",
    "JOURNAL_MODES",
    "OPEN_AT",
    "SearchConfig",
    "ServerConfig",
    "cache_dir",
    "default_index",
    "default_persistence",
    "embedded_store",
    "persistence_text",
    "readme_table",
    "state_dir",
]
