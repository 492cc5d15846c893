"""Recorded usage per agent (views.md §2, importers.md §1.6, §2.6): hand-made transcripts, one per
rule, imported by the real backends and measured by the timeline."""

from __future__ import annotations

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
