"""Window reads of imported logs (importers.md §3.4): for random native transcripts, well-formed
and damaged, plain and Zstandard, every window equals the slice of a full ``inspect`` at the same
revision, also after the file grows between reads (the window then shows the new revision)."""

from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.importing.backend import BULK_WINDOW, ImportBackend
from dsh_query_server.persistence.importing.window import WindowMemos
from tests.import_strategies import CODEX_SID, SID, claude_transcript, codex_rollout

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def windows(draw: Any, n: int) -> list[tuple[int, int]]:
    """Random ranges, some reaching past either end of the log."""
    out = [(0, n + 3), (max(n - 1, 0), n + 50)]
    for _ in range(draw(st.integers(1, 6))):
        first = draw(st.integers(0, n + 2))
        out.append((first, first + draw(st.integers(-1, 60))))
    return out


def assert_windows(backend: ImportBackend, sid: str, ranges: list[tuple[int, int]]) -> None:
    reads: list[int] = []
    real = backend.read
    backend.read = lambda *a: reads.append(1) or real(*a)  # type: ignore[method-assign]
    try:
        full = backend.inspect(sid)
        n = len(full.events)
        before = len(reads)
        backend.inspect_window(sid, 0, 0)  # the first window read verifies and builds the memo
        assert len(reads) == before + 1
        title = next((e.seq for e in reversed(full.events) if e.type == "session/title"), None)
        for first, last in ranges:
            before = len(reads)
            w = backend.inspect_window(sid, first, last)
            lo = min(first, n)
            assert (w.length, w.start, w.title) == (n, lo, title)
            assert [e.raw for e in w.events] == [e.raw for e in full.events[lo : last + 1]]
            assert w.meta == full.meta
            if len(reads) > before:  # a full read: only for an event the memo cannot rebuild
                assert not memo_covers(backend._windows, sid, lo, min(last, n - 1))
    finally:
        del backend.read


def memo_covers(memos: WindowMemos, sid: str, lo: int, hi: int) -> bool:
    entry = memos._entries.get(sid)
    if entry is None:
        return False
    return all(entry[1].lengths[s] != -2 for s in range(lo, hi + 1))


def grow(path: pathlib.Path, more: bytes) -> None:
    with open(path, "ab") as f:
        f.write(more)


@SETTINGS
@given(claude_transcript(), claude_transcript(), st.data())
def test_claude_windows_equal_the_full_inspect_before_and_after_growth(case, extra, data):
    _, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        path = home / f"projects/-w/{SID}.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(body)
        backend = ClaudeBackend(str(home), "claude:x")
        if not backend.list():
            return
        n = len(backend.inspect(SID).events)
        assert_windows(backend, SID, windows(data.draw, n))
        grow(path, b"\n" + extra[1])  # ends a torn tail (if any) as a bad line, then appends
        n = len(backend.inspect(SID).events)
        assert_windows(backend, SID, windows(data.draw, n))
    finally:
        shutil.rmtree(home)


@SETTINGS
@given(codex_rollout(), st.booleans(), st.data())
def test_codex_windows_equal_the_full_inspect_plain_and_zstd(case, compressed, data):
    _, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        folder = home / "sessions/2026/01/01"
        folder.mkdir(parents=True)
        name = f"rollout-2026-01-01T00-00-00-{CODEX_SID}.jsonl"
        path = folder / (name + ".zst" if compressed else name)
        path.write_bytes(zstandard.ZstdCompressor().compress(body) if compressed else body)
        backend = CodexBackend(str(home), "codex:x")
        backend.list()
        n = len(backend.inspect(CODEX_SID).events)
        assert_windows(backend, CODEX_SID, windows(data.draw, n))
        if not compressed:
            grow(path, b'\n{"type":"event_msg","payload":{"type":"agent_message","message":"x"}}\n')
            n = len(backend.inspect(CODEX_SID).events)
            assert_windows(backend, CODEX_SID, windows(data.draw, n))
    finally:
        shutil.rmtree(home)


