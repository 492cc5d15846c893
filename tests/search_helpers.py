"""Shared helpers for the search service tests."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.errors import QueryError
from dsh_query_server.jsoncodec import to_builtins
from dsh_query_server.model.event import Event
from dsh_query_server.model.params import decode
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.search.config import SearchConfig
from dsh_query_server.search.service import SearchService
from dsh_query_server.search.wire import SessionEventSearchRequest, SessionSearchRequest
from dsh_query_server.session.store import SessionStore

from .fakes import MemoryBackend

T = TypeVar("T")

ROOT = str(pathlib.Path(__file__).resolve().parent.parent)


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


def from_json(search: Callable[..., T]) -> Callable[..., T]:
    """A search method of the service taking its request as the JSON the wire carries, decoded
    as the server decodes it (the method's params struct, model/params.py)."""
    kind = SessionEventSearchRequest if search.__name__ == "search_events" else SessionSearchRequest

    def call(request: Any, *rest: Any) -> T:
        return search(decode(kind, request), *rest)

    return call


def sessions(service: SearchService, query: str, **request: Any) -> dict[str, Any]:
    return j(from_json(service.search_sessions)({"query": query, **request}))


def events(service: SearchService, sid: str, query: str, **request: Any) -> dict[str, Any]:
    return j(from_json(service.search_events)({"sessionId": sid, "query": query, **request}))


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


class StdioServer:
    """A dsh-query-server process on stdio, spoken to with JSON-RPC framing by hand."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dsh_query_server", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**env, "PYTHONPATH": ROOT},
            cwd=cwd,
        )
        self.next_id = 0
        options = {"index": ":memory:"}
        assert "capabilities" in self.call(
            "initialize", {"capabilities": {}, "initializationOptions": options}
        )
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = None
        while True:
            line = self.proc.stdout.readline()
            assert line, "server closed its output"
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        return json.loads(self.proc.stdout.read(length))

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole reply to ``method``: its result or its error."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id and "method" not in reply:
                return reply

    def call(self, method: str, params: dict[str, Any]) -> Any:
        reply = self.request(method, params)
        assert "error" not in reply, (method, params, reply)
        return reply["result"]

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
