"""Unreadable sessions are reported, not fatal (semantics.md §6.5 [ours], issue 25): a persisted
log whose inspection raises corruption is left out of the search and named in its result."""

from __future__ import annotations

import json
import pathlib
import shutil
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server import errors
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.jsonl.backend import JsonlBackend
from dsh_query_server.search.scope import Scope
from dsh_query_server.search.unreadable import MAX_REPORTED
from dsh_query_server.search.wire import SessionSearchRequest
from tests.builders import U, hdr, log_only, write_transcript
from tests.fakes import MemoryBackend
from tests.search_helpers import code, events, from_json, ids, j, make, sessions


def persisted(backend, sid, *texts, **header):
    backend.put(hdr(sid, 0, **header), [U(i, t, time=5) for i, t in enumerate(texts)])


def inspected(backend: MemoryBackend, sid: str) -> int:
    return sum(1 for op, arg in backend.calls if op == "inspect" and arg == sid)


def damage(path: pathlib.Path) -> None:
    """An unparsable committed record followed by a turn/end: corruption (persistence.md §4.5)."""
    end = log_only("turn/end", 99, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
    path.write_text(path.read_text() + "{not json\n" + json.dumps(end) + "\n")


def test_corrupt_log_is_left_out_and_named_by_every_search():
    _, binding, service = make()
    backend = MemoryBackend()
    for sid in ("a", "bad", "c"):
        persisted(backend, sid, "needle")
    backend.corrupt.add("bad")
    binding.mount(backend)
    for _ in range(2):  # named again while it stays damaged
        page = sessions(service, "needle")
        assert sorted(ids(page)) == ["a", "c"]
        assert page["unreadableCount"] == 1
        assert [u["sessionId"] for u in page["unreadable"]] == ["bad"]
        assert page["unreadable"][0]["code"] == errors.CORRUPT_SESSION
    # ...and read once at that revision, not by every search.
    assert inspected(backend, "bad") == 1


def test_repair_makes_it_found_again_and_a_new_revision_is_retried():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "bad", "needle")
    backend.corrupt.add("bad")
    binding.mount(backend)
    assert sessions(service, "needle")["unreadableCount"] == 1
    persisted(backend, "bad", "needle", "more")  # still damaged, new revision: read again
    assert sessions(service, "needle")["unreadableCount"] == 1
    assert inspected(backend, "bad") == 2
    backend.corrupt.clear()
    persisted(backend, "bad", "needle")  # repaired
    page = sessions(service, "needle")
    assert sorted(ids(page)) == ["a", "bad"]
    assert "unreadable" not in page and "unreadableCount" not in page


def test_a_log_that_turns_corrupt_loses_the_documents_it_had():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "b", "needle")
    binding.mount(backend)
    assert sorted(ids(sessions(service, "needle"))) == ["a", "b"]
    backend.corrupt.add("b")
    persisted(backend, "b", "needle")  # its new revision is damaged
    page = sessions(service, "needle")
    assert ids(page) == ["a"] and page["unreadableCount"] == 1


def test_searchevents_healthy_target_works_and_damaged_target_fails_as_the_spec_says():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "bad", "needle")
    backend.corrupt.add("bad")
    binding.mount(backend)
    assert [h["sessionId"] for h in events(service, "a", "needle")["items"]] == ["a"]
    assert code(from_json(service.search_events), {"sessionId": "bad", "query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: bad bytes",
    )


def test_non_corruption_failures_still_fail_the_search():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    backend.fail["inspect"] = OSError("disk gone")
    binding.mount(backend)
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: disk gone",
    )


def test_at_most_100_entries_sorted_by_id_with_the_full_count():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "ok", "needle")
    names = [f"s{i:03d}" for i in range(MAX_REPORTED + 5)]
    for sid in reversed(names):
        persisted(backend, sid, "needle")
        backend.corrupt.add(sid)
    binding.mount(backend)
    page = sessions(service, "needle")
    assert ids(page) == ["ok"]
    assert page["unreadableCount"] == MAX_REPORTED + 5
    assert [u["sessionId"] for u in page["unreadable"]] == names[:MAX_REPORTED]


def test_unmounting_reports_nothing_and_a_scope_keeps_its_own():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "in", "needle", cwd="/w/a")
    persisted(backend, "out", "needle", cwd="/elsewhere")
    backend.corrupt.update({"in", "out"})
    binding.mount(backend)
    scope = Scope(lambda cwd: isinstance(cwd, str) and cwd.startswith("/w"), ("/w",))
    page, _ = service.search_sessions_scoped(SessionSearchRequest(query="needle"), scope)
    assert [u["sessionId"] for u in j(page)["unreadable"]] == ["in"]
    binding.unmount()
    assert "unreadable" not in sessions(service, "needle")


def test_jsonl_message_names_the_file_and_exact_reads_keep_the_spec_text(tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("good", 1, cwd="/p"), [U(0, "needle")])
    bad = write_transcript(root, hdr("bad", 2, cwd="/p"), [U(0, "needle")])
    damage(bad)
    _, binding, service = make()
    backend = JsonlBackend(str(root), read_only=True)
    binding.mount(backend)
    page = sessions(service, "needle")
    assert ids(page) == ["good"]
    (entry,) = page["unreadable"]
    assert entry == {
        "sessionId": "bad",
        "code": errors.CORRUPT_SESSION,
        "message": f"corrupt session log: unparsable committed event at line 2 ({bad})",
        "path": str(bad),
    }
    try:
        backend.inspect("bad")
    except SessionPersistenceCorruptionError as exc:
        assert str(exc) == "corrupt session log: unparsable committed event at line 2"
    else:
        raise AssertionError("inspect read a damaged log")


# -- the invariant --------------------------------------------------------------------------------

WORDS = ("alpha", "beta", "gamma", "delta")


@settings(max_examples=15, deadline=None)
@given(
    logs=st.lists(
        st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    query=st.sampled_from(WORDS),
)
def test_search_over_a_damaged_home_is_the_clean_home_plus_the_damaged_named(logs, query):
    """Search over a home with damaged logs gives the hits of the same home without them, and
    its unreadable list names exactly the damaged ones."""
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        damaged_root, clean_root = work / "damaged", work / "clean"
        damaged: set[str] = set()
        for n, (texts, broken) in enumerate(logs):
            sid = f"s{n}"
            header = hdr(sid, n + 1, cwd="/p")
            entries = [U(i, t) for i, t in enumerate(texts)]
            path = write_transcript(damaged_root, header, entries)
            if broken:
                damage(path)
                damaged.add(sid)
            else:
                write_transcript(clean_root, header, entries)
        clean_root.mkdir(exist_ok=True)
        pages = []
        for root in (damaged_root, clean_root):
            _, binding, service = make()
            binding.mount(JsonlBackend(str(root), read_only=True))
            pages.append(sessions(service, query, limit=100))
        got, want = pages
        assert got["items"] == want["items"]
        assert [u["sessionId"] for u in got.get("unreadable", [])] == sorted(damaged)
        assert got.get("unreadableCount", 0) == len(damaged)
    finally:
        shutil.rmtree(work)


def test_a_live_copy_of_an_unreadable_session_is_searched_and_not_named():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "bad", "needle")
    backend.corrupt.add("bad")
    binding.mount(backend)
    assert sessions(service, "needle")["unreadableCount"] == 1
    store.create(hdr("bad", 0), seed=[U(0, "needle live").to_value()])
    page = sessions(service, "needle")
    assert sorted(ids(page)) == ["a", "bad"] and "unreadable" not in page
    assert [h["seq"] for h in events(service, "bad", "live")["items"]] == [0]
