"""The benchmark runner: drives the real server over stdio against the cached corpus and compares
each number with a baseline measured in the same run and with the issue's targets. The sections
live beside it: search.py, jsonl.py, mcp_line.py, postgres.py (statistics and the table: stats.py).

    python -m bench [--scale 0.01] [--cache-dir DIR] [--rebuild] [--quick] [--out DIR]

``make bench`` runs it; extra arguments go through ``BENCH_ARGS`` (``make bench BENCH_ARGS="--scale
0.1"``). Nothing here is part of the test suite's pass/fail.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from typing import Any

import msgspec

from .build import Progress
from .core import HERE, REPO
from .corpus import PROBE_LONG, PROBE_SHORT
from .hub import HubSection
from .jsonl import JsonlSection, zstd_root
from .mcp_line import McpSection
from .postgres import PostgresSection
from .realhome import ensure_home, measure_home
from .search import SearchSection
from .stats import Row, Stats, log, measure, measure_interleaved, render
from .wire import WireClient


def raw_list(db: str) -> bytes:
    """The listSessions baseline: SELECT the session rows and encode them with msgspec."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT id, version, created_at, cwd, parent_session, seed_length, origin,"
            " delegation_depth, agent_preset FROM sessions"
        ).fetchall()
    finally:
        conn.close()
    records = []
    for sid, version, created, cwd, parent, seed, origin, depth, preset in rows:
        header: dict[str, Any] = {"version": version, "id": sid, "createdAt": created}
        for key, value in (
            ("cwd", cwd),
            ("parentSession", parent),
            ("seedLength", seed),
            ("origin", origin),
            ("delegationDepth", depth),
            ("agentPreset", preset),
        ):
            if value is not None:
                header[key] = value
        records.append({"header": header, "live": False, "persisted": True})
    records.sort(key=lambda r: (-r["header"]["createdAt"], r["header"]["id"]))
    return msgspec.json.encode(records)


