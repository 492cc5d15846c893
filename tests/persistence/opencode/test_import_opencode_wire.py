"""opencode: over the wire. A real server process on stdio mounts ``opencode:<dir>`` (a database
and a legacy-only session) or finds it through ``auto``, and every read method answers; the
command line lists OpenCode sessions beside the others."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.import_helpers import SPEC, isolated_env
from tests.persistence.importing.test_import_wire import exercise
from tests.persistence.opencode.opencode_helpers import load, write_db, write_legacy
from tests.search_helpers import StdioServer

pytestmark = pytest.mark.wire

COMPACTED = "ses_4a1e0c2e7ffeCmPcTn0000001"
CHILD = "ses_4a1e0c2e7ffdChild0000001"
PARENT = "ses_4a1e0c2e7ffeParent000001"
REVERTED = "ses_4a1e0c2e7ffeRevert000001"
DAMAGED = "ses_4a1e0c2e7ffeDamage000001"


def opencode_home(root):
    home = root / "opencode"
    names = ("basic", "compaction", "child", "prune", "damaged", "errors")
    write_db(home, [s for n in names for s in load(n)["sessions"]])
    write_legacy(home, load("revert")["sessions"])
    return home


@pytest.fixture
def serve(tmp_path):
    servers: list[StdioServer] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> StdioServer:
        env = env or isolated_env(tmp_path)
        servers.append(StdioServer(args, env, str(tmp_path)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_an_opencode_home_over_stdio(tmp_path, serve):
    home = opencode_home(tmp_path)
    server = serve(["--persistence", f"opencode:{home}"])
    headers = exercise(server)
    assert len(headers) == 8 and all(h["source"]["agent"] == "opencode" for h in headers.values())
    assert headers[REVERTED]["source"]["path"].endswith(f"storage/session/prj_w/{REVERTED}.json")
    surface = server.call("sessionQuery/readSurface", {"sessionId": COMPACTED})
    ids = [e["data"].get("id") or e["data"]["message"]["id"] for e in surface["events"]]
    assert ids[:2] == ["msg_c000000005#copy", "msg_c000000006#copy"]
    request = surface["events"][0]["seq"]
    trace = server.call("sessionQuery/traceEvent", {"sessionId": COMPACTED, "seq": request})
    marker = trace["sourceEventSeqs"][-1]
    assert trace["replacedEventSeqs"] == trace["sourceEventSeqs"][:-1]
    boundary = server.call("sessionQuery/traceEvent", {"sessionId": COMPACTED, "seq": marker})
    assert request in boundary["derivedEventSeqs"]
    first = trace["replacedEventSeqs"][0]
    shadowed = server.call("sessionQuery/traceEvent", {"sessionId": COMPACTED, "seq": first})
    assert shadowed["target"]["surface"] == "shadowed" and shadowed["replacedBy"] == request
    lineage = server.call("sessionQuery/traceSession", {"sessionId": CHILD})
    assert lineage["complete"] is True and lineage["root"]["header"]["id"] == PARENT
    title = server.call("sessionQuery/readTitle", {"sessionId": DAMAGED})["title"]
    assert title["title"] == "Überprüfung ✓ 日本語" and title["source"]["provider"] == "opencode"
    page = server.call("sessionQuery/searchSessions", {"query": "Ответ"})
    assert [hit["header"]["id"] for hit in page["items"]] == [DAMAGED]
    reverted = server.call("sessionQuery/readSurface", {"sessionId": REVERTED})
    assert reverted["session"]["source"]["approximate"] == ["placeholder"]
    status = server.call("sessionPersistence/status", {})
    assert status["writable"] is False and status["uri"] == f"opencode:{home}"


@pytest.mark.slow
def test_auto_mounts_the_opencode_home_under_xdg_data_home(tmp_path, serve):
    env = isolated_env(tmp_path)
    opencode_home(tmp_path / "user-home" / ".local" / "share")
    server = serve([], env)
    status = server.call("sessionPersistence/status", {})
    members = [m["uri"] for m in status["members"]]
    assert f"opencode:{tmp_path}/user-home/.local/share/opencode" in members
    listed = server.call("sessionQuery/listSessions", {})
    agents = {r["header"].get("source", {}).get("agent") for r in listed}
    assert "opencode" in agents


@pytest.mark.slow
def test_bad_opencode_uris_over_the_wire(tmp_path, serve):
    server = serve(["--persistence", f"opencode:{tmp_path}/absent"])
    assert server.call("sessionQuery/listSessions", {}) == []
    reply = server.request(
        "sessionPersistence/mount", {"uri": f"opencode:{tmp_path}?readOnly=false"}
    )
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    (tmp_path / "plain").write_text("x")
    reply = server.request("sessionPersistence/mount", {"uri": f"opencode:{tmp_path}/plain"})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"
    reply = server.request("sessionQuery/readEvent", {"sessionId": "ses_nope", "seq": 0})
    assert reply["error"]["data"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"


@pytest.mark.slow
def test_the_command_line_lists_opencode_beside_the_other_agents(tmp_path):
    home = opencode_home(tmp_path)
    claude = shutil.copytree(SPEC / "claude", tmp_path / "claude")
    codex = shutil.copytree(SPEC / "codex", tmp_path / "codex")
    env = {**isolated_env(tmp_path), "COLUMNS": "120"}
    flags = [f"opencode:{home}", f"claude:{claude}", f"codex:{codex}"]
    args = [arg for uri in flags for arg in ("--persistence", uri)]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dsh_query_server.cli", "sessions", *args, *extra],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=str(tmp_path),
        )

    table = run()
    assert table.returncode == 0, table.stderr
    agents = {line.split()[1] for line in table.stdout.splitlines()[2:] if line.strip()}
    assert agents == {"opencode", "claude-code", "codex"}
    only = run("--agent", "opencode", "--json")
    assert only.returncode == 0, only.stderr
    ids = sorted(r["header"]["id"] for r in json.loads(only.stdout))
    assert len(ids) == 8 and REVERTED in ids and CHILD in ids
    assert os.path.exists(home / "opencode.db")
