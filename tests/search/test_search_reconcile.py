"""Reconciliation fast paths (semantics.md §6.5, §6.11, §6.12): a search over an unchanged corpus
skips the observation, and the write plan is one transaction filled while the observation runs.
Whatever is skipped, every change, failure, generation and cursor comes out as a full observation
would have it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from dsh_query_server import errors
from dsh_query_server.cancel import NULL_TOKEN, CancelToken
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.persistence.sqlite import SqliteBackend
from tests.builders import U, hdr
from tests.fakes import MemoryBackend, ops
from tests.search_helpers import code, events, from_json, ids, make, sessions, values

STALE = (errors.STALE_CURSOR, "session-search cursor is stale because its relevant corpus changed")


def live(store, sid, *texts):
    store.create(hdr(sid), seed=values([U(i, t) for i, t in enumerate(texts)]))


def persisted(backend, sid, *texts, **header):
    backend.put(hdr(sid, **header), [U(i, t) for i, t in enumerate(texts)])


class ReusingBackend(MemoryBackend):
    """Hands back the very same snapshot objects while nothing changed, like the SQLite backend."""

    def __init__(self, uri: str = "memory:reusing", as_tuple: bool = False) -> None:
        super().__init__(uri)
        self.as_tuple = as_tuple
        self._cache: tuple[tuple, tuple[Snapshot, ...]] | None = None

    def list_snapshots(self, token=None):
        self._enter("list_snapshots", None, token)
        state = tuple(sorted(self.revisions.items()))
        if self._cache is None or self._cache[0] != state:
            self._cache = (
                state,
                tuple(
                    Snapshot(h, f"rev-{self.revisions[sid]}")
                    for sid, (h, _) in self.sessions.items()
                ),
            )
        return self._cache[1] if self.as_tuple else list(self._cache[1])


def no_full_observation(store, monkeypatch):
    """Make any look at the live store's contents fail the test."""
    for name in ("fingerprints", "ids", "snapshot", "snapshots"):
        monkeypatch.setattr(store, name, lambda *a, _n=name: pytest.fail(f"store.{_n} was called"))


@pytest.mark.parametrize("as_tuple", [False, True])
def test_unchanged_corpus_skips_the_observation_but_lists_twice(monkeypatch, as_tuple):
    store, binding, service = make()
    live(store, "l", "needle")
    backend = ReusingBackend(as_tuple=as_tuple)
    persisted(backend, "p", "needle")
    binding.mount(backend)
    first = sessions(service, "needle", limit=1)
    backend.calls.clear()
    with monkeypatch.context() as patch:
        no_full_observation(store, patch)
        again = sessions(service, "needle", limit=1, cursor=first["nextCursor"])
    assert ops(backend) == ["list_snapshots", "list_snapshots"]  # failures are still observed
    assert ids(again) == ["p"] and "nextCursor" not in again  # the cursor stayed valid


def test_skipped_reconcile_still_sees_every_change():
    store, binding, service = make()
    backend = ReusingBackend()
    persisted(backend, "p", "needle")
    live(store, "l", "needle")
    mount = binding.mount(backend)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]

    def cursor():
        return sessions(service, "needle", limit=1)["nextCursor"]

    def stale(c):
        return (
            code(from_json(service.search_sessions), {"query": "needle", "limit": 1, "cursor": c})
            == STALE
        )

    c = cursor()
    sessions(service, "needle", limit=1, cursor=c)  # skipped: still valid
    store.append("l", [{"type": "turn/start", "data": {"turn": 1}}])
    assert stale(c)
    c = cursor()
    live(store, "new", "needle")
    assert stale(c)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "new", "p"]
    c = cursor()
    store.remove("new")
    assert stale(c)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]
    c = cursor()
    persisted(backend, "p", "needle", "needle again")  # a new revision
    assert stale(c)
    assert [h["snippet"] for h in events(service, "p", "again")["items"]] == ["needle again"]
    c = cursor()
    binding.unmount(mount)
    assert stale(c)
    assert ids(sessions(service, "needle")) == ["l"]  # hidden, not deleted
    binding.mount(backend)  # the same data behind a new binding
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]
    c = cursor()
    binding.mount(backend)
    assert stale(c)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]
    backend.fail["list_snapshots"] = OSError("disk on fire")
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: disk on fire",
    )
    del backend.fail["list_snapshots"]
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]


