"""The qwen: importer over the wire: a real server process on stdio mounts a home built from the
worked example and the rule fixtures, `auto` finds ~/.qwen (or $QWEN_RUNTIME_DIR), and the CLI's
--agent picks Qwen Code sessions. Every server's homes lie in its tmp dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.import_helpers import FIXTURES, SPEC, isolated_env
from tests.mcp_helpers import mcp_session, text_of
from tests.persistence.qwen.test_import_qwen_rules import _sid
from tests.search_helpers import StdioServer

pytestmark = pytest.mark.wire

SID = "0a0a0a0a-0000-4000-8000-000000000001"
AGENT = f"{SID}/agent-explore-1"


def qwen_env(tmp_path, **extra: str) -> dict[str, str]:
    env = isolated_env(tmp_path)
    env.pop("QWEN_RUNTIME_DIR", None)
    env.update(extra)
    return env


@pytest.fixture
def serve(tmp_path):
    servers: list[StdioServer] = []

    def start(*args: str, env: dict[str, str] | None = None) -> StdioServer:
        server = StdioServer(list(args), env or qwen_env(tmp_path), str(tmp_path))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def rule_home(tmp_path):
    """The worked example plus every rule fixture, as one home."""
    home = shutil.copytree(SPEC / "qwen", tmp_path / "qwen-home")
    chats = home / "projects/-r/chats"
    chats.mkdir(parents=True)
    for fixture in sorted((FIXTURES / "qwen").glob("*.jsonl")):
        shutil.copy(fixture, chats / f"{_sid(fixture)}.jsonl")
    shutil.copytree(FIXTURES / "qwen/subagent-fork/projects/-w", home / "projects/-f")
    return home


def test_every_session_reads_over_stdio(tmp_path, serve):
    home = rule_home(tmp_path)
    server = serve("--persistence", f"qwen:{home}")
    sessions = server.call("sessionQuery/listSessions", {})
    ids = sorted(r["header"]["id"] for r in sessions)
    assert len(ids) == 2 + 16 + 3 and SID in ids and AGENT in ids
    for sid in ids:
        events = server.call("sessionQuery/listEvents", {"sessionId": sid})
        assert [e["seq"] for e in events] == list(range(len(events)))
        surface = server.call("sessionQuery/readSurface", {"sessionId": sid})
        assert surface["session"]["source"]["agent"] == "qwen-code"
        middle = len(events) // 2
        window = server.call(
            "sessionQuery/readEvent", {"sessionId": sid, "seq": middle, "before": 3, "after": 3}
        )
        assert window
        server.call("sessionQuery/readTitle", {"sessionId": sid})
        server.call("sessionQuery/traceSession", {"sessionId": sid})
        for e in events[:: max(1, len(events) // 5)]:
            server.call("sessionQuery/traceEvent", {"sessionId": sid, "seq": e["seq"]})


def test_rewinds_and_compressions_trace_with_provenance(tmp_path, serve):
    home = shutil.copytree(SPEC / "qwen", tmp_path / "q")
    server = serve("--persistence", f"qwen:{home}")
    rewound = server.call("sessionQuery/traceEvent", {"sessionId": SID, "seq": 13})
    assert rewound["target"]["surface"] == "shadowed"
    assert rewound["replacedBy"] == 20 and rewound["replacementChain"] == [20, 25]
    summary = server.call("sessionQuery/traceEvent", {"sessionId": SID, "seq": 25})
    assert summary["replacedEventSeqs"] == [1, 4, 7, 9, 20, 22]
    assert summary["sourceEventSeqs"] == [1, 4, 7, 9, 20, 22, 24]
    marker = server.call("sessionQuery/traceEvent", {"sessionId": SID, "seq": 24})
    assert 25 in marker["derivedEventSeqs"]
    copy = server.call("sessionQuery/traceEvent", {"sessionId": SID, "seq": 27})
    assert copy["sourceEventSeqs"] == [20]
    surface = server.call("sessionQuery/readSurface", {"sessionId": SID})
    assert [e["seq"] for e in surface["events"]] == [25, 26, 27, 28, 32, 34]
    title = server.call("sessionQuery/readTitle", {"sessionId": SID})["title"]
    assert {k: title[k] for k in ("title", "source", "eventSeq", "updatedAt")} == {
        "title": "File cleanup",
        "source": {"kind": "user"},
        "eventSeq": 23,
        "updatedAt": 1767225623000,
    }
    lineage = server.call("sessionQuery/traceSession", {"sessionId": SID})
    assert AGENT in json.dumps(lineage)
    page = server.call("sessionQuery/searchSessions", {"query": "welcome"})
    assert [hit["header"]["id"] for hit in page["items"]] == [SID]
    status = server.call("sessionPersistence/status", {})
    assert status["writable"] is False and status["uri"] == f"qwen:{home}"
    nodes = server.call("sessionQuery/treeChildren", {"view": "sessions"})["nodes"]
    mine = {n["resource"]["sessionId"]: n for n in nodes if n.get("agent") == "qwen-code"}
    # the sub-agent sits under its parent, not among the roots (protocol.md §6)
    assert set(mine) == {SID} and mine[SID]["icon"] == "cloud"
    assert "source: qwen-code 0.6.0" in mine[SID]["tooltip"].splitlines()
    groups = server.call(
        "sessionQuery/treeChildren", {"view": "sessions", "args": {"groupBy": "agent"}}
    )
    assert [(g["label"], g["icon"]) for g in groups["nodes"]] == [("qwen-code", "cloud")]


@pytest.mark.slow
def test_bad_qwen_uris_over_the_wire(tmp_path, serve):
    server = serve("--persistence", f"qwen:{tmp_path}/absent")
    assert server.call("sessionQuery/listSessions", {}) == []
    reply = server.request("sessionPersistence/mount", {"uri": f"qwen:{tmp_path}?readOnly=false"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    (tmp_path / "plain").write_text("x")
    reply = server.request("sessionPersistence/mount", {"uri": f"qwen:{tmp_path}/plain"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"


@pytest.mark.slow
def test_auto_mounts_the_qwen_home_that_exists(tmp_path, serve):
    env = qwen_env(tmp_path)
    home = env["HOME"]
    shutil.copytree(SPEC / "qwen", os.path.join(home, ".qwen"))
    server = serve(env=env)
    members = [m["uri"] for m in server.call("sessionPersistence/status", {})["members"]]
    assert members[-1] == f"qwen:{home}/.qwen"
    ids = sorted(r["header"]["id"] for r in server.call("sessionQuery/listSessions", {}))
    assert ids == [SID, AGENT]
    runtime = tmp_path / "runtime"
    shutil.copytree(SPEC / "qwen", runtime)
    moved = serve(env={**env, "QWEN_RUNTIME_DIR": str(runtime)})
    members = [m["uri"] for m in moved.call("sessionPersistence/status", {})["members"]]
    assert members[-1] == f"qwen:{runtime}"


@pytest.mark.slow
def test_the_cli_filters_qwen_sessions(tmp_path):
    home = shutil.copytree(SPEC / "qwen", tmp_path / "q")
    env = {**qwen_env(tmp_path), "COLUMNS": "120", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(FIXTURES.parent.parent)

    def sessions(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dsh_query_server.cli", "sessions", "--persistence"]
            + [f"qwen:{home}", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    listed = sessions("--agent", "qwen", "--json")
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["header"]["id"] for r in json.loads(listed.stdout)) == [SID, AGENT]
    assert json.loads(sessions("--agent", "codex", "--json").stdout) == []
    table = sessions()
    assert table.returncode == 0 and "qwen-code" in table.stdout


@pytest.mark.anyio
@pytest.mark.slow
async def test_mcp_tools_find_and_trace_qwen_sessions(tmp_path):
    home = shutil.copytree(SPEC / "qwen", tmp_path / "q")
    args = ["--persistence", f"qwen:{home}", "--index", ":memory:", "--workspace", "/w"]
    async with mcp_session(tmp_path, args, env=qwen_env(tmp_path)) as session:
        found = await session.call_tool("session_search", {"query": "rename"})
        assert not found.is_error
        items = (found.structured_content or {})["items"]
        assert SID in [i["header"]["id"] for i in items]
        traced = await session.call_tool("session_event_trace", {"session_id": SID, "seq": 13})
        assert not traced.is_error and "Replacement chain: 20, 25" in text_of(traced)
        assert (traced.structured_content or {})["replacementChain"] == [20, 25]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
