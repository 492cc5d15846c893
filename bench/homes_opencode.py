"""OpenCode importer measurements (importers.md §8): a generated OpenCode home (``opencode.db``
in WAL mode, heavy-tailed session sizes, child sessions, compactions with kept tails, prunes).
Prints the listing p50 cold, warm and after a concurrent commit against a bare ``SELECT`` of
the session rows, inspect rates, ``readEvent`` ±50 in the largest session, the first search's
index build rate and the server's RSS; beside agentsview's ``sync`` of the same home when it is
installed (``make bench-deps``).

    python -m bench.homes_opencode --sessions 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from bench.importers import cpu, p50, rss_kib, server_cpu
from dsh_query_server.client import StdioClient
from dsh_query_server.persistence.opencode.backend import OpenCodeBackend

T0 = 1_767_225_600_000
WORDS = "alpha beta gamma delta needle retry budget config parser window memo index".split()
SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
  slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL,
  share_url text, summary_additions integer, summary_deletions integer, summary_files integer,
  summary_diffs text, revert text, permission text, time_created integer NOT NULL,
  time_updated integer NOT NULL, time_compacting integer, time_archived integer);
CREATE INDEX session_parent_idx ON session (parent_id);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _turns(rng: random.Random, cap: int) -> int:
    """Heavy-tailed: most sessions are short, a few long."""
    return min(cap, max(1, int(rng.paretovariate(1.2) * 4)))


class _Writer:
    """Rows as OpenCode writes them: the record's JSON minus its ids in ``data``."""

    def __init__(self) -> None:
        self.sessions: list[tuple[object, ...]] = []
        self.messages: list[tuple[object, ...]] = []
        self.parts: list[tuple[object, ...]] = []
        self.n = 0

    def id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:012x}"

    def message(self, sid: str, t: int, info: dict[str, object]) -> str:
        mid = self.id("msg")
        self.messages.append((mid, sid, t, t, json.dumps(info)))
        return mid

    def part(self, sid: str, mid: str, t: int, part: dict[str, object]) -> str:
        pid = self.id("prt")
        self.parts.append((pid, mid, sid, t, t, json.dumps(part)))
        return pid


def _session(
    w: _Writer, rng: random.Random, sid: str, t: int, turns: int, parent: str | None
) -> int:
    """One session: per turn a prompt and a two-step answer (reasoning, a tool call and its
    result, then text); a long one is compacted halfway with a kept tail, and pruned."""
    w.sessions.append(
        (sid, "prj", parent, "s", "/work/proj", _text(rng, 4), "1.1.20", t, t + turns * 10_000)
    )
    model = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
    tail = None
    for k in range(turns):
        now = t + k * 10_000
        if turns >= 8 and k == turns // 2 and tail is not None:
            req = w.message(
                sid,
                now,
                {"role": "user", "time": {"created": now}, "agent": "build", "model": model},
            )
            w.part(sid, req, now, {"type": "compaction", "auto": True, "tail_start_id": tail})
            summ = w.message(
                sid,
                now + 1,
                {
                    "role": "assistant",
                    "parentID": req,
                    "summary": True,
                    "finish": "stop",
                    "mode": "compaction",
                    "time": {"created": now + 1},
                    **model,
                },
            )
            w.part(sid, summ, now + 1, {"type": "text", "text": "## Goal\n" + _text(rng, 80)})
        user = w.message(
            sid,
            now + 2,
            {"role": "user", "time": {"created": now + 2}, "agent": "build", "model": model},
        )
        if k == turns // 2 - 1:
            tail = user
        w.part(sid, user, now + 2, {"type": "text", "text": _text(rng, rng.randint(5, 40))})
        reply = w.message(
            sid,
            now + 3,
            {
                "role": "assistant",
                "parentID": user,
                "finish": "stop",
                "mode": "build",
                "time": {"created": now + 3, "completed": now + 9},
                "cost": 0.01,
                "tokens": {
                    "input": 10,
                    "output": 5,
                    "reasoning": 0,
                    "cache": {"read": 0, "write": 0},
                },
                **model,
            },
        )
        w.part(sid, reply, now + 3, {"type": "step-start"})
        w.part(
            sid,
            reply,
            now + 3,
            {"type": "reasoning", "text": _text(rng, 20), "time": {"start": now + 3}},
        )
        compacted = {"compacted": now + 9_000} if turns >= 8 and k < turns // 4 else {}
        w.part(
            sid,
            reply,
            now + 4,
            {
                "type": "tool",
                "callID": f"call_{k}",
                "tool": "read",
                "state": {
                    "status": "completed",
                    "input": {"filePath": f"/work/proj/f{k}.py"},
                    "output": _text(rng, rng.randint(20, 200)),
                    "title": "read",
                    "metadata": {},
                    "time": {"start": now + 4, "end": now + 5, **compacted},
                },
            },
        )
        w.part(
            sid,
            reply,
            now + 5,
            {
                "type": "step-finish",
                "reason": "tool-calls",
                "cost": 0.005,
                "tokens": {
                    "input": 1000 + k,
                    "output": 50,
                    "reasoning": 20,
                    "cache": {"read": 9000, "write": 100},
                },
            },
        )
        w.part(sid, reply, now + 6, {"type": "step-start"})
        w.part(
            sid,
            reply,
            now + 6,
            {"type": "text", "text": _text(rng, rng.randint(10, 80)), "time": {"start": now + 6}},
        )
        w.part(
            sid,
            reply,
            now + 8,
            {
                "type": "step-finish",
                "reason": "stop",
                "cost": 0.005,
                "tokens": {
                    "input": 1100 + k,
                    "output": 60,
                    "reasoning": 0,
                    "cache": {"read": 9100, "write": 0},
                },
            },
        )
    return turns


