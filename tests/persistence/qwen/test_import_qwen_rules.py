"""One hand-written Qwen Code chat per rule of importers.md §10 (tests/fixtures/qwen/README.md):
each imports into a log that replay-validates and folds, and shows its rule."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from dsh_query_server.persistence.contract.results import Inspection
from dsh_query_server.persistence.qwen.backend import QwenBackend
from dsh_query_server.session.fold import fold_surface
from tests.import_helpers import FIXTURES, checked, data

QWEN = FIXTURES / "qwen"


def _sid(path: pathlib.Path) -> str:
    for raw in path.read_bytes().split(b"\n"):
        try:
            return str(json.loads(raw)["sessionId"])
        except (ValueError, KeyError):
            continue
    raise AssertionError(f"{path} names no session")


def load(tmp_path: pathlib.Path, name: str) -> tuple[Inspection, list[str]]:
    """The fixture mounted as a chat of a fresh home: its inspection and every seq's class."""
    source = QWEN / name
    sid = _sid(source)
    chats = tmp_path / "home/projects/-w/chats"
    chats.mkdir(parents=True)
    shutil.copy(source, chats / f"{sid}.jsonl")
    backend = QwenBackend(str(tmp_path / "home"), "qwen:x")
    assert [h.id for h in backend.list()] == [sid]
    ins = backend.inspect(sid)
    return ins, checked(ins, sid)


def types(ins: Inspection) -> list[str]:
    return [str(e.type) for e in ins.events]


def surface_ids(ins: Inspection) -> list[str]:
    out = []
    for seq in fold_surface(ins.events).nodes:
        d = ins.events[seq].data()
        out.append((d if ins.events[seq].type == "user/message" else d["message"])["id"])
    return out


def reasons(ins: Inspection) -> list[str]:
    return ins.meta.to_value()["source"].get("approximate", [])


def test_every_fixture_is_listed_in_the_readme():
    readme = (QWEN / "README.md").read_text()
    names = {p.name for p in QWEN.iterdir() if p.name != "README.md"}
    assert names == {n for n in names if f"`{n}" in readme}


def test_compression_replays_its_retained_tool_call_and_result(tmp_path):
    ins, classes = load(tmp_path, "compression-tool-tail.jsonl")
    assert surface_ids(ins) == ["k1", "k1#1", "k1#2", "k1#3", "a2"]
    assert classes[1] == classes[4] == classes[7] == "shadowed"
    summary = ins.events[9].to_value()
    assert summary["surfaceOp"] == {"op": "replace", "start": 1, "end": 7}
    assert summary["sourceEventSeqs"] == [1, 4, 7, 8]
    call = ins.events[11].to_value()
    assert call["sourceEventSeqs"] == [4]  # the retained call repeats a1 ...
    assert call["data"]["message"]["content"][0]["type"] == "tool-call"
    result = ins.events[12].to_value()
    assert result["type"] == "tool/result" and result["sourceEventSeqs"] == [5, 7]  # ... and r1
    assert types(ins).count("tool/call") == 1  # a replayed call is no new call
    assert reasons(ins) == []


def test_compression_to_nothing_leaves_a_placeholder(tmp_path):
    ins, classes = load(tmp_path, "compression-empty.jsonl")
    placeholder = ins.events[6].to_value()
    assert placeholder["data"]["content"] == [] and placeholder["data"]["source"]["placeholder"]
    assert placeholder["sourceEventSeqs"] == [1, 4, 5]
    assert surface_ids(ins) == ["placeholder-6"] and reasons(ins) == ["placeholder"]


def test_rewind_to_the_start_at_end_of_file(tmp_path):
    ins, classes = load(tmp_path, "rewind-to-start.jsonl")
    assert types(ins)[5:7] == ["qwen/system/rewind", "qwen/system/session_model"]
    last = ins.events[-1].to_value()
    assert last["surfaceOp"] == {"op": "replace", "start": 1, "end": 4}
    assert last["sourceEventSeqs"] == [1, 4, 5]  # the turn, then the rewind that dropped it
    assert classes[1] == classes[4] == "shadowed" and reasons(ins) == ["placeholder"]


def test_rewind_before_a_compression_brings_the_old_history_back(tmp_path):
    ins, classes = load(tmp_path, "rewind-before-compression.jsonl")
    assert surface_ids(ins) == ["u1#copy", "a1#copy", "u4"]
    first = ins.events[18].to_value()
    assert first["surfaceOp"] == {"op": "replace", "start": 12, "end": 16}
    assert first["sourceEventSeqs"] == [12, 16, 17, 1]
    assert ins.events[19].to_value()["sourceEventSeqs"] == [4]
    assert first["data"]["content"] == ins.events[1].data()["content"]
    assert classes[12] == classes[16] == "shadowed" and reasons(ins) == []


