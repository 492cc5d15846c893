"""opencode: one hand-written fixture per rule of importers.md §8, read from ``opencode.db`` and
from the legacy ``storage/`` files alike; every imported log replay-validates and folds."""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest

from dsh_query_server.persistence.opencode.backend import OpenCodeBackend, OpenCodeError
from tests.import_helpers import checked, data
from tests.persistence.opencode.opencode_helpers import (
    FIXTURES,
    backend_for,
    load,
    rows,
    surface_ids,
    write_db,
    write_legacy,
)

LAYOUTS = ["db", "legacy"]


def only(backend: Any) -> Any:
    (snap,) = backend.list_snapshots()
    return backend.inspect(snap.header.to_value()["id"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_prompt_and_a_two_step_answer(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("basic")["sessions"], layout))
    assert rows(ins) == [
        (0, "opencode/session", None, None, "log-only"),
        (1, "turn/start", None, None, "log-only"),
        (2, "user/message", "append", None, "current"),
        (3, "session/title", None, None, "log-only"),
        (4, "step/start", None, None, "log-only"),
        (5, "assistant/message", "append", None, "current"),
        (6, "tool/call", None, None, "log-only"),
        (7, "tool/result", "append", [6], "current"),
        (8, "step/end", None, None, "log-only"),
        (9, "step/start", None, None, "log-only"),
        (10, "assistant/message", "append", None, "current"),
        (11, "step/end", None, None, "log-only"),
        (12, "turn/end", None, None, "log-only"),
        (13, "session/title", None, None, "log-only"),
    ]
    first = data(ins, 5)
    assert first["message"]["content"] == [
        {"type": "text", "text": "Let me look."},
        {
            "type": "tool-call",
            "id": "toolu_01",
            "name": "bash",
            "arguments": '{"command":"ls","description":"List files"}',
        },
    ]
    assert first["message"]["source"] == {
        "kind": "model",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
    }
    # each step-finish's tokens are its own step's usage, copied as recorded
    assert first["usage"] == {
        "total": 160,
        "input": 10,
        "output": 20,
        "reasoning": 0,
        "cache": {"read": 100, "write": 30},
    }
    assert data(ins, 10)["usage"]["cache"] == {"read": 130, "write": 0}
    assert data(ins, 10)["message"]["id"] == "msg_b5e0f3d1c003Ff5Gg6Hh7Ii8Jj#1"
    result = data(ins, 7)
    assert result["message"]["id"] == "prt_b5e0f3d1c006Uu7Vv8Ww9Xx0Yy"
    assert result["message"]["content"][0]["content"] == [{"type": "text", "text": "a.py\nb.py"}]
    assert result["import"] == {
        "message": "msg_b5e0f3d1c003Ff5Gg6Hh7Ii8Jj",
        "part": "prt_b5e0f3d1c006Uu7Vv8Ww9Xx0Yy",
    }
    assert data(ins, 8)["record"]["reason"] == "tool-calls"  # the step-finish part itself
    assert data(ins, 12)["reason"] == {"kind": "completed"}
    titles = [data(ins, s)["title"] for s in (3, 13)]
    assert titles == ["list files", "List the files"]  # the session's own title comes last
    assert data(ins, 13)["source"] == {"kind": "provider", "provider": "opencode"}
    assert ins.events[13].time == 1767225609000  # time.updated


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_compaction_with_a_tail_puts_the_context_in_opencodes_order(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("compaction")["sessions"], layout))
    table = rows(ins)
    assert surface_ids(ins) == [
        "msg_c000000005#copy",  # the request ("What did we do so far?")
        "msg_c000000006#copy",  # the summary
        "msg_c000000003#copy",  # the kept tail from tail_start_id
        "msg_c000000004#copy",
        "msg_c000000007",  # the synthetic continue prompt
        "msg_c000000008",
    ]
    (marker,) = [r[0] for r in table if r[1] == "compaction/start"]
    (replace,) = [r for r in table if r[2] and r[2].startswith("R(")]
    assert replace[1] == "user/message" and replace[4] == "current"
    shadowed = [r[0] for r in table if r[4] == "shadowed"]
    assert replace[3] == [*shadowed, marker]  # every shadowed event, then the boundary
    assert data(ins, marker)["record"]["tail_start_id"] == "msg_c000000003"
    # after the request's copy, each copy cites the very event it copies
    for seq in range(replace[0] + 1, replace[0] + 4):
        (source,) = ins.events[seq].source_seqs
        copied, original = data(ins, seq), data(ins, source)
        if ins.events[seq].type == "assistant/message":
            copied, original = copied["message"], original["message"]
        assert copied["id"] == original["id"] + "#copy"
        assert copied["content"] == original["content"]
    request = data(ins, replace[0])
    assert request["content"] == [{"type": "text", "text": "What did we do so far?"}]
    assert request["source"] == {"kind": "plugin", "plugin": "opencode", "compaction": True}
    continue_prompt = next(
        d for d in (data(ins, r[0]) for r in table) if d.get("id") == "msg_c000000007"
    )
    assert continue_prompt["source"] == {"kind": "plugin", "plugin": "opencode", "synthetic": True}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_failed_compaction_leaves_the_history_and_a_completed_one_replaces_it(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("compaction-plain")["sessions"], layout))
    table = rows(ins)
    assert surface_ids(ins) == [
        "msg_d000000005#copy",
        "msg_d000000006#copy",
        "msg_d000000007",
        "msg_d000000008",
    ]
    (replace,) = [r for r in table if r[2] and r[2].startswith("R(")]
    shadowed = [data(ins, s) for s in replace[3] if ins.events[s].type == "user/message"]
    # the failed attempt's request was in context until the completed compaction
    assert [d["id"] for d in shadowed] == ["msg_d000000001", "msg_d000000003", "msg_d000000005"]
    failed = [r for r in table if r[1] == "opencode/message"]
    assert len(failed) == 1 and data(ins, failed[0][0])["record"]["error"]["name"] == "APIError"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_prune_rewrites_the_tool_result_when_it_happened(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("prune")["sessions"], layout))
    table = rows(ins)
    (marker,) = [r for r in table if r[1] == "compaction/prune"]
    assert ins.events[marker[0]].time == 1767225615000  # time.compacted
    assert data(ins, marker[0])["record"] == {
        "compacted": 1767225615000,
        "parts": ["prt_e000000002b"],
    }
    (rewrite,) = [r for r in table if r[1] == "tool/result" and r[2] != "append"]
    original = next(r for r in table if r[1] == "tool/result" and r[2] == "append")
    assert rewrite[2] == f"R({original[0]}..{original[0]})"
    assert rewrite[3] == [original[0], marker[0]] and original[4] == "shadowed"
    new, old = data(ins, rewrite[0]), data(ins, original[0])
    assert new["message"]["content"][0]["content"] == [
        {"type": "text", "text": "[Old tool result content cleared]"}
    ]
    assert old["message"]["content"][0]["content"] == [
        {"type": "text", "text": "line 1\nline 2\nline 3"}
    ]
    new["message"]["content"][0]["content"] = old["message"]["content"][0]["content"]
    assert new == old  # only the content changed (semantics.md §2.1 step 4.6)
    # the prune happened between the second answer and the third prompt
    third = next(
        r[0] for r in table if r[1] == "user/message" and data(ins, r[0])["id"] == "msg_e000000005"
    )
    second = next(
        r[0]
        for r in table
        if r[1] == "assistant/message" and data(ins, r[0])["message"]["id"] == "msg_e000000004"
    )
    assert second < marker[0] < rewrite[0] < third


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_pending_revert_shadows_the_reverted_messages(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("revert")["sessions"], layout))
    table = rows(ins)
    assert surface_ids(ins)[:2] == ["msg_f000000001", "msg_f000000002"]
    placeholder = data(ins, table[-2][0])
    assert placeholder["content"] == [] and placeholder["source"]["placeholder"] is True
    reverted = [r for r in table if r[4] == "shadowed"]
    assert {data(ins, r[0])["import"]["message"] for r in reverted} == {
        "msg_f000000003",
        "msg_f000000004",
    }
    (marker,) = [r[0] for r in table if r[1] == "opencode/revert"]
    assert table[-2][3] == [*[r[0] for r in reverted], marker]
    assert ins.meta.to_value()["source"]["approximate"] == ["placeholder"]
    assert "approximate" not in only_header(tmp_path, "revert", layout)["source"]


