"""The search section (issue 12 §3): the index build, searchSessions per phrase against the raw
FTS5 statement and rg, and the no-change reconcile timed in process."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import threading
import time

import apsw
import msgspec

from dsh_query_server.search import schema
from dsh_query_server.search.schema import INDEX_CACHE_KIB

from .core import BenchBase
from .corpus import NO_MATCH
from .importers import server_cpu
from .stats import Row, Stats, log, measure, measure_interleaved
from .wire import WireClient

# As the Makefile's apt_install: no package already installed is upgraded, no recommends.
_APT_INSTALL = ["apt-get", "install", "-y", "-qq", "--no-upgrade", "--no-install-recommends"]


def ensure_rg() -> str | None:
    """ripgrep for the search baseline, installed with apt when missing (idempotent)."""
    found = shutil.which("rg")
    if found:
        return found
    log("ripgrep (rg) is missing: installing it with apt-get")
    sudo = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
    if sudo is None:
        log("cannot install ripgrep (not root, no sudo): the rg comparison is skipped")
        return None
    for command in (
        [*_APT_INSTALL, "ripgrep"],
        ["apt-get", "update", "-qq"],
        [*_APT_INSTALL, "ripgrep"],
    ):
        subprocess.run(
            sudo + command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        if shutil.which("rg"):
            break
    return shutil.which("rg")


# The raw baseline: the fastest single statement with the same ranking we know, over the persisted
# documents only (the live overlay lives in the server's connection). match_count is the length
# the highlight adds with an empty END marker (one code point per span), computed once per row in
# a materialized CTE; an earlier baseline recomputed highlight() at each use of its alias and was
# 2-2.5x slower, which flattered the ratio.
RAW_SEARCH = """
WITH c AS MATERIALIZED (SELECT session_id, seq, time, codepoint_length,
          length(highlight(persisted_docs, 0, char(64976), '')) - codepoint_length AS match_count
        FROM persisted_docs WHERE persisted_docs MATCH ?),
b AS (SELECT *, row_number() OVER (PARTITION BY session_id
                  ORDER BY match_count DESC, codepoint_length ASC, time DESC, seq DESC) AS rk
      FROM c)
SELECT session_id, seq FROM b WHERE rk = 1
ORDER BY match_count DESC, codepoint_length ASC, time DESC, session_id ASC LIMIT ?"""

# The same statement with the span count the server ranks by: the FTS5 auxiliary function
# match_spans (search/schema.py, registered on an APSW connection) instead of highlight(). The
# fastest single statement we know, so the search targets are measured against it.
RAW_SEARCH_SPANS = RAW_SEARCH.replace(
    "length(highlight(persisted_docs, 0, char(64976), '')) - codepoint_length",
    "match_spans(persisted_docs)",
)
assert RAW_SEARCH_SPANS != RAW_SEARCH


class RssSampler(threading.Thread):
    """Samples the server's RSS every 100 ms (VmHWM only covers the whole life)."""

    def __init__(self, server: WireClient) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.peak = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.1):
            self.peak = max(self.peak, self.server.rss_kib())

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.peak = max(self.peak, self.server.rss_kib())


