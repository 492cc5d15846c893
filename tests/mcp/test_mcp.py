"""tools.md §3: every worked example over a real ``python -m dsh_query_server.mcp`` process, driven
by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError
from pydantic import FileUrl

from tests.hub.hub_helpers import hub_pids
from tests.mcp_helpers import T0, mcp_session, private_env, text_of, write_corpus

pytestmark = [pytest.mark.anyio, pytest.mark.wire, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def corpus(tmp_path: Path) -> str:
    uri = f"jsonl:{tmp_path / 'ex'}?compression=none"
    write_corpus(uri)
    return f"jsonl:{tmp_path / 'ex'}"


def base(corpus: str, *extra: str) -> list[str]:
    return ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app", *extra]


E1 = """Session search results (4):

1. Session s-ghost — untitled
   Created: 2023-11-14T22:17:20.000Z
   Parent: [outside workspace]
   Availability: persisted
   Best match: seq 0 | user/message | current | 2023-11-14T22:17:21.000Z
   Snippet: Ghost retry run

2. Session s-leaf — untitled
   Created: 2023-11-14T22:15:20.000Z
   Parent: s-child
   Availability: persisted
   Best match: seq 1 | user/message | current | 2023-11-14T22:15:22.000Z
   Snippet: Check the retry jitter

3. Session s-child — Retry notes
   Created: 2023-11-14T22:14:20.000Z
   Parent: s-root
   Availability: persisted
   Best match: seq 0 | user/message | current | 2023-11-14T22:14:21.000Z
   Snippet: Summarize the retry notes

4. Session s-root — Retry policy
   Created: 2023-11-14T22:13:20.000Z
   Parent: root
   Availability: persisted
   Best match: seq 1 | user/message | current | 2023-11-14T22:13:22.000Z
   Snippet: What retry policy should we use?"""
BLOCKS = E1.split("\n\n")[1:]

E5 = """Session s-root — Retry policy

Event search results (2):
1. seq 1 | user/message | current | 2023-11-14T22:13:22.000Z
   Snippet: What retry policy should we use?
2. seq 3 | assistant/message | current | 2023-11-14T22:13:24.000Z
   Snippet: Use exponential backoff with jitter for every retry."""

E7 = """Session s-root — Retry policy
Created: 2023-11-14T22:13:20.000Z
Availability: persisted

Ancestors (nearest first):
- none (target is a root session)

Descendants:
- s-child — Retry notes | 2023-11-14T22:14:20.000Z | persisted
  - s-leaf — untitled | 2023-11-14T22:15:20.000Z | persisted
- [outside workspace subtree]"""

E8 = """Session s-ghost — untitled
Created: 2023-11-14T22:17:20.000Z
Availability: persisted

Ancestors (nearest first):
- [outside workspace boundary]

Descendants:
- none"""

E8_STRUCTURED = json.loads(
    '{"target":{"header":{"version":0,"id":"s-ghost","createdAt":1700000240000,"cwd":"/w/app",'
    '"origin":"subagent","delegationDepth":2},"live":false,"persisted":true,'
    '"parent":{"kind":"outside-workspace"},"title":null},"ancestors":[],"ancestorBoundary":true,'
    '"descendants":[]}'
)

E10 = """Session s-root — Retry policy
Target: seq 1 | user/message | current | 2023-11-14T22:13:22.000Z
Replaced by: none
Replacement chain: none
Events replaced by target: none
Events cited directly as sources: none
Direct derived events: 3"""

E11 = """Session s-root — Retry policy
Target event seq 2:
```json
{
  "type": "step/start",
  "seq": 2,
  "time": 1700000003000,
  "data": {
    "turn": 1,
    "step": 1
  }
}
```

Before:
- seq 1 | user/message | 2023-11-14T22:13:22.000Z
  What retry policy should we use?

