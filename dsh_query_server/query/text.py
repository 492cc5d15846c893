"""Semantic text of events (semantics.md §6.4) and the literal text scan (§4.4).

The same documents feed ``filterEvents`` and the search index. Extraction is total: fields of an
unexpected kind contribute nothing and extraction never fails. Only strings contribute text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..model.event import Event
from ..values import WHITESPACE_CHARS, split_whitespace, trim

_TEXT_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/call", "tool/result", "todo/write", "turn/end"}
)


def _content_parts(blocks: Any, out: list[str]) -> None:
    if not isinstance(blocks, list):
        return
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            _add(out, block.get("text"))
        elif kind == "tool-call":
            _add(out, block.get("name"))
            _add(out, block.get("arguments"))
        elif kind == "tool-result":
            _content_parts(block.get("content"), out)
        # reasoning (never searchable), image and unknown blocks contribute nothing


def _add(out: list[str], value: Any) -> None:
    if isinstance(value, str):
        out.append(value)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


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
            for todo in todos:
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


def extract_text(event: Event) -> str:
    """The event's semantic text: trimmed non-empty parts joined with newlines ('' for none)."""
    if event.type not in _TEXT_TYPES:
        return ""
    parts = (trim(p) for p in _parts(event.type, event.data()))
    return "\n".join(p for p in parts if p)


def compile_literal(text: str) -> re.Pattern[str] | None:
    """§4.4: pieces matched literally, joined by whitespace runs, case-insensitively.
    Returns None when the text is blank."""
    pieces = split_whitespace(text)
    if not pieces:
        return None
    ws = "[" + "".join(re.escape(c) for c in WHITESPACE_CHARS) + "]+"
    return re.compile(ws.join(re.escape(p) for p in pieces), re.IGNORECASE)


def documents(events: Iterable[Event]) -> Iterable[tuple[Event, str]]:
    """(event, text) for every event with non-empty text, in log order."""
    for event in events:
        text = extract_text(event)
        if text:
            yield event, text
