"""Small builders for event logs in tests (the notation of semantics.md §2.3)."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from typing import Any

from dsh_query_server import jsoncodec
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.jsonl import escape_segment, project_dir
from dsh_query_server.session.store import LiveSnapshot, SessionStore

ROOT = str(pathlib.Path(__file__).resolve().parent.parent)
# The environment a server under test runs in: this checkout.
TEST_ENV = {**os.environ, "PYTHONPATH": ROOT}
# The server under test with the test backends mountable as test:<name> (harness_server.py).
TEST_SERVER = [sys.executable, "-m", "tests.harness_server"]

_ids = iter(range(10**9))


def ev(
    type: str,
    seq: int,
    data: Any = None,
    *,
    time: int | None = None,
    op: Any = None,
    src: Any = None,
    **extra: Any,
) -> Event:
    value: dict[str, Any] = {
        "type": type,
        "seq": seq,
        "time": seq if time is None else time,
        "data": {} if data is None else data,
    }
    if op is not None:
        value["surfaceOp"] = op
    if src is not None:
        value["sourceEventSeqs"] = src
    value.update(extra)
    return Event.from_value(value)


def R(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def user_data(text: str = "hi", *, kind: str = "user", mid: str | None = None) -> dict[str, Any]:
    return {
        "id": mid or f"u{next(_ids)}",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": kind},
    }


def assistant_data(
    text: str = "ok", *, mid: str | None = None, blocks: list | None = None
) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": 1,
        "message": {
            "id": mid or f"a{next(_ids)}",
            "role": "assistant",
            "content": blocks if blocks is not None else [{"type": "text", "text": text}],
            "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
        },
    }


def tool_result_data(
    call_id: str = "c1",
    text: str = "out",
    *,
    mid: str = "tr1",
    is_error: bool | None = None,
    error: Any = None,
    meta: Any = None,
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool-result",
        "toolCallId": call_id,
        "content": [{"type": "text", "text": text}] if text else [],
    }
    if is_error is not None:
        block["isError"] = is_error
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "message": {
            "id": mid,
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": call_id},
        },
    }
    if error is not None:
        data["error"] = error
    if meta is not None:
        data["meta"] = meta
    return data


def U(
    seq: int,
    text: str = "hi",
    *,
    op: Any = "append",
    src: Any = None,
    kind: str = "user",
    time: int | None = None,
) -> Event:
    return ev("user/message", seq, user_data(text, kind=kind), op=op, src=src, time=time)


def A(
    seq: int, text: str = "ok", *, op: Any = "append", src: Any = None, time: int | None = None
) -> Event:
    return ev("assistant/message", seq, assistant_data(text), op=op, src=src, time=time)


def T(
    seq: int,
    text: str = "out",
    *,
    op: Any = "append",
    src: Any = None,
    call_id: str = "c1",
    mid: str = "tr1",
    **kw: Any,
) -> Event:
    return ev("tool/result", seq, tool_result_data(call_id, text, mid=mid, **kw), op=op, src=src)


def log_only(type: str, seq: int, data: Any = None, **kw: Any) -> Event:
    return ev(type, seq, data, **kw)


def chunk(seq: int, text: str = "x", *, time: int | None = None, index: int = 0) -> Event:
    return ev(
        "assistant/chunk",
        seq,
        {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": index, "text": text}},
        time=time,
    )


def hdr(sid: str, created: int = 0, **kw: Any) -> dict[str, Any]:
    """A session header as a JSON object (version 0)."""
    return {"version": 0, "id": sid, "createdAt": created, **kw}


# A plausible createdAt (epoch ms) for tests whose headers need a real-looking time.
EPOCH_MS = 1_700_000_000_000


def header(session_id: str = "s", created: int = 1, **fields: Any) -> Header:
    """A session header (version 0) from wire-named fields (``cwd``, ``parentSession``, ...), in
    the model's canonical order; a field given as None is left out."""
    given = {k: v for k, v in fields.items() if v is not None}
    return Header.build(version=0, id=session_id, createdAt=created, **given)


def header_value(session_id: str, created: int, **fields: Any) -> dict[str, Any]:
    """``hdr`` without the fields given as None (any wire field, the importers' ``source``
    included, in the order given)."""
    return hdr(session_id, created, **{k: v for k, v in fields.items() if v is not None})


def transcript_header_line(session_id: str, cwd: str, created: int = 1) -> bytes:
    """The first line of a dsh JSONL transcript, written by hand (persistence.md §4.4)."""
    line = {
        "type": "session",
        "version": 0,
        "id": session_id,
        "createdAt": created,
        "cwd": cwd,
        "delegationDepth": 0,
    }
    return jsoncodec.dumps(line) + b"\n"


def write_transcript(root: pathlib.Path, header: dict[str, Any], events: list[Any]) -> pathlib.Path:
    """A raw dsh JSONL transcript written by hand (persistence.md §4.4)."""
    folder = root / project_dir(header.get("cwd")) / escape_segment(header["id"])
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "session", **header, "delegationDepth": header.get("delegationDepth", 0)}]
    lines += [e if isinstance(e, dict) else e.to_value() for e in events]
    (folder / "session.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder / "session.jsonl"


# The worked examples of semantics.md §2.3, shared by the fold and service tests.


def example_a() -> list[Event]:
    return [
        log_only("turn/start", 0, {"turn": 1}),
        log_only("step/start", 1, {"turn": 1, "step": 1}),
        chunk(2),
        U(3, src=[2]),
        A(4, op=R(3, 3), src=[3, 2]),
        U(5, kind="plugin"),
        log_only("step/end", 6, {"turn": 1, "step": 1}),
        log_only("step/start", 7, {"turn": 1, "step": 2}),
        A(8, op=R(4, 4), src=[2, 4]),
    ]


def example_c() -> list[Event]:
    return [
        U(0, "a"),
        U(1, "b"),
        U(2, "c"),
        A(3, op=R(1, 1), src=[1]),
        A(4, op=R(3, 2), src=[3, 2]),
        log_only(
            "tool/call",
            5,
            {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"},
        ),
        T(6, "first", src=[5]),
        T(7, "second", op=R(6, 6), src=[6]),
        log_only("turn/end", 8, {"turn": 1, "reason": {"kind": "completed"}}),
    ]


def live_snapshot(store: SessionStore, session_id: str) -> LiveSnapshot:
    """The snapshot of a session the test created (``store.snapshot`` says None for others)."""
    snapshot = store.snapshot(session_id)
    assert snapshot is not None, f"session {session_id!r} is not live"
    return snapshot
