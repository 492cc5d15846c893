"""One Gemini CLI message -> its **unit**: the surface events it stands for (importers.md §7.3).

A unit depends only on the message and on which tool calls earlier messages of the list already
answered, so the surface of a whole message list is the concatenation of its units: the mapper
keeps the surface equal to that at every record, whatever rewrote the list.

- ``user``: a prompt, context or summary ``user/message``; or, when it carries
  ``functionResponse`` parts, one ``tool/result`` per response not already answered by an
  earlier ``toolCalls`` result, then a plugin ``user/message`` for its other parts.
- ``gemini``: an ``assistant/message`` of its thoughts and content, an ``assistant/message`` of
  its tool calls, then one ``tool/result`` per tool call with a recorded result.
- ``info``, ``error``, ``warning`` and unknown types: nothing (UI notices, never sent).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Container, Iterator
from dataclasses import dataclass

import msgspec

from ..importing.emitter import JSONObject
from ..importing.values import arr, nonempty, obj, text_blocks
from .parts import (
    PLUGIN,
    PROVIDER,
    blocks_of,
    call_block,
    function_call,
    function_response,
    part_list,
    result_blocks,
)

CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
SUMMARY_PREFIX = "<state_snapshot>"


@dataclass(frozen=True, slots=True)
class Slot:
    """One surface event of a unit, without its turn, step, usage and provenance: ``body`` is the
    ``user/message`` data, the assistant's ``message``, or a tool result's ``{message, meta?}``."""

    etype: str
    tag: str  # user, context, summary, plugin, model or tool (the emitter's surface kinds)
    body: JSONObject
    digest: bytes

    @property
    def call_id(self) -> str:
        return str(self.body["message"]["source"]["callId"])  # type: ignore[index]

    def calls(self) -> list[JSONObject]:
        """The tool-call blocks of an assistant slot."""
        if self.etype != "assistant/message":
            return []
        message = obj(self.body["message"]) or {}
        blocks = (obj(b) for b in arr(message.get("content")) or [])
        return [b for b in blocks if b is not None and b.get("type") == "tool-call"]


def digest(etype: str, body: JSONObject) -> bytes:
    """What decides that two slots are the same event: their JSON with keys sorted (booleans
    stay apart from numbers, unlike Python's ``==``)."""
    try:
        text = msgspec.json.encode([etype, body], order="sorted")
    except UnicodeEncodeError:  # a lone surrogate from a JavaScript string
        text = json.dumps([etype, body], sort_keys=True).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def answered_by(message: JSONObject) -> Iterator[str]:
    """The call ids a ``gemini`` message's ``toolCalls`` give a recorded result."""
    if message.get("type") != "gemini":
        return
    for entry in arr(message.get("toolCalls")) or []:
        e = obj(entry)
        if e is not None and e.get("result") is not None and call_block(e) is not None:
            yield str(e["id"])


def _texts(blocks: list[object]) -> str:
    return "".join(text_blocks(blocks)).lstrip()


def _user(message: JSONObject, answered: Container[str]) -> list[tuple[str, str, JSONObject]]:
    parts = part_list(message.get("content"))
    responses: list[tuple[str, object]] = []
    rest: list[object] = []
    any_response = False
    for part in parts:
        response = function_response(part)
        call_id = nonempty(response.get("id")) if response is not None else None
        if response is None or call_id is None:
            rest.append(part)
            continue
        any_response = True
        if call_id not in answered:
            responses.append((call_id, part))
    out: list[tuple[str, str, JSONObject]] = []
    for call_id, part in responses:
        content, error = result_blocks([part])
        out.append(("tool/result", "tool", _result(call_id, content, error, None)))
    blocks = blocks_of(rest)
    if not blocks:
        return out
    text = _texts(blocks)
    tag = "user"
    source: JSONObject = {"kind": "plugin", "plugin": PLUGIN}
    if any_response:
        tag = "plugin"
    elif text.startswith(CONTEXT_PREFIXES):
        tag, source["context"] = "context", True
    elif text.startswith(SUMMARY_PREFIX):
        tag, source["compactSummary"] = "summary", True
    else:
        source = {"kind": "user"}
    out.append(("user/message", tag, {"role": "user", "content": blocks, "source": source}))
    return out


def _result(
    call_id: str, content: list[object], error: bool, meta: JSONObject | None
) -> JSONObject:
    block: JSONObject = {"type": "tool-result", "toolCallId": call_id, "content": content}
    if error:
        block["isError"] = True
    body: JSONObject = {
        "message": {
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": call_id},
        }
    }
    if meta:
        body["meta"] = meta
    return body


def _thought_blocks(message: JSONObject) -> list[object]:
    """``thoughts`` (subject, description) as Gemini CLI renders them when it resumes."""
    out: list[object] = []
    for entry in arr(message.get("thoughts")) or []:
        t = obj(entry)
        if t is None:
            continue
        subject, description = t.get("subject"), t.get("description")
        description = description if isinstance(description, str) else ""
        text = (
            f"**{subject}** {description}" if isinstance(subject, str) and subject else description
        )
        if text:
            out.append({"type": "reasoning", "text": text})
    return out


def _gemini(message: JSONObject) -> list[tuple[str, str, JSONObject]]:
    parts = part_list(message.get("content"))
    model = nonempty(message.get("model")) or "unknown"
    source: JSONObject = {"kind": "model", "provider": PROVIDER, "model": model}
    calls: list[object] = []
    rest: list[object] = []
    modern = False  # content holds the calls and thoughts itself (Gemini CLI's own rule)
    for part in parts:
        block = call_block(function_call(part))
        if block is not None:
            calls.append(block)
            modern = True
        else:
            rest.append(part)
            p = obj(part)
            modern = modern or (p is not None and p.get("thought") is True)
    body = blocks_of(rest) if modern else _thought_blocks(message) + blocks_of(rest)
    known = {str(obj(c)["id"]) for c in calls}  # type: ignore[index]
    results: list[tuple[str, str, JSONObject]] = []
    for entry in arr(message.get("toolCalls")) or []:
        block = call_block(entry)
        e = obj(entry)
        if block is None or e is None:
            continue
        if block["id"] not in known:
            known.add(str(block["id"]))
            calls.append(block)
        if e.get("result") is not None:
            content, error = result_blocks(part_list(e.get("result")))
            meta = {k: e[k] for k in ("status", "agentId") if isinstance(e.get(k), str)}
            error = error or e.get("status") == "error"
            results.append(("tool/result", "tool", _result(str(block["id"]), content, error, meta)))
    out: list[tuple[str, str, JSONObject]] = []
    for blocks in (body, calls):
        if blocks:
            out.append(
                (
                    "assistant/message",
                    "model",
                    {"message": {"role": "assistant", "content": blocks, "source": source}},
                )
            )
    return out + results


def unit(message: JSONObject, answered: Container[str]) -> list[Slot]:
    """The unit of one message (its ``id`` is a string); slot k's message id is the native id,
    suffixed ``#k`` after the first."""
    kind = message.get("type")
    if kind == "user":
        raw = _user(message, answered)
    elif kind == "gemini":
        raw = _gemini(message)
    else:
        return []
    native = str(message["id"])
    out: list[Slot] = []
    for k, (etype, tag, body) in enumerate(raw):
        mid = native if k == 0 else f"{native}#{k}"
        inner = body if etype == "user/message" else body["message"]
        assert isinstance(inner, dict)
        ordered: JSONObject = {"id": mid, **inner}  # the id first, as dsh writes it
        if etype == "user/message":
            body = ordered
        else:
            body = {**body, "message": ordered}
        out.append(Slot(etype, tag, body, digest(etype, body)))
    return out
