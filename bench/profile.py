"""Profile one benchmark scenario in the real server with py-spy (sampling, from outside).

    python -m bench.profile SCENARIO [--seconds 15] [--scale 1] [--no-live] [--svg out.svg]

Starts the server on the cached corpus exactly like the benchmark (same options; live sessions
loaded unless --no-live), repeats the scenario's request while ``py-spy record`` samples the
server process, and prints where the time goes: the hottest functions by inclusive and by self
time, then the hottest call paths. Requires py-spy (``pip install py-spy``, installed by
``make bench``) and ptrace permission on the server process (root, or ptrace_scope 0).

Scenarios: trivial, listSessions, readEvent-short, readEvent-long, listEvents-long, traceEvent-long,
search-rare, search-medium, search-common, search-nomatch, jsonl-listSessions, jsonl-readEvent-short.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from .build import ensure
from .core import FULL_EVENTS, FULL_SESSIONS, REPO
from .corpus import NO_MATCH, PROBE_LONG, PROBE_SHORT, CorpusSpec
from .wire import WireClient


def scenarios(
    plan: dict[str, Any], jsonl: str
) -> dict[str, tuple[Callable[[WireClient], Any], bool, str | None]]:
    """name -> (one request, needs the index built first, remount uri)."""
    phrases = plan["phrases"]
    lengths = {s["id"]: s["length"] for s in plan["sessions"]}

    def read(sid: str) -> Callable[[WireClient], Any]:
        counter = iter(range(10**9))
        return lambda c: c.request(
            "sessionQuery/readEvent",
            {
                "sessionId": sid,
                "seq": (next(counter) * 7919) % lengths[sid],
                "before": 50,
                "after": 50,
            },
        )

    def search(q: str) -> Callable[[WireClient], Any]:
        return lambda c: c.request("sessionQuery/searchSessions", {"query": q, "limit": 20})

    return {
        "trivial": (lambda c: c.request("sessionPersistence/status"), False, None),
        "listSessions": (lambda c: c.request("sessionQuery/listSessions"), False, None),
        "readEvent-short": (read(PROBE_SHORT), False, None),
        "readEvent-long": (read(PROBE_LONG), False, None),
        "listEvents-long": (
            lambda c: c.call("sessionQuery/listEvents", {"sessionId": PROBE_LONG}),
            False,
            None,
        ),
        "traceEvent-long": (
            lambda c: c.request("sessionQuery/traceEvent", {"sessionId": PROBE_LONG, "seq": 500}),
            False,
            None,
        ),
        "search-rare": (search(phrases["rare"]), True, None),
        "search-medium": (search(phrases["medium"]), True, None),
        "search-common": (search(phrases["common"]), True, None),
        "search-nomatch": (search(NO_MATCH), True, None),
        "jsonl-listSessions": (
            lambda c: c.request("sessionQuery/listSessions"),
            False,
            f"jsonl:{jsonl}?readOnly=true",
        ),
        "jsonl-readEvent-short": (read(PROBE_SHORT), False, f"jsonl:{jsonl}?readOnly=true"),
    }


def summarize(raw_path: str, top: int) -> str:
    self_time: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    paths: collections.Counter = collections.Counter()
    total = 0
    with open(raw_path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            frames = [fr for fr in stack.split(";") if fr]
            # Only the worker threads do request work; idle event-loop/selector stacks are noise.
            leaf = frames[-1] if frames else ""
            if any(
                idle in leaf
                for idle in ("select (", "_worker (", "wait (", "_WorkItem.run (thread.py:58)")
            ):
                continue
            frames = [fr for fr in frames if not fr.startswith("thread (")]
            if not frames:
                continue
            total += n
            self_time[_short(frames[-1])] += n
            for frame in set(map(_short, frames)):
                inclusive[frame] += n
            ours = [
                _short(fr)
                for fr in frames
                if "dsh_query_server" in fr or "sqlite3" in fr or "pygls" in fr
            ]
            if ours:
                paths[" > ".join(ours[-4:])] += n
    if not total:
        return "no busy samples"
    out = [f"{total} busy samples"]
    out.append("\nhottest functions, inclusive:")
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(top)]
    out.append("\nhottest functions, self:")
    out += [f"  {100 * n / total:5.1f}%  {f}" for f, n in self_time.most_common(top)]
    out.append("\nhottest call paths (innermost 4 frames of ours):")
    out += [f"  {100 * n / total:5.1f}%  {p}" for p, n in paths.most_common(top)]
    return "\n".join(out)


def _short(frame: str) -> str:
    # "func (path/to/module.py:123)" -> "func (module.py:123)"
    name, _, where = frame.partition(" (")
    return f"{name} ({os.path.basename(where.rstrip(')'))})" if where else name


def main(argv: list[str] | None = None) -> int:
    cache = os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dsh-query-bench"
    )
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--long-length", type=int, default=100_000)
    parser.add_argument("--cache-dir", default=cache)
    parser.add_argument("--no-live", action="store_true", help="do not load the live sessions")
    parser.add_argument("--top", type=int, default=18)
    parser.add_argument("--svg", help="also write a flame graph here")
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(spy):
        sys.exit("py-spy is not installed: pip install py-spy")
    sessions = max(10, int(round(FULL_SESSIONS * args.scale)))
    spec = CorpusSpec(
        sessions=sessions,
        events=max(sessions * 10, int(round(FULL_EVENTS * args.scale))),
        long_length=args.long_length,
    )
    directory, plan = ensure(spec, args.cache_dir)
    table = scenarios(plan, os.path.join(directory, "jsonl"))
    if args.scenario not in table:
        sys.exit(f"unknown scenario; choose from {', '.join(table)}")
    request, needs_index, remount = table[args.scenario]
    tmp = tempfile.mkdtemp(prefix="dsh-query-profile-")
    env = {**os.environ, "PYTHONPATH": REPO}
    options = {
        "persistence": f"sqlite:{os.path.join(directory, 'sessions.db')}?readOnly=true",
        "index": os.path.join(tmp, "index.sqlite"),
        "checkpoint": {"mode": "manual"},
    }
    server = WireClient(
        ["--persistence", "none"], initialization_options=options, env=env, timeout=1800
    )
    try:
        if not args.no_live:
            decoder = msgspec.json.Decoder()
            with open(os.path.join(directory, "live.jsonl"), "rb") as f:
                for line in f:
                    item = decoder.decode(line)
                    server.request("sessionStore/create", {"header": item["header"]})
                    for i in range(0, len(item["events"]), 500):
                        server.request(
                            "sessionStore/append",
                            {
                                "sessionId": item["header"]["id"],
                                "events": item["events"][i : i + 500],
                            },
                        )
        if needs_index:
            print("building the index (first search)…", file=sys.stderr)
            server.request("sessionQuery/searchSessions", {"query": NO_MATCH})
        if remount:
            server.request("sessionPersistence/mount", {"uri": remount})
        request(server)  # warm
        raw = os.path.join(tmp, "profile.txt")
        command = [
            spy,
            "record",
            "--pid",
            str(server.pid),
            "--rate",
            "250",
            "--duration",
            str(int(args.seconds)),
            "--format",
            "raw",
            "--output",
            raw,
            "--threads",
            "--nonblocking",
        ]
        spy_proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)
        stop = threading.Event()
        count = 0

        def loop() -> None:
            nonlocal count
            while not stop.is_set():
                try:
                    request(server)
                except Exception:  # noqa: BLE001 - the server is going away
                    return
                count += 1

        worker = threading.Thread(target=loop, daemon=True)
        started = time.perf_counter()
        worker.start()
        _, err = spy_proc.communicate()
        stop.set()
        worker.join(120)
        elapsed = time.perf_counter() - started
        if spy_proc.returncode != 0 or not os.path.exists(raw):
            sys.exit(f"py-spy failed: {err.decode(errors='replace')[-2000:]}")
        print(
            f"scenario {args.scenario}: {count} requests in {elapsed:.1f}s"
            f" ({1000 * elapsed / max(1, count):.1f} ms each, client side)"
        )
        print(summarize(raw, args.top))
        if args.svg:
            flame = [
                spy,
                "record",
                "--pid",
                str(server.pid),
                "--duration",
                "5",
                "--output",
                args.svg,
            ]
            proc = subprocess.Popen(flame, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stop.clear()
            worker = threading.Thread(target=loop, daemon=True)
            worker.start()
            proc.wait()
            stop.set()
            worker.join(120)
    finally:
        server.close(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
