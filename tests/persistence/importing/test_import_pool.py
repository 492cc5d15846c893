"""The read workers' pool (importing/pool.py, issue 28): a bulk read that ends cleanly gives its
worker back and the next one (of the same backend, or of a composite's next member) reuses it; a
read cancelled or left early kills it; an idle worker exits after its idle time and when the
server shuts down; a cold index's server starts one ahead. Real worker processes throughout, and
every answer is still ``inspect``'s, however often the worker is reused and the home changes."""

from __future__ import annotations

import contextlib
import os
import pathlib
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.wire import wait_until
from dsh_query_server.cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from dsh_query_server.client import StdioClient
from dsh_query_server.model.text import TEXT_TYPES
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.contract.results import Payloads, Reading
from dsh_query_server.persistence.importing import shared
from dsh_query_server.persistence.importing.pool import POOL
from dsh_query_server.persistence.importing.worker import thread_nice
from dsh_query_server.persistence.mount.composite import CompositeBackend
from tests.builders import TEST_ENV
from tests.persistence.importing.test_import_bulk import (
    Pick,
    assert_same,
    backends,
    build_home,
    inspected,
    picks,
)


@pytest.fixture(autouse=True)
def _no_idle_worker() -> Iterator[None]:
    """Each test starts and ends without an idle worker (the pool is the process's)."""
    POOL.close()
    yield
    POOL.close()


def workers(pid: int) -> set[int]:
    """The read workers among ``pid``'s children, living (not yet reaped zombies excepted)."""
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        found.update(c for c in children if _is_worker(c))
    return found


def _is_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return b"importing.worker" in command and state != "Z"


def gone(pid: int) -> bool:
    return not _is_worker(pid)


@pytest.fixture
def home(tmp_path: pathlib.Path) -> pathlib.Path:
    build_home(tmp_path, [(i % 3, 0, i == 3) for i in range(6)], [(0, 0, False)] * 4)
    return tmp_path


def _claude(home: pathlib.Path) -> ClaudeBackend:
    return ClaudeBackend(str(home / "claude"), f"claude:{home / 'claude'}")


def _read(backend: ClaudeBackend, token: CancelToken = NULL_TOKEN) -> set[int]:
    """One bulk read of every listed id through a worker, checked; the workers seen during it."""
    ids = [str(h.id) for h in backend.list()]
    spec = backend.worker_spec()
    assert spec is not None
    seen: set[int] = set()
    for sid, got in shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), token):
        seen |= workers(os.getpid())
        assert_same(got, inspected(backend, sid))
    return seen


def test_a_second_bulk_read_reuses_the_worker(home: pathlib.Path) -> None:
    backend = _claude(home)
    first = _read(backend)
    kept = POOL.idle_pid
    assert kept is not None and first == {kept}
    assert _read(backend) == {kept}  # the same process read the second time
    assert POOL.idle_pid == kept


def test_a_composites_members_share_one_worker(
    home: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Claude home then a Codex home: one worker reads for both (a new Init switches it)."""
    monkeypatch.setenv(shared.ENV, "1")
    members = backends(home)
    comp = CompositeBackend(members, "composite")
    owners = {str(h.id): m for m in members for h in m.list()}
    ids = [str(h.id) for h in comp.list()]
    assert {owners[sid] for sid in ids} == set(members)  # both members read in bulk
    seen: set[int] = set()
    for sid, got in comp.inspect_many(ids, 8192, NULL_TOKEN, None):
        seen |= workers(os.getpid())
        assert_same(got, inspected(owners[sid], sid))
    assert len(seen) == 1 and POOL.idle_pid in seen


def test_an_idle_worker_exits_after_its_idle_time(
    home: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(POOL, "idle_seconds", 0.2)
    _read(_claude(home))
    pid = POOL.idle_pid
    assert pid is not None
    assert wait_until(lambda: gone(pid), 30)
    assert POOL.idle_pid is None


def test_a_cancelled_read_kills_its_worker(home: pathlib.Path) -> None:
    backend = _claude(home)
    token = CancelToken()
    ids = [str(h.id) for h in backend.list()]
    spec = backend.worker_spec()
    assert spec is not None
    reads = shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), token)
    next(reads)
    (pid,) = workers(os.getpid())
    token.cancel()
    with contextlib.suppress(SessionQueryCancelled):  # unless every answer was in already
        list(reads)
    assert gone(pid) and POOL.idle_pid is None


def test_a_read_left_early_kills_its_worker(home: pathlib.Path) -> None:
    backend = _claude(home)
    ids = [str(h.id) for h in backend.list()]
    spec = backend.worker_spec()
    assert spec is not None
    reads = shared.shared_reads(backend._bulk_one, spec, ids, [0] * len(ids), NULL_TOKEN)
    next(reads)
    (pid,) = workers(os.getpid())
    reads.close()
    assert gone(pid) and POOL.idle_pid is None


def test_prestart_readies_the_worker_the_read_takes(home: pathlib.Path) -> None:
    """A cold build's prepare: the worker the next bulk read uses is the one started ahead,
    and preparing again while it idles starts no other."""
    backend = _claude(home)
    backend.prepare_bulk()
    ahead = POOL.idle_pid
    assert ahead is not None
    backend.prepare_bulk()
    assert POOL.idle_pid == ahead and workers(os.getpid()) == {ahead}
    assert _read(backend) == {ahead}


def test_an_idle_worker_reads_even_a_small_home(
    home: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below PARALLEL_MIN_BYTES a bulk read starts no worker, but takes one that idles (started
    ahead, or left by a composite's previous member): it costs no start."""
    monkeypatch.delenv(shared.ENV, raising=False)
    backend = _claude(home)
    ids = [str(h.id) for h in backend.list()]
    assert not any(workers(os.getpid()) for _ in backend.inspect_many(ids, 8192))
    backend.prepare_bulk()
    ahead = POOL.idle_pid
    seen: set[int] = set()
    for sid, got in backend.inspect_many(ids, 8192):
        seen |= workers(os.getpid())
        assert_same(got, inspected(backend, sid))
    assert seen == {ahead} and POOL.idle_pid == ahead


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_a_low_priority_read_lowers_its_worker_and_a_search_does_not_take_it(
    home: pathlib.Path,
) -> None:
    """The warm-up reads at nice +10: the worker it takes follows it down; a read at normal
    priority then starts its own instead of reading at the warm-up's priority."""
    backend = _claude(home)
    backend.prepare_bulk()
    ahead = POOL.idle_pid
    assert ahead is not None
    low = min(thread_nice() + 10, 19)
    seen: list[set[int]] = []

    def warm_up() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), low)
        seen.append(_read(backend))

    thread = threading.Thread(target=warm_up)
    thread.start()
    thread.join()
    assert seen == [{ahead}] and POOL.idle_pid == ahead and _nice(ahead) == low
    again = _read(backend)
    assert ahead not in again and gone(ahead)
    (pid,) = again
    assert _nice(pid) == thread_nice()