After:
- seq 3 | assistant/message | 2023-11-14T22:13:24.000Z
  Use exponential backoff with jitter for every retry."""

E12: list[tuple[str, dict[str, Any], str, str]] = [
    ("session_search", {}, 'invalid arguments: missing required property "query"', "INVALID_ARGS"),
    (
        "session_search",
        {"query": "x", "availability": ["archived"]},
        'invalid arguments: "availability[0]" must be one of ["live","persisted"]',
        "INVALID_ARGS",
    ),
    (
        "session_event_read",
        {"seq": "2", "before": 1.5},
        'invalid arguments: "seq" must be an integer; "before" must be an integer',
        "INVALID_ARGS",
    ),
    (
        "session_search",
        {"query": " \n "},
        "session-search query must contain non-whitespace text",
        "SESSION_QUERY_INVALID_QUERY",
    ),
    (
        "session_search",
        {"query": "x", "created_at_from": "2023-11-14T22:13"},
        "session created_at_from range must be an ISO 8601 timestamp with Z or a numeric offset",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {"query": "x", "event_time_from": "2023-02-29T00:00Z"},
        "session time_from range must be a valid ISO 8601 timestamp",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_event_read",
        {"session_id": "s-root", "seq": -1},
        "seq must be a non-negative safe integer",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_event_read",
        {"session_id": "s-root", "seq": 2, "after": 51},
        "after must be at most 50 (the server's readWindowMax)",
        "SESSION_QUERY_INVALID_WINDOW",
    ),
    (
        "session_event_read",
        {"session_id": "s-root", "seq": 2, "before": 500},
        "before must be at most 50 (the server's readWindowMax)",
        "SESSION_QUERY_INVALID_WINDOW",
    ),
    # Unknown arguments are named, not ignored [ours].
    (
        "session_trace",
        {"session_id": "s-root", "sesion_id": "x", "depth": 2},
        'invalid arguments: unknown properties "sesion_id", "depth" (allowed: session_id)',
        "INVALID_ARGS",
    ),
    (
        "session_search",
        {"limit": 5},
        'invalid arguments: missing required property "query"; unknown property "limit" '
        "(allowed: query, session_ids, created_at_from, created_at_to, parent_session_ids, "
        "include_root_sessions, availability, event_seq_from, event_seq_to, event_time_from, "
        "event_time_to, event_types, event_surfaces)",
        "INVALID_ARGS",
    ),
    (
        "session_list",
        {"limit": 0},
        "limit must be an integer from 1 to 100",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_list",
        {"since": "yesterday"},
        "since must be an ISO 8601 timestamp with Z or a numeric offset, such as "
        "2026-01-31T00:00:00Z",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_read",
        {"session_id": "s-root", "max_chars": 10},
        "max_chars must be an integer from 1000 to 50000",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_trace",
        {},
        "session_id is required because no current session is configured",
        "SESSION_QUERY_TOOL_MISSING_CALLER",
    ),
    # More rejected arguments, each with the text of §1.5.
    (
        "session_search",
        {"query": "x", "session_ids": []},
        "session_ids must contain at least one value when supplied",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {"query": "x", "event_surfaces": []},
        "surfaces must contain at least one value when supplied",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {"query": "a\x00b"},
        "session-search query must not contain NUL",
        "SESSION_QUERY_INVALID_QUERY",
    ),
    (
        "session_search",
        {"query": "x", "event_seq_from": 3, "event_seq_to": 2},
        "session sequence range from must be less than or equal to to",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {"query": "x", "event_seq_to": 2**53},
        "sequence upper bound must be a non-negative safe integer",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {
            "query": "x",
            "created_at_from": "2023-11-14T22:15:20.0005Z",
            "created_at_to": "2023-11-14T22:15:20.0004Z",
        },
        "session created_at range from must be less than or equal to to",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_search",
        {"query": "x", "include_root_sessions": None, "session_ids": [1]},
        'invalid arguments: "session_ids[0]" must be a string; '
        '"include_root_sessions" must be a boolean',
        "INVALID_ARGS",
    ),
    (
        "session_event_search",
        {"session_id": 7},
        'invalid arguments: missing required property "query"; "session_id" must be a string',
        "INVALID_ARGS",
    ),
    (
        "session_event_read",
        {"session_id": "s-root", "seq": 1, "before": -2},
        "before must be a non-negative safe integer",
        "SESSION_QUERY_INVALID_FILTER",
    ),
    (
        "session_event_read",
        {"session_id": "s-root", "seq": 99},
        "session event was not found",
        "SESSION_QUERY_EVENT_NOT_FOUND",
    ),
]


async def call(session: Any, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await session.call_tool(name, arguments)


async def test_initialize_and_tools(tmp_path: Path, corpus: str) -> None:
    async with mcp_session(tmp_path, base(corpus)) as session:
        listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    assert names == [
        "session_search",
        "session_event_search",
        "session_trace",
        "session_event_trace",
        "session_event_read",
        "session_usage",
        "session_list",
        "session_read",
    ]
    read = listed.tools[4]
    assert read.input_schema == {
        "type": "object",
        "properties": {
            "session_id": {
                "type": "string",
                "description": "Target session id. Omit for the current session.",
            },
            "seq": {
                "type": "integer",
                "description": "Target event sequence number.",
                "minimum": 0,
                "maximum": 2**53 - 1,
            },
            "before": {
                "type": "integer",
                "description": "Number of preceding raw events to summarize. Omit for none.",
                "minimum": 0,
                "maximum": 50,
            },
            "after": {
                "type": "integer",
                "description": "Number of following raw events to summarize. Omit for none.",
                "minimum": 0,
                "maximum": 50,
            },
        },
        "required": ["seq"],
        "additionalProperties": False,
    }
    # Every integer states its bounds, every schema refuses unknown properties [ours].
    for tool in listed.tools:
        assert tool.input_schema["additionalProperties"] is False, tool.name
        for name, prop in tool.input_schema["properties"].items():
            if prop["type"] == "integer":
                assert "minimum" in prop and "maximum" in prop, (tool.name, name)
    listing = listed.tools[6].input_schema["properties"]["limit"]
    assert (listing["minimum"], listing["maximum"]) == (1, 100)
    assert "required" not in listed.tools[2].input_schema
    surfaces = listed.tools[0].input_schema["properties"]["event_surfaces"]
    assert surfaces["items"] == {"type": "string", "enum": ["current", "shadowed", "log-only"]}
    assert all(t.output_schema is None for t in listed.tools)
    assert all(
        t.annotations is not None
        and t.annotations.read_only_hint is True
        and t.annotations.open_world_hint is False
        for t in listed.tools
    )


async def test_initialize_result(tmp_path: Path, corpus: str) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        cwd=str(tmp_path),
        args=["-m", "dsh_query_server.mcp", *base(corpus)],
        env=private_env(tmp_path),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
    assert init.server_info.name == "dsh-query"
    assert init.capabilities.model_dump(by_alias=True, exclude_none=True) == {
        "tools": {"listChanged": False}
    }
    assert init.instructions == (
        "Use session_search to find relevant work from prior sessions, or session_event_search "
        "to search earlier events in one session. Search results are cursor-free and "
        "workspace-scoped. Follow a useful hit with session_trace, session_event_trace, or "
        "session_event_read when you need lineage, relationships, or exact data."
    )


async def test_worked_examples(tmp_path: Path, corpus: str) -> None:
    async with mcp_session(tmp_path, base(corpus)) as s:
        e1 = await call(s, "session_search", {"query": "retry"})
        assert not e1.is_error and text_of(e1) == E1
        assert [i["header"]["id"] for i in e1.structured_content["items"]] == [
            "s-ghost",
            "s-leaf",
            "s-child",
            "s-root",
        ]
        ghost = e1.structured_content["items"][0]
        assert ghost["parent"] == {"kind": "outside-workspace"}
        assert "parentSession" not in ghost["header"]
        assert "s-side" not in json.dumps(e1.model_dump(by_alias=True))

        for arguments in (
            {"query": "kubernetes"},
            {"query": "retry", "parent_session_ids": ["s-side"]},
            {"query": "retry", "parent_session_ids": ["s-nope"]},
        ):
            r = await call(s, "session_search", arguments)
            assert not r.is_error
            assert text_of(r) == (
                "No prior session matches found.\n"
                "Workspace: /w/app (from --workspace); 4 sessions are visible there."
            )
            assert r.structured_content == {
                "items": [],
                "capped": False,
                "workspace": {"roots": ["/w/app"], "visibleSessions": 4, "source": "--workspace"},
            }

        e5 = await call(s, "session_event_search", {"session_id": "s-root", "query": "retry"})
        assert text_of(e5) == E5
        leaf = await call(s, "session_event_search", {"session_id": "s-leaf", "query": "retry"})
        assert [i["seq"] for i in leaf.structured_content["items"]] == [1, 3]
        assert "Jitter is applied to each retry." in text_of(leaf)

        assert text_of(await call(s, "session_trace", {"session_id": "s-root"})) == E7
        e8 = await call(s, "session_trace", {"session_id": "s-ghost"})
        assert text_of(e8) == E8 and e8.structured_content == E8_STRUCTURED
        leaf_trace = text_of(await call(s, "session_trace", {"session_id": "s-leaf"}))
        assert (
            "- s-child — Retry notes | 2023-11-14T22:14:20.000Z | persisted\n"
            "- s-root — Retry policy | 2023-11-14T22:13:20.000Z | persisted"
        ) in leaf_trace

        e10 = await call(s, "session_event_trace", {"session_id": "s-root", "seq": 1})
        assert text_of(e10) == E10
        e11 = await call(
            s, "session_event_read", {"session_id": "s-root", "seq": 2, "before": 1, "after": 1}
        )
        assert text_of(e11) == E11
        assert e11.structured_content["before"] == [
            {
                "seq": 1,
                "type": "user/message",
                "time": 1700000002000,
                "text": "What retry policy should we use?",
            }
        ]

        # E9: a hidden target and a missing one answer byte-identically but for the id the
        # caller gave.
        for name, extra in (
            ("session_trace", {}),
            ("session_event_read", {"seq": 0}),
            ("session_event_search", {"query": "retry"}),
            ("session_event_trace", {"seq": 0}),
            ("session_usage", {}),
            ("session_read", {}),
        ):
            hidden = await call(s, name, {"session_id": "s-side", **extra})
            missing = await call(s, name, {"session_id": "s-nope", **extra})
            assert hidden.is_error and text_of(hidden) == (
                "Error: no session with id s-side in this workspace"
            )
            assert hidden.model_dump_json() == missing.model_dump_json().replace("s-nope", "s-side")
            assert hidden.structured_content == {
                "error": {
                    "code": "SESSION_QUERY_TOOL_UNAUTHORIZED",
                    "message": "no session with id s-side in this workspace",
                }
            }

        # E12 and more: argument errors are tool errors with their exact text.
        for name, arguments, message, code in E12:
            r = await call(s, name, arguments)
            assert r.is_error, (name, arguments)
            assert text_of(r) == f"Error: {message}", (name, arguments)
            assert r.structured_content == {"error": {"code": code, "message": message}}

        with pytest.raises(MCPError) as info:
            await call(s, "session_nope", {})
        assert info.value.error.code == -32602
        assert not (await call(s, "session_trace", {"session_id": "s-root"})).is_error


async def test_capped(tmp_path: Path, corpus: str) -> None:
    async with mcp_session(tmp_path, base(corpus, "--max-search-results", "2")) as s:
        r = await call(s, "session_search", {"query": "retry"})
    assert text_of(r) == "\n\n".join(
        [
            "Session search results (2):",
            *BLOCKS[:2],
            "Result cap reached. Narrow the query or add filters to find additional matches.",
        ]
    )
    assert r.structured_content["capped"] is True


async def test_caller_root(tmp_path: Path, corpus: str) -> None:
    async with mcp_session(tmp_path, base(corpus, "--caller-session", "s-root")) as s:
        r = await call(s, "session_search", {"query": "retry"})
        trace = await call(s, "session_trace", {})
    assert text_of(r) == "\n\n".join(["Session search results (3):", *BLOCKS[:3]])
    assert text_of(trace) == E7  # an omitted session_id means the caller


async def test_caller_leaf_is_clipped(tmp_path: Path, corpus: str) -> None:
    async with mcp_session(tmp_path, base(corpus, "--caller-session", "s-leaf")) as s:
        r = await call(s, "session_event_search", {"query": "retry"})
        empty = await call(
            s, "session_event_search", {"query": "retry", "seq_from": 2, "time_from": "bad"}
        )
    assert (
        text_of(r)
        == """Session s-leaf — untitled