class SearchSection(BenchBase):
    def search(self, server: WireClient, trivial: Stats) -> None:
        phrases = self.plan["phrases"]
        persisted_not_live = sum(
            s["persistedLength"] for s in self.plan["sessions"] if not s["live"]
        )
        live_events = sum(s["length"] for s in self.plan["sessions"] if s["live"])
        indexed = persisted_not_live + live_events
        log(f"search: first search builds the index ({indexed:,} events)")
        sampler = RssSampler(server)
        sampler.start()
        started, cpu = time.perf_counter(), server_cpu(server.pid)
        server.request("sessionQuery/searchSessions", {"query": phrases["rare"]}, timeout=3600)
        build = time.perf_counter() - started
        # Server CPU seconds: on a loaded machine the wall time also counts waits for a core.
        cpu = server_cpu(server.pid) - cpu
        sampler.stop()
        self.info["indexBuild"] = {
            "seconds": build,
            "cpuSeconds": cpu,
            "events": indexed,
            "peakRssMiB": sampler.peak / 1024,
            "indexBytes": os.path.getsize(self.index),
        }
        self.add(
            Row(
                "index build (first search)",
                indexed / build,
                "events/s",
                target=">= 50,000 events/s",
                ok=indexed / build >= 50_000,
                note=f"{indexed:,} events ({persisted_not_live:,} persisted"
                f" + {live_events:,} live) in {build:,.1f}s ({cpu:,.1f}s of server CPU:"
                f" {indexed / max(cpu, 1e-9):,.0f} events per CPU second); server RSS peaked at"
                f" {sampler.peak / 1024:,.0f} MiB during the build",
            )
        )

        no_change = measure(
            lambda i: server.request("sessionQuery/searchSessions", {"query": NO_MATCH}),
            self.n(40),
            budget=60,
        )
        self.add(
            Row(
                "no-change search over stdio (no-match phrase)",
                no_change,
                baseline=trivial,
                baseline_name="trivial request",
                note="reconcile with nothing to do + an empty FTS5 lookup",
            )
        )
        self.info["noChangeSearchOverStdio"] = no_change.to_json()

        rg = ensure_rg()
        conn = sqlite3.connect(f"file:{self.index}?mode=ro", uri=True)
        conn.execute(
            f"PRAGMA cache_size = {-INDEX_CACHE_KIB}"
        )  # the server's page cache, to be fair
        spans = apsw.Connection(self.index, flags=apsw.SQLITE_OPEN_READONLY)
        spans.register_fts5_function("match_spans", schema.match_spans)
        spans.execute(f"PRAGMA cache_size = {-INDEX_CACHE_KIB}").fetchall()
        try:
            for label in ("rare", "medium", "common"):
                self.search_phrase(server, conn, spans, rg, label, phrases[label])
        finally:
            conn.close()
            spans.close()
        self.info["peakRssAfterSearchMiB"] = server.peak_rss_kib() / 1024

    def search_phrase(
        self,
        server: WireClient,
        conn: sqlite3.Connection,
        spans: apsw.Connection,
        rg: str | None,
        label: str,
        phrase: str,
    ) -> None:
        """One phrase against issue 12's targets. The search over stdio, both raw statements and
        a trivial round trip are sampled in turn, so a load spike on a shared machine hits them
        alike. Against the faster raw statement (match_spans): rare and medium may cost at most
        the raw statement + one trivial round trip + 0.5 ms; the common phrase at most 1.2x."""
        quoted = '"' + phrase.replace('"', '""') + '"'
        request = {"query": phrase, "limit": 20}
        hits = server.request("sessionQuery/searchSessions", request)
        wire, raw, highlighted, trivial = measure_interleaved(
            [
                lambda: server.request("sessionQuery/searchSessions", request),
                lambda: spans.execute(RAW_SEARCH_SPANS, (quoted, 21)).fetchall(),
                lambda: conn.execute(RAW_SEARCH, (quoted, 21)).fetchall(),
                lambda: server.request("sessionPersistence/status", {}),
            ],
            self.n(60),
            budget=90,
        )
        matching = conn.execute(
            "SELECT count(DISTINCT session_id), count(*) FROM persisted_docs"
            " WHERE persisted_docs MATCH ?",
            (quoted,),
        ).fetchone()
        note = (
            f"{matching[0]:,} persisted sessions / {matching[1]:,} documents match;"
            f" {len(hits['items'])} hits returned; a trivial round trip took"
            f" {trivial.p50:.2f} ms; min {min(wire.samples):.2f} ms against raw"
            f" {min(raw.samples):.2f} ms"
        )
        self.info.setdefault("search", {})[label] = {
            "wire": wire.to_json(),
            "raw": raw.to_json(),
            "rawHighlight": highlighted.to_json(),
            "trivial": trivial.to_json(),
        }
        if label == "common":
            target, ok = "<= 1.2x raw FTS5", wire.p50 <= 1.2 * raw.p50
        else:
            allowed = raw.p50 + trivial.p50 + 0.5
            target = f"<= raw + trivial + 0.5 ms ({allowed:.2f})"
            ok = wire.p50 <= allowed
        self.add(
            Row(
                f"searchSessions '{phrase}' ({label})",
                wire,
                baseline=raw,
                baseline_name="raw FTS5, match_spans",
                ratio=wire.p50 / raw.p50,
                target=target,
                ok=ok,
                note=note,
            )
        )
        self.add(
            Row(
                f"  raw FTS5 with highlight() ({label})",
                highlighted,
                baseline=raw,
                baseline_name="raw FTS5, match_spans",
                ratio=highlighted.p50 / raw.p50,
                note="the statement Python's sqlite3 can run: spans counted by highlight()",
            )
        )
        if rg:
            grep = measure(
                lambda i: subprocess.run(
                    [rg, "-i", "-F", "-l", "--no-messages", phrase, self.jsonl],
                    stdout=subprocess.DEVNULL,
                    check=False,
                ),
                self.n(5),
                budget=60,
                warmup=1,
            )
            speedup = grep.p50 / wire.p50
            factor = 20 if label == "common" else 50
            self.add(
                Row(
                    f"  vs rg -i -F -l over the JSONL root ({label})",
                    grep,
                    baseline=wire,
                    baseline_name="searchSessions",
                    ratio=speedup,
                    target=f">= {factor}x faster than rg",
                    ok=speedup >= factor,
                )
            )

    def keep_sqlite_index(self) -> None:
        """A copy of the index as the SQLite-bound searches left it: the JSONL section's search
        rebinds the server's index, and the in-process reconcile is timed against the SQLite
        binding."""
        self.sqlite_index = os.path.join(self.tmp, "index-sqlite.sqlite")
        source = sqlite3.connect(f"file:{self.index}?mode=ro", uri=True)
        target = sqlite3.connect(self.sqlite_index)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()

    def reconcile_in_process(self) -> None:
        """The no-change reconcile, timed inside one process on the index the server built."""
        from dsh_query_server.cancel import NULL_TOKEN
        from dsh_query_server.persistence.mount.binding import PersistenceBinding
        from dsh_query_server.persistence.sqlite import SqliteBackend
        from dsh_query_server.search.reconcile import SearchIndex
        from dsh_query_server.session.store import SessionStore

        log("no-change reconcile, in process, on the index the server built")
        store = SessionStore()
        decoder = msgspec.json.Decoder()
        with open(os.path.join(self.dir, "live.jsonl"), "rb") as f:
            for line in f:
                item = decoder.decode(line)
                store.create(item["header"])
                events = item["events"]
                for i in range(0, len(events), 500):
                    store.append(item["header"]["id"], events[i : i + 500])
        binding = PersistenceBinding()
        binding.mount(SqliteBackend(self.db, read_only=True))
        assert self.sqlite_index is not None, "keep_sqlite_index() runs first"
        index = SearchIndex.open(self.sqlite_index, "wal", store, binding)
        try:
            started = time.perf_counter()
            index.reconcile(NULL_TOKEN)  # indexes the live overlay (TEMP tables are per connection)
            first = time.perf_counter() - started
            stats = measure(lambda i: index.reconcile(NULL_TOKEN), self.n(50), budget=60)
        finally:
            index.close()
        self.add(
            Row(
                f"no-change reconcile ({len(store.ids()):,} live"
                f" + {len(self.sessions):,} sessions listed)",
                stats,
                target="<= 20 ms",
                ok=stats.p50 <= 20,
                note=f"in process; the first reconcile (live overlay only) took {first:,.1f}s",
            )
        )
