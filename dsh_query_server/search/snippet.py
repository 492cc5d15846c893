"""Snippets (semantics.md §6.10): a window of at most ``max_chars`` code points around the first
highlighted match, with whitespace normalized before truncation. Python strings index code
points, so an emoji counts as one and so does the ellipsis."""

from __future__ import annotations

from ..values import WHITESPACE_RUN, WHITESPACE_SET

START = "\ufdd0"
END = "\ufdd1"
ELLIPSIS = "\u2026"


# str.split() knows these as whitespace and §0.3 does not, and §0.3 adds U+FEFF. Text without
# any of them collapses exactly like §0.3 through split() and join(), which run in C.
_DIVERGENT = ("\ufeff", "\x1c", "\x1d", "\x1e", "\x1f", "\x85")


def _splits_like_spec(text: str) -> bool:
    return not any(ch in text for ch in _DIVERGENT)


def _collapse(text: str) -> str:
    """Whitespace runs become one space, none at either end."""
    if _splits_like_spec(text):
        return " ".join(text.split())
    # After the substitution " " stands for every whitespace run and for nothing else.
    return WHITESPACE_RUN.sub(" ", text).strip(" ")


def _clean(marked: str) -> tuple[str, int]:
    """Drop the markers and collapse whitespace; return the text and the first match's index.

    Only the first START matters (every marker is dropped), so this is ``_clean_at`` of the
    unmarked text and the first START's offset in it."""
    text = marked.replace(END, "")
    first = text.find(START)
    if first >= 0:
        text = text.replace(START, "")
    return _clean_at(text, first)


def _clean_at(text: str, first: int) -> tuple[str, int]:
    """``text`` collapsed, and where its match (at ``first``, -1 for none) lands in it.

    Whole-string operations rather than a loop per code point. The match index is the collapsed
    length of what precedes the match, plus the space its trailing whitespace becomes (there is
    more text after it); no space is ever emitted at the start."""
    if first <= 0:
        match_start = 0
    else:
        prefix = text[:first]
        head = _collapse(prefix)
        match_start = len(head) + (1 if head and prefix[-1] in WHITESPACE_SET else 0)
    return _collapse(text), match_start


def snippet(marked: str, max_chars: int) -> str:
    """The snippet of a highlighted text (START/END markers around each span)."""
    return _window(*_clean(marked), max_chars)


def snippet_at(text: str, first: int, max_chars: int) -> str:
    """The snippet of ``text`` whose first highlighted span starts at code point ``first``."""
    return _window(*_clean_at(text, first), max_chars)


def _window(text: str, match_start: int, max_chars: int) -> str:
    length = len(text)
    if length <= max_chars:
        return text
    if max_chars == 1:
        return ELLIPSIS
    m = min(match_start, length - 1)
    start = max(0, m - max_chars // 3)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS
    budget = max_chars - len(prefix) - len(suffix)
    if budget < 1:
        start, suffix, budget = m, "", max_chars - len(prefix)
    elif m >= start + budget:
        start = m - budget + 1
    end = min(length, start + budget)
    if end == length:
        suffix, budget = "", max_chars - len(prefix)
        start = max(0, end - budget)
    return prefix + text[start : min(length, start + budget)] + suffix
