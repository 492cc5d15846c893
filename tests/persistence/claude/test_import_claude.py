"""The claude: importer (importers.md §1): the worked example of §1.5 event by event, then one
hand-written transcript per rule."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.contract.errors import SessionPersistenceReadOnlyError
from dsh_query_server.persistence.mount.uri import open_backend, parse_uri
from tests.import_helpers import actual_table, checked, copy_spec, data, parse_table, surface_texts

TRUNK_TABLE = """
seq type                          L   t  surfaceOp  src                        class
0   claude/file-history-snapshot  1   0  -          -                          log-only
1   turn/start {turn:1}           2   0  -          -                          log-only
2   user/message u1               2   0  append     -                          shadowed
3   session/title (fallback)      2   0  -          -                          log-only
4   step/start {1,1}              3   1  -          -                          log-only
5   assistant/message a1          3   1  append     -                          shadowed
6   assistant/message a2          4   2  append     -                          shadowed
7   tool/call t1                  4   2  -          -                          log-only
8   claude/progress               5   3  -          -                          log-only
9   tool/result r1                6   4  append     [7]                        shadowed
10  step/end {1,1}                7   4  -          -                          log-only
11  step/start {1,2}              7   5  -          -                          log-only
12  assistant/message a3          7   5  append     -                          shadowed
13  step/end {1,2}                8   5  -          -                          log-only
14  turn/end {1,completed}        8   5  -          -                          log-only
15  turn/start {turn:2}           8  10  -          -                          log-only
16  user/message u2               8  10  append     -                          shadowed
17  step/start {2,1}              9  11  -          -                          log-only
18  assistant/message a4          9  11  append     -                          shadowed
19  step/end {2,1}               10  11  -          -                          log-only
20  turn/end {2,completed}       10  11  -          -                          log-only
21  turn/start {turn:3}          10  20  -          -                          log-only
22  user/message u3              10  20  R(16..18)  [16,18]                    shadowed
23  step/start {3,1}             11  21  -          -                          log-only
24  assistant/message a5         11  21  append     -                          shadowed
25  tool/call t2                 11  21  -          -                          log-only
26  tool/result r2               12  30  append     [25]                       shadowed
27  session/title (custom)       13  30  -          -                          log-only
28  compaction/start             14  40  -          -                          log-only
29  user/message s1              15  40  R(2..26)   [2,5,6,9,12,22,24,26,28]   current
30  step/end {3,1}               16  40  -          -                          log-only
31  turn/end {3,completed}       16  40  -          -                          log-only
32  turn/start {turn:4}          16  50  -          -                          log-only
33  user/message u4              16  50  append     -                          current
34  step/start {4,1}             17  51  -          -                          log-only
35  assistant/message a6         17  51  append     -                          current
36  step/end {4,1}                -  51  -          -                          log-only
37  turn/end {4,completed}        -  51  -          -                          log-only
"""

FULL_EVENTS = {
    2: {
        "type": "user/message",
        "seq": 2,
        "time": 1767225600000,
        "data": {
            "id": "u1",
            "role": "user",
            "content": [{"type": "text", "text": "list files"}],
            "source": {"kind": "user"},
            "import": {"line": 2},
        },
        "surfaceOp": "append",
    },
    3: {
        "type": "session/title",
        "seq": 3,
        "time": 1767225600000,
        "data": {
            "title": "list files",
            "messageSeqs": [2],
            "source": {"kind": "fallback"},
            "import": {"line": 2, "synthetic": True},
        },
    },
    7: {
        "type": "tool/call",
        "seq": 7,
        "time": 1767225602000,
        "data": {
            "turn": 1,
            "step": 1,
            "callId": "t1",
            "name": "Bash",
            "arguments": '{"command":"ls"}',
            "import": {"line": 4, "synthetic": True},
        },
    },
    9: {
        "type": "tool/result",
        "seq": 9,
        "time": 1767225604000,
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "id": "r1",
                "role": "user",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "t1",
                        "content": [{"type": "text", "text": "a.py\nb.py"}],
                    }
                ],
                "source": {"kind": "tool", "callId": "t1"},
            },
            "meta": {"toolUseResult": {"stdout": "a.py\nb.py"}},
            "import": {"line": 6},
        },
        "surfaceOp": "append",
        "sourceEventSeqs": [7],
    },
    14: {
        "type": "turn/end",
        "seq": 14,
        "time": 1767225605000,
        "data": {
            "turn": 1,
            "reason": {"kind": "completed"},
            "import": {"line": 8, "synthetic": True},
        },
    },
    29: {
        "type": "user/message",
        "seq": 29,
        "time": 1767225640000,
        "data": {
            "id": "s1",
            "role": "user",
            "content": [{"type": "text", "text": "Summary: listed files, renamed b.py."}],
            "source": {"kind": "plugin", "plugin": "claude-code", "compactSummary": True},
            "import": {"line": 15},
        },
        "surfaceOp": {"op": "replace", "start": 2, "end": 26},
        "sourceEventSeqs": [2, 5, 6, 9, 12, 22, 24, 26, 28],
    },
}

CREATED = 1767225600000
U = "2026-01-01T00:00:%02d.000Z"


@pytest.fixture
def demo(tmp_path: pathlib.Path) -> tuple[ClaudeBackend, pathlib.Path]:
    home = copy_spec("claude", tmp_path / ".claude")
    backend = open_backend(f"claude:{home}")
    assert isinstance(backend, ClaudeBackend)
    return backend, home


def test_worked_example_trunk_event_by_event(demo):
    backend, home = demo
    ins = backend.inspect("claude-demo")
    checked(ins, "claude-demo")
    assert actual_table(ins) == parse_table(TRUNK_TABLE, 1000, CREATED)
    for seq, value in FULL_EVENTS.items():
        assert ins.events[seq].to_value() == value
        assert (
            ins.events[seq].raw
            == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        )
    assert data(ins, 6)["message"] == {
        "id": "a2",
        "role": "assistant",
        "content": [
            {"type": "tool-call", "id": "t1", "name": "Bash", "arguments": '{"command":"ls"}'}
        ],
        "source": {"kind": "model", "provider": "anthropic", "model": "claude-x"},
    }
    record14 = json.loads((home / "projects/-w/claude-demo.jsonl").read_text().splitlines()[13])
    assert data(ins, 28) == {"record": record14, "import": {"line": 14, "synthetic": True}}
    assert surface_texts(ins) == ["s1", "u4", "a6"]


def test_worked_example_headers(demo):
    backend, home = demo
    listed = {h.id: h.to_value() for h in backend.list()}
    trunk_path = str(home / "projects/-w/claude-demo.jsonl")
    agent_path = str(home / "projects/-w/claude-demo/subagents/agent-ab12.jsonl")
    assert listed == {
        "claude-demo": {
            "version": 0,
            "id": "claude-demo",
            "createdAt": 1767225600000,
            "cwd": "/w",
            "source": {"agent": "claude-code", "agentVersion": "2.1.38", "path": trunk_path},
        },
        "claude-demo/agent-ab12": {
            "version": 0,
            "id": "claude-demo/agent-ab12",
            "createdAt": 1767225622000,
            "cwd": "/w",
            "parentSession": "claude-demo",
            "origin": "subagent",
            "delegationDepth": 1,
            "agentPreset": "general-purpose",
            "source": {
                "agent": "claude-code",
                "agentVersion": "2.1.38",
                "path": agent_path,
                "lineage": "subagent",
            },
        },
    }
    for sid, header in listed.items():
        assert backend.inspect(sid).meta.to_value() == header  # no approximation here


def test_worked_example_subagent(demo):
    backend, _ = demo
    ins = backend.inspect("claude-demo/agent-ab12")
    classes = checked(ins, "claude-demo/agent-ab12")
    assert [e.type for e in ins.events] == [
        "turn/start",
        "user/message",
        "session/title",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert classes == [
        "log-only",
        "current",
        "log-only",
        "log-only",
        "current",
        "log-only",
        "log-only",
    ]
    assert data(ins, 2)["title"] == "Rename b.py to c.py" and data(ins, 2)["messageSeqs"] == [1]


def test_revisions_follow_the_transcript_and_sidecars(demo):
    backend, home = demo
    revs = {s.header.id: s.revision for s in backend.list_snapshots()}
    st = os.stat(home / "projects/-w/claude-demo.jsonl")
    assert revs["claude-demo"] == f"claude:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    meta = os.stat(home / "projects/-w/claude-demo/subagents/agent-ab12.meta.json")
    assert revs["claude-demo/agent-ab12"].endswith(
        f";meta:{meta.st_dev}:{meta.st_ino}:{meta.st_size}:{meta.st_mtime_ns}"
    )
    with open(home / "projects/-w/claude-demo.jsonl", "ab") as f:
        f.write(b'{"type":"tag","tag":"x"}\n')
    again = {s.header.id: s for s in backend.list_snapshots()}
    assert again["claude-demo"].revision != revs["claude-demo"]
    assert again["claude-demo/agent-ab12"].revision == revs["claude-demo/agent-ab12"]


def test_writes_are_refused_and_uri_options(demo, tmp_path):
    backend, _ = demo
    assert backend.writable is False
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.create(Header.from_value({"version": 0, "id": "x", "createdAt": 0}))
    with pytest.raises(SessionPersistenceReadOnlyError):
        backend.append("claude-demo", [])
    with pytest.raises(QueryError) as info:
        parse_uri(f"claude:{tmp_path}?readOnly=false")
    assert info.value.code == "SESSION_QUERY_INVALID_CONFIG"
    assert parse_uri(f"claude:{tmp_path}?readOnly=true").location == str(tmp_path)


def test_home_defaults_and_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert parse_uri("claude:").location == f"{tmp_path}/.claude"
    assert parse_uri("claude:~/x").location == f"{tmp_path}/x"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/elsewhere")
    assert parse_uri("claude:").location == "/elsewhere"


def test_absent_home_lists_nothing_and_a_file_home_fails(tmp_path):
    assert open_backend(f"claude:{tmp_path}/missing").list() == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(QueryError) as info:
        open_backend(f"claude:{tmp_path}/file")
    assert info.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"


def test_inspect_always_rereads_and_windows_reuse_positions_only_while_stat_holds(
    demo, monkeypatch
):
    """§3.4: no imported content is kept. Every inspect maps the file again; a window read after
    it decodes only its lines while the revision (transcript and sidecar stats) is unchanged."""
    backend, home = demo
    reads = []
    real = backend.read
    monkeypatch.setattr(backend, "read", lambda *a: reads.append(a[0].session_id) or real(*a))
    first = backend.inspect("claude-demo")
    again = backend.inspect("claude-demo")
    assert again is not first and again.events == first.events and len(reads) == 2
    window = backend.inspect_window("claude-demo", 2, 5)  # verifies: a full read, memo built
    assert window.events == first.events[2:6] and window.length == len(first.events)
    assert len(reads) == 3
    window = backend.inspect_window("claude-demo", 1, 7)
    assert window.events == first.events[1:8]
    assert len(reads) == 3  # the memo of this revision: only the window's lines were read
    sidecar = home / "projects/-w/claude-demo/subagents/agent-ab12.meta.json"
    backend.inspect_window("claude-demo/agent-ab12", 0, 0)
    assert len(reads) == 4
    sidecar.write_text('{"agentType":"other"}')
    changed = backend.inspect_window("claude-demo/agent-ab12", 0, 0)
    assert changed.meta.to_value()["agentPreset"] == "other" and len(reads) == 5
    with open(home / "projects/-w/claude-demo.jsonl", "ab") as f:
        f.write(b'{"type":"tag","tag":"x"}\n')
    grown = backend.inspect_window("claude-demo", 0, 10_000)
    assert len(reads) == 6 and grown.length == len(first.events) + 1
    assert grown.events[-3].type == "claude/tag"
    assert grown.events == backend.inspect("claude-demo").events
