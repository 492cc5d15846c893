"""tools.md §1.2 on both protocol eras, with the MCP SDK's own high-level ``Client`` on a real
``dsh-query mcp`` process: on 2026-07-28 the workspace is the server's configuration
(``--workspace``, else the directory it started in) and roots are never asked for; an older
client's roots count only when it declared them, listed at least one and no ``--workspace`` was
given. No call makes the SDK warn: the client side runs with warnings as errors, the server with
``-W error::UserWarning`` (MCPDeprecationWarning is one) and its stderr is read afterwards.

Also here: the two browsing tools (session_list, session_read) through the hub and in-process,
and the one-line log of a failed call."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from dsh_query_server.persistence.mount.uri import open_backend
from tests.hub.hub_helpers import using_hubs
from tests.mcp_helpers import T0, A, U, event, header, private_env, text_of, write_corpus

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.wire,
    pytest.mark.filterwarnings("error"),  # a warning on the client side fails the test
]

MODERN = "2026-07-28"
LEGACY = "legacy"  # the initialize handshake: the SDK's newest handshake version (2025-11-25)
SERVER = ("-W", "error::UserWarning", "-m", "dsh_query_server.mcp")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def homes(tmp_path: Path) -> tuple[str, Path, Path]:
    """The worked-example corpus (cwds under /w) plus two sessions whose cwds are real
    directories: ``proj`` (where the server starts) and ``other`` (what a client lists as its
    root)."""
    uri = f"jsonl:{tmp_path / 'ex'}?compression=none"
    write_corpus(uri)
    proj, other = tmp_path / "proj", tmp_path / "other"
    proj.mkdir()
    other.mkdir()
    backend = open_backend(uri)
    try:
        for sid, cwd, offset in (("p-one", proj, 0), ("o-one", other, 1)):
            created = T0 + 600_000 + offset
            backend.create(header(sid, str(cwd), None, created, 0))
            backend.append(
                sid,
                [
                    event(0, created, U(f"retry the {sid} upload")),
                    event(1, created, A(f"Retried {sid} with backoff.", 0)),
                ],
            )
    finally:
        backend.close()
    return f"jsonl:{tmp_path / 'ex'}", proj, other


class Roots:
    """A client's roots callback that counts how often the server asked."""

    def __init__(self, *paths: Path | str) -> None:
        self.uris = [f"file://{p}" for p in paths]
        self.asked = 0

    async def __call__(self, context: Any) -> types.ListRootsResult:
        self.asked += 1
        return types.ListRootsResult(roots=[types.Root(uri=u) for u in self.uris])  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def client(
    tmp: Path,
    args: list[str],
    *,
    mode: str,
    roots: Roots | None = None,
    cwd: Path | None = None,
    entry: tuple[str, ...] = SERVER,
) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[*entry, *args],
        env=private_env(tmp),
        cwd=str(cwd or tmp),
    )
    errlog = open(tmp / "mcp-stderr.log", "a")  # closed below
    try:
        with using_hubs((params.env or {}).get("XDG_RUNTIME_DIR", "")):
            async with Client(
                stdio_client(params, errlog=errlog), mode=mode, list_roots_callback=roots
            ) as c:
                yield c
    finally:
        errlog.close()


TOOLS_MD = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def worked(label: str) -> str:
    """The first fenced block after ``**<label>,`` in docs/tools.md §3.2 (normative)."""
    text = TOOLS_MD.read_text(encoding="utf-8")
    after = text[text.index(f"**{label},") :]
    block = after[after.index("```\n") + 4 :]
    return block[: block.index("\n```")]


def ids(result: types.CallToolResult) -> list[str]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return sorted(i["header"]["id"] for i in result.structured_content["items"])


def server_log(tmp: Path) -> str:
    return (tmp / "mcp-stderr.log").read_text(encoding="utf-8")


def no_warning(tmp: Path) -> None:
    log = server_log(tmp)
    assert "Warning" not in log and "Traceback" not in log, log


