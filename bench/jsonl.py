"""The JSONL section (issue 12 §4): dsh's own roots at the bench's full size, over stdio.

Both roots hold every session of the corpus (the same sessions as the SQLite store): the raw root
the corpus build wrote, and a Zstandard copy (dsh's default encoding) built once beside it. For
each root: the first search after mounting it, a no-change search, ``listSessions`` against the
SQLite listing of the same sessions measured in the same server just before, and ``readEvent``
±50 on both probes.
"""

from __future__ import annotations

import os
import random
import shutil
import time

import msgspec

from dsh_query_server.cancel import NULL_TOKEN
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.jsonl import JsonlBackend, escape_segment, project_dir
from dsh_query_server.persistence.sqlite import SqliteBackend

from .build import Progress, batches
from .core import BenchBase
from .corpus import NO_MATCH, PROBE_LONG, PROBE_SHORT
from .jsonl_root import stat_floor
from .stats import Row, Stats, log, measure
from .wire import WireClient

LIST_FACTOR = 1.5  # JSONL listSessions p50 <= 1.5x the SQLite listing of the same sessions
READ_MS = 5.0
FIRST_SEARCH_MS = 5000.0


def zstd_root(directory: str, db: str, session_ids: list[str]) -> str:
    """A Zstandard copy of the corpus' persisted sessions, read from the SQLite store and written
    through the real backend in append batches of 50-500 events, built once per corpus (like the
    raw root, each session is written on a staging root and moved in: a backend's create surveys
    the whole root)."""
    root = os.path.join(directory, "jsonl-zstd")
    done = os.path.join(directory, "jsonl-zstd.done")
    if os.path.exists(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    staging = os.path.join(directory, "staging-zstd")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(root, mode=0o700)
    source = SqliteBackend(db, read_only=True)
    rng = random.Random(4099)
    progress = Progress("copying the corpus into a Zstandard root", len(session_ids), "sessions")
    try:
        for count, sid in enumerate(session_ids, 1):
            stored = source.read_stored(sid, NULL_TOKEN)
            header: Header = stored.header
            writer = JsonlBackend(staging, compression="zstd")
            writer.create(header)
            for chunk in batches(rng, list(stored.events)):
                writer.append(sid, chunk)
            project = project_dir(None if header.cwd is msgspec.UNSET else header.cwd)
            os.makedirs(os.path.join(root, project), mode=0o700, exist_ok=True)
            os.rename(
                os.path.join(staging, project, escape_segment(sid)),
                os.path.join(root, project, escape_segment(sid)),
            )
            shutil.rmtree(staging)
            progress.update(count)
    finally:
        source.close()
    progress.finish(len(session_ids))
    open(done, "w").close()
    return root


class JsonlSection(BenchBase):
    def jsonl_section(self, server: WireClient) -> None:
        log("jsonl: the SQLite listing of the same sessions (the baseline), in this server")
        count = len(server.request("sessionQuery/listSessions"))
        sqlite_list = measure(
            lambda i: server.call("sessionQuery/listSessions"), self.n(20), budget=60 * self.iters
        )
        self.add(
            Row(
                f"listSessions ({count:,} sessions, sqlite, before the jsonl mounts)",
                sqlite_list,
                note="the baseline of the jsonl listSessions lines",
            )
        )
        started = time.perf_counter()
        zroot = zstd_root(self.dir, self.db, list(self.sessions))
        self.info["zstdRootSeconds"] = time.perf_counter() - started
        for kind, root in (("raw", self.jsonl), ("zstd", zroot)):
            self.jsonl_root(server, kind, root, sqlite_list)

    def jsonl_root(self, server: WireClient, kind: str, root: str, sqlite_list: Stats) -> None:
        sessions = self.spec.sessions
        log(f"jsonl {kind}: mount {root} read-only, then the first search")
        server.request("sessionPersistence/mount", {"uri": f"jsonl:{root}?readOnly=true"})
        started = time.perf_counter()
        server.request(
            "sessionQuery/searchSessions", {"query": self.plan["phrases"]["rare"]}, timeout=3600
        )
        first = (time.perf_counter() - started) * 1000
        self.add(
            Row(
                f"first search after mounting the {sessions:,}-session jsonl {kind} root",
                first,
                target=f"<= {FIRST_SEARCH_MS / 1000:.0f} s",
                ok=first <= FIRST_SEARCH_MS,
                note=f"every transcript listed; those no live session shadows read and indexed;"
                f" server RSS peak so far {server.peak_rss_kib() / 1024:,.0f} MiB",
            )
        )
        again = measure(
            lambda i: server.request("sessionQuery/searchSessions", {"query": NO_MATCH}),
            self.n(20),
            budget=60 * self.iters,
        )
        self.add(
            Row(
                f"  no-change search, jsonl {kind} root",
                again,
                note="two listings (root surveys), nothing read",
            )
        )

        floor_call = stat_floor(root, "zstd" if kind == "zstd" else "none")
        floor = measure(lambda i: floor_call(), self.n(20), budget=30 * self.iters)
        self.add(
            Row(
                f"  stat floor of the jsonl {kind} root (bench process)",
                floor,
                note="2 stats per session, nothing else: the least an exact listing or readEvent"
                " costs here (every transcript's header and every opposite suffix proven)",
            )
        )
        count = len(server.request("sessionQuery/listSessions"))
        listing = measure(
            lambda i: server.call("sessionQuery/listSessions"), self.n(20), budget=60 * self.iters
        )
        ratio = listing.p50 / sqlite_list.p50
        self.add(
            Row(
                f"listSessions ({count:,} sessions, jsonl {kind} root)",
                listing,
                baseline=sqlite_list,
                baseline_name="sqlite listing",
                ratio=ratio,
                target=f"<= {LIST_FACTOR}x sqlite",
                ok=ratio <= LIST_FACTOR,
            )
        )

        for sid, length in ((PROBE_SHORT, self.short_len), (PROBE_LONG, self.long_len)):
            seqs = [self.rng.randrange(length) for _ in range(1000)]
            first_params = {"sessionId": sid, "seq": length // 2, "before": 50, "after": 50}
            started = time.perf_counter()
            server.request("sessionQuery/readEvent", first_params)
            first_read = (time.perf_counter() - started) * 1000
            read = measure(
                lambda i, sid=sid, seqs=seqs: server.request(
                    "sessionQuery/readEvent",
                    {"sessionId": sid, "seq": seqs[i], "before": 50, "after": 50},
                ),
                self.n(100),
                budget=60 * self.iters,
            )
            self.add(
                Row(
                    f"readEvent +-50, jsonl {kind} root, {length:,}-event session",
                    read,
                    target=f"p50 <= {READ_MS:.0f} ms",
                    ok=read.p50 <= READ_MS,
                    note=f"{sessions:,}-session root; the first read after the search took"
                    f" {first_read:,.1f} ms",
                )
            )
