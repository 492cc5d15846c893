"""Issue 25 finding 1 through MCP (the SDK's stdio client): ``session_search`` keeps working
over a store with damaged logs and mentions briefly the workspace's sessions it left out, by id
only (the store's paths lie outside the workspace; another workspace's sessions stay unnamed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import U, hdr, log_only, write_transcript
from tests.mcp_helpers import mcp_session, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.wire, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def damage(path: Path) -> None:
    end = log_only("turn/end", 9, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
    path.write_text(path.read_text() + "{not json\n" + json.dumps(end) + "\n")


async def test_session_search_names_the_workspaces_unreadable_sessions(tmp_path: Path):
    root = tmp_path / "root"
    write_transcript(root, hdr("good", 1_700_000_000_000, cwd="/w/app"), [U(0, "retry here")])
    damage(write_transcript(root, hdr("broken", 1_700_000_000_001, cwd="/w/app"), [U(0, "retry")]))
    damage(write_transcript(root, hdr("elsewhere", 1_700_000_000_002, cwd="/x"), [U(0, "retry")]))
    args = ["--persistence", f"jsonl:{root}", "--index", ":memory:", "--workspace", "/w/app"]
    async with mcp_session(tmp_path, args) as session:
        result = await session.call_tool("session_search", {"query": "retry"})
    assert not result.is_error
    text = text_of(result)
    assert text.startswith("Session search results (1):") and "Session good" in text
    assert text.endswith(
        "\n\nNote: 1 session in this workspace could not be read (damaged log) and was left "
        "out: broken."
    )
    assert str(root) not in text and "elsewhere" not in text
    assert result.structured_content is not None
    assert result.structured_content["unreadable"] == [
        {"sessionId": "broken", "code": "SESSION_QUERY_CORRUPT_SESSION"}
    ]
    assert result.structured_content["unreadableCount"] == 1
