"""The bounded worker pool for per-session persisted reads (semantics.md §3.8, readTitles).

A batch of session ids is worked through by at most ``concurrency`` threads, each claiming the
next id only while the request is not cancelled (and, for callers with a time budget, before the
deadline). Every started read is awaited before the batch returns, as every backend call is
(semantics.md §3.0.6). Titles and tree labels share this one pool.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from ..cancel import CancelToken

T = TypeVar("T")


def run_claims(
    items: Iterable[T],
    work: Callable[[T], None],
    concurrency: int,
    token: CancelToken | None,
    deadline: float | None = None,
) -> None:
    """Call ``work(item)`` for the items, on at most ``concurrency`` threads. ``deadline`` is a
    ``time.monotonic()`` value past which no further item is claimed. ``work`` handles its own
    failures; the caller checks the token afterwards."""
    pending = list(items)
    if not pending:
        return
    claims = iter(pending)
    lock = threading.Lock()

    def claim() -> tuple[T] | None:
        with lock:
            if token is not None and token.cancelled:
                return None
            if deadline is not None and time.monotonic() > deadline:
                return None
            try:
                return (next(claims),)
            except StopIteration:
                return None

    def worker() -> None:
        while (claimed := claim()) is not None:
            work(claimed[0])

    threads = [
        threading.Thread(target=worker, daemon=True)
        for _ in range(min(max(1, concurrency), len(pending)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