Event search results (1):
1. seq 1 | user/message | current | 2023-11-14T22:15:22.000Z
   Snippet: Check the retry jitter"""
    )
    assert not empty.is_error
    assert text_of(empty) == "Session s-leaf — untitled\n\nNo prior event matches found."


async def test_caller_without_step(tmp_path: Path, corpus: str, monkeypatch: Any) -> None:
    env = private_env(tmp_path)
    env["DSH_QUERY_CALLER_SESSION"] = "s-child"  # the environment names the caller
    async with mcp_session(tmp_path, base(corpus), env=env) as s:
        r = await call(s, "session_event_search", {"query": "retry"})
    assert r.is_error and text_of(r) == (
        "Error: current-session search requires an active step boundary"
    )
    assert r.structured_content["error"]["code"] == "SESSION_QUERY_TOOL_NO_CURRENT_STEP"


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_roots_change_mid_session(tmp_path: Path, corpus: str) -> None:
    roots = ["file:///w/app/pkg"]
    asked: list[int] = []

    async def list_roots(context: Any) -> types.ListRootsResult | types.ErrorData:
        asked.append(1)
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(u)) for u in roots])

    args = ["--persistence", corpus, "--index", ":memory:"]  # no --workspace: roots apply
    async with mcp_session(tmp_path, args, roots=list_roots) as s:
        first = await call(s, "session_search", {"query": "retry"})
        again = await call(s, "session_search", {"query": "retry"})
        assert len(asked) == 1  # the answer is cached until list_changed
        roots[:] = ["file:///w"]
        await s.send_roots_list_changed()
        later = await call(s, "session_search", {"query": "retry"})
        side = await call(s, "session_trace", {"session_id": "s-side"})
    assert (
        text_of(first)
        == text_of(again)
        == """Session search results (1):

