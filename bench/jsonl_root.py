"""In-process timing of a JSONL root's per-request cost (issue 12 §4), at a chosen scale.

    python -m bench.jsonl_root [--sessions 2000] [--events 200] [--repeat 15]

Builds a raw and a Zstandard root and an SQLite store with the same sessions (cached under
``--dir``), then times, each as p50 and min: ``list`` (what listSessions asks of a backend), and a
readEvent's reads through the mount's door (the point lookup, then the window of ±50 events, one
token), for the SQLite store (its listing is reused while the database is unchanged), for the
JSONL roots with the survey by proofs, and for the JSONL roots with the full survey every request
(as before; a readEvent's lookup does not survey).
Each JSONL root also gets its floor: a bare loop of the survey's stats (``stat_floor``), the least
any exact request costs (README known limits). No server, no wire: the stdio figures are
``make bench``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from dsh_query_server.cancel import CancelToken
from dsh_query_server.model.event import Event, Header, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend, escape_segment, project_dir
from dsh_query_server.persistence.jsonl.survey import survey_root
from dsh_query_server.persistence.reads import StoredLogs
from dsh_query_server.persistence.sqlite import SqliteBackend

PROJECTS = 20


def _events(count: int) -> list[Event]:
    return [
        make_event("plugin/x", seq, seq, {"text": f"event {seq} " + "x" * 80})
        for seq in range(count)
    ]


def _header(index: int) -> Header:
    return Header.build(
        version=0,
        id=f"session-{index:05d}",
        createdAt=1_700_000_000_000 + index,
        cwd=f"/work/project-{index % PROJECTS}",
    )


def build(directory: str, sessions: int, events: int) -> None:
    """The roots and the store; each JSONL session is written by its own backend on a staging
    root and moved in (a backend's create surveys the whole root)."""
    done = os.path.join(directory, "done")
    if os.path.exists(done):
        return
    log = _events(events)
    store = SqliteBackend(os.path.join(directory, "sessions.db"))
    for compression in ("none", "zstd"):
        root = os.path.join(directory, compression)
        for index in range(sessions):
            header = _header(index)
            staging = tempfile.mkdtemp(dir=directory)
            writer = JsonlBackend(staging, compression=compression)
            writer.create(header)
            writer.append(header.id, log)
            project = project_dir(header.cwd)
            os.makedirs(os.path.join(root, project), exist_ok=True)
            os.rename(
                os.path.join(staging, project, escape_segment(header.id)),
                os.path.join(root, project, escape_segment(header.id)),
            )
            os.rmdir(os.path.join(staging, project))
            os.rmdir(staging)
            if compression == "none":
                store.create(header)
                store.append(header.id, log)
    store.close()
    # Written long enough ago for directory proofs (a real root is mostly old).
    aged = time.time() - 3600
    for path, _, _ in os.walk(directory):
        os.utime(path, (aged, aged))
    open(done, "w").close()


def timed(call: Callable[[], object], repeat: int) -> str:
    """p50 and min in ms (the min is the steadier figure on a shared machine)."""
    call()
    samples: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return f"{statistics.median(samples):7.2f} (min {min(samples):7.2f})"


def stat_floor(root: str, compression: str) -> Callable[[], object]:
    """The floor of an exact request on a proven root: one stat of each session directory (only
    it shows an opposite-suffix transcript appearing) and one of each transcript (only it
    proves the header and gives the revision), relative to each open project directory, with
    no other work. The survey by proofs costs this plus its bookkeeping."""
    transcript = "session.jsonl.zstd" if compression == "zstd" else "session.jsonl"
    projects = [
        (os.path.join(root, p), [(n, n + os.sep + transcript) for n in sorted(os.listdir(path))])
        for p in sorted(os.listdir(root))
        if os.path.isdir(path := os.path.join(root, p))
    ]

    def call() -> object:
        probe = os.stat
        for project, names in projects:
            fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for directory, name in names:
                    probe(directory, dir_fd=fd)
                    probe(name, dir_fd=fd)
            finally:
                os.close(fd)
        return None

    return call


def full_survey(backend: JsonlBackend) -> JsonlBackend:
    backend._survey = lambda token: survey_root(backend.root, token)
    return backend


def main() -> None:
    parser = argparse.ArgumentParser(description="In-process timing of a JSONL root")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    directory = args.dir or os.path.join(
        tempfile.gettempdir(), f"dsh-jsonl-root-{args.sessions}-{args.events}"
    )
    os.makedirs(directory, exist_ok=True)
    build(directory, args.sessions, args.events)
    target = _header(args.sessions // 2).id
    seq = args.events // 2

    def read_event(backend: SqliteBackend | JsonlBackend) -> Callable[[], object]:
        logs = StoredLogs(backend)  # the mount's door, as a readEvent reads (query/loading.py)

        def call() -> object:
            token = CancelToken()  # one request: the target's point lookup, then its window
            logs.header(target, token)
            return logs.window(target, seq - 50, seq + 50, token)

        return call

    backends: list[tuple[str, SqliteBackend | JsonlBackend]] = [
        ("sqlite", SqliteBackend(os.path.join(directory, "sessions.db"), read_only=True))
    ]
    floors: list[tuple[str, Callable[[], object]]] = []
    for compression in ("none", "zstd"):
        root = os.path.join(directory, compression)
        floors.append((f"jsonl {compression}, stat floor", stat_floor(root, compression)))
        backends.append((f"jsonl {compression}, proofs", JsonlBackend(root, read_only=True)))
        backends.append(
            (f"jsonl {compression}, full survey", full_survey(JsonlBackend(root, read_only=True)))
        )
    print(f"{args.sessions:,} sessions of {args.events} events, p50 of {args.repeat}, in process")
    for name, backend in backends:
        listing = timed(lambda b=backend: b.list(CancelToken()), args.repeat)
        reading = timed(read_event(backend), args.repeat)
        print(f"  {name:26} list {listing} ms   lookup+window ±50 {reading} ms")
    for name, call in floors:
        print(f"  {name:26} 2 stats per session {timed(call, args.repeat)} ms")


if __name__ == "__main__":
    main()
