"""The qwen: importer on a generated Qwen Code home (issue 26, importers.md §10): N chats of
heavy-tailed length over a few projects, with tool calls, usage, rewinds, compressions, titles,
telemetry and background sub-agents. Prints listing p50 cold and warm against a bare ``scandir``
+ ``stat`` walk, the mapper's rate over every chat, ``readEvent`` ±50 in the largest, and over
stdio ``listSessions``, the first search (the index build) in events/s and the server's RSS; then
agentsview's ``sync`` of the same home (it reads Qwen Code from ``QWEN_PROJECTS_DIR``).

    python -m bench.homes_qwen --sessions 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from bench.agentsview import Agentsview, Corpus, find_agentsview
from bench.importers import bare_walk, cpu, p50, rss_kib, server_cpu
from dsh_query_server.client import StdioClient
from dsh_query_server.persistence.qwen.backend import QwenBackend

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
WORDS = "alpha beta gamma delta needle retry budget config parser window memo index".split()


def _stamp(i: int) -> str:
    t = time.gmtime(T0 + i)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{i % 1000:03d}Z"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


class _Chat:
    """Records of one chat, chained by parentUuid as Qwen Code's recorder chains them."""

    def __init__(self, sid: str, agent: str | None = None) -> None:
        self.sid, self.agent = sid, agent
        self.lines: list[bytes] = []
        self.tail: str | None = None
        self.turn_parents: list[str | None] = []
        self.i = 0

    def put(self, kind: str, *, parent: object = "tail", **fields: object) -> str:
        self.i += 1
        uuid = f"{self.sid[:8]}-{self.agent or 'm'}-{self.i:06d}"
        record: dict[str, object] = {
            "uuid": uuid,
            "parentUuid": self.tail if parent == "tail" else parent,
            "sessionId": self.sid,
            "timestamp": _stamp(self.i),
            "type": kind,
            "cwd": "/work/proj",
            "version": "0.6.0",
            **fields,
        }
        if self.agent is not None:
            record.update(agentId=self.agent, agentName="Explore", isSidechain=True)
        self.lines.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        self.tail = uuid
        return uuid


def _turn(rng: random.Random, chat: _Chat, t: int, history: list[object]) -> None:
    """A prompt, a reasoning + tool-call response, the tool's result and an answer."""
    prompt = _text(rng, 12)
    chat.turn_parents.append(chat.tail)
    chat.put("user", message={"role": "user", "parts": [{"text": prompt}]})
    call = {"functionCall": {"id": f"c{t}", "name": "grep", "args": {"q": _text(rng, 2)}}}
    usage = {"promptTokenCount": 900 + 40 * t, "candidatesTokenCount": 60}
    chat.put(
        "assistant",
        model="qwen3-coder-plus",
        message={"role": "model", "parts": [{"text": _text(rng, 20), "thought": True}, call]},
        usageMetadata={**usage, "cachedContentTokenCount": 800},
        contextWindowSize=131072,
    )
    output = "\n".join(_text(rng, 10) for _ in range(rng.randint(1, 30)))
    response = {"functionResponse": {"id": f"c{t}", "name": "grep", "response": {"output": output}}}
    chat.put(
        "tool_result",
        message={"role": "user", "parts": [response]},
        toolCallResult={"callId": f"c{t}", "status": "success"},
    )
    answer = _text(rng, 40)
    chat.put(
        "assistant",
        model="qwen3-coder-plus",
        message={"role": "model", "parts": [{"text": answer}]},
        usageMetadata=usage,
    )
    history[-2:] = [{"role": "user", "parts": [{"text": prompt}]}]
    history.append({"role": "model", "parts": [{"text": answer}]})


def chat_lines(rng: random.Random, sid: str, turns: int, agent: str | None = None) -> list[bytes]:
    chat = _Chat(sid, agent)
    if agent is None:
        chat.put("system", subtype="ui_telemetry", systemPayload={"uiEvent": {"kind": "start"}})
    history: list[object] = []
    for t in range(turns):
        _turn(rng, chat, t, history)
        if agent is None and t == turns // 2 and turns >= 20:
            summary = {"role": "user", "parts": [{"text": f"<state_snapshot>{_text(rng, 60)}"}]}
            payload = {"info": {"compressionStatus": 1}, "compressedHistory": [summary, *history]}
            chat.put("system", subtype="chat_compression", systemPayload=payload)
        if agent is None and t > 2 and rng.random() < 0.03:
            target = rng.randrange(len(chat.turn_parents))
            parent = chat.turn_parents[target]
            chat.put("system", parent=parent, subtype="rewind", systemPayload={"truncatedCount": 4})
            del chat.turn_parents[target:]
        if agent is None and t == 1:
            chat.put("system", subtype="custom_title", systemPayload={"customTitle": _text(rng, 4)})
    return chat.lines


