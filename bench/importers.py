"""Importer measurements (importers.md §3): a generated Claude Code home (heavy-tailed sizes,
sub-agents, compactions) and a Codex home. Prints listing p50 cold and warm against a bare
``os.scandir`` + ``stat`` walk of the same home, ``readEvent`` ±50 in the largest transcript after
its first read (in process and over stdio), the index build rate of the first search, and the
server's RSS.

    python -m bench.importers --sessions 100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from dsh_query_server.client import StdioClient
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.importing.backend import ImportBackend

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
WORDS = "alpha beta gamma delta needle retry budget config parser window memo index".split()


def _stamp(i: int) -> str:
    t = time.gmtime(T0 + i)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{i % 1000:03d}Z"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def claude_transcript(
    rng: random.Random, sid: str, turns: int, *, compact: bool = False, agent: bool = False
) -> bytes:
    """A Claude Code transcript: per turn a prompt, a thinking+tool_use reply, the tool result
    and a text answer; ``compact`` puts a compaction (boundary and summary) halfway."""
    out: list[bytes] = []
    last: str | None = None
    i = 0

    def put(record: dict[str, object]) -> None:
        nonlocal last, i
        base: dict[str, object] = {
            "parentUuid": last,
            "isSidechain": agent,
            "sessionId": sid,
            "timestamp": _stamp(i),
            "cwd": "/work/proj",
            "version": "2.1.0",
            "uuid": f"{sid[:8]}-{i:06d}",
        }
        base.update(record)
        out.append(json.dumps(base, separators=(",", ":")).encode())
        last = str(base["uuid"])
        i += 1

    for t in range(turns):
        if compact and t == turns // 2 and t:
            put({"type": "system", "subtype": "compact_boundary", "parentUuid": None})
            put(
                {
                    "type": "user",
                    "isCompactSummary": True,
                    "message": {"role": "user", "content": "Summary: " + _text(rng, 60)},
                }
            )
        prompt = _text(rng, rng.randint(5, 40))
        put({"type": "user", "message": {"role": "user", "content": prompt}})
        call = f"toolu_{t:06d}"
        msg = f"msg_{t:06d}"
        put(
            {
                "type": "assistant",
                "message": {
                    "id": msg,
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [
                        {"type": "thinking", "thinking": _text(rng, 20), "signature": "s" * 40},
                        {"type": "tool_use", "id": call, "name": "Bash", "input": {"cmd": "ls"}},
                    ],
                    "usage": {"input_tokens": 10, "output_tokens": 20},
                },
            }
        )
        put(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call,
                            "content": _text(rng, rng.randint(10, 200)),
                        }
                    ],
                },
            }
        )
        put(
            {
                "type": "assistant",
                "message": {
                    "id": f"{msg}b",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "text", "text": _text(rng, rng.randint(10, 80))}],
                },
            }
        )
    return b"\n".join(out) + b"\n"


def _turns(rng: random.Random, cap: int) -> int:
    """Heavy-tailed: most sessions are short, a few are long."""
    return min(cap, int(rng.paretovariate(1.1) * 3))


def claude_home(root: Path, sessions: int, seed: int = 7, largest: int = 2500) -> tuple[str, int]:
    """A ``~/.claude`` with ``sessions`` trunks; the first has ``largest`` turns. Returns the
    id of the largest transcript and the number of files written."""
    rng = random.Random(seed)
    files = 0
    biggest = ""
    for k in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        project = root / "projects" / f"-work-proj{k % 10}"
        project.mkdir(parents=True, exist_ok=True)
        turns = largest if k == 0 else _turns(rng, 400)
        biggest = biggest or sid
        data = claude_transcript(rng, sid, max(turns, 1), compact=rng.random() < 0.3)
        (project / f"{sid}.jsonl").write_bytes(data)
        files += 1
        if rng.random() < 0.2:
            sub = project / sid / "subagents"
            sub.mkdir(parents=True, exist_ok=True)
            for a in range(rng.randint(1, 3)):
                agent = f"a{k:04d}{a}"
                if rng.random() < 0.25:
                    agent = f"acompact{k:04d}{a}"
                body = claude_transcript(rng, sid, _turns(rng, 60) or 1, agent=True)
                (sub / f"agent-{agent}.jsonl").write_bytes(body)
                meta = {"agentType": "general-purpose"}
                (sub / f"agent-{agent}.meta.json").write_text(json.dumps(meta))
                files += 1
    return biggest, files


def codex_home(root: Path, sessions: int, seed: int = 11) -> int:
    rng = random.Random(seed)
    index: list[bytes] = []
    for k in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        day = root / "sessions" / "2026" / "01" / f"{k % 28 + 1:02d}"
        day.mkdir(parents=True, exist_ok=True)
        lines = [
            {
                "timestamp": _stamp(0),
                "type": "session_meta",
                "payload": {
                    "id": sid,
                    "timestamp": _stamp(0),
                    "cwd": "/work/proj",
                    "cli_version": "0.77.0",
                    "instructions": _text(rng, 50),
                },
            }
        ]
        turns = _turns(rng, 400) or 1
        for t in range(turns):

            def item(payload: dict[str, object], i: int = t) -> dict[str, object]:
                return {"timestamp": _stamp(i), "type": "response_item", "payload": payload}

            lines.append(
                item(
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": _text(rng, 20)}],
                    }
                )
            )
            lines.append(
                item(
                    {
                        "type": "function_call",
                        "name": "shell",
                        "arguments": "{}",
                        "call_id": f"c{t}",
                    }
                )
            )
            lines.append(
                item(
                    {
                        "type": "function_call_output",
                        "call_id": f"c{t}",
                        "output": _text(rng, rng.randint(10, 150)),
                    }
                )
            )
            lines.append(
                item(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": _text(rng, 40)}],
                    }
                )
            )
            if t and t == turns // 2 and rng.random() < 0.3:
                lines.append(
                    {
                        "timestamp": _stamp(t),
                        "type": "compacted",
                        "payload": {"message": "summary " + _text(rng, 30)},
                    }
                )
        name = f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
        (day / name).write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines))
        if rng.random() < 0.5:
            index.append(
                json.dumps(
                    {"id": sid, "thread_name": _text(rng, 4), "updated_at": _stamp(5)}
                ).encode()
            )
    (root / "session_index.jsonl").write_bytes(b"".join(x + b"\n" for x in index))
    return sessions


def bare_walk(home: str) -> int:
    """The floor a listing cannot beat: scandir every directory and stat every file."""
    n = 0
    stack = [home]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    os.stat(e.path)
                    n += 1
    return n


def p50(fn: Callable[[], object], runs: int) -> float:
    """Median wall ms. On a loaded machine wall time mostly measures the queue: ``cpu`` says
    what the work itself costs."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def cpu(fn: Callable[[], object], runs: int) -> float:
    """Median CPU ms of this process."""
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times) * 1000


