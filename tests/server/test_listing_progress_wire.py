"""A long listing's progress over the wire (protocol.md §8 **[ours]**): ``listSessions`` of an
importer's home counts its transcripts, ``listing k of n transcripts`` with a rising percentage,
one begin and one end per token; a composite mount gives each home its share; a search's listing
says its count without a percentage (the index build owns that); and the answer is the same bytes
with a token as without one.

The servers run with ``DSH_QUERY_PROGRESS_DELAY_MS=0``: every transcript listed is reported, so a
small home shows the whole sequence. Its transcripts' times lie in the future, so no listing
proves them and none is replayed, however slow the machine: each request lists (or waits for the
freshness poll's listing, showing its count, and then lists).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import subprocess
import time
import uuid
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from dsh_query_server.server.transport import frame, read_frame
from tests.builders import TEST_ENV, TEST_SERVER, U, hdr, write_transcript
from tests.import_helpers import REAL
from tests.lsp_client import config
from tests.server.test_progress_wire import check_sequence

pytestmark = pytest.mark.wire

ENV = {**TEST_ENV, "DSH_QUERY_PROGRESS_DELAY_MS": "0"}
REAL_ID = "55604662-cf2a-4331-851a-ec234028f8ca"
SESSIONS = 40


def claude_home(root: pathlib.Path, sessions: int, first: int = 1) -> pathlib.Path:
    """``sessions`` copies of a real Claude Code transcript, each under an id of its own, with
    times a day ahead (never old enough to prove a listing, importing/survey.py)."""
    real = (REAL / "claude-code" / "marot-spotter-short.jsonl").read_text()
    project = root / "projects" / "-w"
    project.mkdir(parents=True)
    ahead = time.time() + 86_400
    for n in range(first, first + sessions):
        path = project / f"{uuid.UUID(int=n)}.jsonl"
        path.write_text(real.replace(REAL_ID, str(uuid.UUID(int=n))))
        os.utime(path, (ahead, ahead))
    return root


def jsonl_root(root: pathlib.Path, sessions: int) -> pathlib.Path:
    """A dsh ``jsonl:`` root of ``sessions`` one-message transcripts whose times lie a day
    ahead: no listing proves a header by its transcript's stat (persistence/jsonl/proofs.py),
    so every listing reads every header."""
    ahead = time.time() + 86_400
    for n in range(sessions):
        path = write_transcript(root, hdr(f"s{n:03d}", n), [U(0, f"message {n}")])
        os.utime(path, (ahead, ahead))
    return root


def _init() -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True)
        ),
        # No warm-up: its reconcile would list beside the request and make the order vary.
        initialization_options={"index": ":memory:", "search": {"warmUp": False}},
    )


@pytest_lsp.fixture(config=config("--persistence", "none", env=ENV, server=TEST_SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(_init())
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def _request(client: LanguageClient, method: str, params: dict[str, Any], token: str) -> Any:
    reports: list[Any] = []
    client.progress_reports[token] = reports  # as the client's own create would
    result = await client.protocol.send_request_async(method, {**params, "workDoneToken": token})
    await _wait_for(lambda: any(r.kind == "end" for r in reports))
    return result


async def _wait_for(predicate, seconds: float = 20) -> None:
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out waiting")


def _listing(reports: list[Any], total: int) -> list[int]:
    """The counts of the ``listing k of <total> transcripts`` messages, in order."""
    counts: list[int] = []
    for r in reports:
        found = re.fullmatch(rf"listing ([\d,]+) of {total:,} transcripts", r.message or "")
        if found:
            counts.append(int(found.group(1).replace(",", "")))
    return counts


@pytest.mark.parametrize("scheme", ["claude", "jsonl"])
async def test_list_sessions_counts_the_transcripts_it_lists(client, tmp_path, scheme):
    """An importer's home, and the dsh ``jsonl:`` root as the importers' homes do (the session
    directories whose header it has gone through, of those its survey found)."""
    make = claude_home if scheme == "claude" else jsonl_root
    home = make(tmp_path / scheme, SESSIONS)
    await client.protocol.send_request_async(
        "sessionPersistence/mount", {"uri": f"{scheme}:{home}"}
    )
    listed = await _request(client, "sessionQuery/listSessions", {}, scheme)
    assert len(listed) == SESSIONS
    reports = client.progress_reports[scheme]
    percentages = check_sequence(reports)
    assert reports[0].title == "dsh-query listSessions"
    assert reports[-1].message == "done"
    counts = _listing(reports, SESSIONS)
    assert counts == sorted(counts) and counts[-1] == SESSIONS, reports
    assert len(counts) >= SESSIONS // 2, reports  # delay 0: (almost) every transcript reported
    assert percentages[-1] == 100 and len(set(percentages)) >= 10, percentages


async def test_the_trees_children_count_under_a_token_the_server_creates(client, tmp_path):
    """VS Code and Neovim send no token: the server creates one, and the tree's listing counts
    under it (its first message may already ride on the begin, once the client has answered)."""
    home = claude_home(tmp_path / "claude", SESSIONS)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{home}"})
    await client.protocol.send_request_async("sessionQuery/treeChildren", {"view": "sessions"})

    def tree() -> list[Any]:
        every: list[list[Any]] = list(client.progress_reports.values())
        return next((r for r in every if r and r[0].title == "dsh-query treeChildren"), [])

    await _wait_for(lambda: bool(tree()) and tree()[-1].kind == "end")
    reports = tree()
    check_sequence(reports)
    assert _listing(reports, SESSIONS), reports


async def test_the_trees_labels_count_after_its_listing(client, tmp_path):
    """A level of the sessions view lists the corpus, then reads its page's labels: the listing
    owns the first half of the bar, ``reading titles k of n sessions`` the second."""
    home = claude_home(tmp_path / "claude", SESSIONS)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{home}"})
    level = await _request(client, "sessionQuery/treeChildren", {"view": "sessions"}, "tree")
    assert len(level["nodes"]) == SESSIONS
    reports = client.progress_reports["tree"]
    check_sequence(reports)
    assert reports[0].title == "dsh-query treeChildren" and reports[-1].message == "done"
    listing = [r for r in reports if (r.message or "").startswith("listing ")]
    counts = _listing(listing, SESSIONS)
    assert counts == sorted(counts) and counts[-1] == SESSIONS, reports
    assert all(r.percentage is not None and r.percentage <= 50 for r in listing), reports
    titles = [r for r in reports if (r.message or "").startswith("reading titles ")]
    read = [int(r.message.split()[2]) for r in titles]
    assert read == sorted(read) and len(read) >= SESSIONS // 2, reports
    assert titles[-1].message == f"reading titles {SESSIONS} of {SESSIONS} sessions", reports
    assert all(r.percentage is not None and r.percentage >= 50 for r in titles), reports
    assert titles[-1].percentage == 100, reports
    # the listing first, then the labels
    assert reports.index(listing[-1]) < reports.index(titles[0]), reports


async def test_a_composite_gives_each_home_its_share(client, tmp_path):
    a, b = claude_home(tmp_path / "a", 30), claude_home(tmp_path / "b", 10, first=1000)
    uris = [f"claude:{a}", f"claude:{b}"]
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": uris})
    listed = await _request(client, "sessionQuery/listSessions", {}, "both")
    assert len(listed) == 40
    reports = client.progress_reports["both"]
    check_sequence(reports)
    shown = [(r.message, r.percentage) for r in reports if (r.message or "").startswith("listing")]
    # the first home's 30 are half the bar; the second's 10 the other half, counted on from 30
    first = [p for m, p in shown if m.endswith(" of 30 transcripts")]
    second = [(m, p) for m, p in shown if m.endswith(" of 40 transcripts")]
    assert first and max(first) <= 50, shown
    assert second and all(p >= 50 for _, p in second), shown
    assert second[-1] == ("listing 40 of 40 transcripts", 100), shown


async def test_a_search_lists_with_its_count_and_leaves_the_percentage_to_the_index(
    client, tmp_path
):
    home = claude_home(tmp_path / "claude", SESSIONS)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{home}"})
    await _request(client, "sessionQuery/searchSessions", {"query": "spotter"}, "find")
    reports = client.progress_reports["find"]
    check_sequence(reports)
    listing = [r for r in reports if (r.message or "").startswith("listing ")]
    assert _listing(listing, SESSIONS), reports
    # the listing's reports carry no percentage of their own: the first one is the index's
    first = next(i for i, r in enumerate(reports) if r.percentage is not None)
    assert all(r.percentage is None for r in reports[:first])
    assert reports[first].message.startswith("indexing "), reports


async def test_read_titles_counts_the_logs_it_reads(client, tmp_path):
    """``dsh-query sessions`` reads every shown session's title after the listing: on a cold
    home that is the long part, so it counts too."""
    home = claude_home(tmp_path / "claude", SESSIONS)
    await client.protocol.send_request_async("sessionPersistence/mount", {"uri": f"claude:{home}"})
    ids = [str(uuid.UUID(int=n)) for n in range(1, SESSIONS + 1)]
    titles = await _request(client, "sessionQuery/readTitles", {"sessionIds": ids}, "titles")
    assert [t["status"] for t in titles] == ["fulfilled"] * SESSIONS
    reports = client.progress_reports["titles"]
    percentages = check_sequence(reports)
    reading = [r.message for r in reports if (r.message or "").startswith("reading titles ")]
    assert reading[-1] == f"reading titles {SESSIONS} of {SESSIONS} sessions", reading
    counts = [int(m.split()[2]) for m in reading]
    assert counts == sorted(counts) and len(counts) >= SESSIONS // 2, reading
    assert percentages[-1] == 100


# -- the answer does not depend on the token -------------------------------------------------------


class _Raw:
    """The server over stdio, frame by frame: the answer's bytes as they were written."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [*TEST_SERVER, "--persistence", "none"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._id = 0
        self.progress = 0  # $/progress notifications seen

    def request(self, method: str, params: Any) -> bytes:
        """The ``result`` member of the answer, as bytes (notifications before it skipped)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self._id += 1
        message = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        self.process.stdin.write(frame(json.dumps(message).encode()))
        self.process.stdin.flush()
        while True:
            body = read_frame(self.process.stdout)
            assert body is not None, "the server closed its output"
            message = json.loads(body)
            self.progress += message.get("method") == "$/progress"
            if message.get("id") == self._id:
                start = body.index(b'"result":')
                return body[start:]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(20)


def test_the_answer_is_the_same_bytes_with_and_without_a_token(tmp_path):
    home = claude_home(tmp_path / "claude", SESSIONS)
    server = _Raw({**ENV, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    try:
        init = {
            "processId": os.getpid(),
            "capabilities": {},
            "initializationOptions": {"index": ":memory:", "search": {"warmUp": False}},
        }
        server.request("initialize", init)
        server.request("sessionPersistence/mount", {"uri": f"claude:{home}"})
        plain = server.request("sessionQuery/listSessions", {})
        assert server.progress == 0
        shown = server.request("sessionQuery/listSessions", {"workDoneToken": "t"})
        assert server.progress > 2  # begin, the count, end
        again = server.request("sessionQuery/listSessions", {})
    finally:
        server.close()
    assert len(json.loads(b"{" + plain)["result"]) == SESSIONS
    assert shown == plain == again