def test_a_live_id_that_goes_away_is_inspected_although_the_listing_repeats():
    store, binding, service = make()
    backend = ReusingBackend()
    persisted(backend, "s", "stored needle")
    live(store, "s", "live needle")
    binding.mount(backend)
    assert [h["snippet"] for h in events(service, "s", "needle")["items"]] == ["live needle"]
    assert "inspect" not in ops(backend)
    store.remove("s")
    assert [h["snippet"] for h in events(service, "s", "needle")["items"]] == ["stored needle"]
    assert ops(backend).count("inspect") == 1


def test_a_list_changed_in_place_is_never_trusted():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    listing = []

    def list_snapshots(token: CancelToken = NULL_TOKEN):
        listing[:] = [
            Snapshot(h, f"rev-{backend.revisions[sid]}") for sid, (h, _) in backend.sessions.items()
        ]
        return listing  # always the same list object

    backend.list_snapshots = list_snapshots
    binding.mount(backend)
    assert ids(sessions(service, "needle")) == ["p"]
    persisted(backend, "p", "changed")
    assert ids(sessions(service, "needle")) == []
    assert ids(sessions(service, "changed")) == ["p"]


def test_sqlite_backend_commits_by_another_connection_are_seen(tmp_path):
    path = str(tmp_path / "store.sqlite")
    writer = SqliteBackend(path)
    writer.create(Header.from_value(hdr("s")))
    writer.append("s", [U(0, "first needle"), U(1, "second needle")])
    _, binding, service = make()
    binding.mount(SqliteBackend(path, read_only=True))
    cursor = events(service, "s", "needle", limit=1)["nextCursor"]
    assert events(service, "s", "needle", limit=1, cursor=cursor)["items"]  # unchanged: skipped
    writer.append("s", [U(2, "third needle")])
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "s", "query": "needle", "limit": 1, "cursor": cursor},
        )
        == STALE
    )
    assert len(events(service, "s", "needle")["items"]) == 3
    writer.close()


def test_a_page_read_off_early_leaves_the_index_writable(tmp_path):
    # searchSessions stops reading the ranked rows once its page is full; the next reconcile
    # must still be able to write (an unfinished statement would hold its read lock).
    store, _, service = make(path=str(tmp_path / "index.sqlite"))
    for i in range(30):
        store.create(hdr(f"s{i:02}"), seed=values([U(0, "needle " * (i % 4 + 1))]))
    assert len(sessions(service, "needle", limit=2)["items"]) == 2
    store.append("s00", values([U(store.length("s00"), "fresh haystack")]))
    assert ids(sessions(service, "haystack")) == ["s00"]


class AppendingMidway(SqliteBackend):
    """A SQLite store that a producer appends to while the index reads one of its logs window by
    window (the write lands between two windows, once)."""

    def __init__(self, path: str, after_windows: int) -> None:
        super().__init__(path, read_only=True)
        self.path, self.after_windows, self.windows = path, after_windows, 0

    def inspect_window(self, session_id, first, last, token=None):
        self.windows += 1
        if self.windows == self.after_windows:
            writer = SqliteBackend(self.path)
            stored = writer.stored_count("s")
            assert stored is not None
            writer.append("s", [U(stored, "late needle")])
            writer.close()
        return super().inspect_window(session_id, first, last, token)


@pytest.mark.parametrize(
    ("after_windows", "budget"),
    # during the fold pass, at its end, while writing (texts over budget: a second pass reads
    # the windows again while the index inserts); with the texts kept, there is no second pass
    [(2, 0), (5, 0), (7, 0), (2, None), (5, None)],
)
def test_a_log_growing_between_windows_is_indexed_at_its_new_revision(
    tmp_path, monkeypatch, after_windows, budget
):
    from dsh_query_server.search import documents

    monkeypatch.setattr(documents, "WINDOW", 4)
    if budget is not None:
        monkeypatch.setattr(documents, "TEXT_BUDGET", budget)
    path = str(tmp_path / "store.sqlite")
    writer = SqliteBackend(path)
    writer.create(Header.from_value(hdr("s")))
    writer.append("s", [U(i, f"needle {i}") for i in range(18)])
    writer.close()
    _, binding, service = make()
    backend = AppendingMidway(path, after_windows)
    binding.mount(backend)
    found = events(service, "s", "needle", limit=100)["items"]
    assert len(found) == 19  # the retry read the log again, late event included
    # a long log: read in windows (twice when its texts are not kept), then again after the retry
    assert backend.windows > (10 if budget == 0 else 5)


