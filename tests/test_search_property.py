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

from .builders import A, U
from .fakes import MemoryBackend
from .search_helpers import hdr, make, page_all, values

WORDS = ["alpha", "Alpha", "ALPHA", "beta", "BETA", "café", "CAFÉ", "cafe", "Cafe", "naïve", "NAIVE",
         "über", "Uber", "or", "OR", "x1", "ai", "AI"]
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
    pieces = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)),
                      min_size=min_words, max_size=max_words)
    return pieces.map(lambda ps: "".join(w + s for w, s in ps))


def logs() -> st.SearchStrategy[list]:
    messages = st.lists(st.tuples(st.booleans(), texts()), min_size=0, max_size=4)
    return messages.map(lambda ms: [(U if user else A)(i, text, time=i) for i, (user, text) in enumerate(ms)])


corpora = st.fixed_dictionaries({
    "live": st.dictionaries(st.sampled_from(["a", "b", "c", "shared"]), logs(), max_size=3),
    "persisted": st.dictionaries(st.sampled_from(["p", "q", "shared", "É"]), logs(), max_size=3),
    "bound": st.booleans(),
    "queries": st.lists(texts(1, 3), min_size=1, max_size=3),
    "limit": st.integers(1, 3),
})


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
    service.search_sessions({"query": "warm up"})  # index everything, then maybe hide it
    if not corpus["bound"]:
        binding.unmount(mount)

    visible = {}
    if corpus["bound"]:
        visible.update(backend.sessions)
    for sid in corpus["live"]:
        visible[sid] = (None, store.snapshot(sid).events)
    docs = {sid: [(int(e.seq), model_tokens(text)) for e, text in documents(evs)]
            for sid, (_, evs) in visible.items()}

    limit = corpus["limit"]
    for query in corpus["queries"]:
        phrase = model_tokens(query)
        expected = {(sid, seq) for sid, ds in docs.items() for seq, tokens in ds if phrase_in(phrase, tokens)}
        found = set()
        for sid in visible:
            items = page_all(service.search_events, {"sessionId": sid, "query": query, "limit": limit})
            keys = [(h["sessionId"], h["seq"]) for h in items]
            assert len(keys) == len(set(keys))  # paging never repeats a hit
            found.update(keys)
        assert found == expected, query
        best = page_all(service.search_sessions, {"query": query, "limit": limit})
        assert sorted(h["header"]["id"] for h in best) == sorted({sid for sid, _ in expected})
        assert all((h["header"]["id"], h["bestMatch"]["seq"]) in expected for h in best)
        assert all(h["live"] == (h["header"]["id"] in corpus["live"]) for h in best)
    service.close()
