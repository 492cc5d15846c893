"""Snippets (semantics.md §6.10): a window of at most ``max_chars`` code points around the first
highlighted match, with whitespace normalized before truncation. Python strings index code
points, so an emoji counts as one and so does the ellipsis."""

from __future__ import annotations

from ..values import WHITESPACE_SET

START = "\ufdd0"
END = "\ufdd1"
ELLIPSIS = "\u2026"


def _clean(marked: str) -> tuple[str, int]:
    """Drop the markers and collapse whitespace; return the text and the first match's index."""
    out: list[str] = []
    match_start = -1
    for ch in marked:
        if ch == START:
            if match_start < 0:
                match_start = len(out)
        elif ch == END:
            continue
        elif ch in WHITESPACE_SET:
            if out and out[-1] != " ":
                out.append(" ")
        else:
            out.append(ch)
    if out and out[-1] == " ":
        out.pop()
    return "".join(out), max(match_start, 0)


def snippet(marked: str, max_chars: int) -> str:
    text, match_start = _clean(marked)
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
