"""Property test (issue 26): for random Gemini CLI sessions, well-formed and damaged, the imported
log replay-validates and folds, and its surface equals, event data for event data, the units of
the message list a brute-force replay of Gemini CLI's own loader rebuilds (importers.md §7.3–§7.4).
Both the replay and the units are written here again, from the document, with none of the
importer's diffing: placeholders, which only stand where history was removed, are left out."""

from __future__ import annotations

import json
import pathlib
import shutil
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.gemini.backend import GeminiBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import checked
from tests.persistence.gemini.gemini_strategies import SID, gemini_session
from tests.persistence.importing.test_import_window import assert_windows, windows

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def loader(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``loadConversationRecord``: an ordered map of messages by id."""
    messages: dict[str, dict[str, Any]] = {}
    for r in records:
        s = r.get("$set")
        if isinstance(r.get("$rewindTo"), str):
            keys = list(messages)
            cut = keys.index(r["$rewindTo"]) if r["$rewindTo"] in messages else 0
            for key in keys[cut:]:
                del messages[key]
        elif isinstance(r.get("id"), str):
            messages[r["id"]] = r
        elif isinstance(s, dict) and isinstance(s.get("messages"), list):
            messages = {}
            for m in s["messages"]:
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    messages[m["id"]] = m
    return list(messages.values())


def parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"text": content}]
    return [{"text": p} if isinstance(p, str) else p for p in content]


def block(part: dict[str, Any]) -> dict[str, Any] | None:
    if "text" in part:
        if not part["text"]:
            return None
        return {"type": "reasoning" if part.get("thought") else "text", "text": part["text"]}
    if part.get("inlineData", {}).get("mimeType", "").startswith("image/"):
        return {"type": "image", "attachment": {"inlineData": part["inlineData"]}}
    return {"type": "gemini-part", "part": part}


def call(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool-call",
        "id": c["id"],
        "name": c["name"],
        "arguments": json.dumps(c.get("args", {}), separators=(",", ":")),
    }


def result(call_id: str, output: str, error: bool, meta: dict[str, Any] | None) -> dict[str, Any]:
    inner: dict[str, Any] = {
        "type": "tool-result",
        "toolCallId": call_id,
        "content": [{"type": "text", "text": output}],
    }
    if error:
        inner["isError"] = True
    body: dict[str, Any] = {
        "message": {
            "role": "user",
            "content": [inner],
            "source": {"kind": "tool", "callId": call_id},
        }
    }
    if meta:
        body["meta"] = meta
    return body


def units(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The surface of a message list: each message's unit, in order (§7.3's table)."""
    out: list[tuple[str, dict[str, Any]]] = []
    answered: set[str] = set()
    for m in messages:
        slots: list[tuple[str, dict[str, Any]]] = []
        if m["type"] == "user":
            ps = parts(m["content"])
            responses = [p["functionResponse"] for p in ps if "functionResponse" in p]
            blocks = [b for p in ps if "functionResponse" not in p if (b := block(p))]
            for r in responses:
                if r["id"] not in answered:
                    slots.append(
                        ("tool/result", result(r["id"], r["response"]["output"], False, None))
                    )
            if blocks:
                text = "".join(b["text"] for b in blocks if b["type"] == "text").lstrip()
                source: dict[str, Any] = {"kind": "user"}
                if responses:
                    source = {"kind": "plugin", "plugin": "gemini-cli"}
                elif text.startswith("<session_context>"):
                    source = {"kind": "plugin", "plugin": "gemini-cli", "context": True}
                elif text.startswith("<state_snapshot>"):
                    source = {"kind": "plugin", "plugin": "gemini-cli", "compactSummary": True}
                slots.append(
                    ("user/message", {"role": "user", "content": blocks, "source": source})
                )
        elif m["type"] == "gemini":
            ps = parts(m["content"])
            modern = any("functionCall" in p or p.get("thought") for p in ps)
            calls = [call(p["functionCall"]) for p in ps if "functionCall" in p]
            body = [b for p in ps if "functionCall" not in p if (b := block(p))]
            if not modern:
                thoughts = [
                    {"type": "reasoning", "text": f"**{t['subject']}** {t['description']}"}
                    for t in m.get("thoughts") or []
                ]
                body = thoughts + body
            results = []
            for c in m.get("toolCalls") or []:
                if c["id"] not in {x["id"] for x in calls}:
                    calls.append(call(c))
                if c["result"] is not None:
                    output = c["result"][0]["functionResponse"]["response"]["output"]
                    error = c["status"] == "error"
                    results.append(
                        ("tool/result", result(c["id"], output, error, {"status": c["status"]}))
                    )
                    answered.add(c["id"])
            source = {"kind": "model", "provider": "google", "model": m.get("model", "unknown")}
            for content in (body, calls):
                if content:
                    message = {"role": "assistant", "content": content, "source": source}
                    slots.append(("assistant/message", {"message": message}))
            slots += results
        for k, (etype, body) in enumerate(slots):
            mid = m["id"] if k == 0 else f"{m['id']}#{k}"
            if etype == "user/message":
                out.append((etype, {"id": mid, **body}))
            else:
                out.append((etype, {**body, "message": {"id": mid, **body["message"]}}))
    return out


def imported_surface(backend: GeminiBackend) -> list[tuple[str, dict[str, Any]]]:
    ins = backend.inspect(SID)
    checked(ins, SID)
    out = []
    for seq in fold_surface(ins.events).nodes:
        e = ins.events[seq]
        d = e.data()
        if e.type == "user/message" and d["source"].get("placeholder"):
            continue
        out.append(
            (e.type, {k: v for k, v in d.items() if k not in ("import", "turn", "step", "usage")})
        )
    return out


@SETTINGS
@given(gemini_session())
def test_gemini_imports_replay_and_match_the_brute_force_surface(case):
    records, body = case
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        chats = home / "tmp/w/chats"
        chats.mkdir(parents=True)
        (chats / "session-2026-01-01T00-00-prop.jsonl").write_bytes(body)
        backend = GeminiBackend(str(home), "gemini:x")
        [header] = backend.list()
        assert header.id == SID
        assert imported_surface(backend) == units(loader(records))
    finally:
        shutil.rmtree(home)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gemini_session(), gemini_session(), st.data())
