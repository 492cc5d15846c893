"""The checkpointer: live events reach a writable backend once each, failures keep live data."""

from __future__ import annotations

import threading
import time

import pytest

from dsh_query_server import errors
from dsh_query_server.core.checkpoint import Checkpointer
from dsh_query_server.errors import QueryError
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.session.store import SessionStore
from tests.builders import U, live_snapshot
from tests.fakes import MemoryBackend


def setup(mode="manual", backend=None):
    store, binding = SessionStore(), PersistenceBinding()
    checkpointer = Checkpointer(store, binding, mode=mode, interval_ms=10)
    if backend is not None:
        binding.mount(backend)
    return store, binding, checkpointer


def turn(n):
    return {"type": "turn/start", "data": {"turn": n}}


def stored_seqs(backend, sid):
    return [e.seq for e in backend.sessions[sid][1]]


def test_flush_writes_each_event_once():
    backend = MemoryBackend()
    store, _, cp = setup(backend=backend)
    store.create({"id": "s", "createdAt": 0}, [U(0).to_value()])
    store.create({"id": "empty", "createdAt": 0})
    assert cp.pending_events() == 2
    assert cp.flush() == {"s": 1}
    assert cp.pending_events() == 0  # a flush after the last count is seen
    store.append("s", [turn(1), turn(2)])
    assert cp.pending_events() == 2  # so is an append
    assert cp.flush("s") == {"s": 3}
    assert cp.flush() == {"s": 3}  # nothing new: the same postcondition, no write
    assert stored_seqs(backend, "s") == [0, 1, 2, 3]
    assert [op for op, _ in backend.calls].count("append") == 2
    assert cp.pending_events() == 0


def test_failure_keeps_live_data_and_retries(monkeypatch):
    backend = MemoryBackend()
    store, _, cp = setup(backend=backend)
    store.create({"id": "s", "createdAt": 0}, [U(0).to_value()])
    cp.flush()
    store.append("s", [turn(1)])
    original = backend.append
    monkeypatch.setattr(
        backend, "append", lambda sid, events: (_ for _ in ()).throw(OSError("disk full"))
    )
    with pytest.raises(QueryError) as info:
        cp.flush()
    assert info.value.code == errors.STORE_PERSISTENCE_FAILED
    assert info.value.message == 'checkpoint of session "s" failed: disk full'
    assert len(live_snapshot(store, "s").events) == 3
    backend.append = original
    assert cp.flush() == {"s": 2}
    assert stored_seqs(backend, "s") == [0, 1, 2]


def test_resumes_from_what_the_backend_already_holds(tmp_path):
    root = str(tmp_path / "root")
    first_store, _, first = setup(backend=JsonlBackend(root))
    first_store.create({"id": "s", "createdAt": 0, "cwd": "/w"}, [U(0).to_value()])
    first.flush()
    # A new process: the producer re-creates the session with its whole log so far.
    backend = JsonlBackend(root)
    store, _, cp = setup(backend=backend)
    store.create(
        {"id": "s", "createdAt": 0, "cwd": "/w"},
        [e.to_value() for e in live_snapshot(first_store, "s").events],
    )
    store.append(
        "s", [turn(1), {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}]
    )
    assert cp.flush() == {"s": 3}
    assert [e.seq for e in backend.inspect("s").events] == [0, 1, 2, 3]
    assert backend.stored_count("s") == 4


def test_auto_mode_flushes_within_the_interval():
    backend = MemoryBackend()
    store, _, cp = setup("auto", backend)
    cp.start()
    try:
        store.create({"id": "s", "createdAt": 0}, [])
        store.append("s", [turn(1)])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (
            "s" not in backend.sessions or stored_seqs(backend, "s") != [0, 1]
        ):
            time.sleep(0.02)
        assert stored_seqs(backend, "s") == [0, 1]
    finally:
        cp.stop()


def test_read_only_and_unbound():
    store, binding, cp = setup()
    store.create({"id": "s", "createdAt": 0}, [])
    assert cp.flush() == {}
    backend = MemoryBackend()
    backend.writable = False
    binding.mount(backend)
    with pytest.raises(QueryError) as info:
        cp.flush()
    assert info.value.code == errors.STORE_READ_ONLY
    with pytest.raises(QueryError) as info:
        cp.flush("nope")
    assert info.value.code == errors.STORE_SESSION_NOT_FOUND


