"""Server configuration (protocol.md §1): command-line flags, overridden key by key by the
client's ``initializationOptions``, validated in the order of semantics.md §6.1."""

from __future__ import annotations

from typing import Any

from .. import errors
from ..config import (
    CHECKPOINT_MODES,
    DEFAULTS,
    JOURNAL_MODES,
    MAX_CHECKPOINT_INTERVAL_MS,
    OPEN_AT,
    SearchConfig,
    ServerConfig,
    cache_dir,
    default_index,
    default_persistence,
    embedded_store,
    state_dir,
)
from ..errors import QueryError
from ..persistence.mount.composite import persistence_members
from ..query.prices import PriceFile
from ..values import MAX_SAFE_INTEGER, is_blank, is_integer, is_safe_integer

_UNSET = object()
_SEARCH = DEFAULTS.search


def merge(base: dict[str, Any], override: Any) -> dict[str, Any]:
    """``override`` wins key by key; the ``search`` and ``checkpoint`` groups merge by key too."""
    if override is None:
        return dict(base)
    if not isinstance(override, dict):
        raise QueryError(
            errors.INVALID_CONFIG, "session-query: initializationOptions must be an object"
        )
    out = dict(base)
    for key, value in override.items():
        if (
            key in ("search", "checkpoint")
            and isinstance(value, dict)
            and isinstance(out.get(key), dict)
        ):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _search_error(detail: str) -> QueryError:
    return QueryError(errors.INVALID_CONFIG, f"session-search SQLite config: {detail}")


def _query_error(detail: str) -> QueryError:
    return QueryError(errors.INVALID_CONFIG, f"session-query: {detail}")


def _get(group: dict[str, Any], key: str, default: Any) -> Any:
    value = group.get(key, _UNSET)
    return default if value is _UNSET or value is None else value


def build_config(options: dict[str, Any]) -> ServerConfig:
    """Validate merged options; raises INVALID_CONFIG with the first failure."""
    persistence = options.get("persistence", _UNSET)
    if persistence is _UNSET:
        persistence = default_persistence()
    if persistence is not None and persistence != "auto":
        # a bad shape or a member URI that does not parse is INVALID_CONFIG (importers.md §4.3)
        persistence_members(persistence, embedded_store(), {})
    search = options.get("search")
    if search is None:
        search = {}
    if not isinstance(search, dict):
        raise _search_error("search must be an object")
    open_at = _get(search, "openAt", _SEARCH.open_at)
    err = _query_error if open_at == "never" else _search_error

    path = _get(options, "index", None)
    if path is None:
        path = default_index(persistence)
    if not isinstance(path, str) or is_blank(path):
        raise _search_error("index path must be a non-blank string")
    if open_at not in OPEN_AT:
        raise _search_error('openAt must be "startup", "first-search" or "never"')
    limit_rule = lambda v: is_safe_integer(v) and 1 <= v <= MAX_SAFE_INTEGER - 1  # noqa: E731
    default_limit = _get(search, "defaultLimit", _SEARCH.default_limit)
    if not limit_rule(default_limit):
        raise _search_error("defaultLimit must be an integer between 1 and 9007199254740990")
    max_limit = _get(search, "maxLimit", _SEARCH.max_limit)
    if not limit_rule(max_limit):
        raise _search_error("maxLimit must be an integer between 1 and 9007199254740990")
    snippet_chars = _get(search, "snippetChars", _SEARCH.snippet_chars)
    if not (is_integer(snippet_chars) and snippet_chars >= 1):
        raise _search_error("snippetChars must be an integer >= 1")
    read_window_max = _get(options, "readWindowMax", DEFAULTS.read_window_max)
    if not (is_integer(read_window_max) and read_window_max >= 0):
        raise err("readWindowMax must be an integer >= 0")
    concurrency = _get(
        options, "persistedInspectConcurrency", DEFAULTS.persisted_inspect_concurrency
    )
    if not (is_safe_integer(concurrency) and concurrency >= 1):
        raise err("persistedInspectConcurrency must be a safe integer >= 1")
    if default_limit > max_limit:
        raise _search_error("defaultLimit must be less than or equal to maxLimit")
    journal_mode = _get(search, "journalMode", _SEARCH.journal_mode)
    if journal_mode not in JOURNAL_MODES:
        raise _search_error('journalMode must be "wal", "delete", "truncate" or "persist"')
    warm_up = _get(search, "warmUp", _SEARCH.warm_up)
    if not isinstance(warm_up, bool):
        raise _search_error("warmUp must be a boolean")

    checkpoint = options.get("checkpoint")
    if checkpoint is None:
        checkpoint = {}
    if not isinstance(checkpoint, dict):
        raise _query_error("checkpoint must be an object")
    mode = _get(checkpoint, "mode", DEFAULTS.checkpoint_mode)
    if mode not in CHECKPOINT_MODES:
        raise _query_error('checkpoint.mode must be "auto" or "manual"')
    interval = _get(checkpoint, "intervalMs", DEFAULTS.checkpoint_interval_ms)
    if not (is_safe_integer(interval) and 0 <= interval <= MAX_CHECKPOINT_INTERVAL_MS):
        raise _query_error("checkpoint.intervalMs must be an integer between 0 and 3600000")

    prices = options.get("prices")
    if prices is not None:
        if not isinstance(prices, str) or is_blank(prices):
            raise _query_error("prices must be a file path or null")
        PriceFile(prices)  # INVALID_CONFIG when it cannot be read or does not parse

    return ServerConfig(
        persistence=persistence,
        search=SearchConfig(
            path=path,
            open_at=open_at,
            journal_mode=journal_mode,
            default_limit=int(default_limit),
            max_limit=int(max_limit),
            snippet_chars=int(snippet_chars),
            warm_up=warm_up,
        ),
        read_window_max=int(read_window_max),
        persisted_inspect_concurrency=int(concurrency),
        checkpoint_mode=mode,
        checkpoint_interval_ms=int(interval),
        prices=prices,
        raw=options,
    )


__all__ = [
    "ServerConfig",
    "build_config",
    "cache_dir",
    "default_index",
    "default_persistence",
    "merge",
    "state_dir",
]