def _turns(rng: random.Random, cap: int) -> int:
    return min(cap, max(1, int(rng.paretovariate(1.2) * 3)))


def qwen_home(root: Path, sessions: int, seed: int = 13, largest: int = 2500) -> int:
    """``sessions`` chats over 20 projects, one of ``largest`` turns; a fifth have a sub-agent.
    Returns the number of transcripts written."""
    rng = random.Random(seed)
    files = 0
    for n in range(sessions):
        sid = f"{n:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        project = root / "projects" / f"-work-proj{n % 20}"
        chats = project / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        turns = largest if n == 0 else _turns(rng, 400)
        (chats / f"{sid}.jsonl").write_bytes(b"".join(chat_lines(rng, sid, turns)))
        files += 1
        if rng.random() < 0.2:
            folder = project / "subagents" / sid
            folder.mkdir(parents=True, exist_ok=True)
            lines = chat_lines(rng, sid, _turns(rng, 40), agent="a1")
            (folder / "agent-a1.jsonl").write_bytes(b"".join(lines))
            meta = {"agentId": "a1", "agentType": "Explore", "parentSessionId": sid}
            (folder / "agent-a1.meta.json").write_text(json.dumps(meta))
            files += 1
    return files


def measure(home: Path, runs: int, agentsview: str | None) -> None:
    uri = f"qwen:{home}"
    print(f"\n== qwen: {uri}")

    def make() -> QwenBackend:
        return QwenBackend(str(home), uri)

    walk = p50(lambda: bare_walk(str(home)), runs)
    cold = p50(lambda: make().list(), runs)
    backend = make()
    listed = backend.list()
    warm = p50(backend.list, runs)
    print(
        f"sessions listed {len(listed)}; listing p50 cold {cold:.1f} ms, warm {warm:.1f} ms, "
        f"bare scandir+stat walk {walk:.1f} ms (wall)"
    )
    walk_c, warm_c = cpu(lambda: bare_walk(str(home)), runs), cpu(backend.list, runs)
    print(f"  CPU p50: listing warm {warm_c:.1f} ms, walk {walk_c:.1f} ms")
    sizes = {str(h.id): os.path.getsize(str(h.to_value()["source"]["path"])) for h in listed}
    largest = max(sizes, key=lambda s: sizes[s])
    c = time.process_time()
    total = sum(len(backend.inspect(str(h.id)).events) for h in listed)
    mapped = time.process_time() - c
    print(f"inspect all: {total} events in {mapped:.2f} s CPU ({total / mapped:,.0f} events/CPU-s)")
    n = len(backend.inspect(largest).events)
    rng = random.Random(3)
    seqs = iter([rng.randrange(n) for _ in range(runs)])
    win = p50(lambda: backend.inspect_window(largest, (s := next(seqs)) - 50, s + 50), runs)
    print(
        f"largest: {largest} ({sizes[largest] / 1e6:.1f} MB, {n} events): window ±50 {win:.2f} ms"
    )

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HOME=tmp, XDG_STATE_HOME=tmp, XDG_CACHE_HOME=tmp)
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

    binary, why = find_agentsview(agentsview)
    if binary is None:
        print(f"agentsview: {why}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Corpus(Path(tmp) / "no-claude", Path(tmp) / "no-codex", total, len(listed), 0)
        av = Agentsview(binary, Path(tmp), corpus)
        av.env["QWEN_PROJECTS_DIR"] = str(home / "projects")
        wall, used, summary = av.sync()
        print(
            f"agentsview sync ({why}): {wall:.2f} s wall, {used:.2f} s CPU; {summary}; "
            f"our first search {built:.2f} s ({wall / built:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--largest", type=int, default=2500, help="turns of the largest chat")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--agentsview", help="the agentsview binary (default: beside python)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "qwen"
        t = time.perf_counter()
        files = qwen_home(home, args.sessions, largest=args.largest)
        size = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
        print(
            f"generated {files} Qwen Code transcripts ({size / 1e6:.0f} MB) "
            f"in {time.perf_counter() - t:.1f} s"
        )
        measure(home, args.runs, args.agentsview)


if __name__ == "__main__":
    main()