1. Session s-child — Retry notes
   Created: 2023-11-14T22:14:20.000Z
   Parent: [outside workspace]
   Availability: persisted
   Best match: seq 0 | user/message | current | 2023-11-14T22:14:21.000Z
   Snippet: Summarize the retry notes"""
    )
    ids = [i["header"]["id"] for i in later.structured_content["items"]]
    assert sorted(ids) == ["s-child", "s-ghost", "s-leaf", "s-root", "s-side"]
    assert not side.is_error and len(asked) == 2


async def test_working_directory_is_the_default_workspace(tmp_path: Path, corpus: str) -> None:
    args = ["--persistence", corpus, "--index", ":memory:"]
    async with mcp_session(tmp_path, args) as s:
        r = await call(s, "session_search", {"query": "retry"})
    assert text_of(r) == (  # nothing lives under tmp_path
        "No prior session matches found.\n"
        f"Workspace: {tmp_path} (from the directory the server started in); "
        "0 sessions are visible there.\n"
        "No session is visible in this workspace: the server's --workspace (else the directory "
        "it was started in) decides which sessions it shows."
    )


async def test_the_demo_corpus_with_its_main_project_as_workspace(tmp_path: Path) -> None:
    """`dsh-query mcp --demo`, like `serve --demo`: the demo corpus, in memory and a temporary
    store; the workspace defaults to the demo's main project, so its other project is hidden."""
    cli = ("-m", "dsh_query_server.cli", "mcp")
    async with mcp_session(tmp_path, ["--demo"], entry=cli) as s:
        found = await call(s, "session_search", {"query": "flaky"})
        hidden = await call(s, "session_search", {"query": "contrast"})
    ids = [i["header"]["id"] for i in found.structured_content["items"]]
    assert "fix-flaky-tests" in ids and "try-freezegun" in ids, ids
    assert text_of(hidden).startswith("No prior session matches found.\n")
    assert "Workspace: /home/ana/projects/payments-api (from --workspace)" in text_of(hidden)
    async with mcp_session(tmp_path, ["--demo", "--workspace", "/home/ana"], entry=cli) as s:
        seen = await call(s, "session_search", {"query": "contrast"})
    assert [i["header"]["id"] for i in seen.structured_content["items"]] == ["dark-mode-contrast"]


