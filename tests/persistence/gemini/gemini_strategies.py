"""Hypothesis strategies for Gemini CLI session files: random record streams as Gemini CLI's
writers produce them (0.39 and 0.44 JSONL, growth, rewinds, rollbacks, compactions, masking,
resume rewrites, notices), well-formed or damaged, with the records they were built from."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from tests.import_strategies import damage

SID = "prop"

OPS = [
    "prompt",
    "prompt",
    "response",
    "response",
    "grow",
    "grow",
    "answer",
    "tokens",
    "notice",
    "rewind",
    "rollback",
    "compact",
    "mask",
    "resume",
    "edit",
    "summary",
    "last-updated",
    "orphan",
]


def stamp(i: int) -> str:
    return f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def response_part(call_id: str, text: str) -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": "tool", "response": {"output": text}}}


@st.composite
def gemini_session(draw: Any) -> tuple[list[dict[str, Any]], bytes]:
    """Records and the file's bytes. ``messages`` mirrors Gemini CLI's in-memory list so that
    re-records, rewinds and ``$set`` lists name real ids, as the writer's do."""
    records: list[dict[str, Any]] = [
        {"sessionId": SID, "projectHash": "h", "startTime": stamp(0), "lastUpdated": stamp(0)}
    ]
    messages: dict[str, dict[str, Any]] = {}
    answered: list[str] = []  # call ids with a toolCalls result, for response messages
    n = 0

    def put(message: dict[str, Any]) -> None:
        messages[message["id"]] = message
        records.append(message)

    for i in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(OPS))
        last = list(messages.values())[-1] if messages else None
        if op == "prompt":
            n += 1
            text = draw(
                st.sampled_from(
                    [
                        f"prompt {i}",
                        f"/cmd {i}",
                        f"<session_context>ctx {i}",
                        f"<state_snapshot>s{i}",
                        "",
                    ]
                )
            )
            content: Any = [{"text": text}] if draw(st.booleans()) else text
            put({"id": f"u{n}", "timestamp": stamp(i), "type": "user", "content": content})
        elif op == "response":
            n += 1
            message: dict[str, Any] = {
                "id": f"g{n}",
                "timestamp": stamp(i),
                "type": "gemini",
                "content": draw(st.sampled_from([f"answer {i}", ""])),
                "thoughts": [{"subject": "S", "description": f"d{i}", "timestamp": stamp(i)}]
                if draw(st.booleans())
                else [],
                "tokens": {"input": i, "output": 1, "cached": 0, "total": i + 1}
                if draw(st.booleans())
                else None,
                "model": "gemini-x",
            }
            if draw(st.booleans()):  # the part form a $set or a resume writes
                parts: list[Any] = [{"text": f"thinking {i}", "thought": True}]
                if message["content"]:
                    parts.append({"text": message["content"]})
                if draw(st.booleans()):
                    parts.append(
                        {"functionCall": {"id": f"f{i}", "name": "tool", "args": {"i": i}}}
                    )
                message["content"] = parts
            put(message)
        elif op == "grow" and last is not None and last["type"] == "gemini":
            calls = list(last.get("toolCalls") or [])
            call_id = f"c{i}"
            result = [response_part(call_id, f"out {i}")] if draw(st.booleans()) else None
            calls.append(
                {
                    "id": call_id,
                    "name": "tool",
                    "args": {"k": i},
                    "result": result,
                    "status": draw(st.sampled_from(["success", "error"])),
                    "timestamp": stamp(i),
                }
            )
            if result is not None:
                answered.append(call_id)
            put({**last, "toolCalls": calls})
        elif op == "tokens" and last is not None and last["type"] == "gemini":
            put({**last, "tokens": {"input": 7, "output": 7, "cached": 7, "total": 21}})
        elif op == "answer" and answered:
            n += 1
            ids = draw(st.lists(st.sampled_from(answered), min_size=1, max_size=2, unique=True))
            parts = [response_part(c, f"out {c}") for c in ids]
            if draw(st.booleans()):
                parts.append({"inlineData": {"mimeType": "image/png", "data": "AAAA"}})
            put({"id": f"r{n}", "timestamp": stamp(i), "type": "user", "content": parts})
        elif op == "orphan":
            n += 1
            put(
                {
                    "id": f"o{n}",
                    "timestamp": stamp(i),
                    "type": "user",
                    "content": [response_part(f"never{i}", "lost")],
                }
            )
        elif op == "notice":
            n += 1
            kind = draw(st.sampled_from(["info", "error", "warning", "note"]))
            put({"id": f"n{n}", "timestamp": stamp(i), "type": kind, "content": f"notice {i}"})
        elif op == "rewind":
            target = draw(st.sampled_from([*messages, "missing"]))
            records.append({"$rewindTo": target})
            keys = list(messages)
            cut = keys.index(target) if target in messages else 0
            for key in keys[cut:]:
                del messages[key]
        elif op == "rollback" and messages:
            k = draw(st.integers(1, len(messages)))
            kept = list(messages.values())[:-k]
            records.append({"$set": {"messages": kept, "lastUpdated": stamp(i)}})
            messages = {m["id"]: m for m in kept}
        elif op == "compact":
            n += 1
            keep = draw(st.integers(0, len(messages)))
            kept = list(messages.values())[len(messages) - keep :]
            head = [
                {
                    "id": f"s{n}",
                    "timestamp": stamp(i),
                    "type": "user",
                    "content": [{"text": f"<state_snapshot>summary {i}"}],
                },
                {
                    "id": f"k{n}",
                    "timestamp": stamp(i),
                    "type": "gemini",
                    "content": [{"text": "Got it."}],
                },
            ]
            new = head + kept
            if draw(st.booleans()) and messages:
                new = [list(messages.values())[0], *new]  # the environment context stays first
            new = list({m["id"]: m for m in new}.values())
            records.append({"$set": {"messages": new, "lastUpdated": stamp(i)}})
            messages = {m["id"]: m for m in new}
        elif op == "mask":
            changed = []
            for m in messages.values():
                calls = [dict(c) for c in m.get("toolCalls") or []]
                for c in calls:
                    if c.get("result") is not None and draw(st.booleans()):
                        c["result"] = [response_part(c["id"], f"[masked {i}]")]
                changed.append({**m, "toolCalls": calls} if calls else m)
            records.append({"$set": {"messages": changed, "lastUpdated": stamp(i)}})
            messages = {m["id"]: m for m in changed}
        elif op == "resume":
            records.append({"$set": {"sessionId": SID}})
            new = []
            for m in messages.values():
                if m["type"] == "gemini" and isinstance(m["content"], str):
                    m = {**m, "content": [{"text": m["content"]}]}
                new.append(m)
            records.append({"$set": {"messages": new, "lastUpdated": stamp(i)}})
            messages = {m["id"]: m for m in new}
        elif op == "edit" and messages:
            target = draw(st.sampled_from(list(messages.values())))
            put({**target, "content": f"edited {i}"})
        elif op == "summary":
            records.append({"$set": {"summary": f"title {i}"}})
        elif op == "last-updated":
            records.append({"$set": {"lastUpdated": stamp(i)}})
    lines = [json.dumps(r, separators=(",", ":")).encode() for r in records]
    if draw(st.booleans()):
        return records, damage(draw, lines)
    return records, b"\n".join(lines) + b"\n"
