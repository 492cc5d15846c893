"""Issue 26's "done when": on a home where all seven agents have written sessions, `dsh-query
sessions` with the default persistence (`auto`, importers.md §4.2) lists every agent. The home is
built from the importers' fixtures under each agent's default location, with no agent variable
set, so `auto` finds each one from HOME alone."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.builders import U, hdr, write_transcript
from tests.conftest import AGENT_HOMES
from tests.import_helpers import FIXTURES, SPEC, isolated_env, jl, write_home
from tests.persistence.opencode.opencode_helpers import load, write_db

pytestmark = pytest.mark.wire

AGENTS = {"dsh", "claude-code", "codex", "gemini-cli", "opencode", "copilot-cli", "qwen-code"}
# auto's nine members in §4.2's order, one more than the composite's old cap of 8 (§4.1).
SCHEMES = ["sqlite", "jsonl", "claude", "claude", "codex", "gemini", "opencode", "copilot", "qwen"]
VSCODE = {
    "type": "user",
    "uuid": "v1",
    "parentUuid": None,
    "sessionId": "vscode-one",
    "timestamp": "2026-01-02T00:00:00.000Z",
    "cwd": "/w",
    "message": {"role": "user", "content": "hello from VS Code"},
}


def seven_agent_env(tmp: pathlib.Path) -> dict[str, str]:
    """A server environment whose HOME holds one small history per agent at its default place."""
    env = isolated_env(tmp)
    for variable in AGENT_HOMES:  # each home is found from HOME alone
        env.pop(variable)
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    home = pathlib.Path(env["HOME"])
    write_transcript(home / ".dsh" / "sessions", hdr("dsh-one", 1, cwd="/w"), [U(0, "hello")])
    shutil.copytree(SPEC / "claude", home / ".claude")
    write_home(home / ".claude-vscode", {"projects/-w/vscode-one.jsonl": jl(VSCODE)})
    shutil.copytree(SPEC / "codex", home / ".codex")
    shutil.copytree(FIXTURES / "gemini" / "spec" / ".gemini", home / ".gemini")
    write_db(home / ".local" / "share" / "opencode", load("basic")["sessions"])
    worked = FIXTURES / "copilot" / "worked-example" / "session-state"
    shutil.copytree(worked, home / ".copilot" / "session-state")
    shutil.copytree(SPEC / "qwen", home / ".qwen")
    return env


def dsh_query(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "COLUMNS": "200"},
        cwd=env["HOME"],
    )


def test_sessions_on_a_home_of_seven_agents_lists_all_of_them(tmp_path):
    env = seven_agent_env(tmp_path)
    listed = dsh_query(env, "sessions", "--persistence", "auto", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    agents = {(r["header"].get("source") or {}).get("agent", "dsh") for r in rows}
    assert agents == AGENTS
    table = dsh_query(env, "sessions")  # auto is the default, and the table names each agent
    assert table.returncode == 0, table.stderr
    assert {row.split()[1] for row in table.stdout.splitlines()[2:]} == AGENTS
    mounted = dsh_query(env, "mount", "auto", "--json")
    assert mounted.returncode == 0, mounted.stderr
    members = json.loads(mounted.stdout)["mount"]["members"]
    assert [m["uri"].partition(":")[0] for m in members] == SCHEMES