# -- the write plan ------------------------------------------------------------------------------


def trace(service):
    statements = []

    def tracer(_cursor, sql, _bindings):
        if sql.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK"):
            statements.append(sql.split()[0].upper())
        return True

    service._index.conn.exec_trace = tracer
    return statements


def test_one_transaction_per_reconcile_and_none_without_changes():
    store, binding, service = make()
    backend = MemoryBackend()
    for i in range(5):
        persisted(backend, f"p{i}", "needle")
    binding.mount(backend)
    sessions(service, "warm up")
    statements = trace(service)
    for i in range(5):
        persisted(backend, f"p{i}", "needle", "more")
        live(store, f"l{i}", "needle")
    assert len(ids(sessions(service, "needle"))) == 10
    assert statements == ["BEGIN", "COMMIT"]
    statements.clear()
    sessions(service, "needle")
    assert statements == []


def test_a_retry_rolls_back_what_the_first_attempt_wrote():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    sessions(service, "warm up")
    statements = trace(service)
    persisted(backend, "p", "needle", "changed")
    original = backend.list_snapshots
    calls = []

    def list_snapshots(token: CancelToken = NULL_TOKEN):
        calls.append(1)
        if len(calls) == 2:
            live(store, "late", "needle")  # the live set moves: retry
        return original(token)

    backend.list_snapshots = list_snapshots
    assert sorted(ids(sessions(service, "needle"))) == ["late", "p"]
    assert statements == ["BEGIN", "ROLLBACK", "BEGIN", "COMMIT"]
    assert ops(backend).count("inspect") == 3  # warm up, then once per attempt


def test_a_failed_write_waits_for_the_observation(monkeypatch):
    store, binding, service = make()
    backend = MemoryBackend()
    # createdAt cannot be stored: deliberately not an integer
    backend.put(hdr("bad", "yesterday"), [U(0, "needle")])  # pyright: ignore[reportArgumentType]
    persisted(backend, "broken", "needle")
    binding.mount(backend)
    original = backend.inspect

    def inspect(sid: str, token: CancelToken = NULL_TOKEN):
        if sid == "broken":
            raise OSError("gone")
        return original(sid, token)

    monkeypatch.setattr(backend, "inspect", inspect)
    # The write of "bad" failed first, but the observation error takes precedence.
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: gone",
    )
    backend.inspect = original
    failure = code(from_json(service.search_sessions), {"query": "needle"})
    assert failure[0] == errors.INDEX_FAILED and failure[1].startswith(
        "session-search reconciliation failed: "
    )
    # Cancelled after the observation: aborted, whatever the plan held.
    token = CancelToken()

    def cancelling(sid: str, tok: CancelToken = NULL_TOKEN):
        if sid == "broken":
            token.cancel()
        return original(sid, tok)

    monkeypatch.setattr(backend, "inspect", cancelling)
    assert code(from_json(service.search_sessions), {"query": "needle"}, token)[0] == errors.ABORTED
    del backend.sessions["bad"]
    backend.inspect = original
    assert ids(sessions(service, "needle")) == ["broken"]


def test_maximum_filter_values_with_both_sides_of_the_index():
    store, binding, service = make()
    live(store, "s", "needle")
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    most = [{"kind": "id", "values": ["s", "p"] + [f"x{i}" for i in range(32752)]}]
    assert sorted(ids(sessions(service, "needle", sessionFilters=most))) == ["p", "s"]
    within = [{"kind": "type", "values": ["user/message"] * 32753}]
    assert len(events(service, "p", "needle", filters=within)["items"]) == 1


def test_a_search_waits_for_a_flush_in_progress_and_stays_cancellable():
    # The checkpointer's ``quiet`` lock is held by a flush: the reconcile waits for it (so the
    # flush cannot move revisions between its two listings), but a cancel still ends the wait.
    store, _, service = make()
    live(store, "s", "needle")
    service.quiet.acquire()
    try:
        token = CancelToken()
        threading.Timer(0.1, token.cancel).start()
        started = time.monotonic()
        assert (
            code(from_json(service.search_sessions), {"query": "needle"}, token)[0]
            == errors.ABORTED
        )
        assert time.monotonic() - started < 2
        answered = []
        waiter = threading.Thread(target=lambda: answered.append(ids(sessions(service, "needle"))))
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive() and not answered  # waiting for the flush
    finally:
        service.quiet.release()
    waiter.join(5)
    assert answered == [["s"]]


