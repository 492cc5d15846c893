"""Unreadable sessions over the wire (issue 25 finding 1; semantics.md §6.5 [ours]): the real
server over stdio, a jsonl: root holding a damaged log among healthy ones."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.builders import TEST_ENV, TEST_SERVER, U, hdr, log_only, write_transcript
from tests.import_helpers import REAL
from tests.lsp_client import call, config, init_params

pytestmark = pytest.mark.wire

CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"


@pytest_lsp.fixture(config=config("--persistence", "none", env=TEST_ENV, server=TEST_SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def _damaged(text: str) -> str:
    end = log_only("turn/end", 9, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
    return text + "{not json\n" + json.dumps(end) + "\n"


@pytest.mark.asyncio
async def test_damaged_log_is_named_and_found_again_once_repaired(client, tmp_path):
    root = tmp_path / "root"
    for n in range(3):
        write_transcript(root, hdr(f"ok-{n}", n + 1, cwd="/p"), [U(0, "needle here")])
    bad = write_transcript(root, hdr("bad", 9, cwd="/p"), [U(0, "needle too")])
    healthy = bad.read_text()
    bad.write_text(_damaged(healthy))
    headless = write_transcript(root, hdr("headless", 10, cwd="/p"), [U(0, "needle")])
    headless.write_text("{broken header\n" + headless.read_text().split("\n", 1)[1])
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}"})

    for _ in range(2):  # every search names it while it stays damaged
        page = await call(client, "sessionQuery/searchSessions", {"query": "needle"})
        assert sorted(i["header"]["id"] for i in page["items"]) == ["ok-0", "ok-1", "ok-2"]
        assert page["unreadableCount"] == 1
        (entry,) = page["unreadable"]
        assert entry["sessionId"] == "bad" and entry["code"] == CORRUPT
        assert entry["path"] == str(bad) and str(bad) in entry["message"]
        assert "unparsable committed event" in entry["message"]

    # A healthy session's searchEvents is unaffected; the exact read keeps the spec's text.
    hits = await call(client, "sessionQuery/searchEvents", {"sessionId": "ok-1", "query": "needle"})
    assert [h["sessionId"] for h in hits["items"]] == ["ok-1"]

    # Listing skips the header-less transcript (persistence.md §4.8); status names both.
    listed = await call(client, "sessionQuery/listSessions", {})
    assert "headless" not in [s["header"]["id"] for s in listed]
    status = await call(client, "sessionPersistence/status", {})
    by_id = {u["sessionId"]: u for u in status["unreadable"]}
    assert status["unreadableCount"] == 2 and set(by_id) == {"bad", "headless"}
    assert by_id["headless"]["path"] == str(headless)
    assert by_id["headless"]["message"] == (
        f"corrupt session log: header line is not valid JSON ({headless})"
    )

    bad.write_text(healthy)  # repaired (a new revision)
    headless.unlink()
    page = await call(client, "sessionQuery/searchSessions", {"query": "needle"})
    assert "bad" in [i["header"]["id"] for i in page["items"]]
    assert "unreadable" not in page
    await call(client, "sessionQuery/listSessions", {})
    assert "unreadable" not in await call(client, "sessionPersistence/status", {})


@pytest.mark.asyncio
async def test_a_garbled_claude_transcript_is_named_by_status(client, tmp_path):
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    real = REAL / "claude-code" / "marot-spotter-short.jsonl"
    shutil.copy(real, project / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl")
    garbled = project / "0b0b0b0b-0000-4000-8000-000000000000.jsonl"
    garbled.write_bytes(bytes(reversed(real.read_bytes())))  # every record unreadable
    empty = project / "0c0c0c0c-0000-4000-8000-000000000000.jsonl"
    empty.write_bytes(b"")  # being created: not reported
    await call(client, "sessionPersistence/mount", {"uri": f"claude:{tmp_path / 'claude'}"})
    listed = await call(client, "sessionQuery/listSessions", {})
    assert [s["header"]["id"] for s in listed] == ["55604662-cf2a-4331-851a-ec234028f8ca"]
    status = await call(client, "sessionPersistence/status", {})
    assert status["unreadableCount"] == 1
    assert status["unreadable"] == [
        {
            "sessionId": "0b0b0b0b-0000-4000-8000-000000000000",
            "code": CORRUPT,
            "message": 'foreign transcript "projects/-w/0b0b0b0b-0000-4000-8000-000000000000.jsonl" '
            f"is unreadable: no header record in its first MiB ({garbled})",
            "path": str(garbled),
        }
    ]
    page = await call(client, "sessionQuery/searchSessions", {"query": "spotter"})
    assert page["items"]
