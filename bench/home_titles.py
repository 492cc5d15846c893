"""Titles of a real-content home (``bench/realhome.py``), in process: the hub's titled listing
(``hub/render`` with ``titles``, what ``dsh-query sessions --json`` asks a hub for), a title batch
of every session (what ``dsh-query sessions`` asks for) and the sidebar's labels of every session,
each the first time and then warm, over the Claude + Codex composite that ``auto`` mounts.

    python -m bench.home_titles [--size 300] [--cache DIR] [--runs 3]

A warm request re-reads the listing (the survey's proofs) and every revision, and reads no log
whose revision is unchanged (query/titlememo.py). Prints ms and the load average beside each
figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_query_server.cancel import CancelToken
from dsh_query_server.core.config import build_config
from dsh_query_server.core.runtime import Runtime
from dsh_query_server.hub.handlers import RenderParams, rendered
from dsh_query_server.server.tree.labels import read_labels

from .realhome import ensure_home


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def _timed(name: str, call: Callable[[], Any], runs: int) -> None:
    for run in range(runs):
        started = time.perf_counter()
        call()
        ms = (time.perf_counter() - started) * 1000
        print(f"{name} ({'first' if run == 0 else 'warm'}): {ms:,.1f} ms; {_load()}")


def _titled_listing(runtime: Runtime) -> Callable[[], Any]:
    params = RenderParams(method="sessionQuery/listSessions", params={}, titles=True)
    return lambda: rendered(runtime, params, CancelToken())


def _title_batch(runtime: Runtime) -> Callable[[], Any]:
    ids = [str(r.header.id) for r in runtime.service.corpus()]
    return lambda: runtime.service.read_titles(ids, CancelToken())


def _sidebar_labels(runtime: Runtime) -> Callable[[], Any]:
    service = runtime.service
    return lambda: read_labels(service, service.corpus(), CancelToken())


LINES = {
    "titled listing": _titled_listing,
    "title batch": _title_batch,
    "sidebar labels": _sidebar_labels,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.home_titles")
    parser.add_argument("--size", type=int, default=300, help="home size in MB (300 or 1500)")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "dsh-query-bench"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    home = ensure_home(args.cache, args.size, rebuild=False)
    members = [f"claude:{home.claude}", f"codex:{home.codex}"]
    options = {"persistence": members, "index": ":memory:", "search": {"openAt": "never"}}
    for name, line in LINES.items():
        runtime = Runtime(build_config(options), None)  # each line from a fresh runtime
        runtime.start()
        try:
            print(f"{len(runtime.service.corpus()):,} sessions")
            _timed(name, line(runtime), args.runs)
        finally:
            runtime.close()


if __name__ == "__main__":
    main()
