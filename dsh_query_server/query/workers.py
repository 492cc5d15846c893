"""The query service's one worker pool for per-session persisted reads (readTitles,
semantics.md §3.8, and the tree's labels): at most ``size`` such reads run at once, whoever asked.

Threads are daemons started while there is work and gone when the queue is empty: a backend call
that never returns must not keep the process from exiting, and an idle service holds no thread.
A batch waits for every copy of its work that started (a started backend call is always
awaited, semantics.md §3.0.6); a copy still queued at the batch's deadline is dropped unrun.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TypeVar

from ..cancel import NULL_TOKEN, CancelToken

T = TypeVar("T")
_QUEUED, _RUNNING, _DONE = 0, 1, 2


class _Task:
    __slots__ = ("_work", "_state", "_error", "_cond")

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._state = _QUEUED
        self._error: BaseException | None = None
        self._cond = threading.Condition()

    def run(self) -> None:
        with self._cond:
            if self._state != _QUEUED:  # dropped at its deadline
                return
            self._state = _RUNNING
        try:
            self._work()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the waiting request thread
            self._error = exc
        finally:
            with self._cond:
                self._state = _DONE
                self._cond.notify_all()

    def wait(self, deadline: float | None) -> None:
        """Until done; a task still queued at ``deadline`` (monotonic) is dropped instead."""
        with self._cond:
            while self._state != _DONE:
                if self._state == _QUEUED and deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self._state = _DONE
                        return
                    self._cond.wait(left)
                else:
                    self._cond.wait()
        if self._error is not None:
            raise self._error


class WorkerPool:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._queue: deque[_Task] = deque()
        self._lock = threading.Lock()
        self._workers = 0

    def run(self, work: Callable[[], None], copies: int, deadline: float | None = None) -> None:
        """Run ``work`` on up to ``copies`` workers at once and wait for them. Each copy claims
        its own items, so a copy that never starts loses nothing but parallelism."""
        tasks = [_Task(work) for _ in range(max(0, min(copies, self.size)))]
        with self._lock:
            self._queue.extend(tasks)
            # Workers exist only while there is work: an idle pool holds no thread.
            while self._workers < min(self.size, len(self._queue)):
                self._workers += 1
                threading.Thread(target=self._loop, name="query-pool", daemon=True).start()
        errors: list[BaseException] = []
        for task in tasks:
            try:
                task.wait(deadline)
            except BaseException as exc:  # noqa: BLE001 - the others are still awaited
                errors.append(exc)
        if errors:
            raise errors[0]

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._workers -= 1
                    return
                task = self._queue.popleft()
            task.run()


def run_claims(
    items: Iterable[T],
    work: Callable[[T], None],
    concurrency: int,
    token: CancelToken = NULL_TOKEN,
    deadline: float | None = None,
    *,
    pool: WorkerPool | None = None,
) -> None:
    """Call ``work(item)`` for the items, claimed in order by at most ``concurrency`` workers of
    ``pool`` (a pool of that size for this call when none is given). No item is claimed once the
    token fired or past ``deadline`` (a ``time.monotonic()`` value). ``work`` handles its own
    failures; the caller checks the token afterwards."""
    pending = list(items)
    if not pending:
        return
    claims = iter(pending)
    lock = threading.Lock()

    def claim() -> tuple[T] | None:
        with lock:
            if token.cancelled or (deadline is not None and time.monotonic() > deadline):
                return None
            try:
                return (next(claims),)
            except StopIteration:
                return None

    def worker() -> None:
        while (claimed := claim()) is not None:
            work(claimed[0])

    copies = min(max(1, concurrency), len(pending))
    (pool or WorkerPool(copies)).run(worker, copies, deadline)
