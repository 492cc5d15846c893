"""``notifications/progress`` over MCP (mcp/progress.py) with the SDK's own client: a tool call
that carries a progressToken gets progress that only increases, out of 100, ending at 100 when
it succeeds; in this process (``--no-hub``) and through the hub. The servers run with
``DSH_QUERY_PROGRESS_DELAY_MS=0`` and without the warm-up, so the call itself builds the index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import U, hdr, write_transcript
from tests.mcp_helpers import mcp_session, private_env

pytestmark = pytest.mark.wire

SESSIONS = 30


def _setup(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    root = tmp_path / "dsh"
    for n in range(SESSIONS):
        write_transcript(root, hdr(f"s{n:03d}", cwd="/w/app"), [U(0, f"retry number {n}")])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"search": {"warmUp": False}}))
    args = ["--persistence", f"jsonl:{root}", "--workspace", "/w/app", "--config", str(config)]
    env = {**private_env(tmp_path), "DSH_QUERY_PROGRESS_DELAY_MS": "0"}
    return args, env


@pytest.mark.parametrize("hub", [False, True], ids=["in-process", "hub"])
async def test_search_reports_progress_to_a_client_that_asks(tmp_path: Path, hub: bool) -> None:
    args, env = _setup(tmp_path)
    if not hub:
        args.append("--no-hub")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_session(tmp_path, args, env=env) as session:
        result = await session.call_tool(
            "session_search", {"query": "retry"}, progress_callback=on_progress
        )
        assert not result.is_error
        # Without a token: no progress at all (none is sent unasked).
        quiet = await session.call_tool("session_search", {"query": "number"})
        assert not quiet.is_error
    assert seen, "no progress notification"
    values = [p for p, _, _ in seen]
    assert values == sorted(set(values)), values  # strictly increasing
    assert all(total == 100 for _, total, _ in seen)
    assert values[-1] == 100
    messages = [m for _, _, m in seen if m]
    assert any(m.startswith("indexing ") for m in messages), messages