async def test_search_timeout_keeps_serving(tmp_path: Path) -> None:
    from dsh_query_server.persistence.mount.uri import open_backend
    from tests.mcp_helpers import U, event, header

    uri = f"jsonl:{tmp_path / 'big'}?compression=none"
    backend = open_backend(uri)
    for i in range(150):
        sid = f"s{i:03d}"
        backend.create(header(sid, "/w/app", None, 1700000000000 + i, 0))
        backend.append(sid, [event(j, 1700000000000, U(f"retry note {i} {j}")) for j in range(20)])
    backend.close()
    args = [
        "--persistence",
        f"jsonl:{tmp_path / 'big'}",
        "--index",
        ":memory:",
        "--workspace",
        "/w/app",
        "--search-timeout-ms",
        "1",
    ]
    async with mcp_session(tmp_path, args) as s:
        r = await call(s, "session_search", {"query": "retry"})
        after = await call(s, "session_trace", {"session_id": "s001"})
    assert r.is_error and text_of(r) == "Error: tool call timed out after 1ms"
    assert r.structured_content["error"]["code"] == "SESSION_QUERY_TOOL_TIMEOUT"
    assert not after.is_error


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--max-search-results",
            "0",
            "tool-session-query: maxSearchResults must be a positive safe integer",
        ),
        (
            "--search-timeout-ms",
            "2147483648",
            "tool-session-query: searchTimeoutMs must be a "
            "positive integer no greater than 2147483647",
        ),
    ],
)
def test_bad_start_up_values(tmp_path: Path, flag: str, value: str, message: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dsh_query_server.mcp",
            "--persistence",
            "none",
            "--index",
            ":memory:",
            flag,
            value,
        ],
        env=private_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


