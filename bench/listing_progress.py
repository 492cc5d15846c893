"""A cold listing's progress costs nothing (issue 28, protocol.md §8 "Listing a big home"): the
first ``listSessions`` of a fresh server over the real-content home (bench/realhome.py), once
with a ``workDoneToken`` (the listing counts its transcripts and reports ``listing k of n``) and
once without (no tracker: nothing counts), alternating, each in a server of its own.

``--evict`` drops the home's files from the page cache before each run (``posix_fadvise``
DONTNEED, no privileges needed): the listing then reads every transcript's head from disk, as
after a reboot. Without it the heads come from the page cache, where a per-transcript cost
would show most.

    python -m bench.listing_progress [--megabytes 1500] [--runs 5] [--evict]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from dsh_query_server.client import StdioClient

from .realhome import ensure_home
from .stats import log

CACHE = Path(os.environ.get("DSH_QUERY_BENCH_CACHE", Path.home() / ".cache" / "dsh-query-bench"))


def evict(root: Path) -> None:
    """Drop every file under ``root`` from the page cache."""
    for folder, _, names in os.walk(root):
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def one_run(root: Path, token: bool) -> tuple[float, int, int]:
    """The first listSessions' wall seconds, the sessions it listed, the reports it got."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_CACHE_HOME=tmp)
        args = [
            "--persistence",
            f"claude:{root / 'claude'}",
            "--persistence",
            f"codex:{root / 'codex'}",
        ]
        options = {"index": ":memory:", "search": {"warmUp": False}}
        with StdioClient(args, env=env, initialization_options=options) as client:
            params = {"workDoneToken": "listing"} if token else {}
            started = time.perf_counter()
            listed = client.request("sessionQuery/listSessions", params)
            seconds = time.perf_counter() - started
            reports = sum(
                1
                for n in client.notifications
                if n.get("method") == "$/progress"
                and (n["params"]["value"].get("message") or "").startswith("listing ")
            )
    return seconds, len(listed), reports


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--evict", action="store_true", help="page cache cold before each run")
    args = parser.parse_args()
    home = ensure_home(str(CACHE), args.megabytes, rebuild=False)
    times: dict[bool, list[float]] = {True: [], False: []}
    for run in range(args.runs):
        for token in (run % 2 == 0, run % 2 != 0):  # alternate which goes first
            if args.evict:
                evict(home.root)
            seconds, listed, reports = one_run(home.root, token)
            times[token].append(seconds)
            log(
                f"run {run + 1} token={token}: {seconds:.3f} s, {listed:,} sessions, {reports} reports"
            )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    for token in (False, True):
        each = times[token]
        print(
            f"first listSessions, {'with' if token else 'without'} a token: median "
            f"{statistics.median(each):.3f} s (min {min(each):.3f}, max {max(each):.3f}; "
            f"{len(each)} runs{', page cache cold' if args.evict else ''}; load {load})"
        )


if __name__ == "__main__":
    main()
