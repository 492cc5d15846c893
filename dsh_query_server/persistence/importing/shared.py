"""An importer's bulk read shared between this process and a worker (worker.py) [ours].

The ids are answered in order. A feeder thread keeps the worker busy: it gives it the next ids
not yet taken (transcripts up to ``WORKER_MAX_BYTES``), ``DEPTH`` requests at a time, and takes
its answers off the pipe as they come, holding up to ``AHEAD_BYTES`` of them ahead of their
turn, so the worker goes on reading while this process inserts or reads a long log itself (it
blocks on the pipe only once that much waits). This process reads every other id when its turn
comes, and, while the worker is still on the id due, reads a free id instead of waiting (its
own answers held ahead of their turn are one log, or short logs of ``READ_AHEAD_BYTES`` in all,
each held as the digest the worker would have sent, ``_compact``). So the load
balances itself: when the caller's own work per log (indexing) is heavy, the worker reads most
logs; when it is light, this process reads its share. The feeder thread mostly waits on the
pipe (without the GIL), and only it talks to the worker.

The worker comes from the process's pool (pool.py) and goes back to it when the read ended
with every answer taken; a read cancelled or closed early kills it.

Exactness does not depend on the worker: an id it cannot read, or any doubt about the channel
(``Broken``), is read here by ``read_one``, which is what the bulk read gives without a worker.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator, Sequence
from itertools import accumulate

from ...cancel import CancelToken
from ..contract.results import BulkResult, Digest, Digested, Inspection, Payloads
from .pool import POOL
from .worker import Broken, DigestFn, Init, ReadWorker, load_digest

DEPTH = 3  # requests the worker holds: it starts the next id as soon as it sends an answer
# The worker's answers held ahead of their turn (frame bytes): with digests (documents) a few
# hundred small logs; what lets the worker run on while this process reads a long log.
AHEAD_BYTES = 8 * 1024 * 1024
# This process's own reads held ahead of their turn, beyond the first (transcript bytes), each a
# log of at most READ_AHEAD_LOG bytes held as its digest's bytes (about a third of the log).
# While the worker is on a long log that is due, this process reads on instead of waiting: on the
# 1.5 GB real-content home 2 MiB of them left the inserting server idle for most of each 28 MB
# log; 32 MiB took the first search 17.4 -> 14.7 s, the tree's peak 169 -> 175 MiB (issue 28).
READ_AHEAD_BYTES = 32 * 1024 * 1024
READ_AHEAD_LOG = 4 * 1024 * 1024
PARALLEL_MIN = 4  # ids
# Less than this many bytes of transcripts are read in process faster than a worker starts
# (~0.2 s; mapping runs at ~30-60 MB/s per core), unless one idles already (pool.py).
PARALLEL_MIN_BYTES = 24 * 1024 * 1024
# "0": never a worker; "1": a worker for any bulk read of PARALLEL_MIN ids (the tests); unset:
# a worker when the bulk read is worth it (PARALLEL_MIN_BYTES) [ours].
ENV = "DSH_QUERY_READ_WORKER"
# A longer transcript is read in this process: the worker would hold the whole log (its peak,
# beside the server's), and the server its answer for a moment. Since the index build's reads
# keep only texts (emitter.py outlines) and insert a digest as it decodes, a 28 MB transcript
# costs the worker ~28 MiB and the server ~8 (its documents' bytes): with every log of the 1.5 GB
# real-content home at the worker, the tree peaked at ~175 MiB (bench/realhome.py). Before, the
# server read the logs over 8 MiB itself, 36% of the bytes, and was the busy process of the two
# (the worker idled ~40% of the build) [ours].
WORKER_MAX_BYTES = 32 * 1024 * 1024


def workers_allowed() -> bool:
    """A second core, and workers not switched off: a bulk read may use one."""
    return os.environ.get(ENV, "") != "0" and (os.cpu_count() or 1) >= 2


def parallel_reads(ids: int, size: int) -> bool:
    """Whether a bulk read of ``ids`` ids (``size`` bytes) uses a worker: a second core, not
    switched off, and enough to read: any size when a worker idles (started ahead, or left by
    a composite's previous member), as it costs no start."""
    if not workers_allowed() or ids < PARALLEL_MIN:
        return False
    return os.environ.get(ENV, "") == "1" or size >= PARALLEL_MIN_BYTES or POOL.ready


def shared_reads(
    read_one: Callable[[str, CancelToken], BulkResult],
    spec: Init,
    session_ids: Sequence[str],
    sizes: Sequence[int],
    token: CancelToken,
    payloads: Payloads = None,
    digest: Digest | None = None,
) -> Generator[tuple[str, BulkResult]]:
    """``(id, result)`` for every id, in order; ``sizes``: each id's bytes (0 when unknown).
    Closed early, it stops the worker."""
    ids = list(session_ids)
    try:
        worker = POOL.take()
    except OSError:
        for sid in ids:
            yield sid, read_one(sid, token)
        return
    try:
        worker.init(spec)
    except Broken:
        pass  # the feeder finds it broken: every id is read here
    feeder = _Feeder(worker, ids, sizes, token, payloads, digest)
    clean = False
    compact = None if digest is None else load_digest(digest)
    mine: dict[int, BulkResult] = {}  # this process's answers ahead of their turn
    ahead = 0  # their transcripts' bytes
    try:
        for k in range(len(ids)):
            while k not in mine:
                got = feeder.claim_or_wait(k, min(READ_AHEAD_LOG, READ_AHEAD_BYTES - ahead))
                if got is None:  # k is this process's to read (or the worker's, lost)
                    yield ids[k], read_one(ids[k], token)
                    break
                if isinstance(got, _Answer):  # None: the worker could not read it
                    yield ids[k], read_one(ids[k], token) if got.result is None else got.result
                    break
                # the worker is still on k: read ahead, held as its digest's bytes if it can be
                mine[got] = _compact(ids[got], read_one(ids[got], token), compact, read_one, token)
                ahead += sizes[got]
            else:
                ahead -= sizes[k]
                yield ids[k], mine.pop(k)
        clean = not token.cancelled  # a cancelled build's worker may still be reading for it
    finally:
        feeder.stop(keep=clean)


def _compact(
    sid: str,
    result: BulkResult,
    digest: DigestFn | None,
    read_one: Callable[[str, CancelToken], BulkResult],
    token: CancelToken,
) -> BulkResult:
    """A log read ahead of its turn as the worker would answer it, its digest's bytes (about a
    third of what its events hold), so more of them fit the budget. The digest consumes the
    Inspection: when it raises, the log is read again, as the caller will take it whole."""
    if digest is None or not isinstance(result, Inspection):
        return result
    try:
        parts = digest(sid, result)
    except Exception:  # noqa: BLE001 - the digest refused it: the log as read, read again
        return read_one(sid, token)
    return Digested(result.meta, memoryview(b"".join(parts)), list(accumulate(map(len, parts))))


class _Answer:
    """A worker's answer: the result (None: read it here) and its frame's bytes."""

    __slots__ = ("result", "size")

    def __init__(self, result: BulkResult, size: int) -> None:
        self.result = result
        self.size = size


class _Feeder:
    """The thread that gives the worker ids and takes its answers (module docstring). The
    shared sets are guarded by ``_cond``; only the thread talks to the worker."""

    def __init__(
        self,
        worker: ReadWorker,
        ids: list[str],
        sizes: Sequence[int],
        token: CancelToken,
        payloads: Payloads,
        digest: Digest | None,
    ) -> None:
        self._worker = worker
        self._ids = ids
        self._sizes = sizes
        self._token = token
        self._payloads = payloads
        self._digest = digest
        self._cond = threading.Condition()
        self._taken: set[int] = set()  # ids this process reads
        self._sent: dict[int, int] = {}  # request -> index, at the worker
        self._at_worker: set[int] = set()
        self._done: dict[int, _Answer] = {}
        self._held = 0  # frame bytes in _done
        self._scan = 0  # the next index the worker may be given
        self._stopped = False
        self._failed = False  # the thread met Broken, a cancellation or a stop mid-answer
        self._thread = threading.Thread(target=self._run, name="read-worker-feeder", daemon=True)
        self._thread.start()

    def claim_or_wait(self, k: int, budget: int | None) -> _Answer | int | None:
        """For the id due, ``k``: its _Answer; None when it is this process's to read; while
        the worker is still on it, a free id to read meanwhile (of at most ``budget`` bytes,
        None: any), else wait for the worker."""
        with self._cond:
            while True:
                answer = self._done.pop(k, None)
                if answer is not None:
                    self._held -= answer.size
                    self._cond.notify_all()
                    return answer
                if k not in self._at_worker:
                    self._taken.add(k)
                    return None
                if budget is None or budget > 0:
                    j = self._free_after(k, budget)
                    if j is not None:
                        self._taken.add(j)
                        return j
                self._cond.wait()

    def _free_after(self, k: int, budget: int | None) -> int | None:
        busy, sizes = (self._at_worker, self._taken, self._done), self._sizes
        for j in range(k + 1, len(self._ids)):
            if (budget is None or sizes[j] <= budget) and not any(j in b for b in busy):
                return j
        return None

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopped and not self._top_up():
                        self._cond.wait()
                    if self._stopped:
                        return
                request, result = self._worker.receive(self._token)
                with self._cond:
                    index = self._sent.pop(request)
                    self._at_worker.discard(index)
                    self._done[index] = answer = _Answer(result, self._worker.last_size)
                    self._held += answer.size
                    self._cond.notify_all()
        except BaseException:  # noqa: BLE001 - Broken, cancellation, a stop: read here instead
            with self._cond:
                self._at_worker.clear()  # what the worker had is read here when due
                self._sent.clear()
                self._scan = len(self._ids)  # and nothing more goes to it
                self._failed = True
                self._cond.notify_all()

    def _top_up(self) -> bool:
        """Under the lock: send requests while there is room; True when one is outstanding."""
        ids = self._ids
        while len(self._sent) < DEPTH and self._held < AHEAD_BYTES and self._scan < len(ids):
            i = self._scan
            self._scan += 1
            if i in self._taken or self._sizes[i] > WORKER_MAX_BYTES:
                continue  # a long log is read here: its answer would be held twice in flight
            request = self._worker.send(ids[i], self._payloads, self._digest)  # raises Broken
            self._sent[request] = i
            self._at_worker.add(i)
        return bool(self._sent)

    def stop(self, keep: bool) -> None:
        """End the thread. With ``keep`` (every answer taken) a worker with nothing left to
        answer goes back to the pool (pool.py); otherwise, or when it still reads, it is killed
        (its answers are not wanted)."""
        with self._cond:
            # Nothing outstanding: the thread waits on the condition, not on the pipe.
            keep = keep and not self._sent and not self._failed and not self._done
            self._stopped = True
            self._cond.notify_all()
        if not keep:
            self._worker.kill()
        self._thread.join()
        if keep:
            POOL.give(self._worker)
        else:
            self._worker.close()