def only_header(tmp_path: pathlib.Path, name: str, layout: str) -> dict[str, Any]:
    backend = backend_for(tmp_path / "again", load(name)["sessions"], layout)
    return backend.list()[0].to_value()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_revert_before_a_compaction_brings_the_compacted_history_back(tmp_path, layout):
    """OpenCode deletes the compaction with the reverted messages, so the history it had
    compacted is the context again: re-appended as copies, in order."""
    sessions = copy.deepcopy(load("compaction")["sessions"])
    sessions[0]["session"]["revert"] = {"messageID": "msg_c000000005"}
    ins = only(backend_for(tmp_path, sessions, layout))
    assert surface_ids(ins) == [
        "msg_c000000001#copy",
        "msg_c000000002#copy",
        "prt_c000000002b#copy",
        "msg_c000000003#copy",
        "msg_c000000004#copy",
    ]
    assert ins.meta.to_value()["source"].get("approximate") is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_child_session_is_a_subagent_of_its_parent(tmp_path, layout):
    backend = backend_for(tmp_path, load("child")["sessions"], layout)
    headers = {h.to_value()["id"]: h.to_value() for h in backend.list()}
    child = headers["ses_4a1e0c2e7ffdChild0000001"]
    assert child["parentSession"] == "ses_4a1e0c2e7ffeParent000001"
    assert child["origin"] == "subagent" and child["delegationDepth"] == 1
    assert child["source"]["lineage"] == "subagent"
    parent = backend.inspect("ses_4a1e0c2e7ffeParent000001")
    (result,) = [e for e in parent.events if e.type == "tool/result"]
    assert result.data()["meta"]["state"]["metadata"]["sessionId"] == child["id"]
    inspected = backend.inspect(child["id"]).meta.to_value()
    assert {k: inspected[k] for k in child if k != "source"} == {
        k: child[k] for k in child if k != "source"
    }


