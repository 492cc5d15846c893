"""The worked-example corpus of tools.md §3.1 and an MCP client on a real ``dsh-query mcp``
process (the SDK's own stdio client)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.session import ListRootsFnT
from mcp.client.stdio import stdio_client

from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.mount.uri import open_backend
from tests.hub.hub_helpers import short_run_dir, using_hubs

T0 = 1700000000000


def user(text: str) -> dict[str, Any]:
    return {
        "id": "m1",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }


def assistant(text: str) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": 1,
        "message": {
            "id": "m2",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
        },
    }


def title(text: str, k: int) -> dict[str, Any]:
    return {"title": text, "messageSeqs": [k], "source": {"kind": "fallback"}}


Spec = tuple[str, dict[str, Any], list[int] | None]  # (type, data, sourceEventSeqs)


def U(text: str) -> Spec:
    return ("user/message", user(text), None)


def A(text: str, k: int) -> Spec:
    return ("assistant/message", assistant(text), [k])


CORPUS: list[tuple[str, str, str | None, int, int, list[Spec]]] = [
    (
        "s-root",
        "/w/app",
        None,
        T0,
        0,
        [
            ("turn/start", {"turn": 1}, None),
            U("What retry policy should we use?"),
            ("step/start", {"turn": 1, "step": 1}, None),
            A("Use exponential backoff with jitter for every retry.", 1),
            ("step/end", {"turn": 1, "step": 1}, None),
            ("session/title", title("Retry policy", 1), None),
            ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, None),
        ],
    ),
    (
        "s-child",
        "/w/app/pkg",
        "s-root",
        T0 + 60000,
        1,
        [
            U("Summarize the retry notes"),
            A("Retry at most 5 times, then give up.", 0),
            ("session/title", title("Retry notes", 0), None),
        ],
    ),
    (
        "s-leaf",
        "/w/app",
        "s-child",
        T0 + 120000,
        2,
        [
            ("turn/start", {"turn": 1}, None),
            U("Check the retry jitter"),
            ("step/start", {"turn": 1, "step": 1}, None),
            A("Jitter is applied to each retry.", 1),
        ],
    ),
    ("s-side", "/w/app-old", "s-root", T0 + 180000, 1, [U("retry retry retry in the old app")]),
    ("s-ghost", "/w/app", "s-side", T0 + 240000, 2, [U("Ghost retry run")]),
]


def event(seq: int, created: int, spec: Spec) -> Event:
    etype, data, sources = spec
    value: dict[str, Any] = {
        "type": etype,
        "seq": seq,
        "time": created + 1000 * (seq + 1),
        "data": data,
    }
    if etype in ("user/message", "assistant/message"):
        value["surfaceOp"] = "append"
    if sources is not None:
        value["sourceEventSeqs"] = sources
    return Event.from_value(value)


def header(sid: str, cwd: str, parent: str | None, created: int, depth: int) -> Header:
    fields: dict[str, Any] = {"version": 0, "id": sid, "createdAt": created, "cwd": cwd}
    if parent is not None:
        fields["parentSession"] = parent
    if sid != "s-root":
        fields["origin"] = "subagent"
    fields["delegationDepth"] = depth
    return Header.from_value(fields)


def write_corpus(uri: str) -> None:
    backend = open_backend(uri)
    try:
        for sid, cwd, parent, created, depth, specs in CORPUS:
            backend.create(header(sid, cwd, parent, created, depth))
            backend.append(sid, [event(i, created, s) for i, s in enumerate(specs)])
    finally:
        backend.close()


def private_env(tmp: Path) -> dict[str, str]:
    """A server never reads a real home: HOME and the XDG dirs live under ``tmp``."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "DSH_"))}
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=short_run_dir(),  # the hub's socket (hub.md §1), stopped after the test
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        DSH_HOME=str(home / ".dsh"),
    )
    return env


@contextlib.asynccontextmanager
async def mcp_session(
    tmp: Path,
    args: list[str],
    *,
    roots: ListRootsFnT | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    entry: tuple[str, ...] = ("-m", "dsh_query_server.mcp"),
) -> AsyncIterator[ClientSession]:
    """An MCP client session on a server process started with ``entry`` (the module, or
    ``("-m", "dsh_query_server.cli", "mcp")`` for the ``dsh-query mcp`` command) and ``args``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*entry, *args],
        env=env or private_env(tmp),
        cwd=cwd or str(tmp),
    )
    errlog = open(tmp / "mcp-stderr.log", "a")  # closed below
    try:
        with using_hubs((params.env or {}).get("XDG_RUNTIME_DIR", "")):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, list_roots_callback=roots) as session:
                    await session.initialize()
                    yield session
    finally:
        errlog.close()


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text
