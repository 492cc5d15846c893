"""The page's snippet offset (semantics.md §6.8, §6.10): PhraseFinder places the first span where
FTS5's highlight() puts its first START marker, for any text, query and prefix size."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server.search.schema import PhraseFinder, connect, sanitize
from dsh_query_server.search.snippet import END, START, snippet, snippet_at
from tests.builders import U, hdr
from tests.search_helpers import make, sessions, values

PIECES = st.sampled_from(
    [
        "alpha",
        "Alpha",
        "BETA",
        "beta",
        "café",
        "CAFE",
        "e\u0301",  # a combining accent: removed by unicode61
        "naïve",
        "日本語",
        "😀",
        "x1",
        "ai",
        "AI",
        "don't",
        " ",
        "  ",
        "\n",
        ", ",
        "—",
        "-",
        ".",
        '"',
        "\t",
        "\u00a0",
        "\u2028",
    ]
)
ASCII = st.sampled_from(
    [
        "alpha",
        "Alpha",
        "BETA",
        "x1",
        "ai",
        "AI",
        "don't",
        "a_b",
        " ",
        "\n",
        ", ",
        "-",
        ".",
        '"',
        "\t",
    ]
)
TEXTS = st.lists(PIECES, max_size=60).map("".join) | st.lists(ASCII, max_size=60).map("".join)


def highlighted_first(conn, text: str, query: str) -> int | None:
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t (rowid, text) VALUES (1, ?)", (text,))
    quoted = '"' + query.replace('"', '""') + '"'
    rows = conn.execute(
        "SELECT highlight(t, 0, ?, ?) FROM t WHERE t MATCH ?", (START, END, quoted)
    ).fetchall()
    if not rows:
        return None
    return rows[0][0].replace(END, "").find(START)


def fts():
    conn = connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'unicode61')")
    return conn


@settings(max_examples=500, deadline=None)
@given(text=TEXTS, query=TEXTS, cut=st.integers(1, 40), pick=st.data())
def test_finder_equals_highlight_first_marker(text, query, cut, pick):
    conn = fts()
    text = sanitize(text)
    if pick.draw(st.booleans()) and text.strip():
        # Mostly a query cut from the text itself, so that most examples match somewhere.
        start = pick.draw(st.integers(0, len(text) - 1))
        query = text[start : start + pick.draw(st.integers(1, 30))]
    query = sanitize(query)
    expected = highlighted_first(conn, text, query)
    assert PhraseFinder(conn, query).first(text, chunk=cut) == expected


def test_long_tokens_are_left_to_highlight():
    conn = fts()
    long_word = "a" * 9000
    text = f"x {long_word} needle"
    assert PhraseFinder(conn, "needle").first(text) is None  # FTS5 might have cut the token
    store, _, service = make(snippet_chars=20)
    store.create(hdr("s", 1), seed=values([U(0, text, time=1)]))
    hit = sessions(service, "needle")["items"][0]["bestMatch"]
    assert hit["snippet"] == snippet(f"x {long_word} {START}needle{END}", 20)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, first=st.integers(-1, 80), limit=st.integers(1, 12))
def test_snippet_at_equals_the_marked_snippet(text, first, limit):
    first = min(first, len(text))
    marked = text if first < 0 else text[:first] + START + text[first:]
    assert snippet_at(text, first, limit) == snippet(marked, limit)