@pytest.mark.parametrize("layout", LAYOUTS)
def test_damaged_and_unknown_records_are_log_only(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("damaged")["sessions"], layout))
    table = rows(ins)
    types = [r[1] for r in table]
    assert types.count("opencode/bad-record") == 2
    assert {"opencode/part/hologram", "opencode/part/agent", "opencode/message"} <= set(types)
    bad = [data(ins, r[0]) for r in table if r[1] == "opencode/bad-record"]
    assert {b["kind"] for b in bad} == {"message", "part"}
    assert any(b["preview"] == '{"type":"text","text":"cut off' for b in bad)
    assert ins.meta.to_value()["source"]["approximate"] == ["damaged-records"]
    texts = [
        data(ins, s)["content"][0]["text"]
        for s in (r[0] for r in table)
        if ins.events[s].type == "user/message"
    ]
    assert texts[0] == "Grüße, 世界 — résumé ✓ 🙂"
    answer = next(data(ins, r[0]) for r in table if r[1] == "assistant/message")
    assert answer["message"]["content"] == [{"type": "text", "text": "Ответ: да."}]
    assert next(
        d for d in (data(ins, r[0]) for r in table) if d.get("title") == "Überprüfung ✓ 日本語"
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_errors_end_turns_and_failed_answers_are_never_resent(tmp_path, layout):
    ins = only(backend_for(tmp_path, load("errors")["sessions"], layout))
    table = rows(ins)
    ends = [data(ins, r[0])["reason"] for r in table if r[1] == "turn/end"]
    assert ends == [
        {"kind": "aborted", "reason": {"kind": "user"}},
        {"kind": "error", "error": {"message": "Overloaded", "code": "APIError"}},
        {"kind": "completed"},
    ]
    assert surface_ids(ins) == [
        "msg_i000000001",
        "msg_i000000002",  # aborted after producing text: still sent
        "msg_i000000003",
        "msg_i000000005",
        "msg_i000000006",  # the running tool's call, without a result
    ]
    assert not [r for r in table if r[1] == "tool/result"]
    failed = [data(ins, r[0])["record"] for r in table if r[1].startswith("opencode/part/")]
    assert {"type": "text", "text": "Violets", "id": "prt_i000000004b"} in failed


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_default_title_is_no_title(tmp_path, layout):
    sessions = copy.deepcopy(load("basic")["sessions"])
    sessions[0]["session"]["title"] = "New session - 2026-01-01T00:00:00.000Z"
    ins = only(backend_for(tmp_path, sessions, layout))
    titles = [e.data() for e in ins.events if e.type == "session/title"]
    assert [t["title"] for t in titles] == ["list files"]
    assert titles[0]["source"] == {"kind": "fallback"}


def test_the_database_wins_over_legacy_files_of_the_same_session(tmp_path):
    sessions = load("basic")["sessions"]
    home = tmp_path / "h"
    write_db(home, sessions)
    stale = copy.deepcopy(sessions)
    stale[0]["session"]["title"] = "an older title"
    write_legacy(home, stale + load("prune")["sessions"])
    backend = OpenCodeBackend(str(home), f"opencode:{home}")
    paths = {h.to_value()["id"]: h.to_value()["source"]["path"] for h in backend.list()}
    assert paths == {
        "ses_4a1f0c2e7ffeAbCdEfGhIjKlMn": str(home / "opencode.db"),
        "ses_4a1e0c2e7ffePrune0000001": str(
            home / "storage/session/prj_w/ses_4a1e0c2e7ffePrune0000001.json"
        ),
    }
    title = [
        e
        for e in backend.inspect("ses_4a1f0c2e7ffeAbCdEfGhIjKlMn").events
        if e.type == "session/title"
    ][-1]
    assert title.data()["title"] == "List the files"


def test_a_torn_legacy_file_is_one_damaged_record(tmp_path):
    """A part file cut while OpenCode wrote it (a torn tail): that part is damaged, the rest of
    the session reads as before."""
    backend = backend_for(tmp_path, load("basic")["sessions"], "legacy")
    part = next((tmp_path / "opencode-legacy/storage/part").rglob("prt_b5e0f3d1c009*.json"))
    whole = part.read_bytes()
    part.write_bytes(whole[: len(whole) // 2])
    ins = only(backend)
    checked(ins, ins.meta.to_value()["id"])
    bad = [e.data() for e in ins.events if e.type == "opencode/bad-record"]
    assert len(bad) == 1 and bad[0]["preview"] == whole[: len(whole) // 2].decode()
    assert bad[0]["import"]["part"] == part.stem
    # the step whose only content was cut has no assistant message left
    assert len([e for e in ins.events if e.type == "assistant/message"]) == 1


@pytest.mark.slow
def test_a_session_of_twenty_thousand_events(tmp_path):
    sid = "ses_4a1e0c2e7ffeLong00000001"
    messages = []
    for i in range(2500):  # eight events a turn
        messages.append(
            {
                "info": {
                    "id": f"msg_{2 * i:010d}u",
                    "role": "user",
                    "time": {"created": 1767225600000 + 10 * i},
                },
                "parts": [
                    {"id": f"prt_{2 * i:010d}a", "type": "text", "text": f"prompt {i} ünïcode"}
                ],
            }
        )
        messages.append(
            {
                "info": {
                    "id": f"msg_{2 * i + 1:010d}a",
                    "role": "assistant",
                    "parentID": f"msg_{2 * i:010d}u",
                    "time": {"created": 1767225600000 + 10 * i + 5},
                    "modelID": "m",
                    "providerID": "p",
                    "finish": "stop",
                },
                "parts": [
                    {"id": f"prt_{2 * i + 1:010d}a", "type": "step-start"},
                    {"id": f"prt_{2 * i + 1:010d}b", "type": "text", "text": f"answer {i}"},
                    {
                        "id": f"prt_{2 * i + 1:010d}c",
                        "type": "tool",
                        "callID": f"c{i}",
                        "tool": "read",
                        "state": {
                            "status": "completed",
                            "input": {"i": i},
                            "output": "x" * 50,
                            "time": {"start": 1, "end": 2},
                        },
                    },
                    {
                        "id": f"prt_{2 * i + 1:010d}d",
                        "type": "step-finish",
                        "reason": "stop",
                        "cost": 0,
                        "tokens": {
                            "input": i,
                            "output": 1,
                            "reasoning": 0,
                            "cache": {"read": 0, "write": 0},
                        },
                    },
                ],
            }
        )
    session = {
        "id": sid,
        "directory": "/w",
        "title": "long",
        "version": "1",
        "time": {"created": 1767225600000, "updated": 1767225700000},
    }
    backend = backend_for(tmp_path, [{"session": session, "messages": messages}], "db")
    ins = backend.inspect(sid)
    assert len(ins.events) >= 20_000
    classes = checked(ins, sid)
    assert classes.count("current") == 7500  # the prompt, the answer and the tool result
    window = backend.inspect_window(sid, 10_000, 10_009)
    assert [e.to_value() for e in window.events] == [
        e.to_value() for e in ins.events[10_000:10_010]
    ]


def test_absent_home_lists_nothing_and_a_file_home_fails(tmp_path):
    assert OpenCodeBackend(str(tmp_path / "absent"), "opencode:x").list() == []
    (tmp_path / "plain").write_text("x")
    with pytest.raises(OpenCodeError, match="not a readable directory"):
        OpenCodeBackend(str(tmp_path / "plain"), "opencode:y").list()
    backend = OpenCodeBackend(str(tmp_path / "absent"), "opencode:x")
    with pytest.raises(OpenCodeError, match='session "nope" not found'):
        backend.inspect("nope")


def test_fixtures_say_which_rule_they_show():
    for path in sorted(FIXTURES.glob("*.json")):
        assert json.loads(path.read_text())["rule"], path