async def test_modern_protocol_takes_the_flag_and_never_asks_for_roots(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, _, other = homes
    roots = Roots(other)
    args = ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app"]
    async with client(tmp_path, args, mode=MODERN, roots=roots) as c:
        assert c.protocol_version == MODERN
        found = await c.call_tool("session_search", {"query": "retry"})
        listed = await c.call_tool("session_list", {})
    assert ids(found) == ["s-child", "s-ghost", "s-leaf", "s-root"]
    assert listed.structured_content is not None
    assert listed.structured_content["workspace"]["source"] == "--workspace"
    assert roots.asked == 0
    no_warning(tmp_path)


async def test_modern_protocol_without_a_flag_is_the_start_directory(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, proj, other = homes
    roots = Roots(other)  # declared, and ignored on 2026-07-28
    args = ["--persistence", corpus, "--index", ":memory:"]
    async with client(tmp_path, args, mode=MODERN, roots=roots, cwd=proj) as c:
        found = await c.call_tool("session_search", {"query": "retry"})
    assert ids(found) == ["p-one"] and roots.asked == 0
    no_warning(tmp_path)


async def test_auto_negotiation_reaches_the_modern_protocol(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, proj, _ = homes
    args = ["--persistence", corpus, "--index", ":memory:"]
    async with client(tmp_path, args, mode="auto", cwd=proj) as c:
        assert c.protocol_version == MODERN
        found = await c.call_tool("session_search", {"query": "retry"})
    assert ids(found) == ["p-one"]
    no_warning(tmp_path)


async def test_older_protocol_reads_declared_roots_without_a_warning(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, proj, other = homes
    roots = Roots(other)
    args = ["--persistence", corpus, "--index", ":memory:"]
    async with client(tmp_path, args, mode=LEGACY, roots=roots, cwd=proj) as c:
        assert c.protocol_version != MODERN
        found = await c.call_tool("session_search", {"query": "retry"})
        again = await c.call_tool("session_list", {})
    assert ids(found) == ["o-one"] and roots.asked == 1  # asked once, then cached
    assert again.structured_content is not None
    assert again.structured_content["workspace"]["source"] == "the client's roots"
    no_warning(tmp_path)


async def test_older_protocol_with_no_roots_listed_is_the_start_directory(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, proj, _ = homes
    roots = Roots()  # declared, lists none
    args = ["--persistence", corpus, "--index", ":memory:"]
    async with client(tmp_path, args, mode=LEGACY, roots=roots, cwd=proj) as c:
        found = await c.call_tool("session_search", {"query": "retry"})
    assert ids(found) == ["p-one"] and roots.asked == 1
    no_warning(tmp_path)


async def test_older_protocol_roots_never_override_the_flag(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    corpus, _, other = homes
    roots = Roots(other)
    args = ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app"]
    async with client(tmp_path, args, mode=LEGACY, roots=roots) as c:
        found = await c.call_tool("session_search", {"query": "retry"})
    assert ids(found) == ["s-child", "s-ghost", "s-leaf", "s-root"] and roots.asked == 0
    no_warning(tmp_path)


@pytest.mark.parametrize("hub", [True, False], ids=["hub", "in-process"])
async def test_session_list_and_read(
    tmp_path: Path, homes: tuple[str, Path, Path], hub: bool
) -> None:
    corpus, _, _ = homes
    args = ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app"]
    args += [] if hub else ["--no-hub"]
    async with client(tmp_path, args, mode=MODERN) as c:
        listed = await c.call_tool("session_list", {})
        two = await c.call_tool("session_list", {"limit": 2})
        recent = await c.call_tool("session_list", {"since": "2023-11-14T22:15:00Z"})
        claude = await c.call_tool("session_list", {"agent": "claude"})
        read = await c.call_tool("session_read", {"session_id": "s-root"})
        leaf = await c.call_tool("session_read", {"session_id": "s-leaf"})
        paged = await c.call_tool(
            "session_read", {"session_id": "s-root", "seq_from": 5, "max_chars": 1000}
        )
        past = await c.call_tool("session_read", {"session_id": "s-root", "seq_from": 99})
    text = text_of(listed)
    assert text == worked("E14")  # tools.md §3.2's worked examples, as written there
    assert text_of(leaf) == worked("E15")
    assert "1. Session s-ghost — untitled" in text and "s-side" not in text
    assert "   Agent: dsh | Created: 2023-11-14T22:17:20.000Z | Events: 1" in text
    assert "   Parent: [outside workspace]" in text  # s-ghost's parent is hidden: not named
    assert listed.structured_content is not None
    items = listed.structured_content["items"]
    assert [i["id"] for i in items] == ["s-ghost", "s-leaf", "s-child", "s-root"]
    assert items[3] == {
        "id": "s-root",
        "title": "Retry policy",
        "agent": "dsh",
        "createdAt": T0,
        "cwd": "/w/app",
        "eventCount": 7,
        "parent": {"kind": "root"},
    }
    assert "2 more: raise limit" in text_of(two)
    assert recent.structured_content is not None
    assert [i["id"] for i in recent.structured_content["items"]] == ["s-ghost", "s-leaf"]
    assert text_of(claude).startswith("No session matches.\nWorkspace: /w/app")

    body = text_of(read)
    assert body.startswith("Session s-root — Retry policy\nEvents 0–6 of 7 (class: current")
    assert "#1 | user/message | current | 2023-11-14T22:13:22.000Z\n  What retry policy" in body
    assert body.endswith("End of session.")
    assert read.structured_content is not None
    classes = {e["seq"]: e["class"] for e in read.structured_content["events"]}
    assert set(classes.values()) <= {"current", "shadowed", "log-only"} and len(classes) == 7
    assert paged.structured_content is not None
    assert [e["seq"] for e in paged.structured_content["events"]] == [5, 6]
    assert text_of(past).endswith("No events from seq 99: the session has 7 events (seq 0–6).")
    no_warning(tmp_path)


async def test_session_read_pages_by_characters(tmp_path: Path) -> None:
    uri = f"jsonl:{tmp_path / 'long'}?compression=none"
    backend = open_backend(uri)
    backend.create(header("s-long", "/w/app", None, T0, 0))
    backend.append("s-long", [event(i, T0, U(f"{i} " + "x" * 400)) for i in range(12)])
    backend.close()
    args = ["--persistence", f"jsonl:{tmp_path / 'long'}", "--index", ":memory:"]
    async with client(tmp_path, [*args, "--workspace", "/w/app"], mode=MODERN) as c:
        first = await c.call_tool("session_read", {"session_id": "s-long", "max_chars": 1000})
        assert first.structured_content is not None
        nxt = first.structured_content["nextSeq"]
        second = await c.call_tool(
            "session_read", {"session_id": "s-long", "seq_from": nxt, "max_chars": 1000}
        )
    assert nxt == 2 and len(text_of(first)) < 1000 + 400
    assert f"More: session_read with seq_from {nxt} (events 2–11 remain)." in text_of(first)
    assert second.structured_content is not None
    assert [e["seq"] for e in second.structured_content["events"]] == [2, 3]


@pytest.mark.parametrize("hub", [True, False], ids=["hub", "in-process"])
async def test_a_failed_call_logs_one_line(
    tmp_path: Path, homes: tuple[str, Path, Path], hub: bool
) -> None:
    """Each failed call is one line on the server's stderr, never a traceback; in-process it
    carries what the sanitizer hid (through the hub that line is in the hub's log)."""
    corpus, _, _ = homes
    args = ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app"]
    args += [] if hub else ["--no-hub"]
    async with client(tmp_path, args, mode=MODERN) as c:
        missing = await c.call_tool("session_read", {"session_id": "s-nope"})
        window = await c.call_tool("session_event_read", {"session_id": "s-root", "seq": 99})
        unknown = await c.call_tool("session_trace", {"session_id": "s-root", "x": 1})
    assert missing.is_error and window.is_error and unknown.is_error
    lines = [line for line in server_log(tmp_path).splitlines() if " failed: " in line]
    cause = "" if hub else " (sessionQuery/readEvent: SESSION_QUERY_EVENT_NOT_FOUND "
    assert len(lines) == 3, lines
    assert lines[0] == (
        "WARNING dsh_query_server.mcp: session_read failed: SESSION_QUERY_TOOL_UNAUTHORIZED "
        "no session with id s-nope in this workspace"
    )
    assert lines[1].startswith(
        "WARNING dsh_query_server.mcp: session_event_read failed: SESSION_QUERY_EVENT_NOT_FOUND "
        "session event was not found" + cause
    )
    assert hub == (lines[1].endswith("session event was not found"))
    assert lines[2] == (
        "WARNING dsh_query_server.mcp: session_trace failed: INVALID_ARGS invalid arguments: "
        'unknown property "x" (allowed: session_id)'
    )
    no_warning(tmp_path)


# The arguments each tool needs besides the one under test.
NEEDS = {
    "session_search": {"query": "retry"},
    "session_event_search": {"session_id": "s-root", "query": "retry"},
    "session_event_trace": {"session_id": "s-root", "seq": 1},
    "session_event_read": {"session_id": "s-root", "seq": 1},
    "session_read": {"session_id": "s-root"},
}
ARGUMENT_ERRORS = {"SESSION_QUERY_INVALID_FILTER", "SESSION_QUERY_INVALID_WINDOW", "INVALID_ARGS"}


async def test_every_schema_bound_is_the_real_limit(
    tmp_path: Path, homes: tuple[str, Path, Path]
) -> None:
    """For every integer argument of every tool, the schema's minimum and maximum are accepted
    and one past either is refused as an argument error (issue 25:
    `before: 500` answered "window is invalid" while the schema showed no limit)."""
    corpus, _, _ = homes
    args = ["--persistence", corpus, "--index", ":memory:", "--workspace", "/w/app"]
    checked = []
    async with client(tmp_path, args, mode=MODERN) as c:
        for tool in (await c.list_tools()).tools:
            for name, prop in tool.input_schema["properties"].items():
                if prop["type"] != "integer":
                    continue
                low, high = prop["minimum"], prop["maximum"]
                for value, ok in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
                    sent = {**NEEDS.get(tool.name, {}), name: value}
                    r = await c.call_tool(tool.name, sent)
                    code = (r.structured_content or {}).get("error", {}).get("code")
                    if ok:
                        assert code not in ARGUMENT_ERRORS, (tool.name, sent, text_of(r))
                    else:
                        assert code in ARGUMENT_ERRORS, (tool.name, sent, text_of(r))
                checked.append(f"{tool.name}.{name}")
    assert "session_event_read.before" in checked and "session_list.limit" in checked
    assert len(checked) == 11, checked
