"""The gemini: importer over the wire: a real server process on stdio mounts a Gemini CLI home
(the worked example of importers.md §7.6 and the rule fixtures), every read method answers, the
compaction's shadowed events trace to their replacement with provenance, search finds non-ASCII
text, `auto` mounts ~/.gemini beside the other agents, and the CLI lists and filters it."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.import_helpers import FIXTURES, isolated_env
from tests.persistence.importing.test_import_wire import exercise
from tests.search_helpers import StdioServer

pytestmark = pytest.mark.wire

SPEC = FIXTURES / "gemini" / "spec" / ".gemini"
RULES = FIXTURES / "gemini" / "rules"
S = "0b6e4f1c-5a7d-4d1e-9c8b-2f3a4b5c6d7e"
A = "9d0f3b2a-1c4e-4f5a-8b6c-7d8e9f0a1b2c"


@pytest.fixture
def serve(tmp_path):
    servers: list[StdioServer] = []

    def start(*args: str) -> StdioServer:
        servers.append(StdioServer(list(args), isolated_env(tmp_path), str(tmp_path)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def home_with_rules(root: str | pathlib.Path) -> str:
    """The worked example plus every rule fixture, as sessions of one project."""
    home = pathlib.Path(shutil.copytree(SPEC, root))
    chats = home / "tmp" / "w" / "chats"
    for k, f in enumerate(sorted(RULES.iterdir())):
        ext = ".json" if f.name.endswith(".json") else ".jsonl"
        shutil.copy(f, chats / f"session-2026-01-02T00-{k:02d}-{f.stem[:8]}{ext}")
    return str(home)


def test_a_gemini_home_over_stdio(tmp_path, serve):
    home = home_with_rules(tmp_path / ".gemini")
    server = serve("--persistence", f"gemini:{home}")
    headers = exercise(server)
    assert {S, A, "r-document", "r-rollback", "r-utf8"} <= set(headers)
    assert all(h["source"]["agent"] == "gemini-cli" for h in headers.values())
    assert headers[A]["parentSession"] == S and headers[A]["origin"] == "subagent"

    # the compaction of line 17: u1 (event 4) was shadowed by the summary, event 37
    trace = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 4})
    assert trace["target"]["surface"] == "shadowed" and trace["replacedBy"] == 37
    summary = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 37})
    assert summary["replacedEventSeqs"] == [4, 8, 9, 11, 15, 26, 28, 30, 34]
    assert summary["sourceEventSeqs"] == [4, 8, 9, 11, 15, 26, 28, 30, 34, 36]
    marker = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 36})
    assert 37 in marker["derivedEventSeqs"]
    rewound = server.call("sessionQuery/traceEvent", {"sessionId": S, "seq": 19})
    assert rewound["replacedBy"] == 26 and rewound["replacementChain"] == [26, 37]
    surface = server.call("sessionQuery/readSurface", {"sessionId": S})
    assert [e["seq"] for e in surface["events"]] == [2, 37, 38, 39, 40, 41, 42, 46, 48]
    title = server.call("sessionQuery/readTitle", {"sessionId": S})["title"]
    assert (title["title"], title["eventSeq"], title["source"]) == (
        "Rename b.py to c.py",
        50,
        {"kind": "provider", "provider": "google"},
    )
    lineage = server.call("sessionQuery/traceSession", {"sessionId": S})
    assert A in json.dumps(lineage)

    page = server.call("sessionQuery/searchSessions", {"query": "文件"})
    assert [hit["header"]["id"] for hit in page["items"]] == ["r-utf8"]
    page = server.call("sessionQuery/searchSessions", {"query": "renamed"})
    assert {hit["header"]["id"] for hit in page["items"]} >= {S, A}
    rollback = server.call("sessionQuery/readSurface", {"sessionId": "r-rollback"})
    assert rollback["session"]["source"]["approximate"] == ["placeholder"]
    document = server.call("sessionQuery/readSurface", {"sessionId": "r-document"})
    assert document["session"]["source"]["approximate"] == ["unrecorded-compression"]
    status = server.call("sessionPersistence/status", {})
    assert status["writable"] is False and status["uri"].startswith("gemini:")


@pytest.mark.slow
def test_bad_gemini_uris_over_the_wire(tmp_path, serve):
    server = serve("--persistence", f"gemini:{tmp_path}/absent")
    assert server.call("sessionQuery/listSessions", {}) == []
    reply = server.request("sessionPersistence/mount", {"uri": f"gemini:{tmp_path}?readOnly=false"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    (tmp_path / "plain").write_text("x")
    reply = server.request("sessionPersistence/mount", {"uri": f"gemini:{tmp_path}/plain"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"
    home = tmp_path / ".gemini"
    chats = home / "tmp/w/chats"
    chats.mkdir(parents=True)
    (chats / "session-x-broken00.jsonl").write_text('{"$set":{"lastUpdated":"x"}}\n')
    server.call("sessionPersistence/mount", {"uri": f"gemini:{home}"})
    assert server.call("sessionQuery/listSessions", {}) == []  # no session record: no session
    reply = server.request("sessionQuery/listEvents", {"sessionId": "broken00"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"


@pytest.mark.slow
def test_auto_lists_gemini_beside_the_other_agents(tmp_path, serve):
    env = isolated_env(tmp_path)
    home_with_rules(os.path.join(env["HOME"], ".gemini"))
    shutil.copytree(FIXTURES / "spec" / "claude", env["CLAUDE_CONFIG_DIR"])
    server = serve()  # persistence "auto"
    status = server.call("sessionPersistence/status", {})
    schemes = [m["uri"].partition(":")[0] for m in status["members"]]
    assert schemes == ["sqlite", "claude", "gemini"]
    listed = server.call("sessionQuery/listSessions", {})
    everything = {(r["header"] if "header" in r else r)["id"] for r in listed}
    ids = {i for i in everything if not i.startswith("claude-demo")}
    assert {S, A, "r-document"} <= ids and "claude-demo" in everything

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dsh_query_server.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**env, "COLUMNS": "200"},
            cwd=str(tmp_path),
        )

    result = cli("sessions", "--agent", "gemini", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["header"]["id"] for r in rows} == ids  # the home holds Gemini CLI's alone
    table = cli("sessions", "--agent", "gemini-cli")
    assert table.returncode == 0 and "gemini-cli" in table.stdout
    assert cli("sessions", "--agent", "codex", "--json").stdout.strip() == "[]"


def test_the_sessions_view_names_and_groups_gemini_cli(tmp_path, serve):
    """The editors' sessions view (VS Code, Neovim) as the server builds it: each Gemini CLI
    session names its agent with its icon, and grouping by agent or workspace gathers them."""
    home = shutil.copytree(SPEC, tmp_path / ".gemini")
    server = serve("--persistence", f"gemini:{home}")
    roots = server.call("sessionQuery/treeChildren", {"view": "sessions"})["nodes"]
    by_id = {n["resource"]["sessionId"]: n for n in roots if "resource" in n}
    assert by_id[S]["agent"] == "gemini-cli" and by_id[S]["icon"] == "star-full"
    assert by_id[S]["description"].startswith("gemini-cli · ")
    assert "source: gemini-cli" in by_id[S]["tooltip"].splitlines()
    assert (
        f"transcript: {home}/tmp/w/chats/session-2026-01-01T00-00-0b6e4f1c.jsonl"
        in by_id[S]["tooltip"].splitlines()
    )
    agents = server.call(
        "sessionQuery/treeChildren", {"view": "sessions", "args": {"groupBy": "agent"}}
    )["nodes"]
    assert [(g["label"], g["icon"]) for g in agents] == [("gemini-cli", "star-full")]
    spaces = server.call(
        "sessionQuery/treeChildren", {"view": "sessions", "args": {"groupBy": "workspace"}}
    )["nodes"]
    assert [g["label"] for g in spaces] == ["w"]
