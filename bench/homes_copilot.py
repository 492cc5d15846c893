"""Copilot CLI importer measurements (issue 26, importers.md §9): a generated ``$COPILOT_HOME``
with N sessions (heavy-tailed sizes, sub-agents inside their parent's log, background
compactions, ``workspace.yaml`` titles), measured as ``bench.importers`` measures the other
homes: listing p50 cold and warm against a bare ``scandir`` + ``stat`` walk, ``inspect`` of every
log, ``readEvent`` ±50 in the largest, the first search (the index build) in events/s, and the
server's RSS. Then agentsview's offline ``sync`` of the same home, when it is installed (``make
bench-deps``; it reads Copilot CLI from ``$COPILOT_DIR``).

    python -m bench.homes_copilot --sessions 1000
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
from bench.importers import _stamp, _text, _turns, measure
from dsh_query_server.persistence.copilot.backend import CopilotBackend


class _Log:
    """One events.jsonl being written: envelopes with ids, parent links and rising times."""

    def __init__(self, sid: str) -> None:
        self.sid = sid
        self.lines: list[bytes] = []
        self.n = 0

    def put(self, kind: str, data: dict[str, object], agent: str | None = None) -> None:
        self.n += 1
        event: dict[str, object] = {
            "type": kind,
            "data": data,
            "id": f"{self.sid[:8]}-{self.n:06d}",
            "timestamp": _stamp(self.n),
            "parentId": f"{self.sid[:8]}-{self.n - 1:06d}" if self.n > 1 else None,
        }
        if agent is not None:
            event["agentId"] = agent
        self.lines.append(json.dumps(event, separators=(",", ":")).encode())


def _turn(log: _Log, rng: random.Random, t: int, agent: str | None = None) -> None:
    """A prompt, a model call with a tool request and its result, a call with the answer."""
    prompt = _text(rng, rng.randint(5, 40))
    log.put("user.message", {"content": prompt, "transformedContent": prompt}, agent)
    log.put("assistant.turn_start", {"turnId": str(2 * t), "model": "claude-sonnet-4.5"}, agent)
    call = f"call_{t:06d}" if agent is None else f"{agent}_{t:04d}"
    request = {"toolCallId": call, "name": "bash", "arguments": {"command": "ls"}}
    log.put(
        "assistant.message",
        {
            "messageId": f"m{t}",
            "content": "",
            "reasoningText": _text(rng, 20),
            "toolRequests": [request],
            "outputTokens": 40,
        },
        agent,
    )
    log.put("tool.execution_start", {"toolCallId": call, "toolName": "bash"}, agent)
    result = {"content": _text(rng, rng.randint(10, 200))}
    log.put(
        "tool.execution_complete", {"toolCallId": call, "success": True, "result": result}, agent
    )
    log.put("assistant.turn_end", {"turnId": str(2 * t)}, agent)
    log.put("assistant.turn_start", {"turnId": str(2 * t + 1)}, agent)
    answer = {"messageId": f"n{t}", "content": _text(rng, rng.randint(10, 80)), "outputTokens": 60}
    log.put("assistant.message", answer, agent)
    log.put("assistant.turn_end", {"turnId": str(2 * t + 1)}, agent)


def copilot_home(root: Path, sessions: int, seed: int = 13, largest: int = 2500) -> str:
    """A ``~/.copilot`` with ``sessions`` sessions under ``session-state/``; the first has
    ``largest`` turns. Returns its id."""
    rng = random.Random(seed)
    biggest = ""
    for k in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        biggest = biggest or sid
        folder = root / "session-state" / sid
        folder.mkdir(parents=True)
        log = _Log(sid)
        log.put(
            "session.start",
            {
                "sessionId": sid,
                "version": 1,
                "producer": "copilot-agent",
                "copilotVersion": "1.0.10",
                "startTime": _stamp(0),
                "context": {"cwd": f"/work/proj{k % 10}"},
                "selectedModel": "claude-sonnet-4.5",
            },
        )
        turns = max(largest if k == 0 else _turns(rng, 400), 1)
        compact = rng.random() < 0.3
        for t in range(turns):
            if compact and t == turns // 2 and t:
                log.put("session.compaction_start", {"trigger": "threshold"})
                _turn(log, rng, t)
                summary = {"success": True, "summaryContent": "<overview>" + _text(rng, 60)}
                log.put("session.compaction_complete", summary)
                continue
            _turn(log, rng, t)
            if t == 0 and rng.random() < 0.2:
                agent = f"sa{k:04d}"
                log.put("subagent.started", {"toolCallId": agent, "agentName": "explore"}, agent)
                for a in range(_turns(rng, 40) or 1):
                    _turn(log, rng, a, agent)
        log.put("session.shutdown", {"shutdownType": "routine", "modelMetrics": {}})
        (folder / "events.jsonl").write_bytes(b"\n".join(log.lines) + b"\n")
        title = _text(rng, 4)
        (folder / "workspace.yaml").write_text(
            f"id: {sid}\ncwd: /work/proj{k % 10}\nsummary: {title}\nsummary_count: 0\n"
            f"created_at: {_stamp(0)}\nupdated_at: {_stamp(5)}\n"
        )
    return biggest


def agentsview_sync(home: Path, tmp: Path, given: str | None) -> None:
    """agentsview's offline sync of the same home (its HOME and data dir inside ``tmp``)."""
    binary, version = find_agentsview(given)
    if binary is None:
        print(f"\nagentsview: NOT MEASURED — {version}")
        return
    av_home = tmp / "av-home"
    av_home.mkdir(mode=0o700)
    env = dict(
        os.environ,
        HOME=str(av_home),
        XDG_CONFIG_HOME=str(av_home),
        XDG_DATA_HOME=str(av_home),
        XDG_CACHE_HOME=str(av_home),
        XDG_STATE_HOME=str(av_home),
        AGENTSVIEW_DATA_DIR=str(tmp / "av-data"),
        COPILOT_DIR=str(home),
        AGENTSVIEW_TELEMETRY_ENABLED="0",
        AGENTSVIEW_DISABLE_UPDATE_CHECK="1",
        AGENTSVIEW_NO_BROWSER="1",
        AGENTSVIEW_NO_DAEMON="1",
    )
    t, c = time.perf_counter(), children_cpu()
    out = subprocess.run([binary, "sync"], env=env, capture_output=True, text=True, timeout=3600)
    wall, cpu = time.perf_counter() - t, children_cpu() - c
    summary = [
        x.strip() for x in out.stdout.splitlines() if x.startswith(("Sync complete", "Database:"))
    ]
    print(f"\nagentsview {version}: sync exit {out.returncode}, {wall:.2f} s wall, {cpu:.2f} s CPU")
    print("  " + ("; ".join(summary) or out.stderr.strip()[-300:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--largest", type=int, default=2500, help="turns of the largest log")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--agentsview", help="the agentsview binary (default: the bench venv's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "copilot"
        t = time.perf_counter()
        copilot_home(home, args.sessions, largest=args.largest)
        size = sum(p.stat().st_size for p in home.rglob("events.jsonl"))
        # a real home's logs are mostly old: a file younger than the listing's proof margin
        # (importing/survey.py) is read again by every listing, as it must be
        old = time.time() - 3600
        for path in home.rglob("*"):
            os.utime(path, (old, old))
        print(
            f"generated {args.sessions} Copilot CLI sessions ({size / 1e6:.0f} MB of events.jsonl)"
            f" in {time.perf_counter() - t:.1f} s"
        )
        uri = f"copilot:{home}"
        measure("copilot", uri, str(home), lambda: CopilotBackend(str(home), uri), args.runs)
        agentsview_sync(home, Path(tmp), args.agentsview)


if __name__ == "__main__":
    main()