def test_a_window_reread_sees_a_rewritten_line_only_through_a_new_revision(tmp_path):
    """The stat is taken in the window's own read: a same-size rewrite that keeps the inode but
    moves mtime re-verifies instead of rebuilding from the old positions."""
    import os

    path = tmp_path / f"projects/-w/{SID}.jsonl"
    path.parent.mkdir(parents=True)
    rec = b'{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z",'
    path.write_bytes(rec + b'"message":{"role":"user","content":"alpha"}}\n')
    backend = ClaudeBackend(str(tmp_path), "claude:x")
    assert backend.inspect_window(SID, 0, 99).events == backend.inspect(SID).events
    st0 = os.stat(path)
    with open(path, "r+b") as f:  # same inode, same size, new text
        f.write(rec + b'"message":{"role":"user","content":"omega"}}\n')
    os.utime(path, ns=(st0.st_atime_ns, st0.st_mtime_ns + 1_000_000))
    w = backend.inspect_window(SID, 0, 99)
    assert any(b"omega" in e.raw for e in w.events)
    assert not any(b"alpha" in e.raw for e in w.events)
    assert w.events == backend.inspect(SID).events


@pytest.mark.slow
@pytest.mark.wire
def test_read_event_over_stdio_equals_the_full_read_in_a_large_transcript(tmp_path):
    """A real server on stdio: readEvent ±50 at seqs across a ~9,000-event generated Claude log
    (compaction, damaged line) equals the slice of readSession, before and after the file
    grows between reads."""
    import random

    from bench.importers import claude_transcript
    from dsh_query_server.client import StdioClient
    from tests.import_helpers import isolated_env

    sid = "7f0c2a55-0000-4000-8000-00000000beef"
    home = tmp_path / "claude"
    path = home / "projects/-w" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    body = claude_transcript(random.Random(5), sid, 900, compact=True)
    lines = body.split(b"\n")
    lines.insert(len(lines) // 3, b"garbage {not json")
    path.write_bytes(b"\n".join(lines))
    env = isolated_env(tmp_path)
    with StdioClient(
        ["--persistence", f"claude:{home}"], env=env, initialization_options={"index": ":memory:"}
    ) as client:
        for grown in (False, True):
            if grown:
                more = claude_transcript(random.Random(6), sid, 3).replace(b"-0000", b"-g000")
                with open(path, "ab") as f:
                    f.write(more)
            full = client.request("sessionQuery/readSession", {"sessionId": sid})["events"]
            n = len(full)
            assert n > 9_000
            for seq in [0, 1, n // 3, n // 2, n - 60, n - 1, *random.Random(9).sample(range(n), 8)]:
                got = client.request(
                    "sessionQuery/readEvent",
                    {"sessionId": sid, "seq": seq, "before": 50, "after": 50},
                )
                lo, hi = max(seq - 50, 0), min(seq + 50, n - 1)
                assert (got["startSeq"], got["endSeq"]) == (lo, hi)
                assert got["events"] == full[lo : hi + 1]
                assert got["target"] == full[seq]


@settings(max_examples=10, deadline=None)
@given(claude_transcript())
def test_a_bulk_window_builds_the_memo_only_when_the_same_revision_is_read_again(case):
    """The search index reads logs by long windows: the first builds no memo (most logs fit in
    one), a second of the same revision does, and a short window always does."""
    tmp_path = pathlib.Path(tempfile.mkdtemp())
    try:
        check_bulk(tmp_path, case[1])
    finally:
        shutil.rmtree(tmp_path)


def check_bulk(tmp_path: pathlib.Path, body: bytes) -> None:
    path = tmp_path / f"h/projects/-w/{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(body)
    b = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    # a transcript of only titles or damaged lines has no header record: it does not list
    assume(b.list())
    full = b.inspect(SID).events
    w = b.inspect_window(SID, 0, BULK_WINDOW)
    assert [e.raw for e in w.events] == [e.raw for e in full]
    assert b._windows._entries.get(SID) is None  # pyright: ignore[reportPrivateUsage]
    w = b.inspect_window(SID, 0, BULK_WINDOW)
    assert [e.raw for e in w.events] == [e.raw for e in full]
    assert b._windows._entries.get(SID) is not None  # pyright: ignore[reportPrivateUsage]
    fresh = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    assert [e.raw for e in fresh.inspect_window(SID, 0, 3).events] == [e.raw for e in full[:4]]
    assert fresh._windows._entries.get(SID) is not None  # pyright: ignore[reportPrivateUsage]
