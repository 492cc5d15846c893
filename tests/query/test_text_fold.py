"""The §4.4 literal scan folds both sides and tests for a substring instead of compiling the text
into a regular expression. These tests hold it to the regex it replaced (pieces escaped, joined by
whitespace runs, re.IGNORECASE: semantics.md §0.3 and §4.4), exhaustively per character and by
property on whole texts."""

from __future__ import annotations

import _sre  # pyright: ignore[reportMissingImports] - CPython's own module, no stub
import re
import sys
import time
from re._casefix import _EXTRA_CASES

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.query.text import compile_literal, fold
from dsh_query_server.values import WHITESPACE_CHARS, split_whitespace

WS = "[" + "".join(re.escape(c) for c in WHITESPACE_CHARS) + "]+"


def old_literal(text: str) -> re.Pattern[str] | None:
    """The previous implementation, kept as the oracle."""
    pieces = split_whitespace(text)
    if not pieces:
        return None
    return re.compile(WS.join(re.escape(p) for p in pieces), re.IGNORECASE)


def class_min(cp: int) -> int:
    lower = _sre.unicode_tolower(cp)
    return min((lower, *_EXTRA_CASES.get(lower, ())))


def test_fold_is_the_class_minimum_for_every_code_point():
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    folded = fold(everything)
    assert len(folded) == len(everything)
    wrong = [cp for cp, c in enumerate(folded) if ord(c) != class_min(cp)]
    assert wrong == []
    # Alone (no final-sigma context) every character folds the same way.
    assert fold("Σ") == fold("σ") == fold("ς") and fold("İ") == "i"


def test_whitespace_and_uncased_characters_fold_only_to_themselves():
    for cp in range(sys.maxunicode + 1):
        lower = _sre.unicode_tolower(cp)
        if lower != cp:
            assert chr(lower) not in WHITESPACE_CHARS and chr(cp) not in WHITESPACE_CHARS
            assert _sre.unicode_iscased(lower), hex(cp)  # an uncased pattern char matches itself
    assert fold(WHITESPACE_CHARS) == WHITESPACE_CHARS


def test_single_characters_match_exactly_as_the_regex_did():
    # Every character that takes part in case folding; any other character folds to itself and
    # both implementations match it only against itself.
    involved = set()
    for cp in range(sys.maxunicode + 1):
        lower = _sre.unicode_tolower(cp)
        if lower != cp:
            involved |= {cp, lower}
    for key, others in _EXTRA_CASES.items():
        involved |= {key, *others}
    chars = sorted(chr(cp) for cp in involved) + [chr(c) for c in range(128)]
    haystack = "".join(chars)
    for c in chars:
        if c in WHITESPACE_CHARS:
            continue
        old = old_literal(c)
        new = compile_literal(c)
        assert old is not None and new is not None
        regex_hits = {m.group() for m in old.finditer(haystack)}
        key = fold(c)  # a one-character scan is an equality of folds
        fold_hits = {h for h in chars if fold(h) == key}
        assert new.search("x" + c + "x")
        assert regex_hits == fold_hits, (c, regex_hits ^ fold_hits)


ALPHABET = st.sampled_from(
    list("aAbBkKsSiI(). *+?\\[]")
    + list(WHITESPACE_CHARS[:8])
    + list("\u3000\u00a0\ufeff")
    + list("İıſKÅµμΣσςΙιͅβϐθϑΐΐßẞǅǄǆéÉ")
    + [chr(c) for others in _EXTRA_CASES.values() for c in others]
)
TEXT = st.text(ALPHABET, max_size=12) | st.text(max_size=12)


@settings(max_examples=400, deadline=None)
@given(TEXT, TEXT, st.data())
def test_new_scan_agrees_with_the_regex(needle, document, data):
    old = old_literal(needle)
    new = compile_literal(needle)
    assert (old is None) == (new is None)
    if old is None or new is None:
        return

    # Also a document that contains the needle with its cases and whitespace runs varied.
    def vary(c: str) -> str:
        if c in WHITESPACE_CHARS:
            return data.draw(st.sampled_from(WHITESPACE_CHARS)) * 2
        return data.draw(st.sampled_from([c, c.upper(), c.lower(), c.swapcase()]))

    mangled = "".join(vary(c) for c in needle)
    for text in (document, document + mangled + document, needle):
        assert bool(old.search(text)) == new.search(text), (needle, text)


def test_a_ten_megabyte_filter_is_one_pass_not_a_regex():
    big = "x" * (10 * 1024 * 1024)
    started = time.monotonic()
    scan = compile_literal(big + " Y")
    assert scan is not None
    assert not scan.search("xxx y")
    assert scan.search("é" + big.upper() + "\n\ty!")
    assert time.monotonic() - started < 10