def test_no_prestart_when_workers_are_off(
    home: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(shared.ENV, "0")
    _claude(home).prepare_bulk()
    assert POOL.idle_pid is None and not workers(os.getpid())


# -- one worker reused over changing homes: still every answer inspect's ------------------------


def _mutate(root: pathlib.Path, step: int) -> None:
    """Change the home between two bulk reads: grow a transcript by a copy of its lines, cut
    one short, or remove one (the reused worker must list again to see it)."""
    files = sorted((root / "claude").rglob("*.jsonl")) + sorted((root / "codex").rglob("*.jsonl"))
    target = files[step % len(files)]
    data = target.read_bytes()
    lines = data.splitlines(keepends=True)
    match step % 3:
        case 0:
            target.write_bytes(data + b"".join(lines[len(lines) // 2 :]))
        case 1:
            target.write_bytes(b"".join(lines[: max(1, len(lines) // 3)]))
        case _:
            target.unlink()


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    claude=picks,
    codex=picks,
    steps=st.lists(st.integers(0, 50), min_size=1, max_size=3),
    payloads=st.sampled_from([None, Reading(texts=TEXT_TYPES)]),
)
def test_reads_through_the_pool_equal_reads_without_a_worker(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    claude: list[Pick],
    codex: list[Pick],
    steps: list[int],
    payloads: Payloads,
) -> None:
    """A composite's bulk reads, again after each change of the home, through one pooled worker
    (kept between the reads and the examples): each answer is the one the read without a worker
    gives (``inspect``'s)."""
    monkeypatch.setenv(shared.ENV, "1")
    root = tmp_path_factory.mktemp("home")
    build_home(root, claude, codex)
    for step in [-1, *steps]:
        if step >= 0:
            _mutate(root, step)
        members = backends(root)  # the server's own backends, each a fresh listing
        comp = CompositeBackend(members, "composite")
        ids = [str(h.id) for h in comp.list()] + ["no-such-session"]
        answers = list(comp.inspect_many(ids, 8192, NULL_TOKEN, payloads))
        assert [sid for sid, _ in answers] == ids
        monkeypatch.setenv(shared.ENV, "0")
        alone = list(comp.inspect_many(ids, 8192, NULL_TOKEN, payloads))
        monkeypatch.setenv(shared.ENV, "1")
        owners = {str(h.id): m for m in members for h in m.list()}
        for (sid, got), (_, want) in zip(answers, alone, strict=True):
            if sid not in owners:  # no member lists it: the caller reads it itself
                assert got is None and want is None
                continue
            assert_same(got, inspected(owners[sid], sid), payloads)
            assert_same(want, inspected(owners[sid], sid), payloads)


# -- a real server -------------------------------------------------------------------------------


@pytest.mark.wire
def test_a_cold_server_starts_a_worker_ahead_and_leaves_none(
    home: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """Mounted with a cold index, the server starts a worker before any request (its warm-up's
    build prepares one); after its shutdown no worker process remains."""
    flags = [
        "--persistence",
        f"claude:{home / 'claude'}",
        "--persistence",
        f"codex:{home / 'codex'}",
    ]
    env = {**TEST_ENV, shared.ENV: "1"}
    client = StdioClient(
        flags, initialization_options={"index": str(tmp_path / "i.sqlite")}, env=env
    )
    seen: set[int] = set()
    try:
        server = client.process.pid
        assert wait_until(lambda: bool(workers(server)), 30)
        seen |= workers(server)
        page = client.request("sessionQuery/searchSessions", {"query": "the"})
        assert page["items"]
        seen |= workers(server)
        assert seen
    finally:
        client.close()
    assert client.process.returncode == 0
    assert all(gone(pid) for pid in seen)
