"""Property test (issue 26): random OpenCode sessions, well-formed and damaged, written to
``opencode.db`` or to legacy files, import into logs that replay-validate and fold, and whose
final surface is the context a brute-force model of OpenCode's own rule gives. The model below
rebuilds the request OpenCode would send next from the stored records alone (revert cleanup,
then ``filterCompacted``, then ``toModelMessages``, after sst/opencode
packages/opencode/src/session/{revert,message-v2}.ts), with none of the importer's copies or
spans."""

from __future__ import annotations

import json
import pathlib
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.persistence.opencode.backend import OpenCodeBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import checked
from tests.persistence.opencode.opencode_helpers import write_db, write_legacy

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T = 1767225600000
SID = "ses_property"
CLEARED = "[Old tool result content cleared]"


# -- the brute-force model of OpenCode's next request ---------------------------------------


def _user_blocks(parts: list[dict[str, Any]]) -> list[Any]:
    blocks: list[Any] = []
    for p in parts:
        kind = p.get("type")
        if kind == "text" and not p.get("ignored"):
            blocks.append({"type": "text", "text": p["text"]})
        elif kind == "file" and p["mime"] not in ("text/plain", "application/x-directory"):
            file = {"url": p["url"], "mime": p["mime"], "filename": p["filename"]}
            if p["mime"].startswith("image/"):
                blocks.append({"type": "image", "attachment": file})
            else:
                blocks.append({"type": "file", **file})
        elif kind == "compaction":
            blocks.append({"type": "text", "text": "What did we do so far?"})
        elif kind == "subtask":
            blocks.append({"type": "text", "text": "The following tool was executed by the user"})
    return blocks


def _assistant_items(parts: list[dict[str, Any]]) -> list[Any]:
    groups: list[list[dict[str, Any]]] = [[]]
    for p in parts:
        if p.get("type") == "step-start":
            groups.append([])
        else:
            groups[-1].append(p)
    items: list[Any] = []
    for group in groups:
        blocks: list[Any] = []
        results: list[Any] = []
        for p in group:
            kind = p.get("type")
            if kind in ("text", "reasoning"):
                blocks.append({"type": kind, "text": p["text"]})
            elif kind == "tool":
                state = p["state"]
                blocks.append(
                    {
                        "type": "tool-call",
                        "id": p["callID"],
                        "name": p["tool"],
                        "arguments": state["input"],
                    }
                )
                if state["status"] == "completed":
                    out = CLEARED if state["time"].get("compacted") else state["output"]
                    results.append(("tool", p["callID"], [{"type": "text", "text": out}], False))
                elif state["status"] == "error":
                    results.append(
                        ("tool", p["callID"], [{"type": "text", "text": state["error"]}], True)
                    )
        if blocks:
            items.append(("assistant", blocks))
            items.extend(results)
    return items


