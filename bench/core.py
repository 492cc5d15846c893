"""What every bench section shares: the arguments, the corpus, the rows and the iteration scale.

The runner's sections (search.py, jsonl.py, mcp_line.py) are mixins over ``BenchBase``; the
runner (runner.py) composes them and decides the order.
"""

from __future__ import annotations

import argparse
import os
import random
from typing import Any

from .build import ensure
from .corpus import PROBE_LONG, PROBE_SHORT, CorpusSpec
from .stats import Row, Stats, fmt, log

FULL_SESSIONS = 10_000
FULL_EVENTS = 1_000_000
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BenchBase:
    # Set by corpus() and by the runner before the sections run.
    spec: CorpusSpec
    dir: str
    plan: dict[str, Any]
    db: str
    jsonl: str
    sessions: dict[str, dict[str, Any]]
    long_len: int
    short_len: int
    tmp: str
    index: str
    sqlite_index: str | None

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[Row] = []
        self.info: dict[str, Any] = {}
        self.rng = random.Random(12345)
        self.iters = 0.25 if args.quick else 1.0
        self.sqlite_index = None

    def n(self, count: int) -> int:
        return max(3, int(count * self.iters))

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        v = row.value.p50 if isinstance(row.value, Stats) else row.value
        log(
            f"  {row.name}: {fmt(v, row.unit)} {row.unit}"
            + (f" (ratio {row.ratio:.2f}x)" if row.ratio is not None else "")
            + ("" if row.ok is None else (" PASS" if row.ok else " MISS"))
        )
        return row

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def corpus(self) -> None:
        a = self.args
        sessions = a.sessions or max(10, int(round(FULL_SESSIONS * a.scale)))
        events = a.events or max(sessions * 10, int(round(FULL_EVENTS * a.scale)))
        self.spec = CorpusSpec(
            sessions=sessions, events=events, seed=a.seed, long_length=a.long_length
        )
        self.dir, self.plan = ensure(self.spec, a.cache_dir, rebuild=a.rebuild)
        self.db = os.path.join(self.dir, "sessions.db")
        self.jsonl = os.path.join(self.dir, "jsonl")
        self.info["corpus"] = {k: v for k, v in self.plan.items() if k != "sessions"}
        self.info["corpus"]["directory"] = self.dir
        by_id = {s["id"]: s for s in self.plan["sessions"]}
        self.sessions = by_id
        self.long_len = by_id[PROBE_LONG]["length"]
        self.short_len = by_id[PROBE_SHORT]["length"]
