"""The JSON examples of docs/reference.md: one scripted session against the real server.

Every example is a request this module sends to ``python -m dsh_query_server`` over stdio (and,
for a hub's own ``hub/*`` methods, to a ``dsh-query hub`` over its socket) and the answer it got,
so the reference shows what the server does, not what someone remembered. Times are given
explicitly and the backend lives in a temporary folder shown as ``/data``; what a hub cannot
give the same twice (its pid, when it started) is shown as ``HUB_SHOWN`` says, so the output is
the same on every run (tests/docs/test_reference.py regenerates it and compares).
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from .. import jsoncodec
from ..client import RpcError, StdioClient

T0 = 1_764_460_800_000  # 2025-11-30T00:00:00Z
DATA = "/data"


@dataclass(frozen=True)
class Example:
    method: str
    params: dict[str, Any]
    result: Any = None
    error: dict[str, Any] | None = None


def _user(seq: int, text: str) -> dict[str, Any]:
    message = {
        "id": f"u{seq}",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }
    return {"type": "user/message", "time": T0 + seq * 1000, "surfaceOp": "append", "data": message}


def _assistant(seq: int, text: str) -> dict[str, Any]:
    message = {
        "id": f"a{seq}",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
    }
    usage = {"inputTokens": 1200, "outputTokens": 40, "cacheReadTokens": 800}
    data = {"turn": 0, "step": 0, "message": message, "usage": usage}
    event = {"type": "assistant/message", "time": T0 + seq * 1000, "surfaceOp": "append"}
    return {**event, "data": data}


def _title(seq: int, title: str) -> dict[str, Any]:
    data = {"title": title, "messageSeqs": [0, 1], "source": {"kind": "fallback"}}
    return {"type": "session/title", "time": T0 + seq * 1000, "data": data}


PARENT = {"version": 0, "id": "s1", "createdAt": T0, "cwd": "/work/app"}
CHILD = {"version": 0, "id": "s2", "createdAt": T0 + 60_000, "cwd": "/work/app",
         "parentSession": "s1", "origin": "subagent", "delegationDepth": 1}  # fmt: skip
# (method, params): each is sent in this order; the first answer per method is its example,
# and a call listed in ERRORS is kept as that method's error example.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("sessionStore/create", {"header": PARENT}),
    ("sessionStore/append", {"sessionId": "s1", "events": [
        _user(0, "Where is the retry budget configured?"),
        _assistant(1, "In config/retry.toml: the budget is 3 attempts."),
        _title(2, "Retry budget"),
    ]}),
    ("sessionStore/create", {"header": CHILD}),
    ("sessionQuery/listSessions", {}),
    ("sessionQuery/filterSessions", {"filters": [{"kind": "parent", "values": ["s1"]}]}),
    ("sessionQuery/listEvents", {"sessionId": "s1"}),
    ("sessionQuery/filterEvents", {"sessionId": "s1", "filters": [
        {"kind": "surface", "values": ["current"]}, {"kind": "text", "text": "budget"}]}),
    ("sessionQuery/readEvent", {"sessionId": "s1", "seq": 1, "before": 1, "after": 0}),
    ("sessionQuery/readSurface", {"sessionId": "s1"}),
    ("sessionQuery/readTimeline", {"sessionId": "s1"}),
    ("sessionQuery/readUsage", {"sessionId": "s1", "includeDescendants": True}),
    ("sessionQuery/usageSummary", {"groupBy": "day", "timeZone": "Europe/Paris"}),
    ("sessionQuery/readSession", {"sessionId": "s2"}),
    ("sessionQuery/readTitle", {"sessionId": "s1"}),
    ("sessionQuery/readSessionView", {"sessionId": "s1", "log": True}),
    ("sessionQuery/readTitles", {"sessionIds": ["s1", "nope"]}),
    ("sessionQuery/traceSession", {"sessionId": "s2"}),
    ("sessionQuery/traceEvent", {"sessionId": "s1", "seq": 0}),
    ("sessionQuery/exportSession", {"sessionId": "s1", "outputPath": f"{DATA}/s1.zip",
                                    "includeDescendants": True}),
    ("sessionQuery/searchSessions", {"query": "retry budget", "limit": 5}),
    ("sessionQuery/searchEvents", {"sessionId": "s1", "query": "budget", "limit": 5}),
    ("sessionQuery/treeChildren", {"view": "sessions"}),
    ("sessionQuery/treeChildren", {"view": "sessions", "nodeId": "?"}),
    ("sessionQuery/treeParent", {"view": "sessions", "nodeId": "?"}),
    ("sessionStore/checkpoint", {}),
    ("sessionPersistence/mount", {"uri": f"sqlite:{DATA}/sessions.db"}),
    ("sessionStore/checkpoint", {"sessionId": "s1"}),
    ("sessionPersistence/status", {}),
    ("sessionStore/remove", {"sessionId": "s2"}),
    ("sessionPersistence/unmount", {}),
]  # fmt: skip
ERRORS: list[tuple[str, dict[str, Any]]] = [
    ("sessionQuery/readEvent", {"sessionId": "s1", "seq": 99}),
    ("sessionQuery/readSurface", {"sessionId": "s1", "throughSeq": 99}),
    ("sessionQuery/listEvents", {"sessionId": 7}),
    ("sessionQuery/searchSessions", {"query": "   "}),
    ("sessionStore/append", {"sessionId": "s1", "events": [{"type": "user/message"}]}),
    ("sessionPersistence/mount", {"uri": "sqlite:relative.db"}),
]


# The hub: its methods, in this order (hub/stop last: it ends the hub), and the calls kept as
# error examples.
HUB_OPTIONS: dict[str, Any] = {"persistence": None, "index": ":memory:"}
HUB_SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("hub/status", {}),
    ("hub/render", {"method": "sessionQuery/readTitles", "params": {"sessionIds": ["nope"]}}),
    ("hub/callTool", {"name": "session_search", "arguments": {"query": "retry budget"},
                      "workspace": {"roots": ["/work/app"], "base": "/work/app"},
                      "caller": None, "maxResults": 5}),
    ("hub/render", {"method": "hub/stop"}),
    ("hub/stop", {}),
]  # fmt: skip
HUB_SHOWN = {"pid": 4242, "startedAt": T0, "uptimeMs": 1500}
HUB_START_SECONDS = 30.0


def _swap(value: Any, old: str, new: str) -> Any:
    return jsoncodec.loads(jsoncodec.dumps(value).replace(old.encode(), new.encode()))


def run() -> list[Example]:
    """Send SCRIPT and ERRORS to a fresh server; every answer, in order."""
    out: list[Example] = []
    with tempfile.TemporaryDirectory(prefix="dsh-query-examples-") as tmp:
        options = {"index": ":memory:", "checkpoint": {"mode": "manual", "intervalMs": 200}}
        with StdioClient(["--persistence", "none"], initialization_options=options) as client:
            for method, params in [*SCRIPT, *ERRORS]:
                if params.get("nodeId") == "?":  # the last node the server listed
                    params = {**params, "nodeId": _last_node(out)}
                sent = _swap(params, DATA, tmp)
                try:
                    result = client.request(method, sent)
                    out.append(Example(method, params, result=_swap(result, tmp, DATA)))
                except RpcError as exc:
                    out.append(Example(method, params, error=_swap(exc.error, tmp, DATA)))
        out += _hub_examples(tmp)
    return out


def _hub_examples(tmp: str) -> list[Example]:
    """HUB_SCRIPT against a hub of its own, whose socket lives in ``tmp``."""
    from ..hub.client import HubClient

    env = {**os.environ, "XDG_RUNTIME_DIR": tmp}
    command = [sys.executable, "-m", "dsh_query_server.cli", "hub", "--idle-exit", "0"]
    command += ["--persistence", "none", "--index", ":memory:"]
    hub = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    out: list[Example] = []
    try:
        sockets: list[str] = []
        deadline = time.monotonic() + HUB_START_SECONDS
        while not sockets and hub.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
            sockets = glob.glob(os.path.join(tmp, "dsh-query", "hub-*.json"))
        if not sockets:
            raise RuntimeError("the examples' hub did not start")
        client = HubClient.connect(sockets[0].removesuffix(".json") + ".sock")
        with client:
            client.initialize(HUB_OPTIONS)
            for method, params in HUB_SCRIPT:
                try:
                    result = client.request(method, params)
                    if method == "hub/status":
                        result = {**result, **HUB_SHOWN}
                    out.append(Example(method, params, result=_swap(result, tmp, DATA)))
                except RpcError as exc:
                    out.append(Example(method, params, error=_swap(exc.error, tmp, DATA)))
        hub.wait(HUB_START_SECONDS)
    finally:
        if hub.poll() is None:
            hub.kill()
            hub.wait()
    return out


def _last_node(done: list[Example]) -> str:
    tree = [e for e in done if e.method == "sessionQuery/treeChildren"][-1]
    return tree.result["nodes"][-1]["id"]


def by_method(examples: list[Example]) -> dict[str, tuple[Example | None, Example | None]]:
    """Per method: its first answered call and its first failed call."""
    found: dict[str, tuple[Example | None, Example | None]] = {}
    for example in examples:
        ok, bad = found.get(example.method, (None, None))
        if example.error is None and ok is None:
            ok = example
        if example.error is not None and bad is None:
            bad = example
        found[example.method] = (ok, bad)
    return found
