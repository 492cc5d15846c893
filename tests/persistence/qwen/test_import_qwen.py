"""The qwen: importer (importers.md §10): the worked example of §10.6 event by event, the layout
and headers of §10.1–§10.2, window reads, revisions, a 20,000-event chat, and that nothing ever
writes to the agent's home."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.errors import (
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
)
from dsh_query_server.persistence.importing.backend import ImportError_
from dsh_query_server.persistence.mount.uri import open_backend, parse_uri
from dsh_query_server.persistence.qwen.backend import QwenBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import SPEC, actual_table, checked, data, jl, parse_table, write_home

SID = "0a0a0a0a-0000-4000-8000-000000000001"
AGENT = f"{SID}/agent-explore-1"
CREATED = 1767225600000

TABLE = """
seq type                          L   t  surfaceOp  src                 class
0   turn/start {turn:1}           1   0  -          -                   log-only
1   user/message u1               1   0  append     -                   shadowed
2   session/title (fallback)      1   0  -          -                   log-only
3   step/start {1,1}              2   1  -          -                   log-only
4   assistant/message a1          2   1  append     -                   shadowed
5   tool/call c1                  2   1  -          -                   log-only
6   step/end {1,1}                3   1  -          -                   log-only
7   tool/result r1                3   2  append     [5]                 shadowed
8   step/start {1,2}              4   3  -          -                   log-only
9   assistant/message a2          4   3  append     -                   shadowed
10  step/end {1,2}                5   3  -          -                   log-only
11  turn/end {1,completed}        5   3  -          -                   log-only
12  turn/start {turn:2}           5  10  -          -                   log-only
13  user/message u2               5  10  append     -                   shadowed
14  step/start {2,1}              6  11  -          -                   log-only
15  assistant/message a3          6  11  append     -                   shadowed
16  qwen/system/rewind            7  20  -          -                   log-only
17  step/end {2,1}                8  20  -          -                   log-only
18  turn/end {2,completed}        8  20  -          -                   log-only
19  turn/start {turn:3}           8  21  -          -                   log-only
20  user/message u3               8  21  R(13..15)  [13,15,16]          shadowed
21  step/start {3,1}              9  22  -          -                   log-only
22  assistant/message a4          9  22  append     -                   shadowed
23  session/title (custom)       10  23  -          -                   log-only
24  compaction/start             11  30  -          -                   log-only
25  user/message k1              11  30  R(1..22)   [1,4,7,9,20,22,24]  current
26  assistant/message k1#1       11  30  append     -                   current
27  user/message k1#2            11  30  append     [20]                current
28  assistant/message k1#3       11  30  append     [22]                current
29  step/end {3,1}               12  30  -          -                   log-only
30  turn/end {3,completed}       12  30  -          -                   log-only
31  turn/start {turn:4}          12  40  -          -                   log-only
32  user/message u4              12  40  append     -                   current
33  step/start {4,1}             13  41  -          -                   log-only
34  assistant/message a5         13  41  append     -                   current
35  step/end {4,1}                -  41  -          -                   log-only
36  turn/end {4,completed}        -  41  -          -                   log-only
"""


@pytest.fixture
def spec(tmp_path):
    return shutil.copytree(SPEC / "qwen", tmp_path / "qwen")


def test_worked_example_event_by_event(spec):
    backend = QwenBackend(str(spec), f"qwen:{spec}")
    ins = backend.inspect(SID)
    checked(ins, SID)
    assert actual_table(ins) == parse_table(TABLE, 1000, CREATED)
    assert ins.meta.to_value() == {
        "version": 0,
        "id": SID,
        "createdAt": CREATED,
        "cwd": "/w",
        "source": {
            "agent": "qwen-code",
            "agentVersion": "0.6.0",
            "path": str(spec / f"projects/-w/chats/{SID}.jsonl"),
        },
    }
    assert data(ins, 4) == {
        "turn": 1,
        "step": 1,
        "message": {
            "id": "a1",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool-call",
                    "id": "c1",
                    "name": "list_directory",
                    "arguments": '{"path":"."}',
                },
            ],
            "source": {"kind": "model", "provider": "unknown", "model": "qwen3-coder-plus"},
        },
        "usage": {
            "promptTokenCount": 1200,
            "candidatesTokenCount": 25,
            "cachedContentTokenCount": 1000,
            "totalTokenCount": 1225,
        },
        "contextWindow": 131072,
        "import": {"line": 2},
    }
    result = data(ins, 7)
    assert result["message"]["content"] == [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "content": [{"type": "text", "text": "a.py\nb.py"}],
        }
    ]
    assert result["meta"] == {
        "toolCallResult": {"callId": "c1", "status": "success", "resultDisplay": "2 files"}
    }
    assert data(ins, 25)["source"] == {
        "kind": "plugin",
        "plugin": "qwen-code",
        "history": "chat_compression",
    }
    assert data(ins, 27)["source"] == {"kind": "user"}  # a copy keeps the source it repeats
    assert data(ins, 24)["import"] == {"line": 11, "synthetic": True}
    fold = fold_surface(ins.events)
    assert fold.nodes == [25, 26, 27, 28, 32, 34]
    title = [e for e in ins.events if e.type == "session/title"][-1].data()
    assert title["title"] == "File cleanup" and title["source"] == {"kind": "user"}


def test_worked_example_sub_agent(spec):
    backend = QwenBackend(str(spec), f"qwen:{spec}")
    headers = {h.id: h.to_value() for h in backend.list()}
    assert set(headers) == {SID, AGENT}
    assert headers[AGENT] == {
        "version": 0,
        "id": AGENT,
        "createdAt": CREATED + 12_000,
        "cwd": "/w",
        "parentSession": SID,
        "origin": "subagent",
        "delegationDepth": 1,
        "agentPreset": "Explore",
        "source": {
            "agent": "qwen-code",
            "agentVersion": "0.6.0",
            "path": str(spec / f"projects/-w/subagents/{SID}/agent-explore-1.jsonl"),
            "lineage": "subagent",
        },
    }
    ins = backend.inspect(AGENT)
    assert checked(ins, AGENT) == [
        "log-only",
        "current",
        "log-only",
        "log-only",
        "current",
        "log-only",
        "log-only",
        "current",
        "log-only",
        "current",
        "log-only",
        "log-only",
    ]
    assert [e.type for e in ins.events][3:8] == [
        "step/start",
        "assistant/message",
        "tool/call",
        "step/end",
        "tool/result",
    ]
    assert data(ins, 8) == {"turn": 1, "step": 2, "import": {"line": 4, "synthetic": True}}


# -- layout and headers (§10.1, §10.2) ---------------------------------------------------


def _chat(sid: str, text: str = "hello", **extra: object) -> bytes:
    record = {
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": sid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "user",
        "cwd": "/w",
        "message": {"role": "user", "parts": [{"text": text}]},
        **extra,
    }
    return jl(record)


def test_layout_archive_and_names(tmp_path):
    a = "aaaaaaaa-0000-4000-8000-000000000001"
    b = "bbbbbbbb-0000-4000-8000-000000000002"
    home = write_home(
        tmp_path / "h",
        {
            f"projects/-w/chats/{a}.jsonl": _chat(a, "active"),
            f"projects/-w/chats/archive/{a}.jsonl": _chat(a, "archived"),
            f"projects/-x/chats/archive/{b}.jsonl": _chat(b),
            "projects/-w/chats/notes.jsonl": _chat("notes"),  # not a session file name
            f"projects/-w/chats/{a}.worktree.json": "{}",
            f"projects/-w/subagents/{a}/agent-z.jsonl.stream": "partial",
            "projects/-w/subagents/loose.jsonl": _chat(a),
        },
    )
    backend = QwenBackend(str(home), "qwen:x")
    listed = {h.id: h.to_value()["source"]["path"] for h in backend.list()}
    assert listed == {
        a: str(home / f"projects/-w/chats/{a}.jsonl"),  # active beats archived
        b: str(home / f"projects/-x/chats/archive/{b}.jsonl"),
    }
    active_only = QwenBackend(str(home), "qwen:x", include_archived=False)
    assert [h.id for h in active_only.list()] == [a]


def test_a_chat_must_name_its_own_session(tmp_path):
    a = "aaaaaaaa-0000-4000-8000-000000000001"
    other = "cccccccc-0000-4000-8000-000000000003"
    home = write_home(tmp_path / "h", {f"projects/-w/chats/{a}.jsonl": _chat(other)})
    backend = QwenBackend(str(home), "qwen:x")
    assert backend.list() == []
    with pytest.raises(SessionPersistenceCorruptionError, match="is unreadable"):
        backend.inspect(a)
    with pytest.raises(ImportError_, match="not found"):
        backend.inspect("dddddddd-0000-4000-8000-000000000004")


def test_empty_and_garbage_chats_are_not_listed(tmp_path):
    a = "aaaaaaaa-0000-4000-8000-000000000001"
    b = "bbbbbbbb-0000-4000-8000-000000000002"
    home = write_home(
        tmp_path / "h",
        {f"projects/-w/chats/{a}.jsonl": "", f"projects/-w/chats/{b}.jsonl": "garbage\n{"},
    )
    assert QwenBackend(str(home), "qwen:x").list() == []


def test_homes_and_uris(tmp_path, monkeypatch):
    assert QwenBackend(str(tmp_path / "absent"), "qwen:x").list() == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(ImportError_, match="not a readable directory"):
        QwenBackend(str(tmp_path / "file"), "qwen:x").list()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    assert parse_uri("qwen:").location == str(tmp_path / ".qwen")
    monkeypatch.setenv("QWEN_RUNTIME_DIR", str(tmp_path / "runtime"))
    assert parse_uri("qwen:").location == str(tmp_path / "runtime")
    assert parse_uri("qwen:~/q?includeArchived=false").options == {"includeArchived": "false"}
    for bad in ("qwen:/x?readOnly=false", "qwen:/x?nope=1", "qwen:relative"):
        with pytest.raises(QueryError):
            parse_uri(bad)
    with pytest.raises(QueryError) as failed:
        open_backend(f"qwen:{tmp_path / 'file'}")
    assert failed.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"
    backend = open_backend(f"qwen:{tmp_path}")
    assert not backend.writable
    header = Header.from_value({"version": 0, "id": "x", "createdAt": 0})
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.create(header)
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append("x", [])


def test_windows_cwd_is_dropped_and_said(tmp_path):
    a = "aaaaaaaa-0000-4000-8000-000000000001"
    home = write_home(tmp_path / "h", {f"projects/-w/chats/{a}.jsonl": _chat(a, cwd="C:\\w")})
    backend = QwenBackend(str(home), "qwen:x")
    [listed] = backend.list()
    assert "cwd" not in listed.to_value()
    ins = backend.inspect(a)
    assert ins.meta.to_value()["source"]["approximate"] == ["cwd-not-absolute"]


# -- reads -------------------------------------------------------------------------------


def _snapshot(root: pathlib.Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_reads_never_write_to_the_home(spec):
    before = _snapshot(spec)
    dirs = {str(p): p.stat().st_mtime_ns for p in spec.rglob("*") if p.is_dir()}
    backend = QwenBackend(str(spec), f"qwen:{spec}")
    for header in backend.list():
        n = len(backend.inspect(str(header.id)).events)
        backend.inspect_window(str(header.id), 0, n)
        backend.inspect_window(str(header.id), 2, 5)
        backend.list_snapshots()
    assert _snapshot(spec) == before
    assert {str(p): p.stat().st_mtime_ns for p in spec.rglob("*") if p.is_dir()} == dirs


def test_window_reads_equal_the_full_inspect(spec):
    backend = QwenBackend(str(spec), f"qwen:{spec}")
    for sid in (SID, AGENT):
        full = backend.inspect(sid).events
        for first, last in ((0, 3), (10, 30), (20, 200), (5, 5)):
            window = backend.inspect_window(sid, first, last)
            window = backend.inspect_window(sid, first, last)  # the second one uses the memo
            assert [e.to_value() for e in window.events] == [
                e.to_value() for e in full[first : last + 1]
            ]


def test_revisions_follow_the_chat_and_the_sidecars(spec):
    backend = QwenBackend(str(spec), f"qwen:{spec}")
    before = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert before[SID].startswith("qwen:") and ";meta:" in before[AGENT]
    chat = spec / f"projects/-w/chats/{SID}.jsonl"
    with chat.open("ab") as f:
        f.write(_chat(SID, "appended").replace(b'"u1"', b'"u9"', 1))
    meta = spec / f"projects/-w/subagents/{SID}/agent-explore-1.meta.json"
    value = json.loads(meta.read_text())
    meta.write_text(json.dumps({**value, "agentType": "Plan", "padding": "x" * 10}))
    os.utime(chat, ns=(1, 1))
    after = {s.header.id: (s.revision, s.header) for s in backend.list_snapshots()}
    assert after[SID][0] != before[SID] and after[AGENT][0] != before[AGENT]
    assert after[AGENT][1].to_value()["agentPreset"] == "Plan"
    assert len(backend.inspect(SID).events) > 37


@pytest.mark.slow
def test_a_twenty_thousand_event_chat(tmp_path):
    sid = "eeeeeeee-0000-4000-8000-000000000005"
    records = []
    last = None
    for i in range(2500):  # a prompt, a call, its result and an answer: 8 events a turn
        base = {"sessionId": sid, "cwd": "/w", "timestamp": "2026-01-01T00:00:00.000Z"}
        turn = [
            ("user", {"role": "user", "parts": [{"text": f"prompt {i} 你好"}]}),
            (
                "assistant",
                {
                    "role": "model",
                    "parts": [{"functionCall": {"id": f"c{i}", "name": "f", "args": {}}}],
                },
            ),
            (
                "tool_result",
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": f"c{i}",
                                "name": "f",
                                "response": {"output": "ok"},
                            }
                        }
                    ],
                },
            ),
            ("assistant", {"role": "model", "parts": [{"text": f"answer {i}"}]}),
        ]
        for k, (kind, message) in enumerate(turn):
            uuid = f"r{i}-{k}"
            records.append(
                {**base, "uuid": uuid, "parentUuid": last, "type": kind, "message": message}
            )
            last = uuid
        if i == 1500:
            history = [{"role": "user", "parts": [{"text": "summary"}]}]
            payload = {"info": {}, "compressedHistory": history}
            uuid = f"k{i}"
            records.append(
                {
                    **base,
                    "uuid": uuid,
                    "parentUuid": last,
                    "type": "system",
                    "subtype": "chat_compression",
                    "systemPayload": payload,
                }
            )
            last = uuid
    home = write_home(tmp_path / "h", {f"projects/-w/chats/{sid}.jsonl": jl(*records)})
    backend = QwenBackend(str(home), "qwen:x")
    ins = backend.inspect(sid)
    assert len(ins.events) > 20_000
    classes = checked(ins, sid)
    assert classes.count("current") == 1 + 4 * 999  # the summary, then 999 whole turns
    middle = backend.inspect_window(sid, 10_000, 10_020)
    assert [e.seq for e in middle.events] == list(range(10_000, 10_021))