def test_gemini_windows_equal_the_full_inspect_before_and_after_growth(case, extra, data):
    """importers.md §3.4 on random sessions: every window is the slice of a full inspect at the
    same revision, also after the file grows (test_import_window's harness)."""
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        path = home / "tmp/w/chats/session-2026-01-01T00-00-prop.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(case[1])
        backend = GeminiBackend(str(home), "gemini:x")
        backend.list()
        n = len(backend.inspect(SID).events)
        assert_windows(backend, SID, windows(data.draw, n))
        more = b"".join(json.dumps(r).encode() + b"\n" for r in extra[0][1:])
        with open(path, "ab") as f:
            f.write(b"\n" + more)  # ends a torn tail (if any) as a bad line, then appends
        n = len(backend.inspect(SID).events)
        assert_windows(backend, SID, windows(data.draw, n))
    finally:
        shutil.rmtree(home)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = ["id", "type", "content", "toolCalls", "thoughts", "tokens", "model", "timestamp"]


@st.composite
def odd_record(draw: Any) -> dict[str, Any]:
    """A record of a known kind whose members have any JSON shape."""
    kind = draw(st.sampled_from(["message", "set", "rewind", "meta"]))
    if kind == "rewind":
        return {"$rewindTo": draw(st.sampled_from(["m0", "m1", "x"]) | JSON)}
    if kind == "set":
        return {
            "$set": draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "messages": st.lists(odd_record() | JSON, max_size=3),
                        "summary": JSON,
                    },
                )
                | JSON
            )
        }
    if kind == "meta":
        return {
            "sessionId": SID,
            "projectHash": "h",
            "messages": draw(st.lists(odd_record() | JSON, max_size=2) | JSON),
            "summary": draw(JSON),
        }
    record: dict[str, Any] = {"id": draw(st.sampled_from(["m0", "m1", "m2"]))}
    record["type"] = draw(st.sampled_from(["user", "gemini", "info"]) | JSON)
    for name in FIELDS[2:]:
        if draw(st.booleans()):
            record[name] = draw(
                JSON
                | st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "text": JSON,
                            "thought": JSON,
                            "functionCall": JSON,
                            "functionResponse": JSON,
                            "id": JSON,
                            "name": JSON,
                            "result": JSON,
                            "status": JSON,
                        },
                    ),
                    max_size=3,
                )
            )
    return record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(odd_record(), max_size=12))
def test_records_of_any_shape_import_into_valid_logs(records):
    """A record of the wrong shape is never a failed read: the log replay-validates and folds."""
    home = pathlib.Path(tempfile.mkdtemp())
    try:
        chats = home / "tmp/w/chats"
        chats.mkdir(parents=True)
        head = {"sessionId": SID, "projectHash": "h", "startTime": "2026-01-01T00:00:00.000Z"}
        body = b"".join(json.dumps(r).encode() + b"\n" for r in [head, *records])
        (chats / "session-2026-01-01T00-00-prop.jsonl").write_bytes(body)
        backend = GeminiBackend(str(home), "gemini:x")
        backend.list()
        ins = backend.inspect(SID)
        checked(ins, SID)
    finally:
        shutil.rmtree(home)
