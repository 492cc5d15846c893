"""Property: search finds exactly the phrase matches a brute-force scan finds (semantics.md §6.6).

The scan uses an independent model of the `unicode61` tokenizer (letters and digits form tokens,
everything else separates; case folded, diacritics removed) over the same extracted documents
that feed the index, and the visibility rules of §6.8 (live shadows persisted; persisted rows only
while a backend is bound).
"""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.query.text import documents
from tests.builders import A, U, hdr, live_snapshot
from tests.fakes import MemoryBackend
from tests.search_helpers import from_json, j, make, page_all, values

WORDS = [
    "alpha",
    "Alpha",
    "ALPHA",
    "beta",
    "BETA",
    "café",
    "CAFÉ",
    "cafe",
    "Cafe",
    "naïve",
    "NAIVE",
    "über",
    "Uber",
    "or",
    "OR",
    "x1",
    "ai",
    "AI",
]
SEPARATORS = [" ", "  ", "\n", ", ", "—", "-", ".", "'", '"', "\t", " * ", "\u00a0"]


def model_tokens(text: str) -> list[str]:
    tokens, current = [], []
    for ch in text + " ":
        if unicodedata.category(ch)[0] in "LN":
            current.append(ch)
        elif current:
            word = unicodedata.normalize("NFD", "".join(current).lower())
            tokens.append("".join(c for c in word if not unicodedata.combining(c)))
            current = []
    return tokens


def phrase_in(phrase: list[str], tokens: list[str]) -> bool:
    n = len(phrase)
    return n > 0 and any(tokens[i : i + n] == phrase for i in range(len(tokens) - n + 1))


def texts(min_words: int = 1, max_words: int = 6) -> st.SearchStrategy[str]:
    pieces = st.lists(
        st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)),
        min_size=min_words,
        max_size=max_words,
    )
    return pieces.map(lambda ps: "".join(w + s for w, s in ps))


def logs() -> st.SearchStrategy[list]:
    messages = st.lists(st.tuples(st.booleans(), texts()), min_size=0, max_size=4)
    return messages.map(
        lambda ms: [(U if user else A)(i, text, time=i) for i, (user, text) in enumerate(ms)]
    )


