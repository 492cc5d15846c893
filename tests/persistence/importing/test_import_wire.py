"""Importers over the wire: a real server process on stdio mounts claude: and codex: homes built
from the real fixtures and the spec's worked examples, and every read method answers without
error. Every server gets HOME, DSH_HOME, CLAUDE_CONFIG_DIR and CODEX_HOME inside its tmp dir."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.import_helpers import REAL, SPEC, isolated_env
from tests.search_helpers import StdioServer

pytestmark = [pytest.mark.wire, pytest.mark.slow]

CODEX_ID = "019b64e5-57fa-7463-b644-fba7e456f905"


@pytest.fixture
def serve(tmp_path):
    servers: list[StdioServer] = []

    def start(uri: str) -> StdioServer:
        servers.append(StdioServer(["--persistence", uri], isolated_env(tmp_path), str(tmp_path)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def exercise(server: StdioServer) -> dict[str, Any]:
    """list, fold, read, trace and search every listed session; the headers by id."""
    sessions = server.call("sessionQuery/listSessions", {})
    assert sessions
    headers = {}
    for record in sessions:
        header = record["header"] if "header" in record else record
        sid = header["id"]
        headers[sid] = header
        events = server.call("sessionQuery/listEvents", {"sessionId": sid})
        assert [e["seq"] for e in events] == list(range(len(events)))
        surface = server.call("sessionQuery/readSurface", {"sessionId": sid})
        assert surface
        middle = len(events) // 2
        window = server.call(
            "sessionQuery/readEvent", {"sessionId": sid, "seq": middle, "before": 3, "after": 3}
        )
        assert window
        server.call("sessionQuery/readTitle", {"sessionId": sid})
        server.call("sessionQuery/traceSession", {"sessionId": sid})
        for e in events[:: max(1, len(events) // 7)]:
            server.call("sessionQuery/traceEvent", {"sessionId": sid, "seq": e["seq"]})
    return headers


def test_real_claude_transcripts_over_stdio(tmp_path, serve):
    home = tmp_path / "claude-home"
    for f in sorted((REAL / "claude-code").glob("*.jsonl")):
        target = home / "projects" / "-real" / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, target)
    server = serve(f"claude:{home}")
    headers = exercise(server)
    assert set(headers) == {f.stem for f in (REAL / "claude-code").glob("*.jsonl")}
    assert all(h["source"]["agent"] == "claude-code" for h in headers.values())
    assert headers["marot-spotter-short"]["source"]["agentVersion"] == "2.1.38"
    page = server.call("sessionQuery/searchSessions", {"query": "hello world"})
    assert any(hit["header"]["id"] == "simonw-sample_session" for hit in page["items"])
    title = server.call("sessionQuery/readTitle", {"sessionId": "simonw-sample_session"})
    assert (
        title["title"]["title"] == "Create a hello world function"
    )  # the summary's leaf is not in this file


def test_real_codex_rollout_over_stdio(tmp_path, serve):
    home = tmp_path / "codex-home"
    target = home / "sessions/2025/12/28" / f"rollout-2025-12-28T12-18-30-{CODEX_ID}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(REAL / "codex/simonw-sample_codex_session.jsonl", target)
    server = serve(f"codex:{home}")
    headers = exercise(server)
    assert list(headers) == [CODEX_ID]
    assert headers[CODEX_ID]["source"] == {
        "agent": "codex",
        "agentVersion": "0.77.0",
        "path": str(target),
    }
    events = server.call("sessionQuery/listEvents", {"sessionId": CODEX_ID})
    assert {e["type"] for e in events} >= {
        "codex/session_meta",
        "codex/turn_context",
        "user/message",
    }
    title = server.call("sessionQuery/readTitle", {"sessionId": CODEX_ID})["title"]
    assert title["title"].startswith(
        "can you analyse the MD files"
    )  # the contextual ones are no prompts
    page = server.call("sessionQuery/searchSessions", {"query": "analyse"})
    assert [hit["header"]["id"] for hit in page["items"]] == [CODEX_ID]


def test_worked_examples_trace_shadowed_events_with_provenance(tmp_path, serve):
    claude = shutil.copytree(SPEC / "claude", tmp_path / "c")
    server = serve(f"claude:{claude}")
    exercise(server)
    trace = server.call("sessionQuery/traceEvent", {"sessionId": "claude-demo", "seq": 16})
    assert trace["replacedBy"] == 22 and trace["replacementChain"] == [22, 29]
    assert trace["target"]["surface"] == "shadowed"
    summary = server.call("sessionQuery/traceEvent", {"sessionId": "claude-demo", "seq": 29})
    assert summary["replacedEventSeqs"] == [2, 5, 6, 9, 12, 22, 24, 26]
    assert summary["sourceEventSeqs"] == [2, 5, 6, 9, 12, 22, 24, 26, 28]
    marker = server.call("sessionQuery/traceEvent", {"sessionId": "claude-demo", "seq": 28})
    assert 29 in marker["derivedEventSeqs"]
    lineage = server.call("sessionQuery/traceSession", {"sessionId": "claude-demo"})
    assert "claude-demo/agent-ab12" in json.dumps(lineage)
    title = server.call("sessionQuery/readTitle", {"sessionId": "claude-demo"})
    title = title["title"]
    assert {k: title[k] for k in ("title", "messageSeqs", "source", "eventSeq", "updatedAt")} == {
        "title": "File cleanup",
        "messageSeqs": [],
        "source": {"kind": "user"},
        "eventSeq": 27,
        "updatedAt": 1767225630000,
    }
    status = server.call("sessionPersistence/status", {})
    assert status["writable"] is False and status["uri"].startswith("claude:")

    codex = shutil.copytree(SPEC / "codex", tmp_path / "x")
    server = serve(f"codex:{codex}")
    exercise(server)
    fid = "019b7e26-5500-7000-8000-0000000000f1"
    trace = server.call("sessionQuery/traceEvent", {"sessionId": fid, "seq": 28})
    assert trace["replacedBy"] == 34 and trace["target"]["surface"] == "shadowed"
    title = server.call("sessionQuery/readTitle", {"sessionId": fid})
    title = title["title"]
    assert {k: title[k] for k in ("title", "messageSeqs", "source", "eventSeq", "updatedAt")} == {
        "title": "Demo fork",
        "messageSeqs": [],
        "source": {"kind": "user"},
        "eventSeq": 35,
        "updatedAt": 1767348300000,
    }
    surface = server.call("sessionQuery/readSurface", {"sessionId": fid})
    assert [e["seq"] for e in surface["events"]] == [24, 25, 26, 34]
    assert surface["session"]["source"]["approximate"] == ["placeholder"]


def test_bad_importer_uris_over_the_wire(tmp_path, serve):
    server = serve(f"claude:{tmp_path}/absent")
    assert server.call("sessionQuery/listSessions", {}) == []
    reply = server.request("sessionPersistence/mount", {"uri": f"codex:{tmp_path}?readOnly=false"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    (tmp_path / "plain").write_text("x")
    reply = server.request("sessionPersistence/mount", {"uri": f"codex:{tmp_path}/plain"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"
    mounted = server.call("sessionPersistence/mount", {"uri": f"codex:{tmp_path}"})
    assert mounted["writable"] is False
