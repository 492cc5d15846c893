"""Hypothesis strategies for Qwen Code chats (importers.md §10): random ``parentUuid`` trees the
way Qwen Code's recorder grows them (rewinds re-root the chain, metadata records hang off the
tail without moving it, a record may be written in contiguous fragments), compressions, slash
commands, records Qwen Code never sends, and the damage of import_strategies.damage."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.import_strategies import damage, line

QWEN_SID = "00000000-0000-4000-8000-00000000beef"


def _stamp(i: int) -> str:
    return f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def user_content(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


@st.composite
def qwen_chat(draw: Any) -> tuple[list[dict[str, Any]], bytes]:
    """A chat: the records in file order and the bytes written (maybe damaged)."""
    records: list[dict[str, Any]] = []
    tree: list[str] = []  # uuids of conversation records, in file order
    calls: list[str] = []
    tail: str | None = None
    for i in range(draw(st.integers(1, 30))):
        op = draw(
            st.sampled_from(
                [
                    "prompt",
                    "prompt",
                    "assistant",
                    "assistant",
                    "result",
                    "mid_turn",
                    "fragment",
                    "rewind",
                    "branch",
                    "compress",
                    "slash",
                    "slash",
                    "title",
                    "telemetry",
                    "realtime",
                    "artifact",
                    "invalid",
                ]
            )
        )
        uuid = f"r{i}"
        base: dict[str, Any] = {
            "uuid": uuid,
            "parentUuid": tail,
            "sessionId": QWEN_SID,
            "timestamp": _stamp(i),
            "cwd": "/w",
            "version": "0.5.0",
        }
        moves = True  # whether the record becomes the tail (Qwen's updateActiveTail)
        if op == "prompt":
            record = {**base, "type": "user", "message": user_content(f"prompt {i}")}
        elif op == "branch" and tree:
            parent = draw(st.sampled_from(tree[-8:]))
            record = {
                **base,
                "parentUuid": parent,
                "type": "user",
                "message": user_content(f"branch {i}"),
            }
        elif op == "assistant":
            parts: list[Any] = []
            if draw(st.booleans()):
                parts.append({"text": f"thinking {i}", "thought": True})
            parts.append({"text": f"answer {i}"})
            if draw(st.booleans()):
                calls.append(f"c{i}")
                parts.append({"functionCall": {"id": f"c{i}", "name": "f", "args": {"i": i}}})
            record = {
                **base,
                "type": "assistant",
                "model": "qwen3-coder",
                "message": {"role": "model", "parts": parts},
                "usageMetadata": {"promptTokenCount": i, "candidatesTokenCount": 1},
            }
        elif op == "result":
            call = draw(st.sampled_from([*calls, "unknown"]))
            response = {
                "functionResponse": {"id": call, "name": "f", "response": {"output": f"out {i}"}}
            }
            parts = [response]
            if draw(st.booleans()):
                parts.append({"text": f"extra {i}"})
            record = {**base, "type": "tool_result", "message": {"role": "user", "parts": parts}}
        elif op == "mid_turn":
            record = {
                **base,
                "type": "user",
                "subtype": "mid_turn_user_message",
                "message": user_content(f"also {i}"),
            }
        elif (
            op == "fragment"
            and tail is not None
            and records
            and records[-1].get("uuid") == tail
            and "message" in records[-1]
        ):
            last = records[-1]
            record = {
                **last,
                "timestamp": _stamp(i),
                "message": {**last["message"], "parts": [{"text": f"more {i}"}]},
            }
            records.append(record)
            continue
        elif op == "rewind":
            parent = draw(st.sampled_from([None, *tree[-10:]]))
            record = {
                **base,
                "parentUuid": parent,
                "type": "system",
                "subtype": "rewind",
                "systemPayload": {"truncatedCount": 1},
            }
        elif op == "compress":
            history: list[Any] = [user_content(f"summary {i}")]
            if draw(st.booleans()):
                history.append({"role": "model", "parts": [{"text": "Got it."}]})
            if draw(st.booleans()):
                history.append(user_content(f"prompt {draw(st.integers(0, i))}"))
            if draw(st.booleans()):
                history = []
            record = {
                **base,
                "type": "system",
                "subtype": "chat_compression",
                "systemPayload": {"info": {}, "compressedHistory": history},
            }
        elif op == "slash":
            command = "/about"
            if draw(st.booleans()):
                records.append({**base, "type": "user", "message": user_content(command)})
                tree.append(uuid)
                tail, uuid = uuid, f"r{i}s"
                base = {**base, "uuid": uuid, "parentUuid": tail}
            items = [{"type": draw(st.sampled_from(["assistant", "assistant", "info"]))}]
            record = {
                **base,
                "type": "system",
                "subtype": "slash_command",
                "systemPayload": {
                    "phase": "result",
                    "rawCommand": draw(st.sampled_from([command, command, "/other"])),
                    "outputHistoryItems": items,
                },
            }
        elif op == "title":
            moves = draw(st.booleans())  # an explicit rename moves the tail, a re-anchor not
            record = {
                **base,
                "type": "system",
                "subtype": "custom_title",
                "systemPayload": {"customTitle": f"title {i % 3}", "titleSource": "manual"},
            }
        elif op == "telemetry":
            record = {**base, "type": "system", "subtype": "ui_telemetry", "systemPayload": {}}
        elif op == "realtime":
            record = {
                **base,
                "type": "user",
                "subtype": "realtime_message",
                "message": user_content(f"spoken {i}"),
            }
        elif op == "artifact":
            moves = False
            record = {**base, "type": "system", "subtype": "session_artifact_event"}
        else:  # invalid: Qwen Code skips a record without a uuid
            record = {k: v for k, v in base.items() if k != "uuid"}
            record.update(type="user", message=user_content(f"lost {i}"))
            moves = False
        records.append(record)
        if moves and "uuid" in record:
            tree.append(str(record["uuid"]))
            tail = str(record["uuid"])
    return records, damage(draw, [line(r) for r in records])