def test_remount_writes_into_the_new_backend():
    first, second = MemoryBackend(), MemoryBackend()
    store, binding, cp = setup(backend=first)
    store.create({"id": "s", "createdAt": 0}, [])
    cp.flush()
    binding.mount(second)
    assert cp.flush() == {"s": 0}
    assert stored_seqs(second, "s") == [0] and stored_seqs(first, "s") == [0]


def test_a_longer_persisted_log_is_never_appended_to():
    backend = MemoryBackend()
    backend.put({"version": 0, "id": "s", "createdAt": 0}, [U(0), U(1), U(2)])
    store, _, cp = setup(backend=backend)
    store.create({"id": "s", "createdAt": 0}, [])
    with pytest.raises(QueryError) as info:
        cp.flush()
    assert (
        info.value.message
        == 'checkpoint of session "s" failed: the persisted log is longer than the live log'
    )
    assert stored_seqs(backend, "s") == [0, 1, 2]


def test_flushes_wait_while_a_search_observes():
    # The search service holds ``quiet`` between its two backend listings; revisions our own
    # checkpointer moved there would make it retry (semantics.md §6.5 step 2.3).
    backend = MemoryBackend()
    store, _, cp = setup(mode="auto", backend=backend)
    store.create({"id": "s", "createdAt": 0}, [U(0).to_value()])
    cp.quiet.acquire()
    try:
        cp.start()
        time.sleep(0.2)  # many auto intervals
        assert "s" not in backend.sessions
        manual = threading.Thread(target=cp.flush)
        manual.start()
        manual.join(0.1)
        assert manual.is_alive() and "s" not in backend.sessions  # the manual flush waits too
    finally:
        cp.quiet.release()
    manual.join(5)
    deadline = time.monotonic() + 5
    while "s" not in backend.sessions and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stored_seqs(backend, "s") == [0, 1]
    cp.stop()


def test_a_diverged_stored_log_suspends_that_session_only(tmp_path):
    # postgres.md §3.8, for every backend that reads windows: a stored log that is not a prefix
    # of the live one (nor the live one of it) is never written into, and the others go on.
    root = str(tmp_path / "root")
    first_store, _, first = setup(backend=JsonlBackend(root))
    first_store.create({"id": "s", "createdAt": 0, "cwd": "/w"}, [U(0, "one").to_value()])
    first.flush()
    backend = JsonlBackend(root)
    store, _, cp = setup(backend=backend)
    store.create({"id": "s", "createdAt": 0, "cwd": "/w"}, [U(0, "two").to_value()])
    store.create({"id": "t", "createdAt": 0, "cwd": "/w"}, [U(0).to_value()])
    message = 'session "s" diverged from its persisted copy at seq 0; checkpointing it is suspended'
    with pytest.raises(QueryError) as info:
        cp.flush()
    assert info.value.code == errors.STORE_PERSISTENCE_FAILED
    assert info.value.message == message
    assert backend.stored_count("t") == 2
    store.append("t", [turn(1)])
    assert cp.flush("t") == {"t": 2}
    with pytest.raises(QueryError) as again:
        cp.flush("s")
    assert again.value.message == message
    assert [e.data()["content"][0]["text"] for e in backend.inspect("s").events[:1]] == ["one"]


def test_auto_mode_backs_off_per_session(monkeypatch):
    # postgres.md §4: a failed checkpoint is retried after 0.5 s, doubling; the other sessions
    # are written meanwhile.
    backend = MemoryBackend()
    store, _, cp = setup("auto", backend)
    original = backend.append
    attempts: list[float] = []
    broken = threading.Event()
    broken.set()

    def append(sid, events):
        if sid == "s" and broken.is_set():
            attempts.append(time.monotonic())
            raise OSError("disk full")
        original(sid, events)

    monkeypatch.setattr(backend, "append", append)
    cp.start()
    try:
        store.create({"id": "s", "createdAt": 0}, [])
        time.sleep(1.0)
        store.create({"id": "t", "createdAt": 0}, [])
        deadline = time.monotonic() + 1
        while "t" not in backend.sessions and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "t" in backend.sessions  # not held up by s's back-off
        time.sleep(2.8)  # attempts at about 0, 0.5, 1.5 and 3.5 s
        gaps = [b - a for a, b in zip(attempts, attempts[1:], strict=False)]
        assert len(attempts) in (3, 4), gaps
        assert all(0.5 * 2**i - 0.05 <= g <= 0.5 * 2**i + 0.5 for i, g in enumerate(gaps)), gaps
        broken.clear()
        deadline = time.monotonic() + 6
        while "s" not in backend.sessions and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stored_seqs(backend, "s") == [0]
    finally:
        cp.stop()
