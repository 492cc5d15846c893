"""The codex: importer (importers.md §2): the worked example of §2.5 event by event, then one
hand-written rollout per rule."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any

import pytest
import zstandard

from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.mount.uri import open_backend
from tests.import_helpers import (
    actual_table,
    checked,
    copy_spec,
    data,
    jl,
    parse_table,
    surface_texts,
    write_home,
)

F = "019b7e26-5500-7000-8000-0000000000f1"
P = "019b78c9-0a80-7000-8000-0000000000a1"
CREATED = 1767348000000
ROLLOUT = f"sessions/2026/01/02/rollout-2026-01-02T10-00-00-{F}.jsonl"

TABLE = """
seq type                              L      t  surfaceOp  src                    class
0   codex/session_meta (⟨F⟩)          1      0  -          -                      log-only
1   codex/session_meta (⟨P⟩)          2      1  -          -                      log-only
2   turn/start {turn:1}               3      1  -          -                      log-only
3   codex/turn_context                4      1  -          -                      log-only
4   user/message L5 "hello"           5      1  append     -                      shadowed
5   session/title (fallback)          5      1  -          -                      log-only
6   step/start {1,1}                  6      1  -          -                      log-only
7   assistant/message L6              6      1  append     -                      shadowed
8   step/end {1,1}                    7      1  -          -                      log-only
9   turn/end {1,completed}            7      1  -          -                      log-only
10  session/end-seed                  8      1  -          -                      log-only
11  turn/start {turn:2}               8   1000  -          -                      log-only
12  codex/turn_context                9   1000  -          -                      log-only
13  user/message L10 "run ls"        10   1000  append     -                      shadowed
14  step/start {2,1}                 11   2000  -          -                      log-only
15  assistant/message L11            11   2000  append     -                      shadowed
16  tool/call c1                     11   2000  -          -                      log-only
17  step/end {2,1}                   12   2000  -          -                      log-only
18  tool/result L12                  12   3000  append     [16]                   shadowed
19  step/start {2,2}                 13   4000  -          -                      log-only
20  assistant/message L13            13   4000  append     -                      shadowed
21  step/end {2,2}                   14   4000  -          -                      log-only
22  turn/end {2,completed}           14   4000  -          -                      log-only
23  compaction/start                 15  30000  -          -                      log-only
24  user/message L15 "hello"         15  30000  R(4..20)   [4,7,13,15,18,20,23]   current
25  user/message L15#1 "run ls"      15  30000  append     [13]                   current
26  assistant/message L15#2          15  30000  append     -                      current
27  turn/start {turn:3}              16  60000  -          -                      log-only
28  user/message L17 "thanks"        17  60000  append     -                      shadowed
29  step/start {3,1}                 18  61000  -          -                      log-only
30  assistant/message L18            18  61000  append     -                      shadowed
31  step/end {3,1}                   19  61000  -          -                      log-only
32  turn/end {3,completed}           19  61000  -          -                      log-only
33  codex/event/thread_rolled_back   20 120000  -          -                      log-only
34  user/message placeholder-34       -  120000  R(28..30)  [28,30,33]             current
35  session/title (index)             - 300000  -          -                      log-only
"""


@pytest.fixture
def demo(tmp_path: pathlib.Path) -> tuple[CodexBackend, pathlib.Path]:
    home = copy_spec("codex", tmp_path / ".codex")
    backend = open_backend(f"codex:{home}")
    assert isinstance(backend, CodexBackend)
    return backend, home


def test_worked_example_event_by_event(demo):
    backend, home = demo
    ins = backend.inspect(F)
    checked(ins, F)
    assert actual_table(ins) == parse_table(TABLE, 1, CREATED)
    ids = [
        data(ins, s)["id"]
        if ins.events[s].type == "user/message"
        else data(ins, s)["message"]["id"]
        for s in (4, 13, 24, 25, 26, 28, 34)
    ]
    assert ids == ["L5", "L10", "L15", "L15#1", "L15#2", "L17", "placeholder-34"]
    assert data(ins, 26)["turn"] == 2 and data(ins, 26)["step"] == 0
    assert data(ins, 26)["message"]["source"]["replayState"] == {"encrypted_content": "ENC"}
    assert data(ins, 34) == {
        "id": "placeholder-34",
        "role": "user",
        "content": [],
        "source": {"kind": "plugin", "plugin": "codex", "placeholder": True},
        "import": {"synthetic": True},
    }
    assert data(ins, 15)["message"] == {
        "id": "L11",
        "role": "assistant",
        "content": [
            {"type": "tool-call", "id": "c1", "name": "shell", "arguments": '{"command":["ls"]}'}
        ],
        "source": {"kind": "model", "provider": "openai", "model": "gpt-x"},
    }
    assert data(ins, 35)["import"] == {"file": "session_index.jsonl", "line": 1, "synthetic": True}
    assert data(ins, 35)["title"] == "Demo fork" and data(ins, 35)["source"] == {"kind": "user"}
    assert ins.events[35].time == 1767348300000


def test_worked_example_headers_and_revision(demo):
    backend, home = demo
    path = str(home / ROLLOUT)
    listed = {
        "version": 0,
        "id": F,
        "createdAt": CREATED,
        "cwd": "/w",
        "parentSession": P,
        "source": {"agent": "codex", "agentVersion": "0.77.0", "path": path, "lineage": "fork"},
    }
    [snap] = backend.list_snapshots()
    assert snap.header.to_value() == listed
    inspected = json.loads(json.dumps(listed))
    inspected["source"]["approximate"] = ["placeholder"]
    assert backend.inspect(F).meta.to_value() == inspected
    st = os.stat(path)
    entry = json.dumps(
        {"id": F, "thread_name": "Demo fork", "updated_at": "2026-01-02T10:05:00Z"},
        separators=(",", ":"),
    ).encode()
    h = hashlib.sha256(entry).hexdigest()[:16]
    assert snap.revision == f"codex:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns};title:{h}"
    with open(home / "session_index.jsonl", "a") as f:
        f.write(json.dumps({"id": "other", "thread_name": "x"}) + "\n")
    assert backend.list_snapshots()[0].revision == snap.revision  # by content, per id
    with open(home / "session_index.jsonl", "a") as f:
        f.write(json.dumps({"id": F, "thread_name": "Renamed"}) + "\n")
    assert backend.list_snapshots()[0].revision != snap.revision


def meta(sid: str, **kw: Any) -> dict[str, Any]:
    return {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "session_meta",
        "payload": {
            "id": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/w",
            "cli_version": "0.9",
            **kw,
        },
    }


def item(payload: dict[str, Any], t: str = "2026-01-01T00:00:01.000Z") -> dict[str, Any]:
    return {"timestamp": t, "type": "response_item", "payload": payload}


def event(payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:02.000Z", "type": "event_msg", "payload": payload}


def msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


SID = "00000000-0000-7000-8000-000000000001"


def rollout(
    tmp: pathlib.Path,
    lines: bytes,
    sid: str = SID,
    where: str = "sessions/2026/01/01",
    suffix: str = ".jsonl",
) -> CodexBackend:
    write_home(tmp / "h", {f"{where}/rollout-2026-01-01T00-00-00-{sid}{suffix}": lines})
    return CodexBackend(str(tmp / "h"), "codex:x")


def test_rollback_then_tool_result_gets_a_placeholder_and_second_rollback(tmp_path):
    b = rollout(
        tmp_path,
        jl(
            meta(SID),
            item(msg("user", "one")),
            item(msg("assistant", "A")),
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "<environment_context>x"}],
                }
            ),
            item(msg("user", "two")),
            item(msg("assistant", "B")),
            event({"type": "thread_rolled_back", "num_turns": 1}),
            event({"type": "thread_rolled_back", "num_turns": 1}),
            item(
                {
                    "type": "function_call_output",
                    "call_id": "c9",
                    "output": {"content": "late", "success": False},
                }
            ),
            item(msg("user", "three")),
        ),
    )
    ins, classes = b.inspect(SID), None
    classes = checked(ins, SID)
    ids = surface_texts(ins)
    assert ids[0].startswith("placeholder-") and ids[1:] == ["L9", "L10"]
    placeholder = ins.events[int(ids[0].split("-")[1])]
    # both rollbacks: 'two' (with the contextual message before it) then 'one' went
    assert len(placeholder.to_value()["surfaceOp"]) == 3
    result = data(ins, [e.seq for e in ins.events if e.type == "tool/result"][0])
    assert result["message"]["content"][0]["isError"] is True
    assert classes.count("shadowed") == 5


def test_empty_and_legacy_compaction(tmp_path):
    b = rollout(
        tmp_path,
        jl(
            meta(SID),
            item(msg("user", "one")),
            {
                "timestamp": "2026-01-01T00:00:03.000Z",
                "type": "compacted",
                "payload": {"message": "", "replacement_history": []},
            },
            item(msg("user", "two")),
            {
                "timestamp": "2026-01-01T00:00:04.000Z",
                "type": "compacted",
                "payload": {"message": "summary text"},
            },
        ),
    )
    ins = b.inspect(SID)
    checked(ins, SID)
    assert ins.meta.to_value()["source"]["approximate"] == ["placeholder", "legacy-compaction"]
    last = data(ins, fold_last(ins))
    assert last["content"] == [{"type": "text", "text": "summary text"}]
    assert last["source"] == {"kind": "plugin", "plugin": "codex", "compactSummary": True}


def fold_last(ins) -> int:
    from dsh_query_server.session.fold import fold_surface

    return fold_surface(ins.events).nodes[-1]


def test_item_kinds_and_roles(tmp_path):
    b = rollout(
        tmp_path,
        jl(
            meta(SID, model_provider="azure", history_mode="paginated"),
            {
                "timestamp": "2026-01-01T00:00:00.500Z",
                "type": "turn_context",
                "payload": {"model": "g5"},
            },
            item(
                {
                    "type": "message",
                    "role": "developer",
                    "content": [{"type": "input_text", "text": "dev"}],
                }
            ),
            item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": "data:x"},
                    ],
                }
            ),
            item(
                {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "s1"}],
                    "content": [{"type": "reasoning_text", "text": "c1"}],
                    "encrypted_content": "E",
                }
            ),
            item({"type": "local_shell_call", "call_id": "l1", "action": {"command": ["ls"]}}),
            item(
                {
                    "type": "custom_tool_call",
                    "call_id": "k1",
                    "name": "apply_patch",
                    "input": "*** patch",
                }
            ),
            item({"type": "custom_tool_call_output", "call_id": "k1", "output": "done"}),
            item({"type": "web_search_call", "action": {"query": "q"}}),
            item({"type": "ghost_snapshot"}),
            item({"type": "function_call"}),  # required fields missing: opaque
            event({"type": "token_count"}),
            event({"type": "turn_aborted"}),
            {"record_type": "state"},
            "not json at all",
        ),
    )
    ins = b.inspect(SID)
    checked(ins, SID)
    types = [e.type for e in ins.events]
    assert "codex/item/ghost_snapshot" in types and "codex/item/function_call" in types
    assert "codex/event/token_count" in types and "codex/state" in types
    assert "codex/event/turn_aborted" not in types  # a turn was open: it ends aborted
    assert ins.meta.to_value()["source"]["approximate"] == ["paginated", "damaged-lines"]
    msgs = [data(ins, e.seq) for e in ins.events if e.type in ("user/message", "assistant/message")]
    assert msgs[0]["source"] == {"kind": "plugin", "plugin": "codex", "role": "developer"}
    assert msgs[1]["content"][1] == {"type": "image", "attachment": {"image_url": "data:x"}}
    assert msgs[2]["message"]["content"] == [
        {"type": "reasoning", "text": "s1"},
        {"type": "reasoning", "text": "c1"},
    ]
    assert msgs[2]["message"]["source"] == {
        "kind": "model",
        "provider": "azure",
        "model": "g5",
        "replayState": {"encrypted_content": "E"},
    }
    assert msgs[3]["message"]["content"][0]["name"] == "local_shell"
    assert msgs[3]["message"]["content"][0]["arguments"] == '{"command":["ls"]}'
    ends = [data(ins, e.seq)["reason"] for e in ins.events if e.type == "turn/end"]
    assert ends == [{"kind": "aborted", "reason": {"kind": "user"}}]


def test_ids_zst_archived_and_subagent_headers(tmp_path):
    other = "00000000-0000-7000-8000-000000000002"
    spawn = {
        "subagent": {
            "thread_spawn": {"parent_thread_id": SID, "depth": 2, "agent_role": "explorer"}
        }
    }
    plain = jl(meta(SID), item(msg("user", "plain")))
    write_home(
        tmp_path / "h",
        {
            f"sessions/a/rollout-x-{SID}.jsonl": plain,
            f"sessions/a/rollout-x-{SID}.jsonl.zst": zstandard.ZstdCompressor().compress(b"junk"),
            f"archived_sessions/rollout-y-{SID}.jsonl": jl(
                meta(SID), item(msg("user", "archived"))
            ),
            f"archived_sessions/rollout-y-{other}.jsonl.zst": zstandard.ZstdCompressor().compress(
                jl(meta(other, source=spawn), item(msg("user", "zipped")))
            )
            + b"\x00garbage",
            "sessions/rollout-bad-00000000-0000-7000-8000-000000000003.jsonl": jl(
                meta(SID)
            ),  # id mismatch
            "sessions/notes.jsonl": jl(meta(SID)),
        },
    )
    b = CodexBackend(str(tmp_path / "h"), "codex:x")
    headers = {h.id: h.to_value() for h in b.list()}
    assert set(headers) == {SID, other}
    assert headers[SID]["source"]["path"].endswith(f"sessions/a/rollout-x-{SID}.jsonl")
    assert headers[other]["parentSession"] == SID and headers[other]["delegationDepth"] == 2
    assert headers[other]["agentPreset"] == "explorer" and headers[other]["origin"] == "subagent"
    ins = b.inspect(other)
    checked(ins, other)
    assert surface_texts(ins) == ["L2"]
    unarchived = CodexBackend(str(tmp_path / "h"), "codex:x", include_archived=False)
    assert {h.id for h in unarchived.list()} == {SID}


def test_bare_era_file(tmp_path):
    b = rollout(
        tmp_path,
        jl(
            {"id": SID, "timestamp": "2025-01-01T00:00:00Z", "instructions": "hi"},
            msg("user", "bare"),
            msg("assistant", "ok"),
            {"record_type": "state"},
        ),
    )
    [h] = b.list()
    assert h.created_at == 1735689600000
    ins = b.inspect(SID)
    checked(ins, SID)
    assert surface_texts(ins) == ["L2", "L3"]


def test_truncated_rollout_is_corrupt_and_vanished_is_not_found(tmp_path):
    from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
    from dsh_query_server.persistence.importing.backend import ImportError_

    b = rollout(tmp_path, jl(meta(SID), item(msg("user", "x"))))
    [path] = list((tmp_path / "h/sessions").rglob("*.jsonl"))
    path.write_bytes(b"")
    with pytest.raises(SessionPersistenceCorruptionError, match="is unreadable"):
        b.inspect(SID)
    path.unlink()
    with pytest.raises(ImportError_, match=f'session "{SID}" not found'):
        b.inspect(SID)


def test_a_renamed_thread_is_read_again(demo):
    backend, home = demo
    assert backend.inspect(F).events[-1].data()["title"] == "Demo fork"
    with open(home / "session_index.jsonl", "a") as f:
        f.write(
            json.dumps({"id": F, "thread_name": "Renamed", "updated_at": "2026-01-03T00:00:00Z"})
            + "\n"
        )
    title = backend.inspect(F).events[-1].data()
    assert title["title"] == "Renamed" and title["import"]["line"] == 2


def test_fork_boundaries_and_compact_subagents(tmp_path):
    parent = "00000000-0000-7000-8000-0000000000aa"
    own = meta(SID, forked_from_id=parent)
    b = rollout(
        tmp_path,
        jl(
            own,
            meta(parent),
            item(msg("user", "copied")),
            meta(SID),  # the replay ends where the fork's own meta repeats
            item(msg("user", "mine")),
        ),
    )
    ins = b.inspect(SID)
    checked(ins, SID)
    types = [e.type for e in ins.events]
    assert types.index("session/end-seed") + 1 == types.index("codex/session_meta", 2)
    unseeded = rollout(tmp_path / "b", jl(own, item(msg("user", "no copy"))))
    assert "session/end-seed" not in [e.type for e in unseeded.inspect(SID).events]
    compact = rollout(tmp_path / "c", jl(meta(SID, source={"subagent": "compact"})))
    header = compact.list()[0].to_value()
    assert header["origin"] == "subagent" and header["source"]["lineage"] == "compaction"
    assert "parentSession" not in header
    self_fork = rollout(tmp_path / "d", jl(meta(SID, forked_from_id=SID)))
    assert "parentSession" not in self_fork.list()[0].to_value()
