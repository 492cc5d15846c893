"""A real server killed (SIGKILL) while its first search builds the index, past 50% by its own
progress: the next server on the same index file resumes the build (its progress counts only the
transcripts no committed batch holds) and answers exactly as a server that built from scratch
(semantics.md §6.5 batches [ours]). The in-process property over random homes is
test_search_resume.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bench.wire import WireClient, wait_until
from tests.builders import TEST_ENV, U, hdr, write_transcript

pytestmark = pytest.mark.wire

SESSIONS = 1000  # many batches of 64 before the half, and a second half long enough to kill in
ENV = {**TEST_ENV, "DSH_QUERY_PROGRESS_DELAY_MS": "0"}
QUERIES = ["needle", "number 7", "haystack"]


def _server(root: Path, index: Path) -> WireClient:
    options = {
        "persistence": f"jsonl:{root}",
        "index": str(index),
        "search": {"warmUp": False},
        "checkpoint": {"mode": "manual"},
    }
    return WireClient(["--persistence", "none"], env=ENV, initialization_options=options)


def _reports(client: WireClient, token: str) -> list[dict[str, Any]]:
    return [
        m["params"]["value"]
        for m in list(client.notifications)
        if m.get("method") == "$/progress" and m["params"]["token"] == token
    ]


def _total(reports: list[dict[str, Any]]) -> int | None:
    for value in reports:
        found = re.match(r"indexing [\d,]+ of ([\d,]+) transcripts", value.get("message") or "")
        if found:
            return int(found.group(1).replace(",", ""))
    return None


def _answers(client: WireClient) -> str:
    pages = []
    for query in QUERIES:
        page = client.request("sessionQuery/searchSessions", {"query": query, "limit": 100})
        page.pop("nextCursor", None)
        pages.append(page)
    return json.dumps(pages, sort_keys=True)


def test_a_killed_build_resumes_and_answers_as_a_fresh_one(tmp_path):
    root = tmp_path / "home"
    for n in range(SESSIONS):
        text = f"needle number {n}" + (" in the haystack" if n % 3 == 0 else "")
        write_transcript(root, hdr(f"s{n:04d}"), [U(0, text)])
    index = tmp_path / "index.sqlite"

    first = _server(root, index)
    try:
        first.submit("sessionQuery/searchSessions", {"query": "needle", "workDoneToken": "a"})
        assert wait_until(
            lambda: any((v.get("percentage") or 0) >= 50 for v in _reports(first, "a")), 60
        ), _reports(first, "a")
    finally:
        first.kill()
    assert not any(v["kind"] == "end" for v in _reports(first, "a"))  # killed mid-build
    assert _total(_reports(first, "a")) == SESSIONS

    resumed = _server(root, index)
    try:
        resumed.request("sessionQuery/searchSessions", {"query": "needle", "workDoneToken": "b"})
        remaining = _total(_reports(resumed, "b"))
        assert remaining is not None and remaining <= SESSIONS // 2 + 64, remaining
        answers = _answers(resumed)
    finally:
        resumed.close()

    fresh = _server(root, tmp_path / "fresh.sqlite")
    try:
        assert _answers(fresh) == answers
    finally:
        fresh.close()
