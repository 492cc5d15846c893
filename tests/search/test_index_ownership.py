"""Index ownership (hub.md §1, search/ownership.py): no two processes ever write one index.

Two ``serve`` processes with the same configuration used to open the same default index file,
and the second one's first search failed with ``session-search reconciliation failed: constraint
failed``. Each process now holds ``<index>.lock``; the second takes the next slot.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from bench.wire import WireClient
from dsh_query_server.search import ownership
from tests.builders import TEST_ENV, A, U, hdr, write_transcript

pytestmark = pytest.mark.wire

HOLD = """
import sys, time
from dsh_query_server.search import ownership
claim = ownership.claim(sys.argv[1])
print(claim.path, flush=True)
sys.stdin.read()
"""


def corpus(root: pathlib.Path, sessions: int = 12) -> None:
    for i in range(sessions):
        events = [U(0, f"hello world {i}").to_value(), A(1, f"answer {i}").to_value()]
        write_transcript(root, hdr(f"s{i:02d}", i), events)


def env_for(tmp_path: pathlib.Path) -> dict[str, str]:
    return {
        **TEST_ENV,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "DSH_QUERY_SERVER_STDERR": "1",
    }


def test_two_serve_processes_on_one_default_index_both_search(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    corpus(root)
    env = env_for(tmp_path)
    args = ["--persistence", f"jsonl:{root}"]
    stderr = open(tmp_path / "stderr.log", "wb")  # noqa: SIM115 - closed below
    first = WireClient(args, env=env, stderr=stderr)
    second = WireClient(args, env=env, stderr=stderr)
    try:
        for client in (first, second):
            page = client.request("sessionQuery/searchSessions", {"query": "hello"})
            assert len(page["items"]) == 12
        # the second one again, after the first changed nothing: still its own index
        assert len(second.request("sessionQuery/searchSessions", {"query": "answer"})["items"])
    finally:
        first.close()
        second.close()
        stderr.close()
    files = sorted(p.name for p in (tmp_path / "cache" / "dsh-query").glob("index-*.sqlite"))
    assert len(files) == 2 and files[0] == files[1].replace(".sqlite", "-1.sqlite"), files
    assert "is in use by another process; using" in (tmp_path / "stderr.log").read_text()


def hold(path: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=TEST_ENV,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def test_slots_in_order_then_memory_and_a_dead_holder_frees_its_slot(tmp_path: Any) -> None:
    path = str(tmp_path / "idx" / "index.sqlite")
    holders = [hold(path) for _ in range(ownership.SLOTS)]
    try:
        assert [p for _, p in holders] == [ownership.slot_path(path, i) for i in range(8)]
        assert holders[3][1] == str(tmp_path / "idx" / "index-3.sqlite")
        assert ownership.claim(path).path == ownership.MEMORY  # this process: every slot taken
        holders[2][0].kill()  # a crashed holder's lock goes with its process
        holders[2][0].wait()
        claim = ownership.claim(path)
        assert claim.path == ownership.slot_path(path, 2) and claim.moved
        again = ownership.claim(path)  # held by this process already: the same file
        assert again.path == claim.path
        ownership.release(again)
        ownership.release(claim)  # the last holder here: the lock is given back
        holders[2] = hold(path)
        assert holders[2][1] == claim.path
    finally:
        for process, _ in holders:
            process.kill()
            process.wait()
    assert oct(os.stat(path + ".lock").st_mode & 0o777) == "0o600"


def test_memory_is_never_locked() -> None:
    claim = ownership.claim(ownership.MEMORY)
    assert claim.path == ownership.MEMORY and not claim.moved
    ownership.release(claim)
