"""Property test (issue 26): random Qwen Code chats, well-formed and damaged, import into logs
that replay-validate and fold, and whose surface says what Qwen Code itself would send the model.

``qwen_context`` is a brute-force transcription of Qwen Code's own rule, written without the
importer: keep the valid conversation records, merge the fragments of a uuid, walk parentUuid
back from the last record (QwenLM/qwen-code packages/core/src/utils/transcript-records.ts), then
rebuild the model history along that chain (packages/core/src/services/session-api-history.ts).
Both sides are compared as the flat sequence of (role, part) the model would see."""

from __future__ import annotations

import copy
import json
import pathlib
import shutil
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.qwen.backend import QwenBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import checked
from tests.persistence.qwen.qwen_strategies import QWEN_SID, qwen_chat

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SKIPPED = {"session_artifact_event", "session_artifact_snapshot", "session_sources_snapshot"}


def _valid(r: dict[str, Any]) -> bool:
    return (
        isinstance(r.get("uuid"), str)
        and bool(r["uuid"])
        and (r.get("parentUuid") is None or isinstance(r.get("parentUuid"), str))
        and isinstance(r.get("sessionId"), str)
        and r.get("type") in ("user", "assistant", "tool_result", "system")
        and r.get("subtype") not in _SKIPPED
    )


def _is_bare_prompt(r: dict[str, Any] | None) -> str | None:
    if r is None or r["type"] != "user" or "subtype" in r:
        return None
    parts = r["message"].get("parts") or []
    if len(parts) == 1 and list(parts[0]) == ["text"]:
        return parts[0]["text"]
    return None


def qwen_context(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    valid = [r for r in records if _valid(r)]
    if not valid:
        return []
    fragments: dict[str, list[dict[str, Any]]] = {}
    for r in valid:
        fragments.setdefault(r["uuid"], []).append(r)
    chain: list[str] = []
    seen: set[str] = set()
    cur: str | None = valid[-1]["uuid"]
    while cur is not None and cur in fragments and cur not in seen:
        seen.add(cur)
        chain.append(cur)
        cur = fragments[cur][0].get("parentUuid")
    chain.reverse()
    history: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for uuid in chain:
        parts: list[Any] = []
        for f in fragments[uuid]:
            parts += f["message"].get("parts") or [] if isinstance(f.get("message"), dict) else []
        record = dict(fragments[uuid][0])
        if "message" in record:
            record["message"] = {**record["message"], "parts": parts}
        subtype = record.get("subtype")
        if record["type"] == "system":
            payload = record.get("systemPayload") or {}
            if subtype == "slash_command":
                items = payload.get("outputHistoryItems") or []
                if (
                    payload.get("phase") == "result"
                    and items
                    and all(i.get("type") == "assistant" for i in items)
                    and _is_bare_prompt(last) == payload.get("rawCommand")
                ):
                    history.pop()
                if last is not None and last["type"] == "user":
                    last = None
            elif subtype == "chat_compression" and payload.get("compressedHistory") is not None:
                history = copy.deepcopy(payload["compressedHistory"])
                last = None
            continue
        if "message" not in record or subtype in ("realtime_message", "code_mode_tool_result"):
            continue
        message = copy.deepcopy(record["message"])
        if subtype == "mid_turn_user_message" and history and history[-1]["role"] == "user":
            history[-1]["parts"] = history[-1].get("parts", []) + message.get("parts", [])
        else:
            history.append(message)
        last = record
    out: list[tuple[Any, ...]] = []
    for content in history:
        role = content["role"]
        for part in content.get("parts") or []:
            if "functionResponse" in part:
                fr = part["functionResponse"]
                out.append((role, "response", fr["id"], fr["response"]["output"]))
            elif "functionCall" in part:
                out.append((role, "call", part["functionCall"]["id"], part["functionCall"]["name"]))
            else:
                out.append((role, "thought" if part.get("thought") else "text", part["text"]))
    return out


def surface_parts(ins: Any) -> list[tuple[Any, ...]]:
    """The imported surface in the same terms (a placeholder stands for nothing)."""
    out: list[tuple[Any, ...]] = []
    for seq in fold_surface(ins.events).nodes:
        event = ins.events[seq]
        data = event.data()
        if event.type == "tool/result":
            block = data["message"]["content"][0]
            out.append(("user", "response", block["toolCallId"], block["content"][0]["text"]))
            continue
        message = data if event.type == "user/message" else data["message"]
        role = "user" if event.type == "user/message" else "model"
        for block in message["content"]:
            if block["type"] == "tool-call":
                out.append((role, "call", block["id"], block["name"]))
            else:
                kind = "thought" if block["type"] == "reasoning" else "text"
                out.append((role, kind, block["text"]))
    return out


@SETTINGS
@given(qwen_chat())
def test_qwen_imports_replay_and_match_qwen_codes_own_context(case):
    records, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        chats = home / "projects/-w/chats"
        chats.mkdir(parents=True)
        (chats / f"{QWEN_SID}.jsonl").write_bytes(body)
        backend = QwenBackend(str(home), "qwen:x")
        if not backend.list():  # no record names a session and a time
            assert not any("sessionId" in r and "timestamp" in r for r in records)
            return
        ins = backend.inspect(QWEN_SID)
        checked(ins, QWEN_SID)
        assert surface_parts(ins) == qwen_context(records), json.dumps(records)
    finally:
        shutil.rmtree(home)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = {
    "uuid": st.sampled_from(["a", "b", "c", ""]) | _JSON,
    "parentUuid": st.sampled_from([None, "a", "b", "zz"]) | _JSON,
    "type": st.sampled_from(["user", "assistant", "tool_result", "system"]) | _JSON,
    "subtype": st.sampled_from(
        [
            "chat_compression",
            "rewind",
            "slash_command",
            "custom_title",
            "agent_bootstrap",
            "realtime_message",
            "mid_turn_user_message",
            "session_model",
        ]
    )
    | _JSON,
    "message": st.fixed_dictionaries({"role": _JSON, "parts": st.lists(_JSON, max_size=3) | _JSON})
    | _JSON,
    "systemPayload": st.fixed_dictionaries(
        {"compressedHistory": _JSON, "history": _JSON, "customTitle": _JSON, "rawCommand": _JSON}
    )
    | _JSON,
    "timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "soon"]) | _JSON,
    "agentRound": _JSON,
    "usageMetadata": _JSON,
    "forkedFrom": _JSON,
}


@st.composite
def odd_records(draw: Any) -> list[dict[str, Any]]:
    head = {
        "uuid": "h",
        "parentUuid": None,
        "sessionId": QWEN_SID,
        "type": "user",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "parts": [{"text": "hi"}]},
    }
    out = [head]
    for _ in range(draw(st.integers(0, 12))):
        record: dict[str, Any] = {"sessionId": QWEN_SID}
        for key, values in _FIELDS.items():
            if draw(st.booleans()):
                record[key] = draw(values)
        out.append(record)
    return out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_records())
def test_fields_of_any_json_kind_never_break_an_import(records):
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        chats = home / "projects/-w/chats"
        chats.mkdir(parents=True)
        body = b"".join(json.dumps(r).encode() + b"\n" for r in records)
        (chats / f"{QWEN_SID}.jsonl").write_bytes(body)
        ins = QwenBackend(str(home), "qwen:x").inspect(QWEN_SID)
        checked(ins, QWEN_SID)
    finally:
        shutil.rmtree(home)
