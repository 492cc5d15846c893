"""The service's one worker pool for reads of persisted logs that fan out over many sessions
(readTitles, sidebar labels): at most ``size`` such reads run at once, whoever asked.

Threads are daemons started on first use: a backend call that never returns must not keep the
process from exiting. A batch waits for every copy of its work that started (a started backend
call is always awaited, semantics.md §3.0.6); a copy still queued at the batch's deadline is
dropped without running.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

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
        self._queue: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = False

    def run(self, work: Callable[[], None], copies: int, deadline: float | None = None) -> None:
        """Run ``work`` on up to ``copies`` workers at once and wait for them. Each copy claims
        its own items, so a copy that never starts loses nothing but parallelism."""
        self._start()
        tasks = [_Task(work) for _ in range(max(0, min(copies, self.size)))]
        for task in tasks:
            self._queue.put(task)
        errors: list[BaseException] = []
        for task in tasks:
            try:
                task.wait(deadline)
            except BaseException as exc:  # noqa: BLE001 - the others are still awaited
                errors.append(exc)
        if errors:
            raise errors[0]

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            for i in range(self.size):
                threading.Thread(target=self._loop, name=f"query-pool-{i}", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._queue.get().run()