class Bench(SearchSection, JsonlSection, McpSection, PostgresSection, HubSection):
    # -- protocol overhead ------------------------------------------------------------------------

    def echo_baseline(self) -> Stats:
        with WireClient(command=[sys.executable, "-m", "bench.echo"], env=self.env()) as echo:
            return measure(
                lambda i: echo.request("sessionPersistence/status", {}), self.n(3000), warmup=200
            )

    # -- the server ------------------------------------------------------------------------------

    def start_server(self) -> WireClient:
        self.tmp = tempfile.mkdtemp(prefix="dsh-query-bench-")
        self.index = os.path.join(self.tmp, "index.sqlite")
        options = {
            "persistence": f"sqlite:{self.db}?readOnly=true",
            "index": self.index,
            "checkpoint": {"mode": "manual"},
        }
        log(f"starting the server (index {self.index})")
        server = WireClient(
            ["--persistence", "none"], initialization_options=options, env=self.env(), timeout=1800
        )
        self.info["serverPid"] = server.pid
        self.info["rssAfterStartMiB"] = server.rss_kib() / 1024
        return server

    def load_live(self, server: WireClient) -> None:
        live = [s for s in self.plan["sessions"] if s["live"]]
        total = sum(s["length"] for s in live)
        progress = Progress("loading live sessions over stdio", total, "events")
        started = time.perf_counter()
        done = 0
        decoder = msgspec.json.Decoder()
        with open(os.path.join(self.dir, "live.jsonl"), "rb") as f:
            for line in f:
                item = decoder.decode(line)
                header, events = item["header"], item["events"]
                server.request("sessionStore/create", {"header": header})
                for i in range(0, len(events), 500):
                    server.request(
                        "sessionStore/append",
                        {"sessionId": header["id"], "events": events[i : i + 500]},
                    )
                done += len(events)
                progress.update(done, f"| {server.rss_kib() / 1024:,.0f} MiB server RSS")
        progress.finish(done)
        seconds = time.perf_counter() - started
        self.info["live"] = {
            "sessions": len(live),
            "events": total,
            "seconds": seconds,
            "eventsPerSecond": total / seconds if seconds else None,
            "rssMiB": server.rss_kib() / 1024,
        }
        self.add(
            Row(
                "live load over stdio (create+append)",
                total / seconds,
                "events/s",
                note=f"{len(live):,} sessions, {total:,} events in {seconds:,.1f}s",
            )
        )

    def exact_reads(self, server: WireClient, trivial: Stats, echo: Stats) -> None:
        self.add(
            Row(
                "protocol overhead: trivial request (status)",
                trivial,
                baseline=echo,
                baseline_name="bare msgspec echo",
                ratio=trivial.p50 / echo.p50,
                target="<= 1.3x echo",
                ok=trivial.p50 <= 1.3 * echo.p50,
            )
        )

        log("listSessions")
        count = len(server.request("sessionQuery/listSessions"))
        listing = measure(
            lambda i: server.call("sessionQuery/listSessions"), self.n(40), budget=60 * self.iters
        )
        raw = measure(lambda i: raw_list(self.db), self.n(40), budget=30)
        self.add(
            Row(
                f"listSessions ({count:,} sessions, sqlite)",
                listing,
                baseline=raw,
                baseline_name="raw SELECT + msgspec",
                ratio=listing.p50 / raw.p50,
                target="p50 <= 60 ms",
                ok=listing.p50 <= 60,
            )
        )

        log("readEvent before=after=50")
        results = {}
        for sid, length in ((PROBE_SHORT, self.short_len), (PROBE_LONG, self.long_len)):
            seqs = [self.rng.randrange(length) for _ in range(1000)]
            results[sid] = measure(
                lambda i, sid=sid, seqs=seqs: server.request(
                    "sessionQuery/readEvent",
                    {"sessionId": sid, "seq": seqs[i], "before": 50, "after": 50},
                ),
                self.n(200),
                budget=60 * self.iters,
            )
        short, long_ = results[PROBE_SHORT], results[PROBE_LONG]
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        raw_window = measure(
            lambda i: conn.execute(
                "SELECT seq, type, time, data FROM events"
                " WHERE session_id = ? AND seq BETWEEN ? AND ?",
                (PROBE_LONG, max(0, 5000 - 50), 5050),
            ).fetchall(),
            self.n(200),
        )
        conn.close()
        self.add(
            Row(
                f"readEvent +-50, persisted {self.short_len:,}-event session",
                short,
                target="p50 <= 5 ms",
                ok=short.p50 <= 5,
            )
        )
        scale = long_.p50 / short.p50
        self.add(
            Row(
                f"readEvent +-50, persisted {self.long_len:,}-event session",
                long_,
                baseline=short,
                baseline_name=f"{self.short_len:,}-event",
                ratio=scale,
                target="p50 <= 5 ms",
                ok=long_.p50 <= 5,
                note=(
                    f"SCALES WITH LOG LENGTH: {scale:.0f}x slower at"
                    f" {self.long_len // self.short_len}x"
                    " the events (the single-target load lists every session and inspects the"
                    " whole log)"
                )
                if scale > 3
                else "flat in log length",
            )
        )
        self.add(Row("  raw: SELECT 101 event rows from sqlite", raw_window, note="reference only"))
        live_ids = sorted(
            (s for s in self.plan["sessions"] if s["live"]), key=lambda s: -s["length"]
        )
        if live_ids:
            big = live_ids[0]
            seqs = [self.rng.randrange(big["length"]) for _ in range(1000)]
            live_read = measure(
                lambda i: server.request(
                    "sessionQuery/readEvent",
                    {"sessionId": big["id"], "seq": seqs[i], "before": 50, "after": 50},
                ),
                self.n(200),
                budget=30,
            )
            self.add(
                Row(
                    f"readEvent +-50, live {big['length']:,}-event session",
                    live_read,
                    target="p50 <= 5 ms",
                    ok=live_read.p50 <= 5,
                )
            )

        log("listEvents / traceEvent on the long session")
        list_events = measure(
            lambda i: server.call("sessionQuery/listEvents", {"sessionId": PROBE_LONG}),
            self.n(10),
            budget=90 * self.iters,
        )
        self.add(
            Row(
                f"listEvents, persisted {self.long_len:,}-event session",
                list_events,
                target="<= 400 ms",
                ok=list_events.p50 <= 400,
            )
        )
        # views.md §2 "Cost": readTimeline within 2x listEvents, sampled in turn on the same log.
        whole = {"sessionId": PROBE_LONG}
        timeline, listing = measure_interleaved(
            [
                lambda: server.request("sessionQuery/readTimeline", whole),
                lambda: server.request("sessionQuery/listEvents", whole),
            ],
            self.n(10),
            budget=90 * self.iters,
        )
        self.add(
            Row(
                f"readTimeline, persisted {self.long_len:,}-event session",
                timeline,
                baseline=listing,
                baseline_name="listEvents, same log, in turn",
                ratio=timeline.p50 / listing.p50,
                target="<= 2x listEvents",
                ok=timeline.p50 <= 2 * listing.p50,
            )
        )
        seqs = [self.rng.randrange(self.long_len) for _ in range(100)]
        trace = measure(
            lambda i: server.request(
                "sessionQuery/traceEvent", {"sessionId": PROBE_LONG, "seq": seqs[i]}
            ),
            self.n(10),
            budget=90 * self.iters,
        )
        self.add(
            Row(
                f"traceEvent, persisted {self.long_len:,}-event session",
                trace,
                target="<= 400 ms",
                ok=trace.p50 <= 400,
            )
        )
        if live_ids:
            big = live_ids[0]
            live_list = measure(
                lambda i: server.call("sessionQuery/listEvents", {"sessionId": big["id"]}),
                self.n(10),
                budget=30,
            )
            self.add(
                Row(
                    f"listEvents, live {big['length']:,}-event session",
                    live_list,
                    target="<= 400 ms",
                    ok=live_list.p50 <= 400,
                )
            )
        self.info["rssAfterExactReadsMiB"] = server.rss_kib() / 1024
        self.first_paint()
        self.info["peakRssAfterExactReadsMiB"] = server.peak_rss_kib() / 1024

    def first_paint(self) -> None:
        """The session view's first paint on a 100,000-event session (views.md §3), as the last
        run of tests/test_vscode_e2e_session_view.py measured it in code-server: a browser
        measurement, so the bench reports it rather than taking it."""
        path = os.path.join(REPO, "artifacts", "vscode-e2e-session-view", "first-paint.json")
        if not os.path.exists(path):
            log("session view first paint: no E2E measurement (run the session view E2E test)")
            return
        with open(path) as f:
            paint = json.load(f)
        ms = float(paint["firstScreenMs"])
        self.add(
            Row(
                f"session view first paint, {paint['events']:,}-event session (E2E)",
                ms,
                target="<= 1000 ms",
                ok=ms <= 1000,
                note=(
                    f"page start to chart + first screen, measured {paint['when']} by"
                    f" tests/test_vscode_e2e_session_view.py; {paint['fromPickSeconds']} s"
                    " from choosing the session (panel creation included)"
                ),
            )
        )

    # -- main --------------------------------------------------------------------------------------

    def run(self) -> int:
        started = time.time()
        self.corpus()
        log("protocol baseline: bare msgspec echo over stdio")
        echo = self.echo_baseline()
        server = self.start_server()
        try:
            trivial = measure(
                lambda i: server.request("sessionPersistence/status", {}), self.n(3000), warmup=200
            )
            self.load_live(server)
            self.exact_reads(server, trivial, echo)
            if not self.args.skip_search:
                self.search(server, trivial)
            peak = server.peak_rss_kib() / 1024
            self.info["peakRssMiB"] = peak
            pre = self.info.get("peakRssAfterExactReadsMiB", peak)
            self.add(
                Row(
                    "server peak RSS serving the corpus (exact reads)",
                    pre,
                    "MiB",
                    target="<= 150 MB",
                    ok=pre * 1.048576 <= 150,
                    note=f"{self.plan['liveEvents']:,} live events in memory;"
                    " RSS after the live load"
                    f" {self.info['live']['rssMiB']:,.0f} MiB",
                )
            )
            if not self.args.skip_search:
                self.add(
                    Row(
                        "server peak RSS incl. index build and searches",
                        peak,
                        "MiB",
                        target="<= 150 MB",
                        ok=peak * 1.048576 <= 150,
                    )
                )
            if not self.args.skip_search:
                self.keep_sqlite_index()
            if not self.args.skip_jsonl:
                self.jsonl_section(server)
        finally:
            server.close(timeout=120)
        if not self.args.skip_hub:
            self.hub_section()
        if not self.args.skip_search:
            self.reconcile_in_process()
            if not self.args.skip_mcp:
                self.mcp_line()
        if not self.args.skip_postgres:
            self.postgres_section()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.info["seconds"] = time.time() - started
        self.report()
        return 0

    def run_only(self, section: str) -> int:
        if section == "realhome":
            return self.realhome()
        self.corpus()
        if section == "hub":
            self.hub_section()
        else:
            echo = self.echo_baseline()
            with WireClient(["--persistence", "none"], env=self.env()) as server:
                trivial = measure(
                    lambda i: server.request("sessionPersistence/status", {}),
                    self.n(3000),
                    warmup=200,
                )
            self.add(
                Row(
                    "protocol overhead: trivial request (status)",
                    trivial,
                    baseline=echo,
                    baseline_name="bare msgspec echo",
                    ratio=trivial.p50 / echo.p50,
                    target="<= 1.3x echo",
                    ok=trivial.p50 <= 1.3 * echo.p50,
                )
            )
        self.report()
        return 0

    def realhome(self) -> int:
        """Issue 28's lines on the real-content homes (bench/realhome.py), smallest first."""
        self.info["loadBefore"] = os.getloadavg()
        sizes = [int(x) for x in self.args.realhome_sizes.split(",")]
        homes = [ensure_home(self.args.cache_dir, mb, self.args.rebuild) for mb in sizes]
        self.info["realhome"] = {str(h.root): h.plan for h in homes}
        for home in homes:
            for row in measure_home(home, self.args.runs, self.args.agentsview):
                self.add(row)
        self.info["loadAfter"] = os.getloadavg()
        self.report("real-content homes (bench/realhome.py)")
        return 0

    def report(self, what: str | None = None) -> None:
        table = render(self.rows)
        if what is not None:
            title = f"dsh-query-server benchmark: {what}"
        else:
            corpus = self.info["corpus"]
            title = (
                f"dsh-query-server benchmark: {corpus['totalSessions']:,} sessions"
                f" / {corpus['totalEvents']:,}"
                f" events ({corpus['liveSessions']:,} live, {corpus['laggingSessions']:,} "
                f"lagging), scale {self.args.scale}"
            )
        print("\n" + title + "\n" + "=" * len(title) + "\n" + table)
        misses = [r.name for r in self.rows if r.ok is False]
        print(
            f"\n{sum(1 for r in self.rows if r.ok)} PASS, {len(misses)} MISS"
            + (": " + "; ".join(m.strip() for m in misses) if misses else "")
        )
        os.makedirs(self.args.out, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        payload = {
            "title": title,
            "when": stamp,
            "args": vars(self.args),
            "info": self.info,
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "sqlite": sqlite3.sqlite_version,
            },
            "rows": [r.to_json() for r in self.rows],
        }
        for name in (f"bench-{stamp}.json", "latest.json"):
            with open(os.path.join(self.args.out, name), "w") as f:
                json.dump(payload, f, indent=1, default=str)
        with open(os.path.join(self.args.out, f"bench-{stamp}.txt"), "w") as f:
            f.write(title + "\n" + table + "\n")
        print(f"\nresults: {os.path.join(self.args.out, f'bench-{stamp}.json')}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    cache = os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dsh-query-bench"
    )
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="fraction of the issue's corpus (10,000 sessions / 1,000,000 events)",
    )
    parser.add_argument("--sessions", type=int, help="override the session count")
    parser.add_argument("--events", type=int, help="override the event count")
    parser.add_argument(
        "--long-length", type=int, default=100_000, help="events in the long probe session"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--cache-dir", default=cache, help=f"where corpora are built once (default {cache})"
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild the corpus even when cached"
    )
    parser.add_argument("--quick", action="store_true", help="a quarter of the iterations")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--skip-jsonl", action="store_true")
    parser.add_argument(
        "--skip-postgres", action="store_true", help="the PostgreSQL section (bench/postgres.py)"
    )
    parser.add_argument(
        "--skip-mcp", action="store_true", help="the MCP line (needs the search section)"
    )
    parser.add_argument(
        "--skip-hub", action="store_true", help="the hub lines (bench/hub.py: CLI commands)"
    )
    parser.add_argument(
        "--only",
        choices=("overhead", "hub", "realhome"),
        help="one section on its own: the trivial request against the echo baseline, the hub,"
        " or the real-content homes against agentsview (bench/realhome.py)",
    )
    parser.add_argument(
        "--realhome-sizes", default="300,1500", help="real-content home sizes, MB (--only realhome)"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per home (--only realhome)")
    parser.add_argument("--agentsview", help="its binary (default: the venv's, then PATH)")
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="build (or find) the corpus and its Zstandard copy, and stop",
    )
    parser.add_argument(
        "--out", default=os.path.join(HERE, "results"), help="where results are written"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = shlex.split(os.environ.get("BENCH_ARGS", "")) + sys.argv[1:]
    args = parse_args(argv)
    bench = Bench(args)
    if args.only is not None:
        return bench.run_only(args.only)
    if args.build_only:
        bench.corpus()
        if not args.skip_jsonl:
            zstd_root(bench.dir, bench.db, list(bench.sessions))
        return 0
    return bench.run()
