"""The copilot: importer over the wire: a real server process on stdio mounting a home built from
every fixture of tests/fixtures/copilot, the `auto` default finding $COPILOT_HOME, the
`dsh-query sessions --agent copilot` command, and the MCP tools on a real `dsh-query mcp`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.import_helpers import FIXTURES, isolated_env
from tests.mcp_helpers import mcp_session, text_of
from tests.persistence.importing.test_import_wire import exercise
from tests.search_helpers import ROOT, StdioServer

pytestmark = pytest.mark.wire

S = "0c0f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
CHILD = f"{S}/agent-sa1"


def merged_home(root: Path) -> Path:
    """One home holding every fixture's sessions (their ids differ)."""
    for fixture in sorted((FIXTURES / "copilot").iterdir()):
        if fixture.is_dir():
            shutil.copytree(fixture / "session-state", root / "session-state", dirs_exist_ok=True)
    return root


@pytest.fixture
def serve(tmp_path):
    servers: list[StdioServer] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> StdioServer:
        servers.append(StdioServer(args, env or isolated_env(tmp_path), str(tmp_path)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_every_fixture_over_stdio_with_provenance(tmp_path, serve):
    home = merged_home(tmp_path / "copilot-home")
    before = files(home)
    server = serve(["--persistence", f"copilot:{home}"])
    headers: dict[str, Any] = exercise(server)
    assert len(headers) == 13 and all(
        h["source"]["agent"] == "copilot-cli" for h in headers.values()
    )
    assert headers[CHILD]["parentSession"] == S and headers[CHILD]["origin"] == "subagent"

    trace = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 7})
    assert trace["replacedBy"] == 34 and trace["target"]["surface"] == "shadowed"
    summary = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 34})
    assert summary["replacedEventSeqs"] == [3, 7, 10, 15, 20]
    assert summary["sourceEventSeqs"] == [3, 7, 10, 15, 20, 21, 33]
    marker = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 21})
    assert 34 in marker["derivedEventSeqs"]
    surface = server.call("sessionQuery/readSurface", {"sessionId": S})
    assert [e["seq"] for e in surface["events"]] == [1, 34, 24, 32, 39]
    assert surface["session"]["source"]["approximate"] == ["summary-wrapper"]
    title = server.call("sessionQuery/readTitle", {"sessionId": S})["title"]
    assert {k: title[k] for k in ("title", "source", "eventSeq", "updatedAt")} == {
        "title": "Rename a file",
        "source": {"kind": "provider", "provider": "github-copilot"},
        "eventSeq": 44,
        "updatedAt": 1767430830000,
    }
    lineage = server.call("sessionQuery/traceSession", {"sessionId": S})
    assert CHILD in json.dumps(lineage)
    page = server.call("sessionQuery/searchSessions", {"query": "Renamed"})
    assert {hit["header"]["id"] for hit in page["items"]} >= {S, CHILD}
    page = server.call("sessionQuery/searchSessions", {"query": "日本語のテキスト"})
    assert [hit["header"]["id"] for hit in page["items"]] == [
        "55555555-5555-4555-8555-555555555555"
    ]
    status = server.call("sessionPersistence/status", {})
    assert status["writable"] is False and status["uri"].startswith("copilot:")
    nodes = server.call("sessionQuery/treeChildren", {"view": "sessions"})["nodes"]
    mine = {n["resource"]["sessionId"]: n for n in nodes if n.get("agent") == "copilot-cli"}
    # sub-agents sit under their parent, not among the roots (protocol.md §6)
    assert len(mine) == 13 - sum(h.get("origin") == "subagent" for h in headers.values())
    assert CHILD not in mine and mine[S]["icon"] == "copilot"
    assert "source: copilot-cli 1.0.10" in mine[S]["tooltip"].splitlines()
    groups = server.call(
        "sessionQuery/treeChildren", {"view": "sessions", "args": {"groupBy": "agent"}}
    )
    assert [(g["label"], g["icon"]) for g in groups["nodes"]] == [("copilot-cli", "copilot")]
    assert files(home) == before  # read, traced, searched: never written


@pytest.mark.slow
def test_bad_copilot_uris_over_the_wire(tmp_path, serve):
    server = serve(["--persistence", f"copilot:{tmp_path}/absent"])
    assert server.call("sessionQuery/listSessions", {}) == []
    reply = server.request(
        "sessionPersistence/mount", {"uri": f"copilot:{tmp_path}?readOnly=false"}
    )
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    (tmp_path / "plain").write_text("x")
    reply = server.request("sessionPersistence/mount", {"uri": f"copilot:{tmp_path}/plain"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"
    home = merged_home(tmp_path / "h")
    server.call("sessionPersistence/mount", {"uri": f"copilot:{home}"})
    for unlisted in ("99999999-9999-4999-8999-999999999999", f"{S}/agent-nobody"):
        reply = server.request("sessionQuery/readSurface", {"sessionId": unlisted})
        assert reply["error"]["data"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    # a listed log rewritten as garbage is no session any more; the rest of the home still reads
    (home / "session-state" / S / "events.jsonl").write_bytes(b"garbage\n")
    reply = server.request("sessionQuery/readSurface", {"sessionId": S})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert server.call(
        "sessionQuery/readSurface", {"sessionId": "55555555-5555-4555-8555-555555555555"}
    )


@pytest.mark.slow
def test_auto_mounts_copilot_home_and_the_cli_filters_by_agent(tmp_path, serve):
    env = isolated_env(tmp_path)
    merged_home(Path(env["COPILOT_HOME"]))
    server = serve([], env)
    status = server.call("sessionPersistence/status", {})
    members = [m["uri"] for m in status["members"]]
    assert f"copilot:{env['COPILOT_HOME']}" in members
    listed = server.call("sessionQuery/listSessions", {})
    ids = {(r["header"] if "header" in r else r)["id"] for r in listed}
    assert S in ids and CHILD in ids

    result = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "sessions", "--agent", "copilot", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONPATH": ROOT, "COLUMNS": "160"},
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    rows = rows["sessions"] if isinstance(rows, dict) else rows
    got = {(r["header"] if "header" in r else r)["id"] for r in rows}
    assert S in got and CHILD in got and len(got) == 13
    assert os.path.isdir(Path(env["COPILOT_HOME"]) / "session-state")


@pytest.mark.anyio
@pytest.mark.slow
async def test_mcp_tools_find_and_trace_copilot_sessions(tmp_path):
    home = merged_home(tmp_path / "copilot-home")
    args = ["--persistence", f"copilot:{home}", "--index", ":memory:", "--workspace", "/w"]
    async with mcp_session(tmp_path, args, env=isolated_env(tmp_path)) as session:
        found = await session.call_tool("session_search", {"query": "rename"})
        assert not found.is_error
        items = (found.structured_content or {})["items"]
        assert S in [i["header"]["id"] for i in items]
        traced = await session.call_tool("session_event_trace", {"session_id": S, "seq": 7})
        assert not traced.is_error and "34" in text_of(traced)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