def test_a_local_slash_command_leaves_the_context(tmp_path):
    ins, classes = load(tmp_path, "slash-command.jsonl")
    assert classes[8] == "shadowed"  # "/about": shown locally, never sent
    replaced = ins.events[12].to_value()
    assert replaced["surfaceOp"] == {"op": "replace", "start": 8, "end": 8}
    assert replaced["sourceEventSeqs"] == [8, 9]
    assert surface_ids(ins) == ["u1", "a1", "u3", "a2"]  # "/review" was sent: it stays


def test_a_fork_has_a_seed_and_names_its_parent(tmp_path):
    ins, _ = load(tmp_path, "fork.jsonl")
    header = ins.meta.to_value()
    assert header["parentSession"] == "0b0b0b0b-0000-4000-8000-000000000060"
    assert header["source"]["lineage"] == "fork"
    end = types(ins).index("session/end-seed")
    assert data(ins, end)["import"] == {"line": 3, "synthetic": True}
    assert types(ins)[end - 1] == "turn/end" and types(ins)[end + 1] == "turn/start"


def test_a_sub_session_names_its_spawner(tmp_path):
    ins, _ = load(tmp_path, "sub-session.jsonl")
    header = ins.meta.to_value()
    assert header["parentSession"] == "0b0b0b0b-0000-4000-8000-000000000070"
    assert header["source"]["lineage"] == "subagent" and "origin" not in header
    assert types(ins)[0] == "qwen/system/parent_session"


def test_a_torn_tail_is_ignored(tmp_path):
    ins, _ = load(tmp_path, "torn-tail.jsonl")
    assert surface_ids(ins) == ["u1", "a1"] and reasons(ins) == []
    assert "import/bad-line" not in types(ins)


def test_garbled_lines_are_log_only(tmp_path):
    ins, _ = load(tmp_path, "garbled.jsonl")
    bad = [e.data() for e in ins.events if e.type == "import/bad-line"]
    assert [b["preview"] for b in bad] == ["garbage {not json", '{"uuid":"x","type":"ass']
    assert surface_ids(ins) == ["u1", "a1", "u2"] and reasons(ins) == ["damaged-lines"]


def test_unknown_records_and_parts_stay(tmp_path):
    ins, _ = load(tmp_path, "unknown.jsonl")
    assert {"qwen/telepathy", "qwen/system/hologram", "qwen/user"} <= set(types(ins))
    telepathy = ins.events[types(ins).index("qwen/telepathy")].data()
    assert telepathy["record"]["uuid"] == "z1"
    answer = [e for e in ins.events if e.type == "assistant/message"][0].data()
    assert answer["message"]["content"][1] == {"videoMetadata": {"fps": 1}}
    assert surface_ids(ins) == ["u1", "a1"] and reasons(ins) == []


def test_non_ascii_text_is_kept(tmp_path):
    ins, _ = load(tmp_path, "non-ascii.jsonl")
    assert ins.events[1].data()["content"] == [{"type": "text", "text": "请列出文件 📁\u2028next"}]
    title = [e for e in ins.events if e.type == "session/title"][0].data()["title"]
    assert title == "请列出文件 📁 next"  # the fallback collapses U+2028 like any space
    assert ins.events[4].data()["message"]["content"][0]["text"] == "好的：a.py, b.py ✅"


def test_titles_follow_the_last_rename_once(tmp_path):
    ins, _ = load(tmp_path, "titles.jsonl")
    titles = [e.data() for e in ins.events if e.type == "session/title"]
    assert [(t["title"], t["source"]) for t in titles] == [
        ("fix the parser", {"kind": "fallback"}),
        ("Parser fix", {"kind": "user"}),
        ("Fix the tokenizer", {"kind": "provider", "provider": "openai"}),
    ]
    assert "qwen/system/custom_title" in types(ins)  # the re-anchored repeat
    answer = [e for e in ins.events if e.type == "assistant/message"][0].data()
    assert answer["message"]["source"]["provider"] == "openai"  # from session_model


def test_fragments_of_one_record(tmp_path):
    ins, classes = load(tmp_path, "fragments.jsonl")
    texts = [ins.events[s].data()["message"]["content"] for s in fold_surface(ins.events).nodes[1:]]
    assert texts == [
        [{"type": "reasoning", "text": "thinking"}],
        [{"type": "text", "text": "It parses."}],
        [{"type": "text", "text": "(late part)"}],
    ]
    assert classes[9] == "shadowed"  # Qwen Code's leaf is the late fragment: "more" is off
    assert reasons(ins) == ["split-record"]