def filter_compacted(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    done: set[str] = set()
    keep_until = None
    for m in reversed(msgs):
        result.insert(0, m)
        info = m["info"]
        if keep_until is not None:
            if info["id"] == keep_until:
                break
            continue
        compaction = next((p for p in m["parts"] if p.get("type") == "compaction"), None)
        if info["role"] == "user" and info["id"] in done:
            if compaction is None:
                continue
            keep_until = compaction.get("tail_start_id") or None
            if keep_until is None or keep_until == info["id"]:
                break
            continue
        if (
            info["role"] == "assistant"
            and info.get("summary")
            and info.get("finish")
            and not info.get("error")
        ):
            done.add(info["parentID"])
    requests = [
        i
        for i, m in enumerate(result)
        if m["info"]["role"] == "user"
        and any(p.get("type") == "compaction" and "tail_start_id" in p for p in m["parts"])
    ]
    if not requests:
        return result
    c = requests[-1]
    request = result[c]
    tail_id = next(p for p in request["parts"] if p.get("type") == "compaction")["tail_start_id"]
    summaries = [
        j
        for j in range(c + 1, len(result))
        if result[j]["info"]["role"] == "assistant"
        and result[j]["info"].get("summary")
        and result[j]["info"].get("parentID") == request["info"]["id"]
    ]
    tails = [i for i, m in enumerate(result) if tail_id and m["info"]["id"] == tail_id]
    if not summaries or not tails or tails[0] >= c:
        return result
    s, t = summaries[0], tails[0]
    return result[c : s + 1] + result[t:c] + result[s + 1 :]


def model_request(session: dict[str, Any], msgs: list[dict[str, Any]]) -> list[Any]:
    revert = session.get("revert")
    if revert:
        ids = [m["info"]["id"] for m in msgs]
        if revert["messageID"] in ids:
            msgs = msgs[: ids.index(revert["messageID"])]
    items: list[Any] = []
    for m in filter_compacted(msgs):
        info, parts = m["info"], m["parts"]
        if info["role"] == "user":
            blocks = _user_blocks(parts)
            if blocks:
                items.append(("user", blocks))
            continue
        error = info.get("error")
        if error and not (
            error["name"] == "MessageAbortedError"
            and any(p.get("type") not in ("step-start", "reasoning") for p in parts)
        ):
            continue
        items.extend(_assistant_items(parts))
    return items


def imported_request(ins: Any) -> list[Any]:
    out: list[Any] = []
    for seq in fold_surface(ins.events).nodes:
        event = ins.events[seq]
        d = event.data()
        if event.type == "user/message":
            if not d["source"].get("placeholder"):
                out.append(("user", d["content"]))
        elif event.type == "assistant/message":
            blocks = []
            for b in d["message"]["content"]:
                if b["type"] == "tool-call":
                    b = {**b, "arguments": json.loads(b["arguments"])}
                blocks.append({k: v for k, v in b.items() if k != "metadata"})
            out.append(("assistant", blocks))
        else:
            (block,) = d["message"]["content"]
            out.append(("tool", block["toolCallId"], block["content"], block.get("isError", False)))
    return out


# -- random sessions -------------------------------------------------------------------------


@st.composite
def sessions(draw: Any) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    damaged = draw(st.booleans())
    n = draw(st.integers(1, 12))
    messages: list[dict[str, Any]] = []
    counter = iter(range(10_000))
    texts = st.sampled_from(["a", "b c", "", "ünï ✓", "x" * 30])

    def part(kind: str, **fields: Any) -> dict[str, Any]:
        return {"id": f"prt_{next(counter):05d}", "type": kind, **fields}

    def tool(i: int) -> dict[str, Any]:
        status = draw(st.sampled_from(["completed"] * 4 + ["error", "error", "running"]))
        state: dict[str, Any] = {
            "status": status,
            "input": {"k": draw(texts)},
            "time": {"start": T + 1000 * i},
        }
        if status == "completed":
            state.update(output=draw(texts), title="t", metadata={})
            state["time"]["end"] = T + 1000 * i + 1
            if draw(st.integers(0, 3)) == 0:
                state["time"]["compacted"] = T + 1000 * draw(st.integers(0, n + 1)) + 500
        elif status == "error":
            state.update(error=draw(texts))
            state["time"]["end"] = T + 1000 * i + 1
        return part("tool", callID=f"call_{next(counter)}", tool="read", state=state)

    last_user = "msg_none"
    requests: list[str] = []
    for i in range(n):
        mid = f"msg_{i:04d}"
        ids = [m["info"]["id"] for m in messages]
        base = {"id": mid, "sessionID": SID, "time": {"created": T + 1000 * i}}
        action = draw(
            st.sampled_from(
                [
                    "prompt",
                    "prompt",
                    "answer",
                    "answer",
                    "answer",
                    "synthetic",
                    "compact",
                    "summary",
                ]
            )
        )
        if action == "prompt":
            parts = [part("text", text=draw(texts))]
            if draw(st.integers(0, 4)) == 0:
                parts.append(
                    part(
                        "file",
                        mime=draw(st.sampled_from(["image/png", "text/plain", "application/pdf"])),
                        url="data:x",
                        filename="f",
                    )
                )
            if draw(st.integers(0, 5)) == 0:
                parts.append(part("text", text="hidden", ignored=True))
            messages.append({"info": {**base, "role": "user", "agent": "build"}, "parts": parts})
            last_user = mid
        elif action == "synthetic":
            messages.append(
                {
                    "info": {**base, "role": "user"},
                    "parts": [part("text", text="Continue", synthetic=True)],
                }
            )
            last_user = mid
        elif action == "compact":
            fields: dict[str, Any] = {"auto": draw(st.booleans())}
            tail = draw(st.sampled_from(["none", "earlier", "self", "bogus", "null"]))
            if tail == "earlier" and ids:
                fields["tail_start_id"] = draw(st.sampled_from(ids))
            elif tail == "self":
                fields["tail_start_id"] = mid
            elif tail == "bogus":
                fields["tail_start_id"] = "msg_gone"
            elif tail == "null":
                fields["tail_start_id"] = None
            messages.append(
                {"info": {**base, "role": "user"}, "parts": [part("compaction", **fields)]}
            )
            requests.append(mid)
            last_user = mid
            if draw(st.integers(0, 3)):  # its summary, mostly a good one
                summary: dict[str, Any] = {
                    **base,
                    "id": f"{mid}s",
                    "role": "assistant",
                    "parentID": mid,
                    "summary": True,
                    "modelID": "m",
                    "providerID": "p",
                    "finish": draw(st.sampled_from(["stop", "stop", "stop", None])),
                }
                if not draw(st.integers(0, 5)):
                    summary["error"] = {"name": "APIError", "data": {"message": "x"}}
                begin = part("step-start")
                text = part("text", text=f"summary of {mid}")
                messages.append({"info": summary, "parts": [begin, text]})
        else:
            info: dict[str, Any] = {
                **base,
                "role": "assistant",
                "parentID": last_user,
                "modelID": "m",
                "providerID": "p",
                "mode": "build",
            }
            if action == "summary" and requests:
                info.update(
                    summary=True, parentID=draw(st.sampled_from(requests)), mode="compaction"
                )
            info["finish"] = draw(st.sampled_from(["stop", "stop", "stop", None]))
            error = draw(st.sampled_from([None, None, None, "MessageAbortedError", "APIError"]))
            if error:
                info["error"] = {"name": error, "data": {"message": "boom"}}
            parts = []
            for _ in range(draw(st.integers(0, 3))):
                if draw(st.integers(0, 6)):
                    parts.append(part("step-start"))
                for _ in range(draw(st.integers(0, 3))):
                    kind = draw(st.sampled_from(["text", "reasoning", "tool", "tool", "patch"]))
                    if kind == "tool":
                        parts.append(tool(i))
                    elif kind == "patch":
                        parts.append(part("patch", hash="h", files=[]))
                    else:
                        parts.append(part(kind, text=draw(texts), time={"start": T + 1000 * i}))
                if draw(st.booleans()):
                    parts.append(
                        part(
                            "step-finish",
                            reason="stop",
                            cost=0,
                            tokens={
                                "input": 1,
                                "output": 2,
                                "reasoning": 0,
                                "cache": {"read": 3, "write": 0},
                            },
                        )
                    )
            messages.append({"info": info, "parts": parts})
        if damaged and draw(st.integers(0, 5)) == 0:
            target = messages[-1]
            if target["parts"] and draw(st.booleans()):
                k = draw(st.integers(0, len(target["parts"]) - 1))
                target["parts"][k] = {"id": target["parts"][k]["id"], "raw": '{"type": "te'}
            elif draw(st.booleans()):
                target["parts"].append(part("hologram", x=1))
            else:
                target["info"] = {"id": target["info"]["id"], "raw": "garbage"}
    session: dict[str, Any] = {
        "id": SID,
        "directory": "/w",
        "title": "",
        "version": "1",
        "time": {"created": T, "updated": T},
    }
    if draw(st.integers(0, 3)) == 0:
        ids = [m["info"]["id"] for m in messages]
        session["revert"] = {"messageID": draw(st.sampled_from([*ids, "msg_gone"]))}
    return session, messages, draw(st.booleans())


@SETTINGS
@given(sessions())
def test_imports_replay_and_match_opencodes_next_request(case):
    session, messages, legacy = case
    home = pathlib.Path(tempfile.mkdtemp()) / "opencode"
    (write_legacy if legacy else write_db)(home, [{"session": session, "messages": messages}])
    backend = OpenCodeBackend(str(home), f"opencode:{home}")
    try:
        (listed,) = backend.list()
        ins = backend.inspect(SID)
    finally:
        backend.close()
    checked(ins, SID)
    header = ins.meta.to_value()
    reasons = header["source"].pop("approximate", [])
    assert header == listed.to_value()
    if set(reasons) <= {"placeholder"}:
        assert imported_request(ins) == model_request(session, messages)
    damaged = any("raw" in m["info"] or any("raw" in p for p in m["parts"]) for m in messages)
    assert ("damaged-records" in reasons) == damaged
    running = any(
        p.get("type") == "tool" and p["state"]["status"] == "running"
        for m in messages
        if "raw" not in m["info"]
        for p in m["parts"]
    )
    if not running:
        assert "unfinished-tools" not in reasons
