"""A hub's key (hub.md §1): ``sha256(canonical JSON of the resolved configuration)[:16]``.

The resolved configuration is every key of protocol.md §1 after defaults, ``--config`` and
flags, with ``auto`` replaced by the member list it mounts now (importers.md §4.2). Clients and
the hub compute it with the same function, from the same options, so they agree; the hub checks
the options with the server's validation first (a client's bad value starts a hub that refuses
to run, and says why).

Standard library only: the command line computes the key before it knows whether a hub runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from .. import resolve

KEY_CHARS = 16
# The configuration keys of protocol.md §1; nothing else (a TCP token, MCP keys) is part of it.
CONFIG_KEYS = (
    "persistence",
    "index",
    "readWindowMax",
    "persistedInspectConcurrency",
    "search",
    "checkpoint",
    "prices",
)


def _get(group: Mapping[str, Any], key: str, default: Any) -> Any:
    value = group.get(key)
    return default if value is None else value


def _number(value: Any) -> Any:
    """An integral number as the int the server makes of it (50.0 is 50); anything else as it
    is (the hub refuses a bad value; the key only has to be the same for the same options)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _group(options: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    group = options.get(name)
    return group if isinstance(group, Mapping) else {}


def resolved(options: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved configuration of valid ``options`` (what the key hashes)."""
    persistence = options.get("persistence", resolve.PERSISTENCE_DEFAULT)
    index = _get(options, "index", None)
    if index is None:
        index = resolve.default_index(persistence)
    members: Any = persistence
    if persistence == "auto":
        members = resolve.auto_uris(resolve.embedded_store(), os.environ)
    search = _group(options, "search")
    checkpoint = _group(options, "checkpoint")
    return {
        "persistence": members,
        "index": index,
        "readWindowMax": _number(_get(options, "readWindowMax", resolve.READ_WINDOW_MAX)),
        "persistedInspectConcurrency": _number(
            _get(options, "persistedInspectConcurrency", resolve.PERSISTED_INSPECT_CONCURRENCY)
        ),
        "search": {
            "openAt": _get(search, "openAt", resolve.OPEN_AT),
            "journalMode": _get(search, "journalMode", resolve.JOURNAL_MODE),
            "defaultLimit": _number(_get(search, "defaultLimit", resolve.DEFAULT_LIMIT)),
            "maxLimit": _number(_get(search, "maxLimit", resolve.MAX_LIMIT)),
            "snippetChars": _number(_get(search, "snippetChars", resolve.SNIPPET_CHARS)),
        },
        "checkpoint": {
            "mode": _get(checkpoint, "mode", resolve.CHECKPOINT_MODE),
            "intervalMs": _number(_get(checkpoint, "intervalMs", resolve.CHECKPOINT_INTERVAL_MS)),
        },
        "prices": options.get("prices"),  # a prices file (usage.md), None for the package's
    }


def key_of(config: Mapping[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_CHARS]


def hub_key(options: Mapping[str, Any]) -> str:
    return key_of(resolved(options))


__all__ = ["CONFIG_KEYS", "hub_key", "key_of", "resolved"]
