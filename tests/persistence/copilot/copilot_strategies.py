"""Copilot CLI session logs for the importer tests: a hypothesis strategy of random logs (well-formed
records, malformed mapped records, sub-agents, compactions, clears; then damaged lines and a torn
tail) and a generator of long logs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tests.import_strategies import damage, line

SID = "00000000-0000-4000-8000-00000000c0de"
AGENTS = ("sa1", "toolu_7")


def stamp(i: int) -> str:
    return f"2026-01-03T{9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def start_record(sid: str = SID) -> dict[str, Any]:
    return {
        "type": "session.start",
        "data": {
            "sessionId": sid,
            "version": 1,
            "producer": "copilot-agent",
            "copilotVersion": "1.0.10",
            "startTime": stamp(0),
            "context": {"cwd": "/w"},
        },
        "id": "e0",
        "timestamp": stamp(0),
        "parentId": None,
    }


def _marked(record: dict[str, Any], agent: str | None, legacy: bool) -> dict[str, Any]:
    """Mark a record as a sub-agent's: the envelope agentId, or the older data.parentToolCallId."""
    if agent is not None:
        if legacy:
            record["data"]["parentToolCallId"] = agent
        else:
            record["agentId"] = agent
    return record


OPS = [
    "prompt",
    "prompt",
    "steer",
    "system",
    "developer",
    "assistant",
    "assistant",
    "calls",
    "result",
    "result",
    "turn_start",
    "turn_end",
    "compact_start",
    "compact_done",
    "compact_done",
    "compact_failed",
    "compact_bare",
    "clear",
    "abort",
    "unknown",
    "bad_assistant",
    "bad_result",
    "truncation",
]


@st.composite
def copilot_log(draw: Any) -> tuple[list[dict[str, Any]], bytes]:
    """(records in file order, file bytes): the records are what ``damage`` keeps."""
    records = [start_record()]
    calls: list[str] = []
    for i in range(1, draw(st.integers(0, 30)) + 1):
        op = draw(st.sampled_from(OPS))
        agent = draw(st.sampled_from([None, None, None, *AGENTS]))
        legacy = agent == "toolu_7"
        base: dict[str, Any] = {"type": "", "data": {}, "id": f"e{i}", "parentId": f"e{i - 1}"}
        if draw(st.integers(0, 9)):
            base["timestamp"] = stamp(i)
        data: dict[str, Any] = {}
        if op in ("prompt", "steer"):
            base["type"], data = "user.message", {"content": f"prompt {i} ✓"}
            if op == "steer":
                data["delivery"] = "steering"
        elif op in ("system", "developer"):
            base["type"] = "system.message"
            data = {"role": "system" if op == "system" else "developer", "content": f"sys {i}"}
        elif op == "assistant":
            base["type"], data = "assistant.message", {"messageId": f"m{i}", "content": f"a {i}"}
        elif op == "calls":
            ids = [f"c{i}-{k}" for k in range(draw(st.integers(1, 2)))]
            calls.extend(ids)
            requests = [{"toolCallId": c, "name": "bash", "arguments": {"n": i}} for c in ids]
            base["type"] = "assistant.message"
            data = {"messageId": f"m{i}", "content": "", "toolRequests": requests}
        elif op == "result":
            call = draw(st.sampled_from([*calls[-4:], "orphan"]))
            base["type"] = "tool.execution_complete"
            data = {
                "toolCallId": call,
                "success": draw(st.booleans()),
                "result": {"content": "out"},
            }
        elif op == "turn_start":
            base["type"], data = "assistant.turn_start", {"turnId": str(i)}
        elif op == "turn_end":
            base["type"], data = "assistant.turn_end", {"turnId": str(i)}
        elif op == "compact_start":
            base["type"], data = "session.compaction_start", {"trigger": "threshold"}
        elif op == "compact_done":
            base["type"] = "session.compaction_complete"
            data = {"success": True, "summaryContent": f"summary {i}"}
        elif op == "compact_failed":
            base["type"], data = "session.compaction_complete", {"success": False, "error": "x"}
        elif op == "compact_bare":
            base["type"], data = "session.compaction_complete", {"success": True}
        elif op == "clear":
            base["type"], data = "session.context_cleared", {"messagesCleared": 1}
            if draw(st.booleans()):
                data["initialMessage"] = f"fresh {i}"
        elif op == "abort":
            base["type"], data = "abort", {"reason": "user_initiated"}
        elif op == "unknown":
            base["type"], data = "session.quantum_flux", {"level": i}
        elif op == "bad_assistant":
            base["type"], data = "assistant.message", {"messageId": f"m{i}", "content": 5}
        elif op == "bad_result":
            base["type"], data = "tool.execution_complete", {"success": True}
        elif op == "truncation":
            base["type"], data = "session.truncation", {"messagesRemovedDuringTruncation": 1}
        base["data"] = data
        records.append(_marked(base, agent, legacy))
    body = damage(draw, [line(r) for r in records])
    return records, body


def owner(record: dict[str, Any]) -> str | None:
    """Written apart from the importer: which agent a generated record belongs to."""
    if "agentId" in record:
        return str(record["agentId"])
    return record["data"].get("parentToolCallId")


def long_log(sid: str, turns: int) -> bytes:
    """A main-agent log of 1 + 8 * ``turns`` records: per turn a prompt, a model call with a tool
    request and its result, a second call with an answer (a compaction every 500 turns)."""
    out = [json.dumps(start_record(sid))]
    n = 0

    def put(kind: str, data: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        out.append(
            json.dumps({"type": kind, "data": data, "id": f"e{n}", "timestamp": stamp(n % 80000)})
        )

    for t in range(turns):
        put("user.message", {"content": f"turn {t}: find the needle"})
        put("assistant.turn_start", {"turnId": str(2 * t)})
        put(
            "assistant.message",
            {
                "messageId": f"m{t}",
                "content": "",
                "toolRequests": [{"toolCallId": f"c{t}", "name": "grep", "arguments": {"q": t}}],
            },
        )
        put(
            "tool.execution_complete",
            {"toolCallId": f"c{t}", "success": True, "result": {"content": f"hit {t}"}},
        )
        put("assistant.turn_end", {"turnId": str(2 * t)})
        put("assistant.turn_start", {"turnId": str(2 * t + 1)})
        if t % 500 == 250:
            put("session.compaction_start", {})
            put("session.compaction_complete", {"success": True, "summaryContent": f"summary {t}"})
        put(
            "assistant.message", {"messageId": f"n{t}", "content": f"answer {t}", "outputTokens": 7}
        )
        put("assistant.turn_end", {"turnId": str(2 * t + 1)})
    return ("\n".join(out) + "\n").encode()