def server_cpu(pid: int) -> float:
    """CPU seconds the server has used (utime + stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> tuple[int, int]:
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                rss = int(row.split()[1])
            elif row.startswith("VmHWM:"):
                hwm = int(row.split()[1])
    return rss, hwm


def measure_homes(claude: Path, codex: Path, runs: int) -> None:
    """The importer lines of a generated Claude Code home and Codex home."""
    claude_uri, codex_uri = f"claude:{claude}", f"codex:{codex}"
    measure("claude", claude_uri, str(claude), lambda: ClaudeBackend(str(claude), claude_uri), runs)
    measure("codex", codex_uri, str(codex), lambda: CodexBackend(str(codex), codex_uri), runs)


def measure(name: str, uri: str, home: str, make: Callable[[], ImportBackend], runs: int) -> None:
    print(f"\n== {name}: {uri}")
    walk = p50(lambda: bare_walk(home), runs)
    cold = p50(lambda: make().list(), runs)
    backend = make()
    listed = backend.list()
    warm = p50(backend.list, runs)
    print(
        f"sessions listed {len(listed)}; listing p50 cold {cold:.1f} ms, warm {warm:.1f} ms, "
        f"bare scandir+stat walk {walk:.1f} ms (wall)"
    )
    walk_c = cpu(lambda: bare_walk(home), runs)
    cold_c = cpu(lambda: make().list(), runs)
    warm_c = cpu(backend.list, runs)
    print(f"  CPU p50: listing cold {cold_c:.1f} ms, warm {warm_c:.1f} ms, walk {walk_c:.1f} ms")
    sizes = {h.id: os.path.getsize(str(h.to_value()["source"]["path"])) for h in listed}
    largest = max(sizes, key=lambda s: sizes[s])
    t, c = time.perf_counter(), time.process_time()
    total = 0
    for h in listed:
        total += len(backend.inspect(str(h.id)).events)
    inspect_s, inspect_c = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    for h in listed:
        backend.inspect(str(h.id))
    again_c = time.process_time() - c
    print(
        f"inspect all: {total} events, first {inspect_s:.2f} s wall / {inspect_c:.2f} s CPU "
        f"({total / inspect_c:,.0f} events/CPU-s), again {again_c:.2f} s CPU "
        f"({total / again_c:,.0f} events/CPU-s)"
    )
    n = len(backend.inspect(largest).events)
    rng = random.Random(3)
    seqs = [rng.randrange(n) for _ in range(runs)]
    it2 = iter(seqs)
    win = p50(
        lambda: (s := next(it2), backend.inspect_window(largest, max(s - 50, 0), s + 50)), runs
    )
    it3 = iter(seqs)
    win_c = cpu(
        lambda: (s := next(it3), backend.inspect_window(largest, max(s - 50, 0), s + 50)), runs
    )
    full = cpu(lambda: backend.inspect(largest), 3)
    print(
        f"largest: {largest} ({sizes[largest] / 1e6:.1f} MB, {n} events): window ±50 p50 "
        f"{win:.2f} ms wall, {win_c:.2f} ms CPU in process (full inspect {full:.0f} ms CPU)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_CACHE_HOME=tmp)
        index = os.path.join(tmp, "index.sqlite")
        with StdioClient(
            ["--persistence", uri], env=env, initialization_options={"index": index}
        ) as c:
            pid = c.process.pid
            over = p50(lambda: c.request("sessionQuery/listSessions", {}), runs)
            print(f"listSessions over stdio p50 {over:.1f} ms")
            t = time.perf_counter()
            c.request(
                "sessionQuery/readEvent",
                {"sessionId": largest, "seq": n // 2, "before": 50, "after": 50},
            )
            first = (time.perf_counter() - t) * 1000
            it4 = iter(seqs)
            c0 = server_cpu(pid)
            later = p50(
                lambda: c.request(
                    "sessionQuery/readEvent",
                    {"sessionId": largest, "seq": next(it4), "before": 50, "after": 50},
                ),
                runs,
            )
            per = (server_cpu(pid) - c0) / runs * 1000
            print(
                f"readEvent ±50 over stdio: first {first:.0f} ms, then p50 {later:.2f} ms wall, "
                f"server CPU {per:.1f} ms per request"
            )
            t, c0 = time.perf_counter(), server_cpu(pid)
            c.request("sessionQuery/searchSessions", {"query": "needle"})
            built, built_c = time.perf_counter() - t, server_cpu(pid) - c0
            print(
                f"first search (index build): {built:.2f} s wall ({total / built:,.0f} events/s),"
                f" {built_c:.2f} s server CPU ({total / built_c:,.0f} events/CPU-s)"
            )
            again = p50(lambda: c.request("sessionQuery/searchSessions", {"query": "needle"}), runs)
            print(f"later search p50 {again:.1f} ms")
            rss, hwm = rss_kib(pid)
            print(f"server RSS {rss / 1024:.0f} MiB (peak {hwm / 1024:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--largest", type=int, default=2500, help="turns of the largest Claude log")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        claude = Path(tmp) / "claude"
        codex = Path(tmp) / "codex"
        t = time.perf_counter()
        _, files = claude_home(claude, args.sessions, largest=args.largest)
        codex_home(codex, args.sessions)
        print(
            f"generated {files} Claude transcripts and {args.sessions} Codex rollouts "
            f"in {time.perf_counter() - t:.1f} s"
        )
        measure_homes(claude, codex, args.runs)


if __name__ == "__main__":
    main()