async def test_cancelled_search_and_config_file(tmp_path: Path, corpus: str) -> None:
    """notifications/cancelled ends a call without an answer and the server keeps serving;
    --config gives keys that flags override."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "maxSearchResults": 1,
                "workspace": ["/w/app"],
                "index": ":memory:",
                "persistence": "none",
            }
        )
    )
    args = ["--config", str(config), "--persistence", corpus, "--max-search-results", "2"]
    async with mcp_session(tmp_path, args) as s:
        with pytest.raises(MCPError):
            await s.call_tool("session_search", {"query": "retry"}, read_timeout_seconds=0.0001)
        r = await call(s, "session_search", {"query": "retry"})
    assert text_of(r) == "\n\n".join(
        [
            "Session search results (2):",
            *BLOCKS[:2],
            "Result cap reached. Narrow the query or add filters to find additional matches.",
        ]
    )


async def test_two_agents_share_one_hub_and_its_index(tmp_path: Path, corpus: str) -> None:
    """hub.md §3: every dsh-query mcp of one configuration answers from the same hub."""
    args = ["--persistence", corpus, "--workspace", "/w/app"]
    env = private_env(tmp_path)
    async with mcp_session(tmp_path, args, env=env) as first:
        async with mcp_session(tmp_path, args, env=env) as second:
            a = await call(first, "session_search", {"query": "retry"})
            b = await call(second, "session_search", {"query": "retry"})
            hubs = hub_pids(env["XDG_RUNTIME_DIR"])
    assert text_of(a) == text_of(b) == E1
    assert len(hubs) == 1
    cache = Path(env["XDG_CACHE_HOME"]) / "dsh-query"
    assert [p.name for p in cache.glob("*.sqlite")] == [
        p.name for p in cache.glob("index-*.sqlite")
    ]
    assert len(list(cache.glob("*.sqlite"))) == 1


async def test_index_slots_are_never_shared_without_a_hub(tmp_path: Path, corpus: str) -> None:
    args = ["--persistence", corpus, "--workspace", "/w/app", "--no-hub"]
    env = private_env(tmp_path)
    async with mcp_session(tmp_path, args, env=env) as first:
        async with mcp_session(tmp_path, args, env=env) as second:
            a = await call(first, "session_search", {"query": "retry"})
            b = await call(second, "session_search", {"query": "retry"})
    assert text_of(a) == text_of(b) == E1
    log = (tmp_path / "mcp-stderr.log").read_text()
    slots = sorted(
        line.rsplit("/", 1)[1]
        for line in log.splitlines()
        if line.startswith("dsh-query mcp: search index")
    )
    assert len(slots) == 2 and slots[0].endswith("-1.sqlite") and slots[0] != slots[1]
    cache = Path(env["XDG_CACHE_HOME"]) / "dsh-query"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


async def test_lone_surrogates_still_answer(tmp_path: Path) -> None:
    """Logs written from JavaScript can hold lone surrogates; an answer is still sent."""
    from dsh_query_server.persistence.mount.uri import open_backend
    from tests.mcp_helpers import U, event, header, title

    uri = f"jsonl:{tmp_path / 'odd'}"
    backend = open_backend(uri + "?compression=none")
    backend.create(header("s-odd", "/w/app", None, 1700000000000, 0))
    backend.append(
        "s-odd",
        [
            event(0, 1700000000000, U("retry \ud800 lone")),
            event(1, 1700000000000, ("session/title", title("T\udc00", 0), None)),
        ],
    )
    backend.close()
    args = ["--persistence", uri, "--index", ":memory:", "--workspace", "/w/app"]
    async with mcp_session(tmp_path, args) as s:
        found = await call(s, "session_search", {"query": "retry"})
        read = await call(s, "session_event_read", {"session_id": "s-odd", "seq": 0})
    assert not found.is_error and "Session s-odd — T\ufffd" in text_of(found)
    assert found.structured_content["items"][0]["title"] == "T\ufffd"
    assert '"text": "retry \\ud800 lone"' in text_of(read)  # JSON.stringify escapes it


async def test_trace_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    """Descendants are walked iteratively (§1.6): a chain deeper than Python's recursion limit."""
    from dsh_query_server.persistence.mount.uri import open_backend
    from tests.mcp_helpers import U, event, header

    depth = sys.getrecursionlimit() + 100
    uri = f"sqlite:{tmp_path / 'deep.db'}"
    backend = open_backend(uri)
    for i in range(depth):
        sid = f"d{i:05d}"
        backend.create(header(sid, "/w/app", None if i == 0 else f"d{i - 1:05d}", T0 + i, i))
        backend.append(sid, [event(0, T0 + i, U(f"deep {i}"))])
    backend.close()
    args = ["--persistence", uri, "--index", ":memory:", "--workspace", "/w/app"]
    async with mcp_session(tmp_path, args) as s:
        top = await call(s, "session_trace", {"session_id": "d00000"})
        bottom = await call(s, "session_trace", {"session_id": f"d{depth - 1:05d}"})
    nodes = top.structured_content["descendants"]
    assert [n["depth"] for n in nodes] == list(range(depth - 1))
    last = text_of(top).split("\n")[-1]
    assert last.startswith("  " * (depth - 2) + f"- d{depth - 1:05d} — untitled |")
    assert len(bottom.structured_content["ancestors"]) == depth - 1
    assert bottom.structured_content["ancestorBoundary"] is False
