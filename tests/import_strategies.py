"""Hypothesis strategies for native transcripts: random Claude Code transcripts and Codex rollouts,
well-formed or damaged, with the records they were built from (the importer tests share them)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

SID = "prop"
CODEX_SID = "00000000-0000-7000-8000-00000000abcd"


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def damage(draw: Any, lines: list[bytes]) -> bytes:
    """Interleave bad lines, NUL padding and fused stubs; maybe end with a torn tail. None of
    these adds or removes a record."""
    out = []
    for raw in lines:
        kind = draw(st.sampled_from(["clean"] * 6 + ["garbage", "nul", "fused", "blank"]))
        if kind == "garbage":
            out.append(b"garbage {not json")
        elif kind == "nul":
            raw = b"\0\0" + raw + b"\0"
        elif kind == "fused":
            raw = b'{"type":"us' + raw
        elif kind == "blank":
            out.append(b"\0\0\0")
        out.append(raw)
    body = b"\n".join(out) + b"\n"
    if draw(st.booleans()):
        body += b'{"type":"user","uuid":"torn","message":{"content":"never'
    return body


# -- Claude ------------------------------------------------------------------------------


@st.composite
def claude_transcript(draw: Any) -> tuple[list[dict[str, Any]], bytes]:
    records: list[dict[str, Any]] = []
    uuids: list[str] = []
    calls: list[str] = []
    message_id = "m0"
    for i in range(draw(st.integers(1, 25))):
        op = draw(
            st.sampled_from(
                [
                    "prompt",
                    "prompt",
                    "assistant",
                    "assistant",
                    "result",
                    "progress",
                    "compact",
                    "meta",
                    "title",
                    "dup",
                    "interrupt",
                ]
            )
        )
        uuid = f"r{i}"
        last = uuids[-1] if uuids else None
        base = {
            "uuid": uuid,
            "parentUuid": last,
            "sessionId": SID,
            "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
            "cwd": "/w",
        }
        if op == "prompt":
            parent = draw(st.sampled_from([last, None, "dangling"] + uuids[-6:]))
            records.append(
                {
                    **base,
                    "type": "user",
                    "parentUuid": parent,
                    "message": {"role": "user", "content": f"prompt {i}"},
                }
            )
        elif op == "assistant":
            if draw(st.booleans()):
                message_id = f"m{i}"
            blocks: list[Any] = [{"type": "text", "text": f"answer {i}"}]
            if draw(st.booleans()):
                calls.append(f"t{i}")
                blocks.append({"type": "tool_use", "id": f"t{i}", "name": "X", "input": {"i": i}})
            records.append(
                {
                    **base,
                    "type": "assistant",
                    "message": {
                        "id": message_id,
                        "role": "assistant",
                        "model": "m",
                        "content": blocks,
                    },
                }
            )
        elif op == "result":
            call = draw(st.sampled_from(calls + ["unknown"]))
            content: list[Any] = [{"type": "tool_result", "tool_use_id": call, "content": "out"}]
            if draw(st.booleans()):
                content.append({"type": "text", "text": "extra"})
            records.append(
                {**base, "type": "user", "message": {"role": "user", "content": content}}
            )
        elif op == "progress":
            records.append({**base, "type": "progress", "data": {}})
        elif op == "compact":
            records.append(
                {**base, "type": "system", "subtype": "compact_boundary", "parentUuid": None}
            )
            uuids.append(uuid)
            if draw(st.booleans()):
                uuid = f"r{i}s"
                records.append(
                    {
                        **base,
                        "uuid": uuid,
                        "parentUuid": f"r{i}",
                        "type": "user",
                        "isCompactSummary": True,
                        "message": {"role": "user", "content": f"summary {i}"},
                    }
                )
        elif op == "meta":
            records.append(
                {
                    **base,
                    "type": "user",
                    "isMeta": True,
                    "message": {"role": "user", "content": "meta"},
                }
            )
        elif op == "interrupt":
            records.append(
                {
                    **base,
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": "[Request interrupted by user]"}],
                    },
                }
            )
        elif op == "title":
            records.append({"type": "custom-title", "sessionId": SID, "customTitle": f"t{i}"})
            continue
        elif op == "dup" and records:
            records.append(draw(st.sampled_from(records)))
            continue
        uuids.append(uuid)
    return records, damage(draw, [line(r) for r in records])


def wrap(kind: str, payload: dict[str, Any], i: int) -> dict[str, Any]:
    return {
        "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
        "type": kind,
        "payload": payload,
    }


def message(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


@st.composite
def codex_rollout(draw: Any) -> tuple[list[dict[str, Any]], bytes]:
    records = [
        wrap("session_meta", {"id": CODEX_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}, 0)
    ]
    calls: list[str] = []
    for i in range(1, draw(st.integers(1, 25))):
        op = draw(
            st.sampled_from(
                [
                    "user",
                    "user",
                    "assistant",
                    "context",
                    "developer",
                    "call",
                    "output",
                    "rollback",
                    "compact",
                    "legacy",
                    "task",
                    "event",
                ]
            )
        )
        if op == "user":
            records.append(wrap("response_item", message("user", f"prompt {i}"), i))
        elif op == "assistant":
            records.append(wrap("response_item", message("assistant", f"answer {i}"), i))
        elif op == "context":
            records.append(wrap("response_item", message("user", "<environment_context>x"), i))
        elif op == "developer":
            records.append(wrap("response_item", message("developer", "rules"), i))
        elif op == "call":
            calls.append(f"c{i}")
            records.append(
                wrap(
                    "response_item",
                    {"type": "function_call", "name": "f", "arguments": "{}", "call_id": f"c{i}"},
                    i,
                )
            )
        elif op == "output":
            call = draw(st.sampled_from(calls + ["nope"]))
            records.append(
                wrap(
                    "response_item",
                    {"type": "function_call_output", "call_id": call, "output": "ok"},
                    i,
                )
            )
        elif op == "rollback":
            records.append(
                wrap(
                    "event_msg",
                    {"type": "thread_rolled_back", "num_turns": draw(st.integers(0, 3))},
                    i,
                )
            )
        elif op == "compact":
            history = [
                message(draw(st.sampled_from(["user", "assistant", "developer"])), f"kept {i}.{k}")
                for k in range(draw(st.integers(0, 3)))
            ]
            records.append(wrap("compacted", {"message": "", "replacement_history": history}, i))
        elif op == "legacy":
            records.append(wrap("compacted", {"message": f"summary {i}"}, i))
        elif op == "task":
            kind = draw(st.sampled_from(["task_started", "task_complete", "turn_aborted"]))
            records.append(wrap("event_msg", {"type": kind}, i))
        else:
            records.append(wrap("event_msg", {"type": "token_count"}, i))
    return records, damage(draw, [line(r) for r in records])
