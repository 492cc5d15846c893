"""Semantic text of events (semantics.md §6.4) and the literal text scan (§4.4).

The same documents feed ``filterEvents`` and the search index. Extraction is total: fields of an
unexpected kind contribute nothing and extraction never fails. Only strings contribute text.
"""

from __future__ import annotations

import _sre  # pyright: ignore[reportMissingImports]  # re.IGNORECASE's case mapping
import re
import sys
from collections.abc import Iterable
from functools import cache
from itertools import compress
from operator import ne
from re._casefix import _EXTRA_CASES
from typing import Any

import msgspec

from ..model.event import Event
from ..values import WHITESPACE_CHARS, split_whitespace, trim

_TEXT_TYPES = frozenset(
    {"user/message", "assistant/message", "tool/call", "tool/result", "todo/write", "turn/end"}
)
TEXT_TYPES = _TEXT_TYPES  # the only types extract_text reads a payload of


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


def _class_min(cp: int) -> int:
    lower: int = _sre.unicode_tolower(cp)
    return min((lower, *_EXTRA_CASES.get(lower, ())))


# Whitespace runs other than a single space (those are already collapsed, and most common).
_UNUSUAL_WHITESPACE = re.compile(
    "["
    + "".join(re.escape(c) for c in WHITESPACE_CHARS)
    + "]{2,}|["
    + "".join(re.escape(c) for c in WHITESPACE_CHARS if c != " ")
    + "]"
)


@cache
def _folding() -> tuple[re.Pattern[str], dict[str, str]]:
    """The characters str.lower does not fold the way re.IGNORECASE matches, and their fold.

    re.IGNORECASE (the matching §0.3 names) makes a text character match a pattern character
    when the simple lowercase of the text character lies in the pattern character's class: its
    simple lowercase plus the extra equivalents re lists (i/ı, s/ſ, µ/μ, ...). Mapping each
    character to the smallest member of its class turns that match into equality. For all but
    a few dozen characters that member is what str.lower gives; the rest (İ, ı, ſ, σ/Σ, ...) are
    replaced first. Whitespace and other uncased characters fold to themselves.
    tests/query/test_text_fold.py checks all of this over every code point.
    """
    r = range(sys.maxunicode + 1)
    changed = compress(r, map(ne, map(_sre.unicode_tolower, r), r))
    special: dict[str, str] = {}
    for cp in {*changed, *_EXTRA_CASES}:
        folded = chr(_class_min(cp))
        if chr(cp).lower() != folded:
            special[chr(cp)] = folded
    pattern = re.compile("[" + "".join(re.escape(c) for c in sorted(special)) + "]")
    return pattern, special


def fold(text: str) -> str:
    """The text with every character replaced by its case-fold representative (same length)."""
    if text.isascii():
        return text.lower()  # k, s and i are the smallest of their classes
    pattern, special = _folding()
    return pattern.sub(lambda m: special[m.group()], text).lower()


class LiteralText:
    """A compiled §4.4 text clause. Folding both sides and collapsing whitespace runs to one
    space turns "pieces joined by whitespace runs, case-insensitively" into a substring test:
    a 10 MB filter costs one pass over each document, not a 10 MB regular expression."""

    __slots__ = ("_needle", "_pieces")

    def __init__(self, pieces: list[str]) -> None:
        self._needle = " ".join(pieces)
        self._pieces = pieces if len(pieces) > 1 else []  # one piece has no whitespace to line up

    def search(self, text: str) -> bool:
        folded = fold(text)
        if self._pieces:
            # Most documents lack a piece; only the others pay for collapsing whitespace.
            if not all(piece in folded for piece in self._pieces):
                return False
            # Every §0.3 whitespace character but the space is unprintable: a printable text
            # without a double space has nothing to collapse (a fast check in C).
            if not folded.isprintable() or "  " in folded:
                folded = _UNUSUAL_WHITESPACE.sub(" ", folded)
        return self._needle in folded


def compile_literal(text: str) -> LiteralText | None:
    """§4.4: pieces matched literally, joined by whitespace runs, case-insensitively.
    Returns None when the text is blank."""
    # Folding keeps whitespace where it was, so splitting the folded text gives folded pieces.
    pieces = split_whitespace(fold(text))
    if not pieces:
        return None
    return LiteralText(pieces)


def documents(events: Iterable[Event]) -> Iterable[tuple[Event, str]]:
    """(event, text) for every event with non-empty text, in log order."""
    for event in events:
        text = extract_text(event)
        if text:
            yield event, text