corpora = st.fixed_dictionaries(
    {
        "live": st.dictionaries(st.sampled_from(["a", "b", "c", "shared"]), logs(), max_size=3),
        "persisted": st.dictionaries(
            st.sampled_from(["p", "q", "shared", "É"]), logs(), max_size=3
        ),
        "bound": st.booleans(),
        "queries": st.lists(texts(1, 3), min_size=1, max_size=3),
        "limit": st.integers(1, 3),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora)
def test_search_equals_brute_force_phrase_scan(corpus):
    store, binding, service = make()
    backend = MemoryBackend()
    for sid, log in corpus["persisted"].items():
        backend.put(hdr(sid, 1), log)
    mount = binding.mount(backend)
    for sid, log in corpus["live"].items():
        store.create(hdr(sid, 1), seed=values(log))
    from_json(service.search_sessions)({"query": "warm up"})  # index everything, then maybe hide it
    if not corpus["bound"]:
        binding.unmount(mount)

    visible = {}
    if corpus["bound"]:
        visible.update(backend.sessions)
    for sid in corpus["live"]:
        visible[sid] = (None, live_snapshot(store, sid).events)
    docs = {
        sid: [(int(e.seq), model_tokens(text)) for e, text in documents(evs)]
        for sid, (_, evs) in visible.items()
    }

    limit = corpus["limit"]
    for query in corpus["queries"]:
        phrase = model_tokens(query)
        expected = {
            (sid, seq)
            for sid, ds in docs.items()
            for seq, tokens in ds
            if phrase_in(phrase, tokens)
        }
        found = set()
        for sid in visible:
            items = page_all(
                from_json(service.search_events), {"sessionId": sid, "query": query, "limit": limit}
            )
            keys = [(h["sessionId"], h["seq"]) for h in items]
            assert len(keys) == len(set(keys))  # paging never repeats a hit
            found.update(keys)
        assert found == expected, query
        best = page_all(from_json(service.search_sessions), {"query": query, "limit": limit})
        assert sorted(h["header"]["id"] for h in best) == sorted({sid for sid, _ in expected})
        assert all((h["header"]["id"], h["bestMatch"]["seq"]) in expected for h in best)
        assert all(h["live"] == (h["header"]["id"] in corpus["live"]) for h in best)
    service.close()


# -- snippet cleaning (§6.10 step 1) ---------------------------------------------------------------

from dsh_query_server.search.snippet import END, START, _clean, snippet  # noqa: E402
from dsh_query_server.values import WHITESPACE_SET  # noqa: E402


def walk_clean(marked: str) -> tuple[str, int]:
    """§6.10 step 1 literally, one code point at a time."""
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


# Spec whitespace, code points only str.split() or only §0.3 call whitespace, markers, text.
MARKED_ALPHABET = st.sampled_from(
    [
        " ",
        "\n",
        "\t",
        "\u00a0",
        "\u3000",
        "\ufeff",
        "\x1c",
        "\x1f",
        "\x85",
        START,
        END,
        "a",
        "é",
        "😀",
        "—",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(MARKED_ALPHABET, max_size=30).map("".join), st.integers(1, 12))
def test_clean_equals_the_code_point_walk(marked, limit):
    assert _clean(marked) == walk_clean(marked)
    assert len(snippet(marked, limit)) <= limit


# -- the no-change fast path against a full observation (§6.5, §6.11, §6.12) -----------------------

import base64  # noqa: E402
import json  # noqa: E402

from dsh_query_server.persistence.contract.results import Snapshot  # noqa: E402


class ReusingBackend(MemoryBackend):
    """Returns the same snapshot objects while nothing changed, as the SQLite backend does."""

    def __init__(self) -> None:
        super().__init__("memory:reusing")
        self._cache: tuple | None = None

    def list_snapshots(self, token=None):
        self._enter("list_snapshots", None, token)
        state = tuple(sorted(self.revisions.items()))
        if self._cache is None or self._cache[0] != state:
            self._cache = (
                state,
                [Snapshot(h, f"rev-{self.revisions[s]}") for s, (h, _) in self.sessions.items()],
            )
        return list(self._cache[1])


def _generation(page: dict) -> str | None:
    cursor = page.get("nextCursor")
    if cursor is None:
        return None
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["generation"]


OPS = st.lists(
    st.sampled_from(["none", "create", "append", "remove", "put", "drop", "mount", "unmount"]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.randoms(use_true_random=False))
def test_skipping_the_observation_equals_observing(ops_, rng):
    """Two services over the same sources; one always observes in full. After every change (or
    none) both give the same pages, generations and cursor verdicts."""
    store, binding, fast = make()
    _, _, full = make(store, binding)
    backend = ReusingBackend()
    backend.put(hdr("p0", 1), [U(0, "needle zero")])
    store.create(hdr("l0", 1), seed=values([U(0, "needle live")]))
    mount = binding.mount(backend)
    counter = iter(range(1, 1000))
    cursors: dict[str, tuple[str | None, str | None]] = {}

    def search(service, request):
        index = service._index
        if service is full and index is not None:
            index._seen = None  # forget: observe everything again
        try:
            return (
                j(from_json(service.search_sessions)(request))
                if "sessionId" not in request
                else j(from_json(service.search_events)(request))
            )
        except Exception as exc:  # noqa: BLE001 - both must fail alike
            return ("error", getattr(exc, "code", type(exc).__name__))

    for op in ops_:
        n = next(counter)
        live_ids = store.ids()
        if op == "create":
            store.create(hdr(f"l{n}", n), seed=values([U(0, f"needle {n}")]))
        elif op == "append" and live_ids:
            store.append(rng.choice(live_ids), [{"type": "turn/start", "data": {"turn": n}}])
        elif op == "remove" and live_ids:
            store.remove(rng.choice(live_ids))
        elif op == "put":
            backend.put(hdr(rng.choice(["p0", f"p{n}", "l0"]), 1), [U(0, f"needle put {n}")])
        elif op == "drop" and backend.sessions:
            sid = rng.choice(sorted(backend.sessions))
            del backend.sessions[sid], backend.revisions[sid]
        elif op == "mount":
            mount = binding.mount(backend)
        elif op == "unmount":
            binding.unmount(mount)
        for request in (
            {"query": "needle", "limit": 1},
            {"sessionId": "p0", "query": "needle", "limit": 1},
            {"sessionId": "l0", "query": "needle", "limit": 1},
        ):
            key = json.dumps(request)
            pages = []
            for i, service in enumerate((fast, full)):
                previous = cursors.get(key, (None, None))[i]
                verdict = (
                    None if previous is None else search(service, {**request, "cursor": previous})
                )
                verdict = verdict if isinstance(verdict, tuple) or verdict is None else "valid"
                page = search(service, request)
                pages.append(
                    (
                        page if isinstance(page, tuple) else (page["items"], _generation(page)),
                        verdict,
                    )
                )
            assert pages[0] == pages[1], (op, request)
            fast_cursor, full_cursor = (
                None if isinstance(p, tuple) else p.get("nextCursor")
                for p in (search(fast, request), search(full, request))
            )
            cursors[key] = (fast_cursor, full_cursor)
    fast.close()
    full.close()


# -- ranking (§6.9) --------------------------------------------------------------------------------
#
# A model of the whole order: match_count from phrase instances over the model tokens (overlapping
# instances merge into one span, adjacent ones do not), document length in code points, time,
# then the tie-breakers; each session's best event, sessions ordered by it. Few words and few
# distinct times make ties common, so every key and tie-breaker decides somewhere.

RANK_WORDS = ["needle", "Needle", "hay", "café", "cafe", "hay\x00needle", "\ufdd0needle\ufdd1"]
CWDS = ["/a", "/b", None]


def spans(phrase: list[str], tokens: list[str]) -> int:
    n, count, end = len(phrase), 0, -1
    for i in range(len(tokens) - n + 1):
        if tokens[i : i + n] == phrase:
            count += i > end
            end = i + n - 1
    return count


def rank_texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(RANK_WORDS), min_size=1, max_size=5).map(" ".join)


def rank_logs() -> st.SearchStrategy[list]:
    entries = st.lists(st.tuples(rank_texts(), st.integers(0, 2)), min_size=0, max_size=5)
    return entries.map(
        lambda es: [
            U(i, text, time=t) if i % 2 else A(i, text, time=t) for i, (text, t) in enumerate(es)
        ]
    )


rank_corpora = st.fixed_dictionaries(
    {
        "live": st.dictionaries(
            st.sampled_from(["a", "b", "shared", "é"]),
            st.tuples(rank_logs(), st.sampled_from(CWDS)),
            max_size=3,
        ),
        "persisted": st.dictionaries(
            st.sampled_from(["p", "q", "shared", "Z"]),
            st.tuples(rank_logs(), st.sampled_from(CWDS)),
            max_size=3,
        ),
        "query": st.sampled_from(
            ["needle", "needle needle", "café", "hay needle", "needle hay needle"]
        ),
        "cwd": st.sampled_from([None, ["/a"], ["/b", None]]),
        "availability": st.sampled_from([None, ["live"], ["persisted"]]),
        "type": st.sampled_from([None, ["user/message"], ["assistant/message", "user/message"]]),
        "limit": st.integers(1, 3),
    }
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank_corpora)
def test_ranking_equals_the_model(corpus):
    store, binding, service = make()
    backend = MemoryBackend()
    for sid, (log, cwd) in corpus["persisted"].items():
        backend.put(hdr(sid, 1, **({"cwd": cwd} if cwd else {})), log)
    binding.mount(backend)
    for sid, (log, cwd) in corpus["live"].items():
        cwd = corpus["persisted"].get(sid, (None, cwd))[1]  # the same session: compatible headers
        corpus["live"][sid] = (log, cwd)
        store.create(hdr(sid, 1, **({"cwd": cwd} if cwd else {})), seed=values(log))

    visible = {sid: (cwd, log, False) for sid, (log, cwd) in corpus["persisted"].items()}
    visible.update(
        {
            sid: (cwd, live_snapshot(store, sid).events, True)
            for sid, (_, cwd) in corpus["live"].items()
        }
    )
    phrase = model_tokens(corpus["query"])
    keyed = {}  # sid -> [(sort key, seq)], the §6.9 event order
    for sid, (cwd, evs, live) in visible.items():
        if corpus["cwd"] is not None and cwd not in corpus["cwd"]:
            continue
        persisted = (
            not live or sid in corpus["persisted"]
        )  # a live row's flag: in the bound backend too
        if (
            corpus["availability"] == ["live"]
            and not live
            or corpus["availability"] == ["persisted"]
            and not persisted
        ):
            continue
        hits = []
        for event, text in documents(evs):
            if corpus["type"] is not None and event.type not in corpus["type"]:
                continue
            count = spans(phrase, model_tokens(text))
            if count:
                hits.append(((-count, len(text), -event.time, -int(event.seq)), int(event.seq)))
        if hits:
            keyed[sid] = sorted(hits)

    filters = []
    if corpus["cwd"] is not None:
        filters.append({"kind": "cwd", "values": corpus["cwd"]})
    if corpus["availability"] is not None:
        filters.append({"kind": "availability", "values": corpus["availability"]})
    events_filters = [] if corpus["type"] is None else [{"kind": "type", "values": corpus["type"]}]
    request = {
        "query": corpus["query"],
        "limit": corpus["limit"],
        "sessionFilters": filters,
        "eventFilters": events_filters,
    }
    best = page_all(from_json(service.search_sessions), request)
    expected = sorted(keyed, key=lambda sid: (keyed[sid][0][0][:3], sid, keyed[sid][0][0][3]))
    assert [(h["header"]["id"], h["bestMatch"]["seq"]) for h in best] == [
        (sid, keyed[sid][0][1]) for sid in expected
    ]
    assert all(h["live"] == (h["header"]["id"] in corpus["live"]) for h in best)
    assert all(h["persisted"] == (h["header"]["id"] in corpus["persisted"]) for h in best)
    assert all(h["header"].get("cwd") == visible[h["header"]["id"]][0] for h in best)

    for sid in visible:
        if corpus["cwd"] is None and corpus["availability"] is None:
            items = page_all(
                from_json(service.search_events),
                {
                    "sessionId": sid,
                    "query": corpus["query"],
                    "limit": corpus["limit"],
                    "filters": events_filters,
                },
            )
            assert [h["seq"] for h in items] == [seq for _, seq in keyed.get(sid, [])]
    service.close()


# -- trimming (§0.3 whitespace) --------------------------------------------------------------------

from dsh_query_server.values import WHITESPACE_CHARS, trim  # noqa: E402

TRIM_ALPHABET = st.sampled_from(list(WHITESPACE_CHARS) + ["a", "é", "😀", "\x85", "\u200b", "\x1c"])


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=TRIM_ALPHABET, max_size=16))
def test_trim_drops_exactly_the_spec_whitespace_at_both_ends(text):
    start, end = 0, len(text)
    while start < end and text[start] in WHITESPACE_SET:
        start += 1
    while end > start and text[end - 1] in WHITESPACE_SET:
        end -= 1
    assert trim(text) == text[start:end]


