"""Recorded usage per agent (views.md §2, importers.md §1.6, §2.6): hand-made transcripts, one per
rule, imported by the real backends and measured by the timeline."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import msgspec

from dsh_query_server.model.event import Header
from dsh_query_server.persistence.claude.backend import ClaudeBackend
from dsh_query_server.persistence.codex.backend import CodexBackend
from dsh_query_server.persistence.contract.results import Inspection
from dsh_query_server.query.timeline import build_timeline
from dsh_query_server.session.fold import fold_surface
from tests.builders import A, U, assistant_data, ev
from tests.import_helpers import checked, jl, write_home
from tests.persistence.claude.test_import_claude_rules import asst, text, user
from tests.persistence.codex.test_import_codex import SID as CODEX_SID
from tests.persistence.codex.test_import_codex import event, item, meta, msg


def timeline_of(ins: Inspection, sid: str) -> dict[str, Any]:
    checked(ins, sid)  # the imported log replay-validates and folds
    built = build_timeline(
        msgspec.Raw(ins.meta.raw), ins.meta, ins.events, fold_surface(ins.events)
    )
    return msgspec.json.decode(msgspec.json.encode(built))


def recorded(**fields: Any) -> dict[str, Any]:
    keys = ("input", "cacheRead", "cacheWrite", "output", "reasoning", "context")
    return {k: fields.get(k) for k in keys}


# -- Claude Code --------------------------------------------------------------------------------


def anthropic(input: int, output: int, **cache: int) -> dict[str, Any]:
    usage = {"input_tokens": input, "output_tokens": output}
    if "read" in cache:
        usage["cache_read_input_tokens"] = cache["read"]
    if "write" in cache:
        usage["cache_creation_input_tokens"] = cache["write"]
    return usage


def claude(tmp: pathlib.Path, *records: dict[str, Any]) -> dict[str, Any]:
    write_home(tmp / "h", {"projects/-w/s.jsonl": jl(*records)})
    return timeline_of(ClaudeBackend(str(tmp / "h"), f"claude:{tmp / 'h'}").inspect("s"), "s")


def with_usage(record: dict[str, Any], usage: dict[str, Any], request: str) -> dict[str, Any]:
    record["message"]["usage"] = usage
    record["requestId"] = request
    return record


def test_claude_only_the_last_record_of_a_response_carries_recorded(tmp_path):
    tool = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "file a"}
    timeline = claude(
        tmp_path,
        user("u1", None, "read a", 1),
        with_usage(asst("a1", "u1", "msg_1", [text("let me look")], 2), anthropic(3, 5), "r1"),
        with_usage(
            asst("a2", "a1", "msg_1", [tool], 3), anthropic(3, 40, read=900, write=100), "r1"
        ),
        user("u2", "a2", [result], 4),
        with_usage(asst("a3", "u2", "msg_2", [text("done")], 5), anthropic(1, 7, read=1000), "r2"),
    )
    steps = timeline["steps"]
    assert [s["recorded"] for s in steps] == [
        None,  # the first record of msg_1: its usage is a partial count
        recorded(input=3, cacheRead=900, cacheWrite=100, output=40, context=1003),
        # no cache writes recorded: null, never 0, and the context counts it as 0
        recorded(input=1, cacheRead=1000, output=7, context=1001),
    ]
    assert [(s["turn"], s["step"]) for s in steps] == [(1, 1), (1, 1), (1, 2)]
    assert all(s["model"] == "m" for s in steps)
    assert timeline["peak"]["recordedContext"] == 1001


def test_claude_response_without_usage_records_nothing(tmp_path):
    timeline = claude(
        tmp_path,
        user("u1", None, "hi", 1),
        asst("a1", "u1", "msg_1", [text("hello")], 2),
    )
    assert [s["recorded"] for s in timeline["steps"]] == [None]


def test_claude_preserved_copy_is_no_response_of_its_own(tmp_path):
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": "a2",
        "sessionId": "s",
        "timestamp": "2026-01-01T00:00:05.000Z",
        "compactMetadata": {"preservedMessages": {"uuids": ["a1"]}},
    }
    timeline = claude(
        tmp_path,
        user("u1", None, "one", 1),
        with_usage(asst("a1", "u1", "msg_1", [text("first")], 2), anthropic(10, 1), "r1"),
        user("u2", "a1", "two", 3),
        with_usage(asst("a2", "u2", "msg_2", [text("second")], 4), anthropic(20, 2), "r2"),
        boundary,
        user("c1", "b1", "Summary", 6, isCompactSummary=True),
    )
    steps = timeline["steps"]
    assert len(steps) == 3  # a1, a2, and the copy of a1 after the summary
    assert [s["recorded"] and s["recorded"]["input"] for s in steps] == [10, 20, None]
    assert [r["shadowed"]["count"] for r in timeline["replacements"]] == [4]


# -- Codex --------------------------------------------------------------------------------------


def token_count(**last: int) -> dict[str, Any]:
    return event({"type": "token_count", "info": {"last_token_usage": last}})


def test_codex_token_count_goes_to_the_last_step_before_it(tmp_path):
    lines = jl(
        meta(CODEX_SID),
        {
            "timestamp": "2026-01-01T00:00:00.500Z",
            "type": "turn_context",
            "payload": {"model": "gpt"},
        },
        token_count(input_tokens=1, output_tokens=1),  # before any step: nobody's
        item(msg("user", "list files")),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}),
        item(msg("assistant", "I will run ls")),
        event({"type": "token_count", "info": None}),  # rate limits only: passed over
        token_count(
            input_tokens=1200,
            cached_input_tokens=1000,
            output_tokens=50,
            reasoning_output_tokens=20,
        ),
        token_count(input_tokens=9, output_tokens=9),  # a second one: not the first after
        item({"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}),
        item({"type": "function_call_output", "call_id": "c1", "output": "a b"}),
        item(msg("assistant", "a and b")),
        token_count(input_tokens=1300, output_tokens=5),
    )
    write_home(tmp_path / "h", {f"sessions/2026/01/01/rollout-x-{CODEX_SID}.jsonl": lines})
    backend = CodexBackend(str(tmp_path / "h"), "codex:x")
    timeline = timeline_of(backend.inspect(CODEX_SID), CODEX_SID)
    steps = timeline["steps"]
    assert [s["model"] for s in steps] == ["gpt"] * 4
    assert [s["recorded"] for s in steps] == [
        None,  # the reasoning item: the next step came before any token_count
        recorded(input=1200, cacheRead=1000, output=50, reasoning=20, context=1200),
        None,  # the function call: the next step came first
        # fields Codex did not write are null; cache writes are never reported
        recorded(input=1300, output=5, context=1300),
    ]


# -- dsh and agents without a rule --------------------------------------------------------------


def dsh_timeline(header: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    data = assistant_data("ok")
    data["usage"] = usage
    events = [U(0, "hi"), ev("assistant/message", 1, data, op="append"), A(2)]
    built = build_timeline(
        msgspec.Raw(msgspec.json.encode(header)),
        Header.from_value(header),
        events,
        fold_surface(events),
    )
    return msgspec.json.decode(msgspec.json.encode(built))


def test_dsh_usage_field_by_field():
    usage = {
        "inputTokens": 100,
        "outputTokens": 30,
        "cacheReadTokens": 2000,
        "cacheWriteTokens": 50,
        "reasoningTokens": 12,
    }
    steps = dsh_timeline({"version": 0, "id": "d", "createdAt": 0}, usage)["steps"]
    assert steps[0]["recorded"] == recorded(
        input=100, cacheRead=2000, cacheWrite=50, output=30, reasoning=12, context=2150
    )
    assert steps[1]["recorded"] is None  # no usage on that message


def test_dsh_absent_or_invalid_fields_are_null():
    usage = {"outputTokens": 3, "cacheReadTokens": -1, "reasoningTokens": "12"}
    steps = dsh_timeline({"version": 0, "id": "d", "createdAt": 0}, usage)["steps"]
    assert steps[0]["recorded"] == recorded(output=3)  # no input: no context either


def test_an_agent_without_a_rule_records_nothing():
    header = {"version": 0, "id": "g", "createdAt": 0, "source": {"agent": "someone-else"}}
    steps = dsh_timeline(header, {"inputTokens": 1, "outputTokens": 1})["steps"]
    assert [s["recorded"] for s in steps] == [None, None]


# -- Gemini CLI (importers.md §7.5) ---------------------------------------------------------------


def gemini(tmp: pathlib.Path, fixture: str, tokens: dict[str, Any] | None = None) -> dict[str, Any]:
    """A rules fixture of tests/fixtures/gemini/rules as the only chat of a home; ``tokens``
    replaces the tokens of its first ``gemini`` message."""
    from dsh_query_server.persistence.gemini.backend import GeminiBackend
    from tests.persistence.gemini.test_import_gemini_rules import RULES

    home = tmp / ".gemini"
    chats = home / "tmp" / "w" / "chats"
    chats.mkdir(parents=True)
    (home / "tmp/w/.project_root").write_text("/w")
    lines = (RULES / fixture).read_text().splitlines()
    if tokens is not None:
        records = [json.loads(line) for line in lines]
        first = next(r for r in records if r.get("type") == "gemini")
        first["tokens"] = tokens
        lines = [json.dumps(r) for r in records]
    (chats / "session-2026-01-02T00-00-usage.jsonl").write_text("\n".join(lines) + "\n")
    backend = GeminiBackend(str(home), "gemini:test")
    [header] = backend.list()
    return timeline_of(backend.inspect(str(header.id)), str(header.id))


def test_gemini_output_adds_the_thoughts_and_the_context_the_tool_prompt(tmp_path):
    steps = gemini(tmp_path, "usage.jsonl")["steps"]
    # importers.md §7.5's own example: {input:1200, output:12, cached:1000, thoughts:30, tool:5}
    assert [s["recorded"] for s in steps] == [
        recorded(input=1200, cacheRead=1000, output=42, reasoning=30, context=1205)
    ]
    assert steps[0]["model"] == "gemini-2.5-pro"


def test_gemini_fields_it_did_not_write_are_null(tmp_path):
    steps = gemini(tmp_path, "usage.jsonl", {"input": 10, "output": 2, "total": 12})["steps"]
    # no thoughts: reasoning null and nothing added; no cached count: null, never 0
    assert [s["recorded"] for s in steps] == [recorded(input=10, output=2, context=10)]
    steps = gemini(tmp_path / "b", "usage.jsonl", {"output": 2, "thoughts": 1})["steps"]
    assert [s["recorded"] for s in steps] == [recorded(output=3, reasoning=1)]


def test_gemini_a_step_recorded_before_its_tokens_has_none(tmp_path):
    steps = gemini(tmp_path, "growth.jsonl")["steps"]
    assert steps[0]["recorded"] is None  # its tokens arrived in a later gemini/update


# -- OpenCode (importers.md §8.7) -----------------------------------------------------------------


def test_opencode_each_step_finish_is_its_steps_usage(tmp_path):
    from tests.persistence.opencode.opencode_helpers import backend_for, load

    fixture = load("basic")
    sid = fixture["sessions"][0]["session"]["id"]
    backend = backend_for(tmp_path, fixture["sessions"])
    steps = timeline_of(backend.inspect(sid), sid)["steps"]
    assert [s["recorded"] for s in steps] == [
        recorded(input=10, cacheRead=100, cacheWrite=30, output=20, reasoning=0, context=140),
        # OpenCode writes 0 for what the provider did not report: 0 stays 0
        recorded(input=12, cacheRead=130, cacheWrite=0, output=4, reasoning=0, context=142),
    ]


def test_opencode_reasoning_is_billed_beside_the_output(tmp_path):
    from tests.persistence.opencode.opencode_helpers import backend_for, load

    fixture = load("basic")
    session = fixture["sessions"][0]
    finish = [p for m in session["messages"] for p in m["parts"] if p["type"] == "step-finish"]
    finish[0]["tokens"] = {"input": 5, "output": 20, "reasoning": 7, "cache": {"read": 1}}
    sid = session["session"]["id"]
    steps = timeline_of(backend_for(tmp_path, [session]).inspect(sid), sid)["steps"]
    # output counts the reasoning (views.md §2: reasoning is inside output); no write count: null
    assert steps[0]["recorded"] == recorded(input=5, cacheRead=1, output=27, reasoning=7, context=6)


# -- Copilot CLI (importers.md §9.7) --------------------------------------------------------------


def test_copilot_records_only_the_output(tmp_path):
    from tests.persistence.copilot.test_import_copilot import S, backend_of, home_of

    backend = backend_of(home_of("worked-example", tmp_path))
    steps = timeline_of(backend.inspect(S), S)["steps"]
    assert [s["recorded"] for s in steps] == [
        recorded(output=21),
        recorded(output=5),
        recorded(output=30),
        recorded(output=9),
    ]
    assert {s["model"] for s in steps} == {"claude-sonnet-4.5"}


# -- Qwen Code (importers.md §10.5) ---------------------------------------------------------------


def qwen(tmp: pathlib.Path, usage: dict[str, Any] | None) -> dict[str, Any]:
    from dsh_query_server.persistence.qwen.backend import QwenBackend

    sid = "0a0a0a0a-0000-4000-8000-00000000000f"
    base = {"sessionId": sid, "cwd": "/w", "version": "0.6.0"}
    answer = {
        **base,
        "uuid": "a1",
        "parentUuid": "u1",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "type": "assistant",
        "model": "qwen3-coder-plus",
        "message": {"role": "model", "parts": [{"text": "hi"}]},
        "contextWindowSize": 131072,
    }
    if usage is not None:
        answer["usageMetadata"] = usage
    prompt = {
        **base,
        "uuid": "u1",
        "parentUuid": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "user",
        "message": {"role": "user", "parts": [{"text": "hello"}]},
    }
    write_home(tmp / "q", {f"projects/-w/chats/{sid}.jsonl": jl(prompt, answer)})
    return timeline_of(QwenBackend(str(tmp / "q"), "qwen:x").inspect(sid), sid)


def test_qwen_prompt_is_the_whole_prompt(tmp_path):
    timeline = qwen(
        tmp_path,
        {
            "promptTokenCount": 1200,
            "candidatesTokenCount": 25,
            "cachedContentTokenCount": 1000,
            "thoughtsTokenCount": 9,
            "totalTokenCount": 1225,
        },
    )
    assert [s["recorded"] for s in timeline["steps"]] == [
        recorded(input=1200, cacheRead=1000, output=25, reasoning=9, context=1200)
    ]
    assert timeline["contextWindow"] == 131072  # the record's contextWindowSize


def test_qwen_older_chats_use_the_renamed_fields(tmp_path):
    steps = qwen(tmp_path, {"input": 300, "output": 4, "cached": 0, "total": 304})["steps"]
    assert [s["recorded"] for s in steps] == [
        recorded(input=300, cacheRead=0, output=4, context=300)
    ]
    assert qwen(tmp_path / "b", None)["steps"][0]["recorded"] is None


def test_codex_a_restated_total_is_no_new_request(tmp_path):
    def counted(last: int, total: int) -> dict[str, Any]:
        info = {
            "last_token_usage": {"input_tokens": last, "output_tokens": 1},
            "total_token_usage": {"input_tokens": total, "output_tokens": total},
        }
        return event({"type": "token_count", "info": info})

    lines = jl(
        meta(CODEX_SID),
        item(msg("user", "one")),
        item(msg("assistant", "first")),
        counted(100, 100),
        item(msg("user", "two")),
        item(msg("assistant", "cut off before its count")),
        counted(100, 100),  # the resumed rollout restates the last counts: no request of its own
        item(msg("user", "three")),
        item(msg("assistant", "third")),
        counted(50, 150),
    )
    write_home(tmp_path / "h", {f"sessions/2026/01/01/rollout-x-{CODEX_SID}.jsonl": lines})
    backend = CodexBackend(str(tmp_path / "h"), "codex:x")
    steps = timeline_of(backend.inspect(CODEX_SID), CODEX_SID)["steps"]
    assert [s["recorded"] and s["recorded"]["input"] for s in steps] == [100, None, 50]
