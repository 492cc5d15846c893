"""The server's configuration as one typed struct (protocol.md §1, semantics.md §6.1). Its
defaults are the only ones: the server's loader (core/config.py), the search service, the
command line and the README's configuration table (``readme_table``, checked by
tests/core/test_config.py) all read them from here.

A base module: it imports nothing from the rest of the package.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import msgspec

OPEN_AT = ("startup", "first-search", "never")
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")
CHECKPOINT_MODES = ("auto", "manual")
MAX_CHECKPOINT_INTERVAL_MS = 3_600_000


class SearchConfig(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The ``search`` group; ``path`` is the top-level ``index`` key."""

    path: str = ":memory:"
    open_at: str = "startup"
    journal_mode: str = "wal"
    default_limit: int = 20
    max_limit: int = 100
    snippet_chars: int = 240


class ServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Validated configuration. ``persistence`` None mounts nothing; ``raw`` keeps the merged
    options it was built from."""

    persistence: str | list[str] | None = None
    search: SearchConfig = msgspec.field(default_factory=SearchConfig)
    read_window_max: int = 50
    persisted_inspect_concurrency: int = 4
    checkpoint_mode: str = "auto"
    checkpoint_interval_ms: int = 200
    prices: str | None = None
    raw: dict[str, Any] = msgspec.field(default_factory=dict)


DEFAULTS = ServerConfig()

# Where the defaults of ``persistence`` and ``index`` live: they depend on the environment.
PERSISTENCE_DEFAULT = "auto"  # importers.md §4.2
INDEX_DEFAULT_TEXT = "<cache dir>/dsh-query/index-<hash>.sqlite"


def state_dir() -> str:
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def cache_dir() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def embedded_store() -> str:
    """The embedded SQLite store: the first, writable member of ``auto``."""
    return "sqlite:" + os.path.join(state_dir(), "dsh-query", "sessions.db").replace("%", "%25")


def default_persistence() -> str:
    return PERSISTENCE_DEFAULT


def persistence_text(persistence: str | list[str] | None) -> str:
    """What the default index hashes (importers.md §4.3): the string, or the array's compact
    JSON; ``none`` when nothing is mounted."""
    if persistence is None:
        return "none"
    if isinstance(persistence, str):
        return persistence
    return json.dumps(persistence, separators=(",", ":"), ensure_ascii=False)


def default_index(persistence: str | list[str] | None, prefix: str = "index") -> str:
    """The index file of a persistence value: one per value, so two stores never share one. The
    command line uses its own ``prefix``: an index is never shared with a running server."""
    text = persistence_text(persistence)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(cache_dir(), "dsh-query", f"{prefix}-{digest}.sqlite")


_MEANINGS = {
    "persistence": "`auto` (the embedded SQLite store plus the dsh, Claude Code, Codex, Gemini "
    "CLI, OpenCode, Copilot CLI and Qwen Code homes that exist), one URI (`jsonl:<root>`, "
    "`sqlite:<path>`, `claude:<home>`, `codex:<home>`, `gemini:<home>`, `opencode:<dir>`, "
    "`copilot:<home>`, `qwen:<home>`), an array of 1–16 URIs mounted as one, or `null`",
    "index": "full-text index path, or `:memory:`",
    "readWindowMax": "largest `before`/`after` of `readEvent`",
    "persistedInspectConcurrency": "persisted logs read at once by title batches",
    "search": "`openAt: never` disables search",
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
