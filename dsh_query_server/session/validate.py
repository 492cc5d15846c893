"""Message-shape validation (semantics.md §1.5) and replay validation (§1.6).

Each check returns the spec's failure message, or None when the value passes, so callers choose
the error code (CORRUPT_SESSION on reads, SESSION_STORE_* for producers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from ..model.event import ENVELOPE_KEYS, Event
from ..values import is_array, is_nonneg_safe_integer, is_object, is_safe_integer, json_number
from .fold import FoldError, FoldState, Step, apply_step, plan_step, render

MESSAGE_TYPES = ("user/message", "assistant/message", "tool/result")


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def message_shape_error(event: Event, subject: str) -> str | None:
    """§1.5 for the three message types (None for any other type)."""
    etype = event.type
    if etype not in MESSAGE_TYPES:
        return None
    data = event.data()
    message = (
        data if etype == "user/message" else (data.get("message") if is_object(data) else None)
    )
    if not is_object(message) or not _nonempty_str(message.get("id")):
        return f"{subject} lacks an identified message"
    expected = "assistant" if etype == "assistant/message" else "user"
    if message.get("role") != expected:
        return f'{subject} message must have role "{expected}"'
    source = message.get("source")
    if not is_object(source) or not _nonempty_str(source.get("kind")):
        return f"{subject} message has invalid source"
    content = message.get("content")
    if not is_array(content):
        return f"{subject} message has invalid content"
    if etype == "assistant/message":
        if not (
            source.get("kind") == "model"
            and _nonempty_str(source.get("provider"))
            and _nonempty_str(source.get("model"))
        ):
            return f"{subject} message must have model source"
    elif etype == "tool/result":
        if source.get("kind") != "tool" or not _nonempty_str(source.get("callId")):
            return f"{subject} message must have tool source"
        if not (
            len(content) == 1
            and is_object(content[0])
            and content[0].get("type") == "tool-result"
            and is_array(content[0].get("content"))
        ):
            return f"{subject} message must contain one tool-result block"
        if content[0].get("toolCallId") != source.get("callId"):
            return f"{subject} message has mismatched tool call ids"
    return None


def envelope_error(event: Event) -> bool:
    """§1.6 step 2: True when the envelope is invalid."""
    keys = event.to_value().keys()
    return not (
        keys <= ENVELOPE_KEYS
        and isinstance(event.type, str)
        and is_nonneg_safe_integer(event.seq)
        and is_safe_integer(event.time)
        and event.has_data
        and (event.ignorable is UNSET or event.ignorable is True)
    )


def _request_header_error(data: Any, where: str) -> str | None:
    header = data.get("header") if is_object(data) else None
    config = header.get("config") if is_object(header) else None
    if not (
        is_object(config)
        and _nonempty_str(config.get("provider"))
        and _nonempty_str(config.get("model"))
    ):
        return f"{where} lacks provider/model"
    if "reasoningEffort" in config and not _nonempty_str(config["reasoningEffort"]):
        return f"{where} has an invalid reasoningEffort"
    if is_object(header) and "adapterDefaults" in header:  # header is an object here
        defaults = header["adapterDefaults"]
        if not (
            is_object(defaults)
            and defaults.keys() <= {"reasoningEffort", "maxTokens"}
            and all(v is True for v in defaults.values())
            and all(k in config for k in defaults)
        ):
            return f"{where} has invalid adapterDefaults"
    return None


def event_precheck_error(event: Event, index: int, *, subject: str = "seed") -> str | None:
    """§1.6 steps 1–6 for one event at log index ``index`` (everything but the fold step).
    ``subject`` names the context in messages ("seed" for replay validation)."""
    at = f"{subject} event at index {index}"
    if event.type == "request/header-delta":
        return f"{at} uses unsupported legacy request/header-delta format"
    if envelope_error(event):
        return f"{at} has an invalid event envelope"
    data = None
    if event.type == "request/header":
        data = event.data()
        problem = _request_header_error(data, f"{subject} request/header at index {index}")
        if problem:
            return problem
    problem = message_shape_error(event, f"{subject} {event.type} at index {index}")
    if problem:
        return problem
    if event.type == "request/header" and is_object(data) and data.get("reason") == "fallback":
        return f'{at} uses unsupported legacy request/header reason "fallback"'
    if event.seq != index:
        return f"{at} has seq {json_number(event.seq)} (expected {index}); seed must be contiguous from 0"
    return None


def event_replay_step(
    event: Event, index: int, state: FoldState, log: Sequence[Event], *, subject: str = "seed"
) -> Step:
    """§1.6 steps 1–7 for one event; returns the planned fold step (not yet applied) or raises
    ReplayError with the spec's message."""
    problem = event_precheck_error(event, index, subject=subject)
    if problem:
        raise ReplayError(problem)
    try:
        return plan_step(state, event, index, log)
    except FoldError as exc:
        raise ReplayError(f"invalid {subject} event at index {index}: {exc.message}") from None


class ReplayError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def header_error(header: Any, session_id: Any) -> str | None:
    """§1.6 header table. ``header`` is the decoded JSON value."""
    if not is_object(header):
        return "session header is not a plain JSON record"
    version = header.get("version", UNSET)
    if not (is_safe_integer(version) and version == 0):
        return f"session header version must be 0, got {render(version)}"
    if header.get("id", UNSET) != session_id or not isinstance(header.get("id"), str):
        return f'session header id "{render(header.get("id", UNSET))}" does not match session id "{session_id}"'
    if not is_nonneg_safe_integer(header.get("createdAt", UNSET)):
        return "session header createdAt must be a non-negative safe integer"
    if "cwd" in header:
        cwd = header["cwd"]
        if not isinstance(cwd, str):
            return "session header cwd must be a string"
        if not cwd.startswith("/"):
            return f'session header cwd must be an absolute path, got "{cwd}"'
    if "parentSession" in header and not isinstance(header["parentSession"], str):
        return "session header parentSession must be a string"
    if "seedLength" in header and not is_nonneg_safe_integer(header["seedLength"]):
        return "session header seedLength must be a non-negative safe integer"
    if "origin" in header and header["origin"] != "subagent":
        return 'session header origin must be "subagent"'
    if "delegationDepth" in header and not is_nonneg_safe_integer(header["delegationDepth"]):
        return "session header delegationDepth must be a non-negative safe integer"
    if "agentPreset" in header and not isinstance(header["agentPreset"], str):
        return "session header agentPreset must be a string"
    return None


def replay_error(header: Any, events: Sequence[Event], session_id: Any) -> str | None:
    """Full replay validation: every event in order, then the header."""
    state = FoldState()
    try:
        for index, event in enumerate(events):
            apply_step(state, event_replay_step(event, index, state, events))
    except ReplayError as exc:
        return exc.message
    return header_error(header, session_id)
