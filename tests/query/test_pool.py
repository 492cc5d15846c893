"""The query service's worker pool (query/workers.py): bounded, started work always awaited, queued
work dropped at a deadline, failures re-raised in the waiting thread."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.query.workers import WorkerPool


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 6), st.lists(st.integers(), max_size=30))
def test_every_item_is_claimed_once_in_order_and_concurrency_is_bounded(size, copies, items):
    pool = WorkerPool(size)
    claimed: list[int] = []
    lock, running, peak = threading.Lock(), [0], [0]
    source = iter(items)

    def work() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            while True:
                with lock:
                    item = next(source, None)
                    if item is None:
                        return
                    claimed.append(item)
                time.sleep(0)  # let another copy claim the next one
        finally:
            with lock:
                running[0] -= 1

    pool.run(work, copies)
    assert claimed == (items if copies else [])  # each once, in input order
    assert peak[0] <= min(size, copies)


def test_a_started_copy_is_awaited_and_a_queued_one_is_dropped_at_the_deadline():
    pool = WorkerPool(1)
    release, started = threading.Event(), threading.Event()
    finished = []

    def slow():
        started.set()
        release.wait(5)
        finished.append("slow")

    holder = threading.Thread(target=pool.run, args=(slow, 1))
    holder.start()
    assert started.wait(5)
    ran = []
    begin = time.monotonic()
    pool.run(lambda: ran.append(1), 1, deadline=time.monotonic() + 0.1)
    assert ran == [] and time.monotonic() - begin < 2  # dropped: never started, not waited for
    release.set()
    holder.join(5)
    assert finished == ["slow"]
    pool.run(lambda: ran.append(1), 1)
    assert ran == [1]  # the dropped copy did not run later either


def test_a_failure_is_raised_after_every_copy_finished():
    pool = WorkerPool(2)
    done: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        with lock:
            first = not done
            done.append("started")
        if first:
            raise ValueError("boom")
        time.sleep(0.05)
        done.append("second")

    with pytest.raises(ValueError, match="boom"):
        pool.run(work, 2)
    assert done == ["started", "started", "second"]  # the slow copy was awaited


def test_an_idle_pool_holds_no_thread():
    pool = WorkerPool(3)
    pool.run(lambda: time.sleep(0.01), 3)
    end = time.monotonic() + 5
    while any(t.name == "query-pool" for t in threading.enumerate()) and time.monotonic() < end:
        time.sleep(0.01)
    assert not any(t.name == "query-pool" for t in threading.enumerate())
    ran: list[int] = []
    pool.run(lambda: ran.append(1), 1)  # and it starts workers again when work comes
    assert ran == [1]
