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
from .search_helpers import hdr, j, make, page_all, values

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
    [" ", "\n", "\t", "\u00a0", "\u3000", "\ufeff", "\x1c", "\x1f", "\x85", START, END, "a", "é", "😀", "—"])


@settings(max_examples=400, deadline=None)
@given(st.lists(MARKED_ALPHABET, max_size=30).map("".join), st.integers(1, 12))
def test_clean_equals_the_code_point_walk(marked, limit):
    assert _clean(marked) == walk_clean(marked)
    assert len(snippet(marked, limit)) <= limit


# -- the no-change fast path against a full observation (§6.5, §6.11, §6.12) -----------------------

import base64  # noqa: E402
import json  # noqa: E402

from dsh_query_server.persistence.base import Snapshot  # noqa: E402


class ReusingBackend(MemoryBackend):
    """Returns the same snapshot objects while nothing changed, as the SQLite backend does."""

    def __init__(self) -> None:
        super().__init__("memory:reusing")
        self._cache: tuple | None = None

    def list_snapshots(self, token=None):
        self._enter("list_snapshots", None, token)
        state = tuple(sorted(self.revisions.items()))
        if self._cache is None or self._cache[0] != state:
            self._cache = (state, [Snapshot(h, f"rev-{self.revisions[s]}") for s, (h, _) in self.sessions.items()])
        return list(self._cache[1])


def _generation(page: dict) -> str | None:
    cursor = page.get("nextCursor")
    if cursor is None:
        return None
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["generation"]


OPS = st.lists(st.sampled_from(["none", "create", "append", "remove", "put", "drop", "mount", "unmount"]),
               min_size=1, max_size=12)


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
            return j(service.search_sessions(request)) if "sessionId" not in request else \
                j(service.search_events(request))
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
        for request in ({"query": "needle", "limit": 1}, {"sessionId": "p0", "query": "needle", "limit": 1},
                        {"sessionId": "l0", "query": "needle", "limit": 1}):
            key = json.dumps(request)
            pages = []
            for i, service in enumerate((fast, full)):
                previous = cursors.get(key, (None, None))[i]
                verdict = None if previous is None else search(service, {**request, "cursor": previous})
                verdict = verdict if isinstance(verdict, tuple) or verdict is None else "valid"
                page = search(service, request)
                pages.append((page if isinstance(page, tuple) else (page["items"], _generation(page)), verdict))
            assert pages[0] == pages[1], (op, request)
            cursors[key] = tuple(None if isinstance(p, tuple) else p.get("nextCursor")
                                 for p in (search(fast, request), search(full, request)))
    fast.close()
    full.close()
