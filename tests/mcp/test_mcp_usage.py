"""``session_usage`` (tools.md §1.6) through the MCP SDK's client, over a Claude Code home: the
target's totals, its visible sub-agent added, and a sub-agent outside the workspace never named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_helpers import jl, write_home
from tests.mcp_helpers import mcp_session, text_of
from tests.query.test_usage_service import DUPLICATES, TRUNK, anthropic, response, user

pytestmark = pytest.mark.wire


def home(tmp: Path) -> str:
    def agent(name: str, cwd: str, input: int) -> bytes:
        return jl(
            user("s1", None, "sub task", 3, sid=TRUNK, isSidechain=True, cwd=cwd),
            response("x1", "s1", f"msg_{name}", 4, anthropic(input, 1), isSidechain=True),
        )

    root = write_home(
        tmp / "claude",
        {
            f"projects/-w/{TRUNK}.jsonl": DUPLICATES,
            f"projects/-w/{TRUNK}/subagents/agent-in.jsonl": agent("in", "/w", 7),
            f"projects/-w/{TRUNK}/subagents/agent-out.jsonl": agent("out", "/secret", 9),
        },
    )
    return f"claude:{root}"


async def test_session_usage_with_visible_descendants_only(tmp_path: Path) -> None:
    args = ["--persistence", home(tmp_path), "--index", ":memory:", "--workspace", "/w"]
    async with mcp_session(tmp_path, args) as s:
        alone = await s.call_tool("session_usage", {"session_id": TRUNK})
        whole = await s.call_tool(
            "session_usage", {"session_id": TRUNK, "include_descendants": True}
        )
        bad = await s.call_tool("session_usage", {"session_id": TRUNK, "include_descendants": 1})
        hidden = await s.call_tool("session_usage", {"session_id": f"{TRUNK}/agent-out"})
    assert not alone.is_error
    text = text_of(alone)
    assert "Counted: 2 responses in 1 sessions" in text
    assert (
        "Tokens: input 4, cache read 1900, cache write 100, output 47, reasoning not recorded"
        in (text)
    )
    assert "Cost: $0.001662 (an estimate at list prices)" in text
    assert alone.structured_content is not None
    assert alone.structured_content["total"]["costUsd"] == "0.001662"
    everything = text_of(whole)
    assert f"- {TRUNK}/agent-in | claude-code | 1 responses" in everything
    assert "agent-out" not in everything and "/secret" not in everything
    assert "With descendants: 3 responses in 2 sessions" in everything
    assert whole.structured_content is not None
    assert whole.structured_content["withDescendants"]["input"] == 4 + 7
    assert bad.is_error and "must be a boolean" in text_of(bad)
    assert hidden.is_error and "no session with id" in text_of(hidden)