# -- §6.5 step 2.3: what moves between the two listings ----------------------------------------


class MovingBetweenListings(MemoryBackend):
    """Runs ``move`` once, right after the listing that follows arming it: the change lands
    between that attempt's two listings."""

    def __init__(self) -> None:
        super().__init__("memory:moving")
        self.move: Callable[[], object] | None = None
        self.listings = 0

    def list_snapshots(self, token=None):
        result = super().list_snapshots(token)
        self.listings += 1
        if self.move is not None:
            move, self.move = self.move, None
            move()
        return result


L_HEADER = hdr("l", cwd="/l")


def _moving_corpus():
    """``p`` and ``m`` persisted only, ``l`` persisted and live."""
    store, binding, service = make()
    backend = MovingBetweenListings()
    persisted(backend, "p", "stored needle")
    persisted(backend, "m", "stored needle")
    backend.put(L_HEADER, [U(0, "stored needle")])
    store.create(L_HEADER, seed=values([U(0, "live needle")]))
    binding.mount(backend)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "m", "p"]
    backend.listings = 0
    return store, backend, service


def _move(store, backend, case):
    def checkpoint(sid, *texts, **header):
        backend.put(hdr(sid, **header), [U(i, t) for i, t in enumerate(("stored needle",) + texts)])

    def keep_log(sid, header):
        backend.sessions[sid] = (Header.from_value(header), backend.sessions[sid][1])

    if case == "revision of a live id":
        checkpoint("l", "checkpointed", cwd="/l")
    elif case == "header of a live id":
        keep_log("l", {**L_HEADER, "agentPreset": "other"})
    elif case == "revision and header of a live id":
        checkpoint("l", "more", cwd="/l", agentPreset="again")
    elif case == "revision of a persisted id":
        checkpoint("p", "revised")
    elif case == "header of a persisted id":
        keep_log("p", hdr("p", agentPreset="x"))
    elif case == "id added":
        checkpoint("q")
    elif case == "id removed":
        del backend.sessions["p"]
    elif case == "live id removed, then its revision":
        store.remove("l")  # live at the first observation only
        checkpoint("l", "checkpointed", cwd="/l")
    elif case == "persisted id made live, then its revision":
        store.create(hdr("m"), seed=values([U(0, "live needle")]))  # live at the second only
        checkpoint("m", "checkpointed")
    else:
        raise AssertionError(case)


MOVES = {
    "revision of a live id": False,
    "header of a live id": False,
    "revision and header of a live id": False,
    "revision of a persisted id": True,
    "header of a persisted id": True,
    "id added": True,
    "id removed": True,
    "live id removed, then its revision": True,
    "persisted id made live, then its revision": True,
}


@pytest.mark.parametrize("case,retries", list(MOVES.items()))
def test_only_changes_of_ids_live_at_both_observations_skip_the_retry(case, retries):
    """semantics.md §6.5 step 2.3 [ours]: a revision or header change of an id live at both
    observations never retries (its row is shadowed and never inspected); every other change
    between the two listings still does."""
    store, backend, service = _moving_corpus()
    backend.move = lambda: _move(store, backend, case)
    found = sorted(ids(sessions(service, "needle")))
    assert backend.listings == (4 if retries else 2)
    # What the search answered is what an index built afresh over the same sources answers.
    _, fresh_binding, fresh = make(store=store)
    fresh_binding.mount(backend)
    assert found == sorted(ids(sessions(fresh, "needle")))


def test_a_live_id_checkpointed_during_every_observation_never_fails_a_search():
    store, backend, service = _moving_corpus()
    inspected = ops(backend).count("inspect")
    for round_ in range(5):
        backend.move = lambda r=round_: backend.put(L_HEADER, [U(0, "stored"), U(1, f"flush {r}")])
        assert sorted(ids(sessions(service, "needle"))) == ["l", "m", "p"]
    assert backend.listings == 10  # two per search, never a retry
    assert ops(backend).count("inspect") == inspected  # the live id is never inspected
    store.remove("l")  # no longer live: its newest persisted log is read
    assert [h["snippet"] for h in events(service, "l", "flush")["items"]] == ["flush 4"]
