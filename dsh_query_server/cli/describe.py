"""What one event says, as text for people (the ``events``, ``read`` and ``surface`` tables).

Unlike the search text (query/text.py, semantics.md §6.4) this shows what a reader needs to tell
events apart: a tool call as its name and the command or arguments it was given, hidden
reasoning as ``(reasoning)``, an image as ``(image)``, the turn and step markers, a turn's end
reason. Description is total: an unexpected shape contributes nothing, never an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

REASONING = "(reasoning)"
IMAGE = "(image)"
EMPTY = "(empty)"  # a message whose content says nothing (whitespace only)
# The argument that says most about a call, for tools that name one (Bash's command, Read's path).
_MAIN_ARGUMENTS = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "prompt")
_SPACE = re.compile(r"\s+")


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def arguments_text(arguments: Any) -> str:
    """A call's arguments in one readable piece: the main argument when the tool has one (a
    command, a path, a query), else the compact JSON; raw text that is not JSON as it is."""
    parsed: Any = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return arguments.strip()
    if isinstance(parsed, dict):
        for key in _MAIN_ARGUMENTS:
            main = parsed.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(main, str) and main.strip():
                return main.strip()
        if not parsed:
            return ""
    if parsed is None or parsed == "":
        return ""
    return json.dumps(parsed, ensure_ascii=False, separators=(", ", ": "))


def call_text(name: Any, arguments: Any) -> str:
    shown = name if isinstance(name, str) and name else "(tool)"
    detail = arguments_text(arguments)
    return f"{shown}: {detail}" if detail else shown


def _blocks(blocks: Any) -> list[str]:
    out: list[str] = []
    if not isinstance(blocks, list):
        return out
    for block in blocks:  # pyright: ignore[reportUnknownVariableType]
        kind = _get(block, "type")
        if kind == "text":
            out.append(_text(_get(block, "text")))
        elif kind == "reasoning":
            out.append(REASONING)
        elif kind == "image":
            out.append(IMAGE)
        elif kind == "tool-call":
            out.append(call_text(_get(block, "name"), _get(block, "arguments")))
        elif kind == "tool-result":
            inner = _blocks(_get(block, "content"))
            prefix = "(error) " if _get(block, "isError") is True else ""
            out.append(prefix + "\n".join(p for p in inner if p))
    return [p for p in out if p]


def _turn_end(data: Any) -> str:
    reason = _get(data, "reason")
    kind = _get(reason, "kind")
    turn = _get(data, "turn")
    head = f"turn {turn} ended" if isinstance(turn, int) else "turn ended"
    if not isinstance(kind, str):
        return head
    detail = _text(_get(_get(reason, "error"), "message")) if kind == "error" else ""
    return f"{head}: {kind}" + (f" ({detail})" if detail else "")


def _marker(data: Any, name: str) -> str:
    turn, step = _get(data, "turn"), _get(data, "step")
    if name == "step" and isinstance(turn, int) and isinstance(step, int):
        return f"step {turn}.{step}"
    return f"turn {turn}" if isinstance(turn, int) else ""


def _todos(data: Any) -> str:
    todos = _get(data, "todos")
    if not isinstance(todos, list):
        return ""
    marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
    return "\n".join(
        f"{marks.get(_get(t, 'status'), '[?]')} {_text(_get(t, 'content'))}"
        for t in todos  # pyright: ignore[reportUnknownVariableType]
    )


def _chunk(chunk: Any) -> str:
    """A streamed piece (semantics.md §1.4): its text, or what kind of piece it is."""
    kind = _get(chunk, "type")
    if kind == "text-delta":
        return _text(_get(chunk, "text")) or EMPTY
    if kind == "reasoning-delta":
        return REASONING
    if kind == "tool-call-delta":
        return call_text(_get(chunk, "name"), _get(chunk, "argumentsDelta"))
    return f"({kind})" if isinstance(kind, str) else ""


def _model(data: Any) -> str:
    config = _get(_get(data, "header"), "config") or data
    provider, model = _get(config, "provider"), _get(config, "model")
    return "/".join(v for v in (provider, model) if isinstance(v, str) and v)


def _foreign(data: Any) -> str:
    """An imported record kept as it was (importers.md): its own kind, when it names one."""
    inner = _get(_get(data, "record"), "data")
    kind = _get(inner, "type")
    if not isinstance(kind, str):
        return ""
    detail = _get(inner, "hookName") or _get(inner, "agentId")
    return f"{kind} {detail}" if isinstance(detail, str) else kind


def describe(event: dict[str, Any]) -> str:
    """The event's text for people, whole (it may span lines); '' when it says nothing."""
    kind, data = event.get("type"), event.get("data")
    if kind == "user/message":
        return "\n".join(_blocks(_get(data, "content"))) or EMPTY
    if kind == "assistant/message":
        text = "\n".join(_blocks(_get(_get(data, "message"), "content"))) or EMPTY
        return text + (" (interrupted)" if _get(data, "interrupted") is True else "")
    if kind == "tool/call":
        return call_text(_get(data, "name"), _get(data, "arguments"))
    if kind == "tool/result":
        parts = _blocks(_get(_get(data, "message"), "content"))
        error = _get(data, "error")
        if isinstance(error, dict):
            parts.insert(0, " ".join(_text(_get(error, k)) for k in ("name", "code")).strip())
        return "\n".join(p for p in parts if p)
    if kind == "assistant/chunk":
        return _chunk(_get(data, "chunk"))
    if kind == "turn/end":
        return _turn_end(data)
    if kind in ("turn/start", "step/start", "step/end"):
        return _marker(data, kind.split("/")[0])
    if kind == "todo/write":
        return _todos(data)
    if kind in ("request/header", "request/context"):
        return _model(data)
    if kind == "session/end-seed":
        return "(end of seed)"
    title = _get(data, "title")
    if isinstance(title, str):
        return title.strip()
    return _foreign(data)


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) as one space: a table row is one line."""
    return _SPACE.sub(" ", text).strip()


__all__ = ["EMPTY", "IMAGE", "REASONING", "arguments_text", "call_text", "describe", "one_line"]