def opencode_home(root: Path, sessions: int, seed: int = 5, cap: int = 400) -> tuple[Path, int]:
    """A home with ``sessions`` sessions (every tenth a child of the one before); the turns."""
    rng = random.Random(seed)
    w = _Writer()
    turns = 0
    for i in range(sessions):
        parent = w.sessions[-1][0] if i % 10 == 9 and w.sessions else None
        turns += _session(w, rng, f"ses_{i:08d}", T0 + i * 60_000, _turns(rng, cap), parent)  # type: ignore[arg-type]
    root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(root / "opencode.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO project VALUES ('prj', '/work/proj', ?, ?)", (T0, T0))
    conn.executemany(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
        " time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        w.sessions,
    )
    conn.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?)", w.messages)
    conn.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", w.parts)
    conn.execute("COMMIT")
    conn.close()
    return root, turns


def bare_select(db: Path) -> None:
    """The listing's floor: one read-only SELECT of every session row."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("SELECT * FROM session").fetchall()
    finally:
        conn.close()


def measure(home: Path, runs: int) -> int:
    uri = f"opencode:{home}"
    db = home / "opencode.db"
    base = p50(lambda: bare_select(db), runs)
    cold = p50(lambda: OpenCodeBackend(str(home), uri).list_snapshots(), runs)
    backend = OpenCodeBackend(str(home), uri)
    listed = backend.list_snapshots()
    warm = p50(backend.list_snapshots, runs)
    warm_c = cpu(backend.list_snapshots, runs)
    writer = sqlite3.connect(db, isolation_level=None)
    sid = listed[0].header.to_value()["id"]

    def after_commit() -> None:
        writer.execute("UPDATE session SET time_updated = time_updated + 1 WHERE id = ?", (sid,))
        backend.list_snapshots()

    changed = p50(after_commit, runs)

    def headers_after_commit() -> None:
        writer.execute("UPDATE session SET time_updated = time_updated + 1 WHERE id = ?", (sid,))
        backend.list()

    headers = p50(headers_after_commit, runs)
    writer.close()
    print(
        f"sessions listed {len(listed)}; list_snapshots p50 cold {cold:.1f} ms, warm {warm:.2f} ms"
        f" ({warm_c:.2f} ms CPU), after a concurrent commit {changed:.1f} ms (list, headers only:"
        f" {headers:.1f} ms); bare SELECT of the session rows {base:.1f} ms (wall)"
    )
    t, c = time.perf_counter(), time.process_time()
    total = sum(len(backend.inspect(str(s.header.to_value()["id"])).events) for s in listed)
    wall, used = time.perf_counter() - t, time.process_time() - c
    print(
        f"inspect all: {total} events in {wall:.2f} s wall / {used:.2f} s CPU "
        f"({total / used:,.0f} events/CPU-s)"
    )
    sizes = {
        str(s.header.to_value()["id"]): len(backend.inspect(str(s.header.to_value()["id"])).events)
        for s in listed[:50]
    }
    largest = max(sizes, key=lambda k: sizes[k])
    n = sizes[largest]
    rng = random.Random(3)
    seqs = iter([rng.randrange(n) for _ in range(runs)])
    win = p50(
        lambda: (s := next(seqs), backend.inspect_window(largest, max(s - 50, 0), s + 50)), runs
    )
    print(
        f"largest of the first 50: {largest} ({n} events): window ±50 p50 {win:.2f} ms in process"
    )
    backend.close()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_CACHE_HOME=tmp, XDG_DATA_HOME=tmp)
        index = os.path.join(tmp, "index.sqlite")
        with StdioClient(
            ["--persistence", uri], env=env, initialization_options={"index": index}
        ) as client:
            pid = client.process.pid
            over = p50(lambda: client.request("sessionQuery/listSessions", {}), runs)
            print(f"listSessions over stdio p50 {over:.1f} ms")
            t, c0 = time.perf_counter(), server_cpu(pid)
            client.request("sessionQuery/searchSessions", {"query": "needle"})
            built, built_c = time.perf_counter() - t, server_cpu(pid) - c0
            print(
                f"first search (index build): {built:.2f} s wall ({total / built:,.0f} events/s),"
                f" {built_c:.2f} s server CPU ({total / built_c:,.0f} events/CPU-s)"
            )
            rss, hwm = rss_kib(pid)
            print(f"server RSS {rss / 1024:.0f} MiB (peak {hwm / 1024:.0f} MiB)")
    return total


def agentsview_sync(home: Path, total: int) -> None:
    """agentsview's offline sync of the same home, when it is installed and reads OpenCode."""
    from bench.agentsview import children_cpu, find_agentsview

    binary, version = find_agentsview(None)
    if binary is None:
        print(f"agentsview: {version}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            HOME=tmp,
            XDG_CONFIG_HOME=tmp,
            XDG_CACHE_HOME=tmp,
            XDG_STATE_HOME=tmp,
            XDG_DATA_HOME=str(home.parent),
            AGENTSVIEW_DATA_DIR=os.path.join(tmp, "data"),
            OPENCODE_DIR=str(home),
            AGENTSVIEW_TELEMETRY_ENABLED="0",
            AGENTSVIEW_DISABLE_UPDATE_CHECK="1",
            AGENTSVIEW_NO_BROWSER="1",
            AGENTSVIEW_NO_DAEMON="1",
        )
        t, c = time.perf_counter(), children_cpu()
        out = subprocess.run(
            [binary, "sync"], env=env, capture_output=True, text=True, timeout=3600
        )
        wall, used = time.perf_counter() - t, children_cpu() - c
        summary = [
            x.strip()
            for x in out.stdout.splitlines()
            if x.startswith(("Sync complete", "Database:"))
        ]
        print(
            f"agentsview {version} sync: exit {out.returncode}, {wall:.2f} s wall, {used:.2f} s CPU"
            f" ({total / wall:,.0f} of our events/s); {'; '.join(summary) or out.stderr[-300:]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        home, turns = opencode_home(Path(tmp) / "opencode", args.sessions)
        size = (home / "opencode.db").stat().st_size
        print(
            f"generated {args.sessions} OpenCode sessions ({turns} turns, {size / 1e6:.0f} MB"
            f" opencode.db) in {time.perf_counter() - t:.1f} s"
        )
        total = measure(home, args.runs)
        agentsview_sync(home, total)


if __name__ == "__main__":
    main()
