"""The read worker's per-record CPU, in process (issue 28): every log of a real-content home
(``bench/realhome.py``) read through its backend's bulk read and made into search documents,
as a worker process does for the index build, beside the floor (msgspec-decoding every record).
The fastest loop for work on lines.py, the mappers, the emitter and search/documents.py.

    python -m bench.readside [--size 300] [--cache DIR] [--only claude|codex] [--repeat 1]
                             [--gc worker|default]

Prints seconds (wall and this process's CPU), MB/s, the ratio to the floor and the load
average beside each figure (the machine is shared).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

from dsh_query_server.cancel import CancelToken
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.importing.backend import ImportBackend
from dsh_query_server.persistence.importing.worker import GC_THRESHOLD
from dsh_query_server.search.documents import PAYLOADS, digest

from .realhome import Home, ensure_home, floor


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def read_all(backend: ImportBackend) -> tuple[int, int]:
    """Every listed log read and digested: (logs, encoded document bytes)."""
    token = CancelToken()
    backend.list(token)
    ids = sorted(backend.candidates(token))
    out = 0
    for session_id in ids:
        ins = backend.inspect_payloads(session_id, PAYLOADS, token)
        out += sum(map(len, digest(session_id, ins)))
    return len(ids), out


def _backends(home: Home, only: str | None) -> list[tuple[str, ImportBackend, Path]]:
    both: list[tuple[str, ImportBackend, Path]] = [
        ("claude", ClaudeBackend(str(home.claude), "claude://bench"), home.claude),
        ("codex", CodexBackend(str(home.codex), "codex://bench"), home.codex),
    ]
    return [b for b in both if only is None or b[0] == only]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.readside")
    parser.add_argument("--size", type=int, default=300, help="home size in MB (300 or 1500)")
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "dsh-query-bench"))
    parser.add_argument("--only", choices=("claude", "codex"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--gc", choices=("worker", "default"), default="worker")
    args = parser.parse_args()
    if args.gc == "worker":  # the read worker's collector, as the child sets it
        gc.set_threshold(*GC_THRESHOLD)
    home = ensure_home(args.cache, args.size, rebuild=False)
    seconds, records = floor(home)
    megabytes = sum(p.stat().st_size for p in home.files()) / 1e6
    print(f"floor (whole home): {seconds:.2f} s, {records} records, {megabytes:.0f} MB; {_load()}")
    for _ in range(args.repeat):
        for name, backend, root in _backends(home, args.only):
            size = sum(p.stat().st_size for p in root.rglob("*.jsonl")) / 1e6
            wall, cpu = time.perf_counter(), time.process_time()
            logs, out = read_all(backend)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(
                f"{name}: {logs} logs, {size:.0f} MB -> {out / 1e6:.1f} MB digests: "
                f"{wall:.2f} s wall, {cpu:.2f} s cpu, {size / cpu:.0f} MB/cpu-s; {_load()}"
            )


if __name__ == "__main__":
    main()
