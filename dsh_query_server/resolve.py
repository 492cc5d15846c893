"""What a configuration resolves to before anything is opened: the defaults of protocol.md §1,
the members of ``auto`` (importers.md §4.2), the default index path and the absolute form of a
command-line URI.

A base module of the standard library only: a client computes a hub's key from it (hub/key.py)
without loading msgspec, the server or any backend. config.py builds its typed defaults from these
values; persistence/ re-exports ``auto_uris`` and ``absolute_uri``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping

PERSISTENCE_DEFAULT = "auto"  # importers.md §4.2
READ_WINDOW_MAX = 50
PERSISTED_INSPECT_CONCURRENCY = 4
CHECKPOINT_MODE = "auto"
CHECKPOINT_MODES = ("auto", "manual")
CHECKPOINT_INTERVAL_MS = 200
# The ``search`` group's defaults (the index path is the top-level ``index`` key).
OPEN_AT = "startup"
JOURNAL_MODE = "wal"
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SNIPPET_CHARS = 240

# Schemes whose location is a path (persistence.md §1, importers.md §1.1), and those whose empty
# or ``~`` location names the agent's home.
PATH_SCHEMES = ("jsonl", "sqlite", "claude", "codex", "gemini", "opencode", "copilot", "qwen")
HOME_SCHEMES = ("claude", "codex", "gemini", "opencode", "copilot", "qwen")


def state_dir() -> str:
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def cache_dir() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def embedded_store() -> str:
    """The embedded SQLite store: the first, writable member of ``auto``."""
    return "sqlite:" + os.path.join(state_dir(), "dsh-query", "sessions.db").replace("%", "%25")


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
    command line's private server (``--no-hub``) uses its own ``prefix``."""
    text = persistence_text(persistence)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return os.path.join(cache_dir(), "dsh-query", f"{prefix}-{digest}.sqlite")


def _home(env: Mapping[str, str], variable: str | None, default: str) -> str:
    value = env.get(variable, "") if variable else ""
    if not value:
        value = os.path.join(env.get("HOME", ""), default)
    return os.path.abspath(value)


def _uri_path(path: str) -> str:
    return path.replace("%", "%25").replace("?", "%3F")


def _importer_homes(env: Mapping[str, str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """importers.md §4.2's importer members in order: (scheme, home, the entries of which one
    marks a history: a directory, or a file for ``opencode.db``)."""
    return [
        ("claude", _home(env, "CLAUDE_CONFIG_DIR", ".claude"), ("projects",)),
        ("claude", _home(env, None, ".claude-vscode"), ("projects",)),
        ("codex", _home(env, "CODEX_HOME", ".codex"), ("sessions", "archived_sessions")),
        # §7.1: GEMINI_CLI_HOME stands in for HOME, Gemini CLI's home is .gemini in it
        ("gemini", os.path.join(_home(env, "GEMINI_CLI_HOME", ""), ".gemini"), ("tmp",)),
        (
            "opencode",  # §8.1: XDG_DATA_HOME is the parent of OpenCode's data
            os.path.join(_home(env, "XDG_DATA_HOME", os.path.join(".local", "share")), "opencode"),
            ("opencode.db", os.path.join("storage", "session")),
        ),
        ("copilot", _home(env, "COPILOT_HOME", ".copilot"), ("session-state",)),
        ("qwen", _home(env, "QWEN_RUNTIME_DIR", ".qwen"), ("projects",)),
    ]


def _holds(home: str, entry: str) -> bool:
    path = os.path.join(home, entry)
    return os.path.isfile(path) if entry.endswith(".db") else os.path.isdir(path)


def auto_uris(embedded: str, env: Mapping[str, str]) -> list[str]:
    """importers.md §4.2: the embedded store, then dsh's root and each agent's home that exists
    now, each once (a member whose realpath repeats an earlier one is left out)."""
    candidates: list[tuple[str, str | None]] = [(embedded, None)]
    dsh = os.path.join(_home(env, "DSH_HOME", ".dsh"), "sessions")
    if os.path.isdir(dsh):
        candidates.append((f"jsonl:{_uri_path(dsh)}?readOnly=true", dsh))
    for scheme, home, entries in _importer_homes(env):
        if any(_holds(home, entry) for entry in entries):
            candidates.append((f"{scheme}:{_uri_path(home)}", home))
    out: list[str] = []
    seen: set[str] = set()
    for uri, location in candidates:
        real = os.path.realpath(location) if location is not None else None
        if real is not None and real in seen:
            continue
        if real is not None:
            seen.add(real)
        out.append(uri)
    return out


def absolute_uri(uri: str) -> str:
    """Resolve a relative location against the working directory (command-line convenience)."""
    scheme, sep, rest = uri.partition(":")
    if scheme in HOME_SCHEMES and (rest.startswith(("~", "?")) or not rest):
        return uri
    if (
        sep
        and scheme in PATH_SCHEMES
        and rest
        and not rest.startswith("/")
        and not rest.startswith(":memory:")
    ):
        location, q, query = rest.partition("?")
        return f"{scheme}:{os.path.abspath(location).replace('%', '%25')}{q}{query}"
    return uri


__all__ = [
    "PERSISTENCE_DEFAULT",
    "absolute_uri",
    "auto_uris",
    "cache_dir",
    "default_index",
    "embedded_store",
    "persistence_text",
    "state_dir",
]
