"""An importer's bulk read shared between this process and a worker (worker.py) [ours].

The ids are answered in order. The worker is kept ``DEPTH`` requests ahead of the id answered
next, with ids of transcripts up to ``WORKER_MAX_BYTES``; this process reads every other id
when its turn comes, and, while the worker is still on the id due, reads the next free id
instead of waiting (one answer at most is held ahead of its turn: each may be a long log). So the load balances itself: when the
caller's own work per log (folding, indexing) is heavy, the worker reads most logs; when it is
light, this process reads its share.

Exactness does not depend on the worker: an id it cannot read, or any doubt about the channel
(``Broken``), is read here by ``read_one``, which is what the bulk read gives without a worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from ...cancel import CancelToken
from ..contract.results import BulkResult, Digest, Payloads
from .worker import Broken, Init, ReadWorker

DEPTH = 2
PARALLEL_MIN = 4  # ids
# Less than this many bytes of transcripts are read in process faster than a worker starts
# (~0.2 s; mapping runs at ~30-60 MB/s per core).
PARALLEL_MIN_BYTES = 24 * 1024 * 1024
# "0": never a worker; "1": a worker for any bulk read of PARALLEL_MIN ids (the tests); unset:
# a worker when the bulk read is worth it (PARALLEL_MIN_BYTES) [ours].
ENV = "DSH_QUERY_READ_WORKER"
# A longer transcript is read in this process: the worker would hold the whole log (its peak,
# beside the server's), and the server its answer twice for a moment (the frame and its
# events). With 8 MiB the two stay within 200 MB together on the 1.5 GB real-content home.
WORKER_MAX_BYTES = 8 * 1024 * 1024


def parallel_reads(ids: int, size: int) -> bool:
    """Whether a bulk read of ``ids`` ids (``size`` bytes) starts a worker: a second core, not
    switched off, and enough to read."""
    setting = os.environ.get(ENV, "")
    if setting == "0" or (os.cpu_count() or 1) < 2 or ids < PARALLEL_MIN:
        return False
    return setting == "1" or size >= PARALLEL_MIN_BYTES


def shared_reads(
    read_one: Callable[[str, CancelToken], BulkResult],
    spec: Init,
    session_ids: Sequence[str],
    sizes: Sequence[int],
    token: CancelToken,
    payloads: Payloads = None,
    digest: Digest | None = None,
) -> Iterator[tuple[str, BulkResult]]:
    """``(id, result)`` for every id, in order; ``sizes``: each id's bytes (0 when unknown)."""
    ids = list(session_ids)
    n = len(ids)
    try:
        worker: ReadWorker | None = ReadWorker(spec)
    except OSError:
        worker = None
    done: dict[int, BulkResult] = {}  # answers ahead of their turn
    sent: dict[int, int] = {}  # request -> index, at the worker
    at_worker: set[int] = set()
    scan = 0  # the next index the worker may be given

    def top_up(k: int) -> None:
        """Keep the worker DEPTH requests ahead of ``k``, with ids it may read."""
        nonlocal scan
        scan = max(scan, k + 1)
        while worker is not None and len(sent) < DEPTH and scan < n:
            i, scan = scan, scan + 1
            if i in done or sizes[i] > WORKER_MAX_BYTES:
                continue  # a long log is read here: its answer would be held twice in flight
            try:
                request = worker.send(ids[i], payloads, digest)
            except Broken:
                lost()
                return
            sent[request] = i
            at_worker.add(i)

    def lost() -> None:
        """The worker is not to be trusted: what it had is read here."""
        nonlocal worker
        if worker is not None:
            worker.close()
            worker = None
        for index in sent.values():
            at_worker.discard(index)
            done[index] = read_one(ids[index], token)
        sent.clear()

    def receive() -> None:
        assert worker is not None
        try:
            request, inspection = worker.receive(token)
        except Broken:
            lost()
            return
        index = sent.pop(request)
        at_worker.discard(index)
        done[index] = inspection if inspection is not None else read_one(ids[index], token)

    def free_after(k: int) -> int | None:
        return next((j for j in range(k + 1, n) if j not in at_worker and j not in done), None)

    try:
        for k in range(n):
            top_up(k)
            while k not in done:
                if k in at_worker and worker is not None:
                    j = None if worker.ready() or done else free_after(k)
                    if j is None:
                        receive()
                    else:  # the worker is still on k: read another id meanwhile
                        done[j] = read_one(ids[j], token)
                        top_up(k)
                else:
                    done[k] = read_one(ids[k], token)
            yield ids[k], done.pop(k)
    finally:
        if worker is not None:
            worker.close()
