"""Message-shape validation (semantics.md §1.5) and replay validation (§1.6), message by message."""

from __future__ import annotations

import copy

import pytest

from dsh_query_server.model.event import Event
from dsh_query_server.session.validate import header_error, message_shape_error, replay_error
from tests.builders import A, T, U, assistant_data, ev, log_only, tool_result_data, user_data

SUBJECT = "session event at seq 0"


def shaped(type, data):
    return Event.from_value(
        {"type": type, "seq": 0, "time": 0, "data": data, "surfaceOp": "append"}
    )


def mutate(data, path, value):
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "type,data,message",
    [
        ("user/message", mutate(user_data(), ["id"], ""), "lacks an identified message"),
        ("user/message", "not an object", "lacks an identified message"),
        (
            "user/message",
            mutate(user_data(), ["role"], "assistant"),
            'message must have role "user"',
        ),
        (
            "user/message",
            mutate(user_data(), ["source"], {"kind": ""}),
            "message has invalid source",
        ),
        ("user/message", mutate(user_data(), ["content"], "text"), "message has invalid content"),
        ("assistant/message", {"message": None}, "lacks an identified message"),
        (
            "assistant/message",
            mutate(assistant_data(), ["message", "role"], "user"),
            'message must have role "assistant"',
        ),
        (
            "assistant/message",
            mutate(assistant_data(), ["message", "source", "kind"], "user"),
            "message must have model source",
        ),
        (
            "assistant/message",
            mutate(assistant_data(), ["message", "source", "model"], ""),
            "message must have model source",
        ),
        (
            "tool/result",
            mutate(tool_result_data(), ["message", "source"], {"kind": "model"}),
            "message must have tool source",
        ),
        (
            "tool/result",
            mutate(tool_result_data(), ["message", "content"], []),
            "message must contain one tool-result block",
        ),
        (
            "tool/result",
            mutate(tool_result_data(), ["message", "content", 0, "type"], "text"),
            "message must contain one tool-result block",
        ),
        (
            "tool/result",
            mutate(tool_result_data(), ["message", "content", 0, "content"], "x"),
            "message must contain one tool-result block",
        ),
        (
            "tool/result",
            mutate(tool_result_data(), ["message", "content", 0, "toolCallId"], "other"),
            "message has mismatched tool call ids",
        ),
    ],
)
def test_message_shape_messages(type, data, message):
    assert message_shape_error(shaped(type, data), SUBJECT) == f"{SUBJECT} {message}"


def test_valid_messages_and_other_types_pass():
    for event in (U(0), A(0), T(0), log_only("turn/start", 0, "anything")):
        assert message_shape_error(event, SUBJECT) is None


HEADER = {"version": 0, "id": "s", "createdAt": 0}


@pytest.mark.parametrize(
    "header,message",
    [
        ([], "session header is not a plain JSON record"),
        ({**HEADER, "version": 1}, "session header version must be 0, got 1"),
        ({**HEADER, "version": False}, "session header version must be 0, got false"),
        ({**HEADER, "id": "t"}, 'session header id "t" does not match session id "s"'),
        (
            {**HEADER, "createdAt": -1},
            "session header createdAt must be a non-negative safe integer",
        ),
        (
            {**HEADER, "createdAt": 2**53},
            "session header createdAt must be a non-negative safe integer",
        ),
        ({**HEADER, "cwd": 5}, "session header cwd must be a string"),
        ({**HEADER, "cwd": "rel/x"}, 'session header cwd must be an absolute path, got "rel/x"'),
        ({**HEADER, "parentSession": None}, "session header parentSession must be a string"),
        (
            {**HEADER, "seedLength": 1.5},
            "session header seedLength must be a non-negative safe integer",
        ),
        ({**HEADER, "origin": "user"}, 'session header origin must be "subagent"'),
        (
            {**HEADER, "delegationDepth": -1},
            "session header delegationDepth must be a non-negative safe integer",
        ),
        ({**HEADER, "agentPreset": 3}, "session header agentPreset must be a string"),
    ],
)
def test_header_messages(header, message):
    assert header_error(header, "s") == message


def test_unknown_header_keys_are_allowed():
    assert header_error({**HEADER, "extra": {"x": 1}, "origin": "subagent"}, "s") is None


def request_header(**config):
    return {"header": {"config": {"provider": "ds", "model": "m", **config}}, "reason": "initial"}


@pytest.mark.parametrize(
    "event,message",
    [
        (
            ev("request/header-delta", 0, {}),
            "seed event at index 0 uses unsupported legacy request/header-delta format",
        ),
        (ev("turn/start", 0, {}, extra=1), "seed event at index 0 has an invalid event envelope"),
        (
            Event.from_value({"type": "x", "seq": 0, "time": 0}),
            "seed event at index 0 has an invalid event envelope",
        ),
        (ev("x", 0, {}, ignorable=False), "seed event at index 0 has an invalid event envelope"),
        (
            Event.from_value({"type": "x", "seq": 0, "time": 0.5, "data": 1}),
            "seed event at index 0 has an invalid event envelope",
        ),
        (
            Event.from_value({"type": 1, "seq": 0, "time": 0, "data": 1}),
            "seed event at index 0 has an invalid event envelope",
        ),
        (
            ev("request/header", 0, {"header": {"config": {"provider": "ds"}}}),
            "seed request/header at index 0 lacks provider/model",
        ),
        (
            ev("request/header", 0, request_header(reasoningEffort="")),
            "seed request/header at index 0 has an invalid reasoningEffort",
        ),
        (
            ev(
                "request/header",
                0,
                {
                    **request_header(),
                    "header": {
                        **request_header()["header"],
                        "adapterDefaults": {"maxTokens": True},
                    },
                },
            ),
            "seed request/header at index 0 has invalid adapterDefaults",
        ),
        (
            ev("request/header", 0, {**request_header(), "reason": "fallback"}),
            'seed event at index 0 uses unsupported legacy request/header reason "fallback"',
        ),
        (
            ev("user/message", 0, {"role": "user"}, op="append"),
            "seed user/message at index 0 lacks an identified message",
        ),
        (
            ev("turn/start", 3, {}),
            "seed event at index 0 has seq 3 (expected 0); seed must be contiguous from 0",
        ),
        (
            ev("user/message", 0, user_data()),
            'invalid seed event at index 0: session event "user/message" is surface-eligible and requires a surfaceOp marker',
        ),
    ],
)
def test_replay_messages(event, message):
    assert replay_error(HEADER, [event], "s") == message


def test_replay_checks_events_before_the_header_and_adds_nothing():
    events = [U(0), log_only("turn/start", 1, {"turn": 1})]
    assert (
        replay_error({**HEADER, "version": 1}, events, "s")
        == "session header version must be 0, got 1"
    )
    assert (
        replay_error({**HEADER, "version": 1}, [ev("turn/start", 5, {})], "s") or ""
    ).startswith("seed event at index 0 has seq 5")
    assert replay_error(HEADER, events, "s") is None
    assert len(events) == 2
    adapter_ok = ev(
        "request/header",
        0,
        {
            **request_header(maxTokens=5),
            "header": {
                **request_header(maxTokens=5)["header"],
                "adapterDefaults": {"maxTokens": True},
            },
        },
    )
    assert replay_error(HEADER, [adapter_ok], "s") is None
