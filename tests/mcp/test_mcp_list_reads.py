"""session_list's event counts cost no full read of the page's logs (tools.md §1.6 [ours]): the
official MCP SDK client on a real ``dsh-query mcp`` process (no hub) mounting a Claude Code home
of real, settled transcripts (an old mtime). The bytes the server process reads
(``/proc/<pid>/io``, ``rchar``) while it answers a second, identical page stay far below the
page's transcripts: the counts come from the windows the title read verified, not from loading
each log again (the index is built first: its background reads would count too). The output is
that of a whole load: each count is the transcript's ``inspect`` length."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dsh_query_server.persistence.claude.backend import ClaudeBackend
from tests.import_helpers import REAL
from tests.mcp_helpers import mcp_session, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.wire]

CWD = "/home/marco/projects/spotter"  # the real transcript's
COPIES = 6
OLD = 1_700_000_000  # an mtime long past


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def server_pid(marker: str) -> int:
    """The one child process of this test whose command line holds ``marker``."""
    me = os.getpid()
    children: list[int] = []
    for tid in os.listdir(f"/proc/{me}/task"):
        with open(f"/proc/{me}/task/{tid}/children") as f:
            children += [int(p) for p in f.read().split()]
    found = []
    for pid in children:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if marker.encode() in f.read():
                found.append(pid)
    assert len(found) == 1, found
    return found[0]


def read_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        fields = dict(line.split(": ") for line in f.read().splitlines())
    return int(fields["rchar"])


async def test_a_page_of_session_list_reads_no_log_again(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-home-marco-projects-spotter"
    project.mkdir(parents=True)
    real = REAL / "claude-code" / "marot-spotter-subagent.jsonl"
    for k in range(COPIES):
        copy = project / f"0a0a0a0a-0000-4000-8000-00000000000{k}.jsonl"
        shutil.copy(real, copy)
        os.utime(copy, (OLD, OLD))  # settled: a listing proves it by its stat (survey.py)
    for folder in (project, project.parent, project.parent.parent):
        os.utime(folder, (OLD, OLD))
    page_bytes = COPIES * real.stat().st_size
    home = tmp_path / "claude"
    expected = {
        h.id: len(ClaudeBackend(str(home), "x").inspect(h.id).events)
        for h in ClaudeBackend(str(home), "x").list()
    }
    assert len(expected) == COPIES
    args = ["--persistence", f"claude:{home}", "--index", ":memory:", "--no-hub"]
    args += ["--workspace", CWD]
    async with mcp_session(tmp_path, args) as session:
        # a search waits for the index's background build, whose reads would be counted too
        await session.call_tool("session_search", {"query": "spotter"})
        first = await session.call_tool("session_list", {})
        pid = server_pid("dsh_query_server.mcp")
        before = read_bytes(pid)
        second = await session.call_tool("session_list", {})
        spent = read_bytes(pid) - before
    assert text_of(second) == text_of(first)
    assert first.structured_content is not None
    counts = {i["id"]: i["eventCount"] for i in first.structured_content["items"]}
    assert counts == expected
    for sid, n in expected.items():
        assert f"Session {sid} — " in text_of(first)
        assert f"| Events: {n}" in text_of(first)
    # a whole load of each log would read every byte of the page again
    assert spent < page_bytes // 4, (spent, page_bytes)
