"""``dsh-query mcp`` through the MCP Inspector CLI (@modelcontextprotocol/inspector, pinned in
tests/tools/package-lock.json, installed by mk/inspector.mk): a client nobody here wrote, which
declares roots (issue 25: its roots used to replace ``--workspace`` and the README's ``retry``
example found nothing, and the SDK warned on every call).

Marked ``inspector``: `make test` installs the Inspector and runs this, `make check` leaves it
out. Without the Inspector installed the test fails and says how to install it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hub.hub_helpers import using_hubs
from tests.mcp_helpers import private_env

pytestmark = [pytest.mark.wire, pytest.mark.inspector]

CACHE = Path(os.environ["DSH_QUERY_E2E_CACHE"]) / "mcp-inspector"
INSPECTOR = CACHE / "node_modules" / ".bin" / "mcp-inspector"
NODE_BIN = CACHE / "node_modules" / "node" / "bin"
DSH_QUERY = Path(sys.executable).parent / "dsh-query"


def inspector(tmp: Path, *args: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """One Inspector CLI call on ``dsh-query mcp --demo``: its JSON answer and the stderr of
    both (the Inspector passes the server's stderr through)."""
    if not INSPECTOR.exists():
        pytest.fail(f"the MCP Inspector is not installed at {CACHE}: run `make inspector-deps`")
    env = private_env(tmp)
    env["PATH"] = f"{NODE_BIN}:{env.get('PATH', '')}"  # the Node it needs (>= 22.19)
    with using_hubs(env["XDG_RUNTIME_DIR"]):
        done = subprocess.run(
            [str(INSPECTOR), "--cli", str(DSH_QUERY), "mcp", "--demo", *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout), done.stderr


def test_inspector_finds_the_readme_retry_example(tmp_path: Path) -> None:
    answer, stderr = inspector(
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "session_search",
        "--tool-arg",
        "query=retry",
        cwd=tmp_path,
    )
    assert answer["isError"] is False
    text = answer["content"][0]["text"]
    assert text.startswith("Session search results ("), text
    ids = [item["header"]["id"] for item in answer["structuredContent"]["items"]]
    assert "explore-retry-policy" in ids and "fix-flaky-tests" in ids, ids
    assert "Warning" not in stderr and "Traceback" not in stderr, stderr


def test_inspector_lists_eight_tools_and_reads_a_session(tmp_path: Path) -> None:
    listed, _ = inspector(tmp_path, "--method", "tools/list", cwd=tmp_path)
    names = [t["name"] for t in listed["tools"]]
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
    read, stderr = inspector(
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "session_read",
        "--tool-arg",
        "session_id=fix-flaky-tests",
        cwd=tmp_path,
    )
    assert read["isError"] is False
    assert "#1 | user/message | shadowed |" in read["content"][0]["text"]
    assert "Warning" not in stderr and "Traceback" not in stderr, stderr
