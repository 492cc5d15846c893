"""``dsh-query mcp`` flags and keys (tools.md §1.1): the serve flags and ``--config``, plus the
MCP keys, and the private index slot guarded by ``flock``."""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

from ..config import persistence_text
from ..core.config import ServerConfig, build_config, cache_dir, default_persistence, merge
from ..errors import QueryError
from ..values import MAX_SAFE_INTEGER
from .args import is_json_integer

MAX_TIMEOUT_MS = 2_147_483_647
SLOTS = 8


@dataclass(frozen=True, slots=True)
class McpConfig:
    server: ServerConfig
    max_search_results: int
    search_timeout_ms: int
    workspace: tuple[str, ...]
    caller: str | None
    index_lock: int | None = None  # the claimed slot's locked fd, open for the process's life


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dsh-query mcp",
        description="Serve the session-history tools to an agent over MCP (stdio).",
    )
    p.add_argument(
        "--persistence",
        metavar="URI",
        help="backend to read: auto (default), jsonl:<root>, sqlite:<file>, claude:<home>, "
        "codex:<home>, postgres://…, or none",
    )
    p.add_argument("--index", metavar="PATH", help="full-text index path, or :memory:")
    p.add_argument(
        "--checkpoint", choices=("auto", "manual"), help="how live events reach persistence"
    )
    p.add_argument("--config", metavar="FILE", help="configuration keys as a JSON object")
    p.add_argument(
        "--max-search-results", metavar="N", help="most hits a search returns (default 100)"
    )
    p.add_argument(
        "--search-timeout-ms", metavar="N", help="a search's deadline in ms (default 30000)"
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        action="append",
        help="only sessions whose cwd is under DIR; repeatable (tools.md §1.2)",
    )
    p.add_argument(
        "--caller-session",
        metavar="ID",
        help="the calling agent's own session (default $DSH_QUERY_CALLER_SESSION)",
    )
    return p


def _stop(message: str) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(2)


def _int_flag(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def load(argv: list[str]) -> McpConfig:
    """Flags over ``--config``; a bad value stops start-up with status 2."""
    from ..persistence.mount.uri import absolute_uri

    ns = parser().parse_args(argv)
    options: dict[str, Any] = {}
    if ns.config is not None:
        try:
            with open(ns.config, encoding="utf-8") as f:
                options = json.load(f)
        except (OSError, ValueError) as exc:
            _stop(f"tool-session-query: cannot read --config: {exc}")
        if not isinstance(options, dict):
            _stop("tool-session-query: --config must hold a JSON object")
    flags: dict[str, Any] = {}
    if ns.persistence is not None:
        flags["persistence"] = None if ns.persistence == "none" else absolute_uri(ns.persistence)
    if ns.index is not None:
        flags["index"] = ns.index
    if ns.checkpoint is not None:
        flags["checkpoint"] = {"mode": ns.checkpoint}
    if ns.max_search_results is not None:
        flags["maxSearchResults"] = _int_flag(ns.max_search_results)
    if ns.search_timeout_ms is not None:
        flags["searchTimeoutMs"] = _int_flag(ns.search_timeout_ms)
    if ns.workspace:
        flags["workspace"] = list(ns.workspace)
    caller = ns.caller_session
    if caller is None:
        caller = os.environ.get("DSH_QUERY_CALLER_SESSION")
    if caller is not None:
        flags["callerSession"] = caller
    options = merge(options, flags)

    max_results = options.get("maxSearchResults", 100)
    if not (is_json_integer(max_results) and 1 <= max_results <= MAX_SAFE_INTEGER):
        _stop("tool-session-query: maxSearchResults must be a positive safe integer")
    timeout = options.get("searchTimeoutMs", 30000)
    if not (is_json_integer(timeout) and 1 <= timeout <= MAX_TIMEOUT_MS):
        _stop(
            "tool-session-query: searchTimeoutMs must be a positive integer no greater than "
            "2147483647"
        )
    workspace = options.get("workspace", [])
    if not (isinstance(workspace, list) and all(isinstance(w, str) for w in workspace)):
        _stop("tool-session-query: workspace must be an array of strings")
    caller_value = options.get("callerSession")
    if caller_value is not None and not isinstance(caller_value, str):
        _stop("tool-session-query: callerSession must be a string")
    if "persistence" not in options:
        options["persistence"] = default_persistence()
    lock = None
    if options.get("index") is None:
        options["index"], lock = claim_index(options["persistence"])
    try:
        server = build_config(options)
    except QueryError as exc:
        _stop(exc.message)
    paths: list[str] = list(workspace)
    return McpConfig(
        server, int(max_results), int(timeout), tuple(paths), caller_value or None, lock
    )


def index_base(persistence: str | list[str] | None) -> str:
    text = persistence_text(persistence)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(cache_dir(), "dsh-query", f"mcp-index-{digest[:16]}")


def claim_index(persistence: str | list[str] | None) -> tuple[str, int | None]:
    """The first of the eight slots whose lock we get, with the locked fd kept open for the
    process's life; ``:memory:`` when all are taken (an index is never shared, semantics §6.1)."""
    base = index_base(persistence)
    os.makedirs(os.path.dirname(base), mode=0o700, exist_ok=True)
    for slot in range(SLOTS):
        path = base + (f"-{slot}" if slot else "") + ".sqlite"
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        sys.stderr.write(f"dsh-query mcp: search index {path}\n")
        return path, fd
    sys.stderr.write("dsh-query mcp: every index slot is taken; using an in-memory index\n")
    return ":memory:", None
