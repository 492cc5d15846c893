"""The semantic text of events (semantics.md §6.4).

The same documents feed ``filterEvents`` and the search index, and an importer reading for the
index gives the text of an event it never encodes (persistence/importing/emitter.py): one
definition for all three. Extraction is total: fields of an unexpected kind contribute nothing
and extraction never fails. Only strings contribute text.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ..values import trim
from .event import Event

_TEXT_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/call", "tool/result", "todo/write", "turn/end"}
)
TEXT_TYPES = _TEXT_TYPES  # the only types extract_text reads a payload of


def _content_parts(blocks: Any, out: list[str]) -> None:
    if not isinstance(blocks, list):
        return
    for block in cast(list[Any], blocks):
        if not isinstance(block, dict):
            continue
        b: dict[str, Any] = block  # pyright: ignore[reportUnknownVariableType]  # JSON object
        kind = b.get("type")
        if kind == "text":
            _add(out, b.get("text"))
        elif kind == "tool-call":
            _add(out, b.get("name"))
            _add(out, b.get("arguments"))
        elif kind == "tool-result":
            _content_parts(b.get("content"), out)
        # reasoning (never searchable), image and unknown blocks contribute nothing


def _add(out: list[str], value: Any) -> None:
    if isinstance(value, str):
        out.append(value)


def _get(value: Any, key: str) -> Any:
    return cast(dict[str, Any], value).get(key) if isinstance(value, dict) else None


def _parts(etype: Any, data: Any) -> list[str]:
    out: list[str] = []
    if etype == "user/message":
        _content_parts(_get(data, "content"), out)
    elif etype == "assistant/message":
        _content_parts(_get(_get(data, "message"), "content"), out)
    elif etype == "tool/call":
        _add(out, _get(data, "name"))
        _add(out, _get(data, "arguments"))
    elif etype == "tool/result":
        _content_parts(_get(_get(data, "message"), "content"), out)
        error = _get(data, "error")
        _add(out, _get(error, "name"))
        _add(out, _get(error, "code"))
    elif etype == "todo/write":
        todos = _get(data, "todos")
        if isinstance(todos, list):
            for todo in cast(list[Any], todos):
                _add(out, _get(todo, "status"))
                _add(out, _get(todo, "content"))
    elif etype == "turn/end":
        reason = _get(data, "reason")
        kind = _get(reason, "kind")
        if kind == "error":
            out.append("error")
            _add(out, _get(_get(reason, "error"), "message"))
        elif kind in ("aborted", "max-tokens", "interrupted"):
            out.append(kind)
    return out


# The bulk of the text types' payloads, decoded into just the fields extraction reads (msgspec
# skips the rest: provenance, ids, usage) instead of into a dict per object. A payload of another
# shape (a string where a list is, a lone surrogate) fails to decode and takes ``_parts``, which
# gives every shape the same text, so both paths agree (tests/query/test_text_typed.py).


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    name: Any = None
    arguments: Any = None
    content: Any = None  # a tool-result's blocks: read by _content_parts


class _Message(msgspec.Struct, gc=False):
    content: list[_Block] | None = None


class _UserData(msgspec.Struct, gc=False):
    content: list[_Block] | None = None


class _AssistantData(msgspec.Struct, gc=False):
    message: _Message | None = None


class _CallData(msgspec.Struct, gc=False):
    name: Any = None
    arguments: Any = None


class _ResultData(msgspec.Struct, gc=False):
    message: _Message | None = None
    error: Any = None


# Decoded from the whole event (msgspec skips its other members), not from ``data_json``: that
# slice of ``raw`` is a copy of the payload, as long as the payload, for every event.
class _UserEvent(msgspec.Struct, gc=False):
    data: _UserData


class _AssistantEvent(msgspec.Struct, gc=False):
    data: _AssistantData


class _CallEvent(msgspec.Struct, gc=False):
    data: _CallData


class _ResultEvent(msgspec.Struct, gc=False):
    data: _ResultData


_TYPED: dict[str, Any] = {
    "user/message": msgspec.json.Decoder(_UserEvent).decode,
    "assistant/message": msgspec.json.Decoder(_AssistantEvent).decode,
    "tool/call": msgspec.json.Decoder(_CallEvent).decode,
    "tool/result": msgspec.json.Decoder(_ResultEvent).decode,
}


def _block_parts(blocks: list[_Block] | None, out: list[str]) -> None:
    """``_content_parts`` of blocks decoded as _Block."""
    if blocks is None:
        return
    for block in blocks:
        kind = block.type
        if kind == "text":
            _add(out, block.text)
        elif kind == "tool-call":
            _add(out, block.name)
            _add(out, block.arguments)
        elif kind == "tool-result":
            _content_parts(block.content, out)


def _typed_parts(data: Any) -> list[str]:
    out: list[str] = []
    if type(data) is _UserData:
        _block_parts(data.content, out)
    elif type(data) is _AssistantData:
        if data.message is not None:
            _block_parts(data.message.content, out)
    elif type(data) is _CallData:
        _add(out, data.name)
        _add(out, data.arguments)
    elif type(data) is _ResultData:
        if data.message is not None:
            _block_parts(data.message.content, out)
        error = data.error
        _add(out, _get(error, "name"))
        _add(out, _get(error, "code"))
    return out


def extract_text(event: Event) -> str:
    """The event's semantic text: trimmed non-empty parts joined with newlines ('' for none)."""
    etype = event.type
    if etype not in _TEXT_TYPES:
        return ""
    decode = _TYPED.get(etype)
    if decode is not None and event.has_data:
        try:
            data = decode(event.raw).data
        except msgspec.DecodeError:  # ValidationError too: a shape only _parts reads
            pass
        else:
            return _joined(_typed_parts(data))
    return text_of(etype, event.data())


def _joined(parts: list[str]) -> str:
    trimmed = (trim(p) for p in parts)
    return "\n".join(p for p in trimmed if p)


def text_of(etype: Any, data: Any) -> str:
    """``extract_text`` of an event of type ``etype`` whose data the caller already decoded."""
    return _joined(_parts(etype, data))
