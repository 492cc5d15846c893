"""The literal text scan (semantics.md §4.4) over the semantic text of events (model/text.py)."""

from __future__ import annotations

import _sre  # pyright: ignore[reportMissingImports]  # re.IGNORECASE's case mapping
import re
import sys
from collections.abc import Iterable
from functools import cache
from itertools import compress
from operator import ne
from re._casefix import _EXTRA_CASES

from ..model.event import Event
from ..model.text import extract_text
from ..values import WHITESPACE_CHARS, split_whitespace


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
