"""claude: one hand-written transcript per rule of importers.md §1 and per edge case of §5."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any

import pytest

from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.importing.backend import ImportError_
from tests.import_helpers import checked, data, jl, surface_texts, write_home

SID = "s"


def ts(n: int) -> str:
    return f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"


def user(uuid: str, parent: str | None, content: Any, n: int, **kw: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": kw.pop("sid", SID),
        "timestamp": ts(n),
        "cwd": "/w",
        "version": "2.1.38",
        "message": {"role": "user", "content": content},
        **kw,
    }


def asst(
    uuid: str, parent: str | None, mid: str, blocks: list[Any], n: int, **kw: Any
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": kw.pop("sid", SID),
        "timestamp": ts(n),
        "message": {"id": mid, "role": "assistant", "model": "m", "content": blocks},
        **kw,
    }


def text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


def home_with(
    tmp: pathlib.Path,
    lines: bytes,
    name: str = f"{SID}.jsonl",
    extra: dict[str, bytes | str] | None = None,
) -> ClaudeBackend:
    write_home(tmp / "h", {f"projects/-w/{name}": lines, **(extra or {})})
    return ClaudeBackend(str(tmp / "h"), f"claude:{tmp / 'h'}")


def one(backend: ClaudeBackend, sid: str = SID):
    ins = backend.inspect(sid)
    return ins, checked(ins, sid)


def reasons(ins) -> list[str]:
    return ins.meta.to_value()["source"].get("approximate", [])


def test_dangling_parent_appends(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "one", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("u2", "nowhere", "two", 2),
        ),
    )
    ins, classes = one(b)
    assert surface_texts(ins) == ["u1", "a1", "u2"] and "shadowed" not in classes


def test_parent_cycle_ends_the_walk(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            {
                "type": "progress",
                "uuid": "p1",
                "parentUuid": "p2",
                "sessionId": SID,
                "timestamp": ts(0),
            },
            {
                "type": "progress",
                "uuid": "p2",
                "parentUuid": "p1",
                "sessionId": SID,
                "timestamp": ts(0),
            },
            user("u1", None, "one", 1),
            asst("a1", "u1", "m1", [text("A")], 2),
            user("u2", "p2", "two", 3),
        ),
    )
    ins, _ = one(b)
    assert surface_texts(ins) == ["u1", "a1", "u2"]


def test_rewind_shadows_the_abandoned_branch_and_reentry_is_reported(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "one", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("u2", "a1", "two", 2),
            asst("a2", "u2", "m2", [text("B")], 3),
            user("u3", "a1", "again", 4),  # rewinds to a1
            user("u4", "a2", "back", 5),
        ),
    )  # continues the shadowed branch
    ins, classes = one(b)
    seq_u3 = next(
        e.seq for e in ins.events if e.type == "user/message" and data(ins, e.seq)["id"] == "u3"
    )
    assert ins.events[seq_u3].to_value()["surfaceOp"]["op"] == "replace"
    assert reasons(ins) == ["branch-reentry"]
    # u4's walk passes the shadowed a2 and u2 and stops at a1, so u4 replaces u3 in turn
    assert surface_texts(ins) == ["u1", "a1", "u4"]


def test_preserved_suffix_stays_current(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "one", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("u2", "a1", "two", 2),
            asst("a2", "u2", "m2", [text("B")], 3),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b1",
                "parentUuid": None,
                "sessionId": SID,
                "timestamp": ts(4),
                "compactMetadata": {"preservedSegment": {"headUuid": "u2", "tailUuid": "a2"}},
            },
            user("s1", "b1", "Summary", 5, isCompactSummary=True),
        ),
    )
    ins, classes = one(b)
    assert surface_texts(ins) == ["s1", "u2", "a2"]
    summary = next(
        e for e in ins.events if e.type == "user/message" and data(ins, e.seq)["id"] == "s1"
    )
    marker = next(e.seq for e in ins.events if e.type == "compaction/start")
    assert summary.source_seqs[-1] == marker
    assert [classes[s] for s in summary.source_seqs[:-1]] == ["shadowed", "shadowed"]


def test_preserved_non_suffix_is_copied(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "one", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("u2", "a1", "two", 2),
            asst("a2", "u2", "m2", [text("B")], 3),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b1",
                "parentUuid": None,
                "sessionId": SID,
                "timestamp": ts(4),
                "compactMetadata": {"preservedMessages": {"uuids": ["u1"]}},
            },
            user("s1", "b1", "Summary", 5, isCompactSummary=True),
        ),
    )
    ins, _ = one(b)
    assert surface_texts(ins) == ["s1", "u1#copy"]
    copies = [
        e for e in ins.events if e.type == "user/message" and data(ins, e.seq)["id"] == "u1#copy"
    ]
    original = next(
        e.seq for e in ins.events if e.type == "user/message" and data(ins, e.seq)["id"] == "u1"
    )
    assert copies[0].source_seqs == [original]


def test_compaction_without_summary_and_microcompact_reasons(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "one", 0),
            {
                "type": "system",
                "subtype": "microcompact_boundary",
                "uuid": "m",
                "sessionId": SID,
                "timestamp": ts(1),
            },
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b1",
                "sessionId": SID,
                "timestamp": ts(2),
            },
            {"type": "attachment", "uuid": "at", "sessionId": SID, "timestamp": ts(3)},
        ),
    )
    ins, classes = one(b)
    assert reasons(ins) == ["microcompact", "attachments", "compaction-without-summary"]
    assert classes.count("current") == 1
    assert "approximate" not in b.list()[0].to_value()["source"]


def test_title_ranks(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "hello there", 0),
            {"type": "custom-title", "sessionId": SID, "customTitle": "Mine"},
            {"type": "ai-title", "sessionId": SID, "aiTitle": "Generated"},  # lower rank: opaque
            {"type": "summary", "summary": "S", "leafUuid": "u1"},
        ),
    )
    ins, _ = one(b)
    titles = [data(ins, e.seq)["title"] for e in ins.events if e.type == "session/title"]
    assert titles == ["hello there", "Mine"]
    assert [e.type for e in ins.events][-3:-1] == ["claude/ai-title", "claude/summary"]


def test_fallback_title_cut_and_skipped_prompts(tmp_path):
    long = "word  " * 40
    b = home_with(
        tmp_path,
        jl(user("u0", None, "<command-name>/x</command-name>", 0), user("u1", "u0", long, 1)),
    )
    ins, _ = one(b)
    title = [data(ins, e.seq) for e in ins.events if e.type == "session/title"][0]
    assert title["title"] == ("word " * 20)[:99] + "…" and len(title["title"]) == 100


def test_interruption_aborts_the_turn(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "go", 0),
            asst("a1", "u1", "m1", [text("A")], 1),
            user("i1", "a1", [text("[Request interrupted by user]")], 2),
        ),
    )
    ins, _ = one(b)
    assert data(ins, len(ins.events) - 1)["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "user"},
    }
    assert data(ins, ins.events[-3].seq)["source"] == {
        "kind": "plugin",
        "plugin": "claude-code",
        "interruption": True,
    }


def test_blocks_meta_sidechain_duplicates_and_results_without_calls(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user(
                "u1",
                None,
                [text("hi"), {"type": "image", "source": {"type": "base64", "data": "x"}}],
                0,
            ),
            asst(
                "a1",
                "u1",
                "m1",
                [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": "raw"},
                ],
                1,
            ),
            user(
                "r1",
                "a1",
                [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": True},
                    text("and more"),
                    {"type": "tool_result", "tool_use_id": "zz", "content": [text("x")]},
                    {"type": "tool_result", "content": "no id"},
                ],
                2,
                toolUseResult="tur",
            ),
            user("m1u", "r1", "meta text", 3, isMeta=True),
            user("u1", None, "dup", 4),
            user("sc", None, "side", 5, isSidechain=True),
        ),
    )
    ins, _ = one(b)
    types = [e.type for e in ins.events]
    assert "claude/duplicate" in types and "claude/sidechain" in types
    assert reasons(ins) == ["inline-sidechain"]
    first = data(ins, types.index("user/message"))
    assert first["content"][1] == {"type": "image", "attachment": {"type": "base64", "data": "x"}}
    a = data(ins, types.index("assistant/message"))["message"]["content"]
    assert a == [
        {"type": "reasoning", "text": "hmm", "signature": "sig"},
        {"type": "tool-call", "id": "t1", "name": "Read", "arguments": "raw"},
    ]
    results = [e for e in ins.events if e.type == "tool/result"]
    assert [data(ins, e.seq)["message"]["id"] for e in results] == ["r1", "r1#2"]
    assert data(ins, results[0].seq)["meta"] == {"toolUseResult": "tur"}
    assert data(ins, results[0].seq)["message"]["content"][0]["isError"] is True
    assert results[0].source_seqs == [types.index("tool/call")]
    assert results[1].to_value().get("sourceEventSeqs") is None  # result without a call
    plain = [data(ins, e.seq) for e in ins.events if e.type == "user/message"]
    assert plain[1]["id"] == "r1#1" and plain[2]["content"] == [
        {"type": "tool_result", "content": "no id"}
    ]
    assert plain[3]["source"] == {"kind": "plugin", "plugin": "claude-code", "meta": True}


def test_steps_follow_api_responses(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "go", 0),
            asst("a1", "u1", "m1", [{"type": "tool_use", "id": "t1", "name": "A", "input": {}}], 1),
            user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "1"}], 2),
            asst(
                "a2",
                "r1",
                "m1",
                [{"type": "tool_use", "id": "t2", "name": "B", "input": {"k": [1]}}],
                3,
            ),
            asst("a3", "a2", "m2", [text("done")], 4),
        ),
    )
    ins, _ = one(b)
    steps = [
        (data(ins, e.seq)["turn"], data(ins, e.seq)["step"])
        for e in ins.events
        if e.type == "step/start"
    ]
    assert steps == [(1, 1), (1, 2)]
    assert (
        data(ins, [e.seq for e in ins.events if e.type == "tool/call"][1])["arguments"]
        == '{"k":[1]}'
    )


def test_fork_seed_and_flat_and_nested_subagents(tmp_path):
    parent = "11111111-1111-4111-8111-111111111111"
    child = "22222222-2222-4222-8222-222222222222"
    lines = jl(
        user("p1", None, "old", 0, sid=parent),
        asst("p2", "p1", "m", [text("x")], 1, sid=parent),
        user("c1", "p2", "new", 2, sid=child),
    )
    write_home(
        tmp_path / "h",
        {
            f"projects/-w/{child}.jsonl": lines,
            "projects/-w/agent-f1.jsonl": jl(
                user("f1", None, "flat", 3, sid=child, isSidechain=True)
            ),
            f"projects/-w/{child}/subagents/agent-n1.jsonl": jl(
                user("n1", None, "nested", 4, sid=child)
            ),
            f"projects/-w/{child}/subagents/agent-n1.meta.json": (
                '{"agentType":"x","parentAgentId":"n0"}'
            ),
            f"projects/-w/{child}/subagents/agent-n0.meta.json": '{"agentType":"y"}',
            f"projects/-w/{child}/subagents/agent-acompact-9.jsonl": jl(
                user("k1", None, "c", 5, sid=child)
            ),
            f"projects/-w/{child}/subagents/workflows/r1/agent-w1.jsonl": jl(
                user("w1", None, "w", 6, sid=child)
            ),
        },
    )
    b = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    headers = {h.id: h.to_value() for h in b.list()}
    assert (
        headers[child]["parentSession"] == parent and headers[child]["source"]["lineage"] == "fork"
    )
    assert headers[f"{child}/agent-f1"]["parentSession"] == child
    assert headers[f"{child}/agent-n1"]["parentSession"] == f"{child}/agent-n0"
    assert headers[f"{child}/agent-n1"]["delegationDepth"] == 2
    assert headers[f"{child}/agent-n1"]["agentPreset"] == "x"
    assert headers[f"{child}/agent-acompact-9"]["source"]["lineage"] == "compaction"
    assert f"{child}/workflows/r1/agent-w1" in headers
    ins, _ = one(b, child)
    types = [e.type for e in ins.events]
    assert (
        types.index("session/end-seed")
        < [i for i, e in enumerate(ins.events) if e.type == "user/message"][-1]
    )
    for sid in headers:
        checked(b.inspect(sid), sid)


def test_same_id_twice_newer_wins_and_vanished_file(tmp_path):
    write_home(
        tmp_path / "h",
        {
            "projects/-a/s.jsonl": jl(user("u1", None, "old", 0)),
            "projects/-b/s.jsonl": jl(user("u1", None, "new", 0)),
        },
    )
    old, new = tmp_path / "h/projects/-a/s.jsonl", tmp_path / "h/projects/-b/s.jsonl"
    os.utime(old, ns=(1, 1_000_000_000))
    b = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    [header] = b.list()
    assert header.to_value()["source"]["path"] == str(new)
    new.unlink()
    assert b.list()[0].to_value()["source"]["path"] == str(old)
    old.unlink()
    assert b.list() == []
    with pytest.raises(ImportError_, match='session "s" not found'):
        b.inspect("s")


def test_no_anchor_is_not_listed_and_cwd_not_absolute(tmp_path):
    write_home(
        tmp_path / "h",
        {
            "projects/-w/empty.jsonl": b"",
            "projects/-w/junk.jsonl": b"garbage\n",
            "projects/-w/rel.jsonl": jl({**user("u1", None, "x", 0), "cwd": "rel"}),
        },
    )
    b = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    [h] = b.list()
    assert h.id == "rel" and "cwd" not in h.to_value()
    ins, _ = one(b, "rel")
    assert reasons(ins) == ["cwd-not-absolute"]


def test_listing_reuses_scans_while_stat_proves_unchanged(tmp_path, monkeypatch):
    b = home_with(tmp_path, jl(user("u1", None, "x", 0)))
    path = tmp_path / "h/projects/-w/s.jsonl"
    past = time.time_ns() - 3600 * 10**9  # old enough to prove (the 2 s coarse-time rule)
    os.utime(path, ns=(past, past))
    b.list()
    from dsh_query_server.persistence.importing import survey as module

    calls = []
    real = module._scan  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(module, "_scan", lambda *a: calls.append(a) or real(*a))
    b.list()
    assert calls == []
    with path.open("ab") as f:
        f.write(jl(user("u2", "u1", "more", 1)))  # appended: the anchor's bytes are compared
    b.list()
    assert calls == []
    path.write_bytes(jl(user("u1", None, "y", 0)) + b"\n" * 40)  # rewritten in place, larger
    b.list()
    assert len(calls) == 1  # its first line differs: scanned again
    fresh = path.with_name("new")
    fresh.write_bytes(jl(user("u1", None, "z", 0)))
    os.replace(fresh, path)  # a new inode: scanned again
    b.list()
    assert len(calls) == 2
    assert b.list_snapshots() == ClaudeBackend(b.home, "claude:x").list_snapshots()


def test_a_transcript_without_anchor_is_corrupt_for_inspect(tmp_path):
    from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError

    b = home_with(tmp_path, jl(user("u1", None, "x", 0)))
    assert [h.id for h in b.list()] == [SID]
    path = tmp_path / f"h/projects/-w/{SID}.jsonl"
    fresh = path.with_name("tmp")
    fresh.write_bytes(b"garbage\n")
    os.replace(fresh, path)  # replaced after listing
    assert b.list() == []
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        b.inspect(SID)
    assert str(info.value) == (
        f'foreign transcript "projects/-w/{SID}.jsonl" is unreadable: '
        "no header record in its first MiB"
    )


def test_sidecar_cycle_ends_the_depth_walk_and_forked_from_seeds(tmp_path):
    forked = {"sessionId": "old", "messageUuid": "x"}
    write_home(
        tmp_path / "h",
        {
            "projects/-w/t.jsonl": jl(
                user("p1", None, "copied", 0, sid="old", forkedFrom=forked),
                user("c1", "p1", "mine", 1, sid="t"),
            ),
            "projects/-w/self.jsonl": jl(
                user("s1", None, "x", 0, sid="self", forkedFrom={"sessionId": "self"})
            ),
            "projects/-w/t/subagents/agent-a.jsonl": jl(user("a1", None, "sub", 2, sid="t")),
            "projects/-w/t/subagents/agent-a.meta.json": '{"parentAgentId":"b"}',
            "projects/-w/t/subagents/agent-b.meta.json": '{"parentAgentId":"a"}',
        },
    )
    b = ClaudeBackend(str(tmp_path / "h"), "claude:x")
    headers = {h.id: h.to_value() for h in b.list()}
    assert headers["t"]["parentSession"] == "old" and headers["t"]["source"]["lineage"] == "fork"
    assert "parentSession" not in headers["self"]  # a header never names its own id
    assert headers["t/agent-a"]["parentSession"] == "t/agent-b"
    assert headers["t/agent-a"]["delegationDepth"] == 2
    ins, _ = one(b, "t")
    types = [e.type for e in ins.events]
    assert types[types.index("session/end-seed") + 1] == "turn/start"
    assert types.count("session/end-seed") == 1
    seed_prompt = data(ins, types.index("user/message"))
    assert seed_prompt["id"] == "p1"


def test_system_records_and_unknown_types_are_named(tmp_path):
    b = home_with(
        tmp_path,
        jl(
            user("u1", None, "x", 0),
            {"type": "system", "subtype": "local_command", "uuid": "s", "sessionId": SID},
            {"type": "system", "uuid": "s2", "sessionId": SID},
            {"type": "queue-operation", "sessionId": SID},
            {"type": 7},
            {"type": "user", "uuid": "bad", "sessionId": SID, "message": {"content": 5}},
            {"type": "content-replacement", "sessionId": SID},
        ),
    )
    ins, _ = one(b)
    types = [e.type for e in ins.events]
    assert types[3:9] == [
        "claude/system/local_command",
        "claude/system",
        "claude/queue-operation",
        "claude/record",
        "claude/user",
        "claude/content-replacement",
    ]
    assert reasons(ins) == ["content-replacement"]