# -- match_spans is the span count of highlight() --------------------------------------------------

SPAN_WORDS = ["a", "b", "A", "á", "c"]


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(SPAN_WORDS), min_size=1, max_size=12).map(" ".join),
        min_size=1,
        max_size=6,
    ),
    query=st.lists(st.sampled_from(SPAN_WORDS), min_size=1, max_size=3),
)
def test_match_spans_counts_what_highlight_marks(texts, query):
    """The ranking's auxiliary function (search/schema.py) counts exactly the START markers
    highlight() writes: overlapping instances merge, adjacent ones do not (§8 point 23)."""
    from dsh_query_server.search.schema import connect

    conn = connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'unicode61')")
        conn.executemany("INSERT INTO t (text) VALUES (?)", [(text,) for text in texts])
        phrase = '"' + " ".join(query) + '"'
        wanted = model_tokens(" ".join(query))
        rows = list(
            conn.execute(
                "SELECT match_spans(t), length(highlight(t, 0, char(64976), '')) - length(text), text"
                " FROM t WHERE t MATCH ?",
                (phrase,),
            )
        )
        for counted, marked, text in rows:
            assert counted == marked, (text, query)
            assert counted == spans(wanted, model_tokens(text))
        assert len(rows) == sum(phrase_in(wanted, model_tokens(t)) for t in texts)
    finally:
        conn.close()
