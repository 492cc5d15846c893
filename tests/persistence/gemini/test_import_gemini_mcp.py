"""The MCP tools (tools.md) on a Gemini CLI home, through the SDK's stdio client and a real
``dsh-query mcp`` process: search finds the worked example of importers.md §7.6, the event trace
of a compacted message names its replacement, and the session trace finds the sub-agent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.import_helpers import FIXTURES
from tests.mcp_helpers import mcp_session, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.wire, pytest.mark.slow]

S = "0b6e4f1c-5a7d-4d1e-9c8b-2f3a4b5c6d7e"
A = "9d0f3b2a-1c4e-4f5a-8b6c-7d8e9f0a1b2c"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_mcp_tools_see_gemini_cli_sessions(tmp_path: Path) -> None:
    home = shutil.copytree(FIXTURES / "gemini" / "spec" / ".gemini", tmp_path / ".gemini")
    args = ["--persistence", f"gemini:{home}", "--index", ":memory:", "--workspace", "/w"]
    async with mcp_session(tmp_path, args) as s:
        found = await s.call_tool("session_search", {"query": "rename"})
        events = await s.call_tool("session_event_search", {"session_id": S, "query": "files"})
        shadowed = await s.call_tool("session_event_trace", {"session_id": S, "seq": 4})
        lineage = await s.call_tool("session_trace", {"session_id": S})
    assert not found.is_error
    ids = {item["header"]["id"] for item in found.structured_content["items"]}
    assert {S, A} <= ids
    assert found.structured_content["items"][0]["header"]["source"]["agent"] == "gemini-cli"
    assert f"Session {S} — Rename b.py to c.py" in text_of(found)
    assert not events.is_error and "list files" in text_of(events)
    trace = shadowed.structured_content
    assert not shadowed.is_error and trace["target"]["surface"] == "shadowed"
    assert trace["replacedBy"] == 37 and trace["derivedEventSeqs"] == [37]
    descendants = lineage.structured_content["descendants"]
    assert [d["session"]["header"]["id"] for d in descendants] == [A]
