"""Shared helpers for the search service tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.model.event import Event
from dsh_query_server.persistence.base import Snapshot
from dsh_query_server.persistence.binding import PersistenceBinding
from dsh_query_server.search.config import SearchConfig
from dsh_query_server.search.service import SearchService
from dsh_query_server.session.store import SessionStore

from .fakes import MemoryBackend


def values(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_value() for e in events]


def j(value: Any) -> Any:
    return to_builtins(value)


def make(
    store: SessionStore | None = None, binding: PersistenceBinding | None = None, **config: Any
) -> tuple[SessionStore, PersistenceBinding, SearchService]:
    store = store or SessionStore()
    binding = binding or PersistenceBinding()
    return store, binding, SearchService(store, binding, SearchConfig(**config))


def error(fn: Callable[..., Any], *args: Any, **kw: Any) -> QueryError:
    with pytest.raises(QueryError) as info:
        fn(*args, **kw)
    return info.value


def code(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[str, str]:
    exc = error(fn, *args, **kw)
    return exc.code, exc.message


def sessions(service: SearchService, query: str, **request: Any) -> dict[str, Any]:
    return j(service.search_sessions({"query": query, **request}))


def events(service: SearchService, sid: str, query: str, **request: Any) -> dict[str, Any]:
    return j(service.search_events({"sessionId": sid, "query": query, **request}))


def ids(page: dict[str, Any]) -> list[str]:
    return [item["header"]["id"] for item in page["items"]]


def page_all(
    search: Callable[[dict[str, Any]], Any], request: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every item of every page, following nextCursor."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = j(search({**request, **({"cursor": cursor} if cursor else {})}))
        items += page["items"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return items


class TokenBackend(MemoryBackend):
    """Records the token passed to every call."""

    def __init__(self, uri: str = "memory:tokens") -> None:
        super().__init__(uri)
        self.tokens: list[CancelToken] = []

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        self.tokens.append(token)
        return super().list_snapshots(token)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Any:
        self.tokens.append(token)
        return super().inspect(session_id, token)


class ChurningBackend(MemoryBackend):
    """A backend whose snapshot listing changes on every call."""

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        for sid in self.revisions:
            self.revisions[sid] += 1
        return super().list_snapshots(token)
