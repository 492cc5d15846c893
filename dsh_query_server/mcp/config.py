"""``dsh-query mcp`` flags and keys (tools.md §1.1): the serve flags and ``--config``, plus the
MCP keys; the hub's options, or with ``--no-hub`` the private index slot guarded by ``flock``."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

from ..config import persistence_text
from ..core.config import ServerConfig, build_config, cache_dir, default_persistence, merge
from ..errors import QueryError
from ..hub.key import CONFIG_KEYS
from ..search import ownership
from ..values import MAX_SAFE_INTEGER
from .args import is_json_integer

MAX_TIMEOUT_MS = 2_147_483_647


@dataclass(frozen=True, slots=True)
class McpConfig:
    server: ServerConfig
    max_search_results: int
    search_timeout_ms: int
    workspace: tuple[str, ...]
    caller: str | None
    # The protocol.md §1 keys for the hub (hub.md §3); None with --no-hub, which serves the
    # tools in this process from ``server``.
    hub_options: dict[str, Any] | None = None
    index_claim: ownership.Claim | None = None  # --no-hub: the slot this process holds


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
    p.add_argument(
        "--no-hub",
        action="store_true",
        help="serve the tools from a query service in this process instead of the shared hub",
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
    from ..resolve import absolute_uri

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
    hub_options = None if ns.no_hub else {k: options[k] for k in CONFIG_KEYS if k in options}
    claim = None
    if hub_options is None and options.get("index") is None:
        options["index"], claim = claim_index(options["persistence"])
    try:
        server = build_config(options)
    except QueryError as exc:
        _stop(exc.message)
    paths: list[str] = list(workspace)
    return McpConfig(
        server,
        int(max_results),
        int(timeout),
        tuple(paths),
        caller_value or None,
        hub_options,
        claim,
    )


def index_base(persistence: str | list[str] | None) -> str:
    text = persistence_text(persistence)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return os.path.join(cache_dir(), "dsh-query", f"mcp-index-{digest[:16]}")


def claim_index(persistence: str | list[str] | None) -> tuple[str, ownership.Claim]:
    """The first of the eight slots this process can hold (search/ownership.py), held for the
    process's life; the search service opens that same file."""
    claim = ownership.claim(index_base(persistence) + ".sqlite")
    if claim.path == ownership.MEMORY:
        sys.stderr.write("dsh-query mcp: every index slot is taken; using an in-memory index\n")
    else:
        sys.stderr.write(f"dsh-query mcp: search index {claim.path}\n")
    return claim.path, claim
