"""The copilot: importer (importers.md §9): the worked example of §9.8 event by event, then one
hand-written home per rule (tests/fixtures/copilot/<rule>/README says which)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.errors import QueryError
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.copilot import workspace
from dsh_query_server.persistence.copilot.backend import CopilotBackend
from dsh_query_server.persistence.importing.backend import ImportError_
from dsh_query_server.persistence.mount.composite import auto_uris
from dsh_query_server.persistence.mount.uri import open_backend, parse_uri
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import FIXTURES, actual_table, checked, data, parse_table, surface_texts
from tests.persistence.copilot.copilot_strategies import long_log

HOMES = FIXTURES / "copilot"
S = "0c0f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
CREATED = 1767430800000

TABLE = """
seq type                                 L   t  surfaceOp  src                     class
0   copilot/session.start                1   0  -          -                       log-only
1   user/message e02 (system)            2   0  append     -                       current
2   turn/start {turn:1}                  3   1  -          -                       log-only
3   user/message e03 "list files"        3   1  append     -                       shadowed
4   session/title (fallback)             3   1  -          -                       log-only
5   copilot/assistant.turn_start         4   2  -          -                       log-only
6   step/start {1,1}                     4   2  -          -                       log-only
7   assistant/message e05                5   3  append     -                       shadowed
8   tool/call call_1                     5   3  -          -                       log-only
9   copilot/tool.execution_start         6   3  -          -                       log-only
10  tool/result e07                      7   4  append     [8]                     shadowed
11  step/end {1,1}                       8   4  -          -                       log-only
12  copilot/assistant.turn_end           8   4  -          -                       log-only
13  copilot/assistant.turn_start         9   5  -          -                       log-only
14  step/start {1,2}                     9   5  -          -                       log-only
15  assistant/message e10                10  6  append     -                       shadowed
16  step/end {1,2}                       11  6  -          -                       log-only
17  copilot/assistant.turn_end           11  6  -          -                       log-only
18  turn/end {1,completed}               12  6  -          -                       log-only
19  turn/start {turn:2}                  12 10  -          -                       log-only
20  user/message e12                     12 10  append     -                       shadowed
21  compaction/start                     13 11  -          -                       log-only
22  copilot/assistant.turn_start         14 12  -          -                       log-only
23  step/start {2,1}                     14 12  -          -                       log-only
24  assistant/message e15                15 13  append     -                       current
25  tool/call call_2                     15 13  -          -                       log-only
26  copilot/agent/subagent.started       16 13  -          -                       log-only
27  copilot/agent/user.message           17 14  -          -                       log-only
28  copilot/agent/assistant.turn_start   18 14  -          -                       log-only
29  copilot/agent/assistant.message      19 15  -          -                       log-only
30  copilot/agent/assistant.turn_end     20 15  -          -                       log-only
31  copilot/subagent.completed           21 16  -          -                       log-only
32  tool/result e22                      22 16  append     [25]                    current
33  copilot/session.compaction_complete  23 17  -          -                       log-only
34  user/message e23 (summary)           23 17  R(3..20)   [3,7,10,15,20,21,33]    current
35  step/end {2,1}                       24 17  -          -                       log-only
36  copilot/assistant.turn_end           24 17  -          -                       log-only
37  copilot/assistant.turn_start         25 18  -          -                       log-only
38  step/start {2,2}                     25 18  -          -                       log-only
39  assistant/message e26                26 19  append     -                       current
40  step/end {2,2}                       27 19  -          -                       log-only
41  copilot/assistant.turn_end           27 19  -          -                       log-only
42  turn/end {2,completed}               28 19  -          -                       log-only
43  copilot/session.shutdown             28 30  -          -                       log-only
44  session/title (workspace summary)    -  30  -          -                       log-only
"""


def home_of(name: str, tmp: pathlib.Path) -> pathlib.Path:
    """A private copy of a fixture home (tests never read the committed files in place)."""
    return pathlib.Path(shutil.copytree(HOMES / name, tmp / name))


def backend_of(home: pathlib.Path) -> CopilotBackend:
    backend = open_backend(f"copilot:{home}")
    assert isinstance(backend, CopilotBackend)
    return backend


def ids(ins: Any) -> list[str]:
    return surface_texts(ins)


def snapshot(root: pathlib.Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file and directory under ``root`` with its bytes, mode and mtime."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.stat()
        body = path.read_bytes() if path.is_file() else b""
        out[str(path)] = (body, st.st_mode, st.st_mtime_ns)
    return out


@pytest.fixture
def demo(tmp_path: pathlib.Path) -> tuple[CopilotBackend, pathlib.Path]:
    home = home_of("worked-example", tmp_path)
    return backend_of(home), home


def test_worked_example_event_by_event(demo):
    backend, home = demo
    ins = backend.inspect(S)
    checked(ins, S)
    assert actual_table(ins) == parse_table(TABLE, 1000, CREATED)
    assert fold_surface(ins.events).nodes == [1, 34, 24, 32, 39]
    assert data(ins, 7)["message"] == {
        "id": "e05",
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "The user wants a listing."},
            {"type": "tool-call", "id": "call_1", "name": "bash", "arguments": '{"command":"ls"}'},
        ],
        "source": {"kind": "model", "provider": "github-copilot", "model": "claude-sonnet-4.5"},
    }
    assert data(ins, 7)["usage"] == {"outputTokens": 21}
    assert data(ins, 15)["usage"] == {"outputTokens": 5}
    assert data(ins, 3)["content"] == [
        {
            "type": "text",
            "text": "<current_datetime>2026-01-03T09:00:01Z</current_datetime>\n\nlist files",
        }
    ]
    assert data(ins, 4)["title"] == "list files" and data(ins, 4)["messageSeqs"] == [3]
    assert data(ins, 1)["source"] == {"kind": "plugin", "plugin": "copilot-cli", "role": "system"}
    assert data(ins, 34)["content"] == [
        {
            "type": "text",
            "text": "<overview>The user listed two files and asked to rename b.py.</overview>",
        }
    ]
    assert data(ins, 34)["source"] == {
        "kind": "plugin",
        "plugin": "copilot-cli",
        "compactSummary": True,
    }
    assert data(ins, 44) == {
        "title": "Rename a file",
        "messageSeqs": [],
        "source": {"kind": "provider", "provider": "github-copilot"},
        "record": {"summary": "Rename a file"},
        "import": {"file": f"session-state/{S}/workspace.yaml", "line": 3, "synthetic": True},
    }
    assert ins.events[44].time == 1767430830000
    assert data(ins, 32)["message"]["content"][0]["content"] == [
        {"type": "text", "text": "Renamed b.py to c.py."}
    ]


def test_worked_example_headers_and_sub_agent(demo):
    backend, home = demo
    path = str(home / "session-state" / S / "events.jsonl")
    source = {"agent": "copilot-cli", "agentVersion": "1.0.10", "path": path}
    trunk = {"version": 0, "id": S, "createdAt": CREATED, "cwd": "/w", "source": source}
    child = {
        "version": 0,
        "id": f"{S}/agent-sa1",
        "createdAt": CREATED + 13000,
        "cwd": "/w",
        "parentSession": S,
        "origin": "subagent",
        "delegationDepth": 1,
        "agentPreset": "general-purpose",
        "source": {**source, "lineage": "subagent"},
    }
    assert sorted((h.to_value() for h in backend.list()), key=lambda h: h["id"]) == [trunk, child]
    inspected = backend.inspect(S).meta.to_value()
    assert inspected == {**trunk, "source": {**source, "approximate": ["summary-wrapper"]}}
    sub = backend.inspect(f"{S}/agent-sa1")
    assert sub.meta.to_value() == child
    classes = checked(sub, f"{S}/agent-sa1")
    assert [e.type for e in sub.events] == [
        "copilot/subagent.started",
        "turn/start",
        "user/message",
        "session/title",
        "copilot/assistant.turn_start",
        "step/start",
        "assistant/message",
        "step/end",
        "copilot/assistant.turn_end",
        "turn/end",
    ]
    assert [i for i, c in enumerate(classes) if c == "current"] == [2, 6]
    assert data(sub, 6)["message"]["source"]["model"] == "claude-haiku-4.5"
    assert data(sub, 3)["title"] == "Rename b.py to c.py"
    assert [e.data()["import"].get("line") for e in sub.events] == [
        16,
        17,
        17,
        17,
        18,
        18,
        19,
        20,
        20,
        None,
    ]
    revisions = {s.header.id: s.revision for s in backend.list_snapshots()}
    st = os.stat(path)
    ws = os.stat(home / "session-state" / S / "workspace.yaml")
    expected = (
        f"copilot:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
        f";ws:{ws.st_dev}:{ws.st_ino}:{ws.st_size}:{ws.st_mtime_ns}"
    )
    assert revisions == {S: expected, f"{S}/agent-sa1": expected}


def test_compactions_failed_without_summary_and_without_start(tmp_path):
    backend = backend_of(home_of("compactions", tmp_path))
    sid = "11111111-1111-4111-8111-111111111111"
    ins = backend.inspect(sid)
    checked(ins, sid)
    types = [e.type for e in ins.events]
    # the failed compaction (lines 4-5) replaced nothing
    assert types[6:8] == ["compaction/start", "copilot/session.compaction_complete"]
    assert all(e.to_value().get("surfaceOp") in (None, "append") for e in ins.events[:16])
    placeholder = ins.events[16].to_value()
    assert placeholder["data"]["source"]["placeholder"] is True
    assert placeholder["surfaceOp"] == {"op": "replace", "start": 2, "end": 11}
    assert placeholder["sourceEventSeqs"] == [2, 5, 11, 12, 15]
    summary = ins.events[22].to_value()
    assert summary["surfaceOp"] == {"op": "replace", "start": 16, "end": 20}
    assert summary["sourceEventSeqs"] == [16, 14, 20, 21]  # surface order, then the marker
    assert fold_surface(ins.events).nodes == [22]
    approximate = ins.meta.to_value()["source"]["approximate"]
    assert approximate == ["compaction-without-summary", "placeholder", "summary-wrapper"]


def test_legacy_sub_agent_marked_by_parent_tool_call_id(tmp_path):
    backend = backend_of(home_of("subagent-legacy", tmp_path))
    sid = "22222222-2222-4222-8222-222222222222"
    child = f"{sid}/agent-toolu_9"
    headers = {h.id: h.to_value() for h in backend.list()}
    assert set(headers) == {sid, child}
    assert headers[child]["agentPreset"] == "explore"  # subagent.started named it by toolCallId
    assert headers[child]["createdAt"] == CREATED + 3000
    trunk = backend.inspect(sid)
    checked(trunk, sid)
    assert ids(trunk) == ["e02", "e03", "e10", "e11"]
    assert [e.type for e in trunk.events if e.type.startswith("copilot/agent/")] == [
        "copilot/agent/user.message",
        "copilot/agent/assistant.message",
        "copilot/agent/tool.execution_complete",
        "copilot/agent/assistant.message",
    ]
    sub = backend.inspect(child)
    checked(sub, child)
    assert ids(sub) == ["e05", "e06", "e07", "e08"]
    result = data(sub, 6)
    assert result["message"]["source"] == {"kind": "tool", "callId": "t2"}
    assert sub.events[6].to_value()["sourceEventSeqs"] == [5]


def test_damaged_lines_torn_tail_and_nul_padding(tmp_path):
    backend = backend_of(home_of("damaged", tmp_path))
    sid = "33333333-3333-4333-8333-333333333333"
    ins = backend.inspect(sid)
    checked(ins, sid)
    bad = [data(ins, e.seq) for e in ins.events if e.type == "import/bad-line"]
    assert [(b["import"]["line"], b["preview"]) for b in bad] == [
        (3, "garbage {not json"),
        (5, '{"type":"assi'),
    ]
    assert ids(ins) == ["e02", "e03", "e99", "e98"]  # fused record and padded record kept
    assert "never fini" not in str([e.to_value() for e in ins.events])  # the torn tail
    assert ins.meta.to_value()["source"]["approximate"] == ["damaged-lines"]


def test_unknown_records_and_malformed_mapped_records_stay_opaque(tmp_path):
    backend = backend_of(home_of("unknown-records", tmp_path))
    sid = "44444444-4444-4444-8444-444444444444"
    ins = backend.inspect(sid)
    classes = checked(ins, sid)
    opaque = [e.type for e in ins.events if e.type.startswith("copilot/")]
    assert opaque == [
        "copilot/session.start",
        "copilot/session.hologram_projected",
        "copilot/assistant.message",  # no content
        "copilot/user.message",  # content is no string
        "copilot/tool.execution_complete",  # no toolCallId
        "copilot/record",  # no type
        "copilot/assistant.message",  # toolRequests is no list
    ]
    assert all(classes[e.seq] == "log-only" for e in ins.events if e.type.startswith("copilot/"))
    assert data(ins, 4)["record"]["data"] == {"angle": 42}
    assert ids(ins) == ["e02", "e08"]


def test_non_ascii_is_kept_as_written(tmp_path):
    backend = backend_of(home_of("non-ascii", tmp_path))
    sid = "55555555-5555-4555-8555-555555555555"
    ins = backend.inspect(sid)
    checked(ins, sid)
    assert ins.meta.to_value()["cwd"] == "/home/zoë/проект"
    assert data(ins, 2)["content"][0]["text"] == "Résumé ✓ — 日本語のテキスト\u2028second line 🚀"
    call = data(ins, 5)["message"]["content"][1]
    assert call["arguments"] == '{"path":"/home/zoë/проект/файл.md"}'
    assert data(ins, 3)["title"] == "Résumé ✓ — 日本語のテキスト second line 🚀"
    titles = [data(ins, e.seq) for e in ins.events if e.type == "session/title"]
    assert [(t["title"], t["source"]["kind"]) for t in titles] == [
        ("Résumé ✓ — 日本語のテキスト second line 🚀", "fallback"),
        ("Résumé ✓ — 日本語", "provider"),
        ("It's mine", "user"),
    ]


def test_flat_layout_and_the_directory_that_replaced_it(tmp_path):
    home = home_of("flat-layout", tmp_path)
    backend = backend_of(home)
    headers = {h.id: h.to_value() for h in backend.list()}
    flat, both = "66666666-6666-4666-8666-666666666666", "77777777-7777-4777-8777-777777777777"
    assert set(headers) == {flat, both}
    assert headers[flat]["source"]["path"] == str(home / "session-state" / f"{flat}.jsonl")
    assert headers[both]["source"]["path"] == str(home / "session-state" / both / "events.jsonl")
    assert headers[both]["source"]["agentVersion"] == "0.0.360"
    ins = backend.inspect(flat)
    checked(ins, flat)
    assert data(ins, 2)["content"][0]["text"] == "flat file"


def test_abort_steering_clear_and_truncation(tmp_path):
    backend = backend_of(home_of("clear-abort-steer", tmp_path))
    sid = "88888888-8888-4888-8888-888888888888"
    ins = backend.inspect(sid)
    checked(ins, sid)
    ends = [data(ins, e.seq) for e in ins.events if e.type == "turn/end"]
    assert ends[0]["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    assert ends[0]["record"]["type"] == "abort"
    starts = [e.seq for e in ins.events if e.type == "turn/start"]
    steering = next(e.seq for e in ins.events if e.type == "user/message" and e.seq > 8)
    assert steering == 9 and not any(starts[0] < s < 10 for s in starts[1:])  # joined turn 1
    assert ins.events[8].type == "step/end"  # the steering message closed the open step
    first_clear = ins.events[13].to_value()
    assert first_clear["surfaceOp"] == {"op": "replace", "start": 3, "end": 9}
    assert first_clear["data"]["source"]["placeholder"] is True
    assert data(ins, 15)["source"] == {"kind": "plugin", "plugin": "copilot-cli", "autopilot": True}
    assert data(ins, 18)["source"]["origin"] == "skill-pdf"
    assert fold_surface(ins.events).nodes == [1, 20]  # the system prompt and the initial message
    assert data(ins, 20)["source"]["contextCleared"] is True
    approximate = ins.meta.to_value()["source"]["approximate"]
    assert approximate == ["truncation", "placeholder"]
    titles = [e for e in ins.events if e.type == "session/title"]
    assert len(titles) == 1  # only a user-typed prompt gives the fallback title


def test_headers_anchor_identity_and_detached_parent(tmp_path):
    backend = backend_of(home_of("headers", tmp_path))
    listed = {h.id: h.to_value() for h in backend.list()}
    detached = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
    assert list(listed) == [detached]
    assert listed[detached]["parentSession"] == S
    assert listed[detached]["source"]["lineage"] == "resume"
    assert "cwd" not in listed[detached]
    ins = backend.inspect(detached)
    assert ins.meta.to_value()["source"]["approximate"] == ["cwd-not-absolute"]
    for unlisted in (
        "99999999-9999-4999-8999-999999999999",
        "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
    ):
        with pytest.raises(SessionPersistenceCorruptionError, match="unreadable"):
            backend.inspect(unlisted)
    with pytest.raises(ImportError_, match="not found"):
        backend.inspect("no-such-session")
    with pytest.raises(ImportError_, match="not found"):
        backend.inspect(f"{detached}/agent-none")


def test_workspace_titles_rank_above_the_fallback(tmp_path):
    backend = backend_of(home_of("titles", tmp_path))
    sid = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
    ins = backend.inspect(sid)
    checked(ins, sid)
    titles = [data(ins, e.seq) for e in ins.events if e.type == "session/title"]
    assert [(t["title"], t["source"]) for t in titles] == [
        ("first prompt gives the fallback", {"kind": "fallback"}),
        ("Ephemeral title", {"kind": "provider", "provider": "github-copilot"}),
        ("Fix the flaky login test", {"kind": "provider", "provider": "github-copilot"}),
        ("Login: flaky test", {"kind": "user"}),
    ]
    assert titles[-1]["import"]["line"] == 6


ALL = sorted(p.name for p in HOMES.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_replays_reads_windows_and_is_never_written(tmp_path, name):
    home = home_of(name, tmp_path)
    before = snapshot(home)
    backend = backend_of(home)
    for snap in backend.list_snapshots():
        sid = str(snap.header.id)
        ins = backend.inspect(sid)
        checked(ins, sid)
        n = len(ins.events)
        for first in range(0, n, 3):
            window = backend.inspect_window(sid, first, first + 4)
            assert [e.to_value() for e in window.events] == [
                e.to_value() for e in ins.events[first : first + 5]
            ]
            assert window.length == n
    assert snapshot(home) == before


@pytest.mark.slow
def test_twenty_thousand_events_read_whole_and_in_windows(tmp_path):
    sid = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"
    folder = tmp_path / "session-state" / sid
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_bytes(long_log(sid, 2500))
    backend = backend_of(tmp_path)
    [header] = backend.list()
    ins = backend.inspect(sid)
    assert len(ins.events) > 20_000
    checked(ins, sid)
    summaries = [
        e
        for e in ins.events
        if e.type == "user/message" and data(ins, e.seq)["source"].get("compactSummary")
    ]
    assert len(summaries) == 5
    middle = len(ins.events) // 2
    window = backend.inspect_window(sid, middle - 50, middle + 50)
    assert [e.to_value() for e in window.events] == [
        e.to_value() for e in ins.events[middle - 50 : middle + 51]
    ]


def test_growth_and_a_rewind_that_truncates_the_log(tmp_path):
    home = home_of("worked-example", tmp_path)
    backend = backend_of(home)
    path = home / "session-state" / S / "events.jsonl"
    first = {s.header.id: s.revision for s in backend.list_snapshots()}
    n = len(backend.inspect(S).events)
    lines = path.read_bytes().splitlines(keepends=True)
    extra = b'{"type":"user.message","data":{"content":"more"},"id":"e29","timestamp":"2026-01-03T09:01:00.000Z"}\n'
    with open(path, "ab") as f:
        f.write(extra)
    grown = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert grown[S] != first[S]
    longer = backend.inspect(S)
    assert len(longer.events) > n and ids(longer)[-1] == "e29"
    # /rewind to line 12 removes it and everything after it (the file shrinks)
    path.write_bytes(b"".join(lines[:11]))
    rewound = {s.header.id: s.revision for s in backend.list_snapshots()}
    assert set(rewound) == {S}  # the sub-agent's records went with the rewind
    ins = backend.inspect(S)
    checked(ins, S)
    assert ids(ins) == ["e02", "e03", "e05", "e07", "e10"]


def test_uri_defaults_and_auto_membership(tmp_path, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "ch"))
    assert parse_uri("copilot:").location == str(tmp_path / "ch")
    monkeypatch.delenv("COPILOT_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_uri("copilot:").location == str(tmp_path / ".copilot")
    assert parse_uri("copilot:~/x").location == str(tmp_path / "x")
    assert parse_uri("copilot:/h?readOnly=true").read_only
    with pytest.raises(QueryError, match="invalid value"):
        parse_uri("copilot:/h?readOnly=false")
    env = {"HOME": str(tmp_path), "COPILOT_HOME": str(tmp_path / "cp")}
    assert not any(u.startswith("copilot:") for u in auto_uris("sqlite:/e.db", env))
    (tmp_path / "cp" / "session-state").mkdir(parents=True)
    assert auto_uris("sqlite:/e.db", env)[-1] == f"copilot:{tmp_path / 'cp'}"


def test_an_absent_home_lists_nothing_and_a_file_home_fails(tmp_path):
    assert backend_of(tmp_path / "absent").list() == []
    (tmp_path / "plain").write_text("x")
    with pytest.raises(QueryError, match="not a readable directory") as raised:
        open_backend(f"copilot:{tmp_path / 'plain'}")
    assert raised.value.code == "SESSION_QUERY_PERSISTENCE_FAILED"


def test_records_of_odd_shapes_stay_opaque(tmp_path):
    sid = "ffffffff-ffff-4fff-8fff-ffffffffffff"
    start = json.dumps(
        {"type": "session.start", "data": {"sessionId": sid, "startTime": "2026-01-03T09:00:00Z"}}
    )
    lines = [
        start,
        '{"type":"user.message","data":"not an object","id":"e1"}',
        '{"type":7,"data":{},"id":"e2"}',
        '{"type":"user.message","data":{"content":"ok"},"id":"e3","timestamp":"yesterday"}',
        '{"type":"abort","data":{"reason":"user_initiated"},"id":"e4"}',
        '{"type":"assistant.message","data":{"content":"x","toolRequests":[{"name":"bash"}]},"id":"e5"}',
    ]
    folder = tmp_path / "session-state" / sid
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")
    backend = backend_of(tmp_path)
    ins = backend.inspect(sid)
    checked(ins, sid)
    assert [e.type for e in ins.events] == [
        "copilot/session.start",
        "copilot/user.message",
        "copilot/record",
        "turn/start",
        "user/message",
        "session/title",
        "turn/end",  # the abort ends the turn it found open
        "copilot/assistant.message",  # a tool request without its toolCallId
    ]
    assert ins.events[4].time == 1767430800000  # no parsable time: the previous one, createdAt
    assert data(ins, 6)["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_workspace_double_quoted_scalars_read_back(text):
    """YAML's double-quoted style is a superset of JSON strings: any JSON string reads back."""
    scalars = workspace.parse(f"id: x\nsummary: {json.dumps(text, ensure_ascii=False)}\n")
    assert scalars["summary"].value == text
    ascii_scalars = workspace.parse(f"summary: {json.dumps(text)}\nname: 'a''b'\n")
    assert ascii_scalars["summary"] == workspace.Scalar(1, text) or any(
        0xD800 <= ord(c) <= 0xDFFF or ord(c) > 0xFFFF for c in text
    )
    assert ascii_scalars["name"].value == "a'b"


def test_workspace_scalar_forms_and_what_is_left_out():
    scalars = workspace.parse(
        "summary: Fix the login\n  bug quickly  # note\n"
        "name: 'It''s mine'\n"
        "block: |-\n  line1\n  line2\n"
        "fold: >\n  a\n  b\n\n  c\n"
        "list: [1, 2]\n"
        'bad: "unterminated\n'
        "nested:\n  key: value\n"
    )
    assert {k: v.value for k, v in scalars.items()} == {
        "summary": "Fix the login bug quickly",
        "name": "It's mine",
        "block": "line1\nline2",
        "fold": "a b\nc\n",
    }
    assert scalars["name"].line == 3
