"""Gemini CLI importer measurements (importers.md §7, issue 26): a generated ``~/.gemini`` of N
sessions written the way Gemini CLI 0.44 writes them (start-up ``$set``, a response recorded and
then grown by its tool calls, the response message, ``$set {lastUpdated}`` after each message;
some sessions compacted, rewound or rolled back, some with sub-agents, one in ten in the one-file
``.json`` format), heavy-tailed sizes. Prints bench/importers.py's lines (listing warm and cold
against a bare ``scandir`` + ``stat`` walk, ``readEvent`` ±50, first search events/s, RSS) and,
when agentsview is installed, its offline ``sync`` of the same home against our first search.

    python -m bench.homes_gemini --sessions 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.agentsview import children_cpu, find_agentsview
from bench.importers import WORDS, measure
from dsh_query_server.client import StdioClient
from dsh_query_server.persistence.gemini.backend import GeminiBackend

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z


def _stamp(i: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + i)) + f".{i % 1000:03d}Z"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _turns(rng: random.Random, cap: int) -> int:
    """Heavy-tailed: most sessions are short, a few are long."""
    return max(1, min(cap, int(rng.paretovariate(1.1) * 3)))


class _Writer:
    """One session's records, and the message list Gemini CLI keeps beside them."""

    def __init__(self, rng: random.Random, sid: str, kind: str) -> None:
        self.rng, self.i = rng, 0
        self.records: list[dict[str, object]] = [
            {
                "sessionId": sid,
                "projectHash": "0" * 64,
                "startTime": _stamp(0),
                "lastUpdated": _stamp(0),
                "kind": kind,
            }
        ]
        self.messages: dict[str, dict[str, object]] = {}

    def stamp(self) -> str:
        self.i += 1
        return _stamp(self.i)

    def message(self, message: dict[str, object], touch: bool = True) -> None:
        self.messages[str(message["id"])] = message
        self.records.append(message)
        if touch:
            self.records.append({"$set": {"lastUpdated": message["timestamp"]}})

    def set_list(self, messages: list[dict[str, object]]) -> None:
        self.messages = {str(m["id"]): m for m in messages}
        self.records.append({"$set": {"messages": messages, "lastUpdated": self.stamp()}})

    def rewind(self, mid: str) -> None:
        keys = list(self.messages)
        self.messages = {k: self.messages[k] for k in keys[: keys.index(mid)]}
        self.records.append({"$rewindTo": mid})

    def turn(self, t: int) -> None:
        rng = self.rng
        self.message(
            {
                "id": f"u{t}",
                "timestamp": self.stamp(),
                "type": "user",
                "content": [{"text": _text(rng, rng.randint(5, 40))}],
            }
        )
        g: dict[str, object] = {
            "id": f"g{t}",
            "timestamp": self.stamp(),
            "type": "gemini",
            "content": _text(rng, rng.randint(3, 20)),
            "thoughts": [
                {"subject": "Plan", "description": _text(rng, 15), "timestamp": _stamp(t)}
            ],
            "tokens": {
                "input": 1000 + 50 * t,
                "output": 40,
                "cached": 800,
                "thoughts": 25,
                "tool": 0,
                "total": 1065 + 50 * t,
            },
            "model": "gemini-2.5-pro",
        }
        self.message(g, touch=False)
        call_id = f"run_shell_command-{t}"
        output = _text(rng, rng.randint(10, 200))
        response = {
            "functionResponse": {
                "id": call_id,
                "name": "run_shell_command",
                "response": {"output": output},
            }
        }
        call = {
            "id": call_id,
            "name": "run_shell_command",
            "args": {"command": "ls"},
            "result": [response],
            "status": "success",
            "timestamp": self.stamp(),
            "resultDisplay": output,
            "description": "ls",
            "displayName": "Shell",
            "renderOutputAsMarkdown": False,
        }
        self.message({**g, "toolCalls": [call]}, touch=False)
        self.message(
            {"id": f"r{t}", "timestamp": self.stamp(), "type": "user", "content": [response]}
        )
        self.message(
            {
                "id": f"a{t}",
                "timestamp": self.stamp(),
                "type": "gemini",
                "content": _text(rng, rng.randint(10, 80)),
                "thoughts": [],
                "tokens": None,
                "model": "gemini-2.5-pro",
            }
        )

    def compact(self, t: int) -> None:
        kept = list(self.messages.values())
        env, kept = kept[:1], kept[len(kept) * 2 // 3 :]
        head = [
            {
                "id": f"s{t}",
                "timestamp": self.stamp(),
                "type": "user",
                "content": [
                    {"text": "<state_snapshot>\n" + _text(self.rng, 60) + "\n</state_snapshot>"}
                ],
            },
            {
                "id": f"k{t}",
                "timestamp": self.stamp(),
                "type": "gemini",
                "content": [{"text": "Got it. Thanks for the additional context!"}],
            },
        ]
        self.set_list(env + head + kept)

    def body(self) -> bytes:
        return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in self.records)


def gemini_session(rng: random.Random, sid: str, turns: int, kind: str = "main") -> bytes:
    w = _Writer(rng, sid, kind)
    env = {
        "id": "env",
        "timestamp": _stamp(0),
        "type": "user",
        "content": [{"text": "<session_context>\nToday's date is 2026-01-01.\n</session_context>"}],
    }
    w.set_list([env])
    for t in range(turns):
        w.turn(t)
        if t and t == turns // 2 and rng.random() < 0.3:
            w.compact(t)
        elif t and rng.random() < 0.03:
            w.rewind(f"u{t}")
    if rng.random() < 0.5:
        w.records.append({"$set": {"summary": _text(rng, 5)}})
    return w.body()


