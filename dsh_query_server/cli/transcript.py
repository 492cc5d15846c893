"""The session view's transcript (views.md §3) as rows, for ``dsh-query show``: which events show
as messages, which fold into one line, and where a divider says what a replacement shadowed. Pure
functions of the server's answers (``readSession`` or ``readSurface``, ``listEvents``,
``readTimeline``); show.py draws the rows.

Messages are the surface's conversation: ``user/message``, ``assistant/message`` and
``tool/result``. In the whole log every other event is log-only bookkeeping (turn and step
markers, streamed chunks, the ``tool/call`` events whose calls the assistant message already
shows), folded into one line per run, as the VS Code view folds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MESSAGE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Divider:
    """Before the event that replaced part of the surface (a timeline ``Replacement``)."""

    replacement: Json


@dataclass(frozen=True, slots=True)
class Folded:
    """A run of log-only events shown as one line."""

    seqs: list[int]
    types: list[str]


@dataclass(frozen=True, slots=True)
class Message:
    event: Json
    surface: str | None  # the event's class now (listEvents), None when not known


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of a message: ``text`` (Markdown), ``reasoning``, ``call`` (``name`` and
    ``text`` the arguments), ``result`` (``text`` the output, ``error`` when it failed) or
    ``image``."""

    kind: str
    text: str = ""
    name: str = ""
    error: bool = False


Row = Divider | Folded | Message


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def log_rows(
    events: Sequence[Json], classes: Mapping[int, str], replacements: Sequence[Json]
) -> list[Row]:
    """The whole log in seq order: messages, folded runs, a divider before every replacing
    event."""
    by_seq = {r["seq"]: r for r in replacements}
    rows: list[Row] = []
    run: list[Json] = []

    def flush() -> None:
        if run:
            rows.append(Folded([e["seq"] for e in run], [str(e.get("type")) for e in run]))
            run.clear()

    for event in events:
        if event.get("type") not in MESSAGE_TYPES:
            run.append(event)
            continue
        flush()
        seq = event["seq"]
        if seq in by_seq:
            rows.append(Divider(by_seq[seq]))
        rows.append(Message(event, classes.get(seq)))
    flush()
    return rows


def surface_rows(
    surface: Sequence[Json], classes: Mapping[int, str], replacements: Sequence[Json]
) -> list[Row]:
    """A surface (readSurface, in surface order): its events, a divider before each one that
    replaced earlier events (``replacements`` being those up to the surface's point)."""
    by_seq = {r["seq"]: r for r in replacements}
    rows: list[Row] = []
    for event in surface:
        seq = event["seq"]
        if seq in by_seq:
            rows.append(Divider(by_seq[seq]))
        rows.append(Message(event, classes.get(seq)))
    return rows


# -- one message -----------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text blocks of a tool result's content, joined by newlines."""
    if isinstance(content, str):
        return content
    parts = (
        [b.get("text") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    )
    return "\n".join(p for p in parts if isinstance(p, str))


def blocks(event: Json) -> list[Block]:
    """The message's content blocks as the transcript shows them, in order."""
    etype, data = event.get("type"), event.get("data")
    message = data if etype == "user/message" else _get(data, "message")
    content = _get(message, "content")
    out: list[Block] = []
    for block in content if isinstance(content, list) else []:
        kind = _get(block, "type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(Block("text", block["text"]))
        elif kind == "reasoning" and isinstance(block.get("text"), str):
            out.append(Block("reasoning", block["text"]))
        elif kind == "tool-call":
            name, arguments = block.get("name"), block.get("arguments")
            out.append(
                Block(
                    "call",
                    arguments if isinstance(arguments, str) else "",
                    name if isinstance(name, str) else "?",
                )
            )
        elif kind == "tool-result":
            out.append(
                Block("result", _text_of(block.get("content")), error=bool(block.get("isError")))
            )
        elif kind == "image":
            out.append(Block("image"))
    error = _get(data, "error") if etype == "tool/result" else None
    if isinstance(error, dict):
        said = [str(error[k]) for k in ("name", "code", "message") if isinstance(error.get(k), str)]
        out.append(Block("result", ": ".join(said) or "error", error=True))
    return out


@dataclass(frozen=True, slots=True)
class Head:
    """What a message's first line says besides its seq and class."""

    who: str
    model: str | None = None
    notes: list[str] = field(default_factory=list)


def head(event: Json) -> Head:
    etype, data = event.get("type"), event.get("data")
    if etype == "assistant/message":
        model = _get(_get(_get(data, "message"), "source"), "model")
        return Head("assistant", model if isinstance(model, str) else None)
    if etype == "tool/result":
        return Head("tool result")
    source = _get(data, "source")
    notes = []
    if _get(source, "compactSummary") is True:
        notes.append("compaction summary")
    elif _get(source, "meta") is True:
        notes.append("meta")
    elif _get(source, "kind") not in (None, "user"):
        notes.append(str(_get(source, "kind")))
    if isinstance(event.get("surfaceOp"), dict):
        notes.append("replaces")
    return Head("user", None, notes)


def events_word(n: int) -> str:
    return f"{n:,} event" if n == 1 else f"{n:,} events"


def shadowed_text(replacement: Json) -> str:
    """``191 events, #7–#946, replaced by #948`` (views.md §3)."""
    shadowed = replacement["shadowed"]
    first, last = shadowed["firstSeq"], shadowed["lastSeq"]
    span = f"#{first}" if first == last else f"#{first}–#{last}"
    return f"{events_word(shadowed['count'])}, {span}, replaced by #{replacement['seq']}"


def replacement_title(replacement: Json) -> str:
    kind = "Compaction" if replacement.get("kind") == "compaction" else "Tool result rewritten"
    return f"{kind}: {shadowed_text(replacement)}"


def size_change(replacement: Json) -> str:
    before, after = replacement["before"], replacement["after"]
    return (
        f"surface {events_word(before['events'])} → {events_word(after['events'])}, "
        f"≈{before['approxTokens']:,} → ≈{after['approxTokens']:,} tokens (estimate)"
    )


def folded_summary(row: Folded) -> str:
    """``12 events (#3–#14): step/start, assistant/chunk ×9, step/end``."""
    counts: dict[str, int] = {}
    for t in row.types:
        counts[t] = counts.get(t, 0) + 1
    kinds = ", ".join(t if n == 1 else f"{t} ×{n:,}" for t, n in counts.items())
    span = f"#{row.seqs[0]}" if len(row.seqs) == 1 else f"#{row.seqs[0]}–#{row.seqs[-1]}"
    return f"{events_word(len(row.seqs))} ({span}): {kinds}"


_TRAILING = re.compile(r"[ ]+((?:\x1b\[[0-9;]*m)*)$", re.M)


def trim_lines(text: str) -> str:
    """Without the spaces rich pads lines with (kept before any closing colour codes)."""
    return _TRAILING.sub(r"\1", text)


__all__ = [
    "MESSAGE_TYPES",
    "Block",
    "Divider",
    "Folded",
    "Head",
    "Message",
    "Row",
    "blocks",
    "folded_summary",
    "head",
    "log_rows",
    "replacement_title",
    "shadowed_text",
    "size_change",
    "surface_rows",
    "trim_lines",
]
