"""Properties of the index build's batches and of the warm-up (semantics.md §6.5 [ours]):

- a build killed at 50% keeps the batches it committed, the next build resumes from them (it
  inspects only what no batch holds), and the resumed index answers exactly as a fresh build;
- the warm-up never changes an answer: the same searches with and without it, byte for byte.

"Killed" is a BaseException raised from the progress report at 50%: the attempt's open
transaction is rolled back as SQLite rolls back a dead process's, and the service is dropped;
the next one opens the same index file, as the next process would.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh_query_server.cancel import CancelToken
from dsh_query_server.model.params import decode
from dsh_query_server.persistence.mount.binding import PersistenceBinding
from dsh_query_server.progress import Tracker
from dsh_query_server.search import plan
from dsh_query_server.search.config import SearchConfig
from dsh_query_server.search.service import SearchService
from dsh_query_server.search.wire import SessionSearchRequest
from dsh_query_server.session.store import SessionStore
from tests.builders import A, U, hdr
from tests.fakes import MemoryBackend
from tests.search_helpers import j, values

pytestmark = pytest.mark.unit

WORDS = ["alpha", "beta", "gamma", "delta", "retry", "jitter", "cafe", "x1"]
QUERIES = ["alpha", "beta gamma", "retry", "x1", "jitter alpha", "cafe"]


class Killed(BaseException):
    """The process died here."""


class KillAt:
    """A progress sink that kills the build once it has reported ``at`` percent."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.killed = False

    def open(self, ready: Any) -> None:
        ready(True)

    def begin(self, title: str, message: str | None, percentage: int | None) -> None:
        self.report(message, percentage)

    def report(self, message: str | None, percentage: int | None) -> None:
        if percentage is not None and percentage >= self.at and not self.killed:
            self.killed = True
            raise Killed

    def end(self, message: str) -> None:
        pass


def texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)


def logs() -> st.SearchStrategy[list[Any]]:
    messages = st.lists(st.tuples(st.booleans(), texts()), min_size=0, max_size=3)
    return messages.map(
        lambda ms: [(U if user else A)(i, text, time=i) for i, (user, text) in enumerate(ms)]
    )


homes = st.fixed_dictionaries(
    {
        "persisted": st.dictionaries(
            st.from_regex(r"s[0-9a-f]{1,3}", fullmatch=True), logs(), min_size=1, max_size=24
        ),
        "live": st.dictionaries(st.sampled_from(["live-1", "live-2"]), logs(), max_size=2),
        "batch": st.integers(1, 5),
    }
)


def _service(store: SessionStore, binding: PersistenceBinding, path: Path, **config: Any):
    return SearchService(store, binding, SearchConfig(path=str(path), **config))


def _answers(service: SearchService) -> str:
    """Every query's every page (cursors aside: they name the service instance), as JSON."""
    out = []
    for query in QUERIES:
        request = decode(SessionSearchRequest, {"query": query, "limit": 100})
        page = j(service.search_sessions(request))
        page.pop("nextCursor", None)
        out.append(page)
    return json.dumps(out, sort_keys=True)


def _corpus(home: dict[str, Any]) -> tuple[SessionStore, PersistenceBinding, MemoryBackend]:
    store, binding, backend = SessionStore(), PersistenceBinding(), MemoryBackend()
    for sid, log in home["persisted"].items():
        backend.put(hdr(sid, 1), log)
    binding.mount(backend)
    for sid, log in home["live"].items():
        store.create(hdr(sid, 1), seed=values(log))
    return store, binding, backend


def _inspected(backend: MemoryBackend) -> list[str]:
    return [arg for op, arg in backend.calls if op == "inspect"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(homes)
def test_a_build_killed_at_half_resumes_and_answers_as_a_fresh_build(home):
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(plan, "BATCH", home["batch"])
        store, binding, backend = _corpus(home)
        index = Path(tmp) / "index.sqlite"
        total = len(home["persisted"])

        first = _service(store, binding, index)
        sink = KillAt(50)
        token = CancelToken(Tracker(sink, "test", delay=0))
        token.progress.arm()
        request = decode(SessionSearchRequest, {"query": "alpha"})
        try:
            first.search_sessions(request, token)
        except Killed:
            pass
        first.close()  # the transaction was rolled back: what a dead process leaves
        assert sink.killed or total == 0
        done_before = len(_inspected(backend))
        committed = (done_before // home["batch"]) * home["batch"] if sink.killed else total

        backend.calls.clear()
        resumed = _service(store, binding, index)
        answers = _answers(resumed)
        resumed.close()
        # It resumed: every snapshot a batch committed was not read again.
        assert len(_inspected(backend)) == total - min(committed, total)

        fresh = _service(store, binding, Path(tmp) / "fresh.sqlite")
        assert answers == _answers(fresh)
        fresh.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(homes, st.integers(0, 3))
def test_warm_up_never_changes_an_answer(home, interrupt_after):
    """The same searches with the warm-up (racing the first search, or finished first) and
    without it answer the same bytes. ``interrupt_after``: 0 lets the warm-up finish first,
    else the first search joins once it has read that many logs (it cancels the warm-up)."""
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(plan, "BATCH", home["batch"])
        store, binding, backend = _corpus(home)
        cold = _service(store, binding, Path(tmp) / "cold.sqlite", warm_up=False)
        cold.open()
        assert cold.warm_up() is None
        expected = _answers(cold)
        cold.close()

        warm = _service(store, binding, Path(tmp) / "warm.sqlite")
        warm.open()
        thread = warm.warm_up()
        assert thread is not None
        if interrupt_after:
            # The first search joins once the warm-up has read a few logs (or has finished).
            while thread.is_alive() and len(_inspected(backend)) < interrupt_after:
                thread.join(0.001)
        else:
            thread.join(30)
        got = _answers(warm)
        thread.join(30)
        warm.close()
        assert got == expected