def gemini_document(rng: random.Random, sid: str, turns: int) -> bytes:
    """A one-file ``.json`` session (until 0.38): the messages, pretty-printed."""
    w = _Writer(rng, sid, "main")
    for t in range(turns):
        w.turn(t)
    messages = [m for m in w.messages.values() if m["id"][0] != "r"]  # type: ignore[index]
    doc = {**w.records[0], "messages": messages, "summary": _text(rng, 5)}
    return json.dumps(doc, indent=2).encode()


def gemini_home(root: Path, sessions: int, seed: int = 13, largest: int = 2500) -> int:
    """A ``~/.gemini`` with ``sessions`` main sessions over 10 projects; the first has
    ``largest`` turns. Returns the number of files written."""
    rng = random.Random(seed)
    files = 0
    for p in range(10):
        project = root / "tmp" / f"proj{p}"
        (project / "chats").mkdir(parents=True, exist_ok=True)
        (project / ".project_root").write_text(f"/work/proj{p}")
    for k in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        chats = root / "tmp" / f"proj{k % 10}" / "chats"
        turns = largest if k == 0 else _turns(rng, 400)
        name = f"session-2026-01-01T00-00-{sid[:8]}"
        if k and rng.random() < 0.1:
            (chats / f"{name}.json").write_bytes(gemini_document(rng, sid, turns))
        else:
            (chats / f"{name}.jsonl").write_bytes(gemini_session(rng, sid, turns))
        files += 1
        if rng.random() < 0.2:
            (chats / sid).mkdir()
            for _ in range(rng.randint(1, 3)):
                agent = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                body = gemini_session(rng, agent, _turns(rng, 60), kind="subagent")
                (chats / sid / f"{agent}.jsonl").write_bytes(body)
                files += 1
    return files


def agentsview_sync(binary: str, home: Path, tmp: Path) -> tuple[float, float, str]:
    """agentsview's offline sync of this Gemini home into an empty data dir: wall s, CPU s, its
    summary. Its HOME and data dir are inside ``tmp`` (never a real home)."""
    av_home, data = tmp / "av-home", tmp / "av-data"
    av_home.mkdir(mode=0o700)
    data.mkdir(mode=0o700)
    env = dict(
        os.environ,
        HOME=str(av_home),
        XDG_CONFIG_HOME=str(av_home),
        XDG_DATA_HOME=str(av_home),
        XDG_CACHE_HOME=str(av_home),
        XDG_STATE_HOME=str(av_home),
        AGENTSVIEW_DATA_DIR=str(data),
        GEMINI_DIR=str(home),
        AGENTSVIEW_TELEMETRY_ENABLED="0",
        AGENTSVIEW_DISABLE_UPDATE_CHECK="1",
        AGENTSVIEW_NO_BROWSER="1",
        AGENTSVIEW_NO_DAEMON="1",
    )
    t, c = time.perf_counter(), children_cpu()
    out = subprocess.run([binary, "sync"], env=env, capture_output=True, text=True, timeout=3600)
    wall, used = time.perf_counter() - t, children_cpu() - c
    if out.returncode != 0:
        raise RuntimeError(f"agentsview sync exit {out.returncode}: {out.stderr[-500:]}")
    summary = [
        x.strip() for x in out.stdout.splitlines() if x.startswith(("Sync complete", "Database:"))
    ]
    return wall, used, "; ".join(summary)


def first_search(uri: str, tmp: Path) -> float:
    """Our first search over stdio on a fresh index (the index build): wall seconds."""
    env = dict(os.environ, HOME=str(tmp), XDG_STATE_HOME=str(tmp), XDG_CACHE_HOME=str(tmp))
    index = str(tmp / "index.sqlite")
    with StdioClient(["--persistence", uri], env=env, initialization_options={"index": index}) as c:
        c.request("sessionQuery/listSessions", {})
        t = time.perf_counter()
        c.request("sessionQuery/searchSessions", {"query": "needle"})
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--largest", type=int, default=2500, help="turns of the largest session")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--agentsview", help="the agentsview binary (default: beside python)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".gemini"
        t = time.perf_counter()
        files = gemini_home(home, args.sessions, largest=args.largest)
        size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file())
        print(
            f"generated {files} Gemini CLI session files ({size / 1e6:.0f} MB) "
            f"in {time.perf_counter() - t:.1f} s"
        )
        uri = f"gemini:{home}"
        measure("gemini", uri, str(home), lambda: GeminiBackend(str(home), uri), args.runs)
        binary, version = find_agentsview(args.agentsview)
        if binary is None:
            print(f"agentsview: {version}")
            return
        events = sum(
            len(GeminiBackend(str(home), uri).inspect(str(h.id)).events)
            for h in GeminiBackend(str(home), uri).list()
        )
        ours_dir, theirs_dir = Path(tmp) / "ours", Path(tmp) / "theirs"
        ours_dir.mkdir()
        theirs_dir.mkdir()
        wall, cpu_s, summary = agentsview_sync(binary, home, theirs_dir)
        ours = first_search(uri, ours_dir)
        print(f"\n== beside {version}, same home ({events} events)")
        print(f"agentsview sync {wall:.2f} s wall, {cpu_s:.2f} s CPU ({summary})")
        print(
            f"our first search (index build) {ours:.2f} s wall ({events / ours:,.0f} events/s): "
            f"{wall / ours:.2f}x agentsview's sync"
        )


if __name__ == "__main__":
    main()