def test_records_never_sent_are_log_only(tmp_path):
    ins, _ = load(tmp_path, "off-context.jsonl")
    assert types(ins)[3:7] == [
        "qwen/user/realtime_message",
        "qwen/assistant/realtime_message",
        "qwen/tool_result/code_mode_tool_result",
        "qwen/system/session_artifact_event",
    ]
    assert surface_ids(ins) == ["u1", "a1"]


def test_a_lost_parent_is_bridged(tmp_path):
    ins, _ = load(tmp_path, "dangling.jsonl")
    assert surface_ids(ins) == ["u1", "a1", "u2", "a2"]


def test_other_inputs_and_tool_errors(tmp_path):
    ins, _ = load(tmp_path, "inputs.jsonl")
    assert "cwd" not in ins.meta.to_value() and reasons(ins) == ["cwd-not-absolute"]
    result = ins.events[7].data()["message"]["content"][0]
    assert result["isError"] is True and result["content"] == [
        {"type": "text", "text": "make: no rule"}
    ]
    assert ins.events[8].data()["content"] == [
        {"type": "image", "attachment": {"mimeType": "image/png", "data": "iVBO"}}
    ]
    sources = [ins.events[s].data().get("source") for s in (9, 15, 21)]
    assert sources == [
        {"kind": "plugin", "plugin": "qwen-code", "subtype": "mid_turn_user_message"},
        {"kind": "plugin", "plugin": "qwen-code", "subtype": "notification"},
        {"kind": "plugin", "plugin": "qwen-code", "subtype": "cron"},
    ]
    starts = [data(ins, s)["turn"] for s, e in enumerate(ins.events) if e.type == "turn/start"]
    assert starts == [1, 2, 3]  # a notification and a cron prompt start turns, mid-turn not
    titles = [e.data()["title"] for e in ins.events if e.type == "session/title"]
    assert titles == ["build it"]


def test_a_forked_sub_agent_and_a_nested_one(tmp_path):
    home = shutil.copytree(QWEN / "subagent-fork", tmp_path / "home")
    backend = QwenBackend(str(home), "qwen:x")
    sid = "0b0b0b0b-0000-4000-8000-000000000017"
    headers = {h.id: h.to_value() for h in backend.list()}
    assert set(headers) == {sid, f"{sid}/agent-f1", f"{sid}/agent-f2"}
    nested = headers[f"{sid}/agent-f2"]
    assert nested["parentSession"] == f"{sid}/agent-f1" and nested["delegationDepth"] == 2
    assert headers[f"{sid}/agent-f1"]["agentPreset"] == "fork"
    ins = backend.inspect(f"{sid}/agent-f1")
    checked(ins, f"{sid}/agent-f1")
    assert types(ins)[:6] == [
        "qwen/system/agent_bootstrap",
        "user/message",
        "assistant/message",
        "user/message",
        "qwen/user",  # the task prompt: already the bootstrap's last item
        "session/end-seed",
    ]
    assert data(ins, 1)["source"] == {
        "kind": "plugin",
        "plugin": "qwen-code",
        "history": "agent_bootstrap",
    }
    assert surface_ids(ins) == ["b1", "b1#1", "b1#2", "x2"]


@pytest.mark.parametrize("name", sorted(p.name for p in QWEN.glob("*.jsonl")))
def test_every_fixture_imports_without_error(tmp_path, name):
    ins, classes = load(tmp_path, name)
    assert len(classes) == len(ins.events) > 0


def test_a_parent_written_after_its_child_is_named(tmp_path):
    sid = "0c0c0c0c-0000-4000-8000-000000000001"
    base = {"sessionId": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    lines = [
        {
            **base,
            "uuid": "u1",
            "parentUuid": None,
            "type": "user",
            "message": {"role": "user", "parts": [{"text": "hello"}]},
        },
        {
            **base,
            "uuid": "a1",
            "parentUuid": "later",
            "type": "assistant",
            "message": {"role": "model", "parts": [{"text": "hi"}]},
        },
        {**base, "uuid": "later", "parentUuid": "u1", "type": "system", "subtype": "ui_telemetry"},
    ]
    chats = tmp_path / "home/projects/-w/chats"
    chats.mkdir(parents=True)
    (chats / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ins = QwenBackend(str(tmp_path / "home"), "qwen:x").inspect(sid)
    checked(ins, sid)
    # Qwen Code's leaf is "later", whose chain is [u1, later]: the answer is off its context
    assert surface_ids(ins)[0] == "u1" and surface_ids(ins)[1].startswith("placeholder-")
    assert reasons(ins) == ["late-parent", "placeholder"]
