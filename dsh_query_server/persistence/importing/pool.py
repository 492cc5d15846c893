"""The read workers kept between bulk reads (issue 28) [ours]: at most one idle ``ReadWorker``
per process. A bulk read takes it (or starts one) and gives it back when it ended cleanly, so a
composite's members (a Claude home, then a Codex home) and the reads after them share one child
instead of starting one each (~0.2 s of a core to start and import, and a drained pipeline). A
read cancelled or left early kills its worker instead (shared.py): its answers are not wanted.

``prestart`` starts one ahead, with the backends the coming build reads from, so that its start,
its imports and its own listing overlap the server's listing (a cold index's first build). An
idle worker exits after ``IDLE_SECONDS``, and at shutdown (``close``); a child whose server has
gone reads EOF and exits by itself.
"""

from __future__ import annotations

import threading

from .worker import Broken, Init, ReadWorker, thread_nice

# How long a worker idles before it is closed. A composite's next member asks for it within
# milliseconds, and a search cancelling the warm-up's build takes it within a second or two (it
# waits for the warm-up to stop, lists again, then reads); past that, a new worker costs ~0.2 s
# of a second core once, against the idle one's memory (its last read's heap and listings).
IDLE_SECONDS = 5.0


class WorkerPool:
    """At most one idle worker; thread-safe."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: ReadWorker | None = None
        self._timer: threading.Timer | None = None
        self._prepared: list[Init] = []  # the Inits the idle worker was sent since it idled

    def take(self) -> ReadWorker:
        """The idle worker, or a new one (raises OSError when none can start), at the calling
        thread's priority: one that idles at a lower priority (a warm-up's, nice +10) is not
        taken by a search, as a child's priority cannot be raised again without a privilege."""
        nice = thread_nice()
        with self._lock:
            worker, self._idle = self._idle, None
            self._prepared = []
            self._stop_timer()
        if worker is not None and worker.idle and worker.nice <= nice:
            worker.renice(nice)  # a warm-up's build yields the cores, its worker too
            return worker
        if worker is not None:
            worker.close()
        return ReadWorker()

    def give(self, worker: ReadWorker) -> None:
        """Keep a worker a bulk read is done with, when it is fit for another (``idle``);
        close it otherwise, or when one idles already."""
        if not worker.idle:
            worker.close()
            return
        with self._lock:
            kept = self._idle is None
            if kept:
                self._park(worker)
        if not kept:
            worker.close()

    def prestart(self, spec: Init) -> None:
        """Have an idle worker build and list ``spec``'s backend ahead of a bulk read (started
        if none idles). Each spec is sent once per idle spell; a failure only loses the head
        start (the bulk read then starts its own worker, or reads in process)."""
        with self._lock:
            if spec in self._prepared:
                return
            worker = self._idle
            if worker is None:
                try:
                    worker = ReadWorker()
                except OSError:
                    return
                self._park(worker)
            self._prepared.append(spec)
            try:
                worker.init(spec)  # a pipe write: the child builds and lists meanwhile
            except Broken:
                pass  # ``take`` sees it broken and starts another

    def close(self) -> None:
        """Close the idle worker (shutdown)."""
        with self._lock:
            worker, self._idle = self._idle, None
            self._prepared = []
            self._stop_timer()
        if worker is not None:
            worker.close()

    @property
    def ready(self) -> bool:
        """A worker idles: a bulk read would take it without starting one."""
        return self._idle is not None

    @property
    def idle_pid(self) -> int | None:
        """The idle worker's process id, None when none idles (tests, bench)."""
        worker = self._idle
        return None if worker is None else worker.process.pid

    def _park(self, worker: ReadWorker) -> None:
        """Under the lock: keep ``worker`` idle, closed after ``idle_seconds`` unless taken."""
        self._idle = worker
        self._stop_timer()
        timer = threading.Timer(self.idle_seconds, self._expire, args=(worker,))
        timer.name = "read-worker-idle"
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, worker: ReadWorker) -> None:
        with self._lock:
            if self._idle is not worker:
                return  # taken meanwhile (and perhaps parked again, with a timer of its own)
            self._idle = None
            self._prepared = []
            self._timer = None
        worker.close()


POOL = WorkerPool()  # the process's one pool: every backend's bulk reads share it
