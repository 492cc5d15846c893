"""The index keeps each header's ``source`` (importers.md §4.4): hit headers carry it, persisted
rows take it from the inspected header, and the §6.5 step 2.3 retry comparison ignores it."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_query_server import errors
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.checks import validate_snapshots
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.search.reconcile import _listing_changed
from dsh_query_server.search.schema import APPLICATION_ID, SCHEMA_VERSION
from dsh_query_server.session.store import SessionStore
from tests.builders import U, hdr
from tests.fakes import MemoryBackend, ops
from tests.import_helpers import SPEC, isolated_env
from tests.search_helpers import StdioServer, code, events, ids, j, make, sessions, values

FORK = "019b7e26-5500-7000-8000-0000000000f1"
SOURCE = {"agent": "codex", "agentVersion": "0.77.0", "path": "/h/x.jsonl", "lineage": "fork"}


@pytest.mark.slow
@pytest.mark.wire
def test_codex_hit_headers_carry_the_inspected_source_over_stdio(tmp_path):
    home = shutil.copytree(SPEC / "codex", tmp_path / "codex-home")
    server = StdioServer(["--persistence", f"codex:{home}"], isolated_env(tmp_path), str(tmp_path))
    try:
        listed = {
            r["header"]["id"]: r["header"] for r in server.call("sessionQuery/listSessions", {})
        }
        inspected = server.call("sessionQuery/readSurface", {"sessionId": FORK})["session"]
        page = server.call("sessionQuery/searchSessions", {"query": "thanks"})
        hits = {hit["header"]["id"]: hit["header"] for hit in page["items"]}
        within = server.call("sessionQuery/searchEvents", {"sessionId": FORK, "query": "thanks"})
    finally:
        server.close()
    assert list(hits) == [FORK]
    # The inspected header adds `approximate`, which listings never carry (importers.md §0.8).
    assert inspected["source"]["approximate"] == ["placeholder"]
    assert "approximate" not in listed[FORK]["source"]
    assert hits[FORK]["source"] == inspected["source"]
    assert within["session"]["source"] == inspected["source"]
    assert {k: v for k, v in hits[FORK].items() if k != "source"} == {
        k: v for k, v in listed[FORK].items() if k != "source"
    }


def test_live_and_persisted_sources_in_hits_and_targets():
    store = SessionStore()
    _, binding, service = make(store=store)
    backend = MemoryBackend()
    listed = hdr("p", 1, cwd="/w", source={"agent": "codex", "path": "/h/p.jsonl"})
    backend.put(listed, [U(0, "needle persisted", time=5)])
    backend.inspect_meta["p"] = Header.from_value(
        {**listed, "source": {**SOURCE, "approximate": ["paginated"]}}
    )
    backend.put(hdr("plain", 2), [U(0, "needle plain", time=5)])
    binding.mount(backend)
    store.create(hdr("l", 3, source=SOURCE), seed=values([U(0, "needle live", time=5)]))
    found = {h["header"]["id"]: h["header"] for h in sessions(service, "needle")["items"]}
    assert found["p"]["source"] == {**SOURCE, "approximate": ["paginated"]}
    assert found["l"]["source"] == SOURCE
    assert list(found["l"]) == ["version", "id", "createdAt", "source"]
    assert "source" not in found["plain"]
    assert j(events(service, "p", "needle")["session"]) == found["p"]
    assert j(events(service, "l", "needle")["session"]) == found["l"]


def test_a_source_that_changes_between_the_two_listings_does_not_retry():
    _, binding, service = make()
    backend = _Flipping()
    backend.put(hdr("p", 1, source={"agent": "codex", "path": "/a"}), [U(0, "needle", time=5)])
    binding.mount(backend)
    assert ids(sessions(service, "needle")) == ["p"]
    assert ops(backend).count("list_snapshots") == 2  # one observation, no retry
    backend.field = "agentPreset"  # a compared field that moves on every call still retries
    backend.put(hdr("q", 1), [U(0, "needle", time=5)])
    assert code(sessions, service, "needle") == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation did not stabilize after one retry",
    )


class _Flipping(MemoryBackend):
    """Every listing gives each header a new value of ``field``."""

    field = "source"

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def list_snapshots(self, token=None):
        self.count += 1
        snapshots = super().list_snapshots()
        return [
            Snapshot(
                Header.from_value({**s.header.to_value(), self.field: str(self.count)}), s.revision
            )
            for s in snapshots
        ]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_compared = {
    "version": st.sampled_from([0, 1]),
    "createdAt": st.sampled_from([0, 7]),
    "cwd": st.sampled_from(["/a", "/b"]),
    "parentSession": st.sampled_from(["x", "y"]),
    "seedLength": st.sampled_from([0, 2]),
    "delegationDepth": st.sampled_from([0, 1]),
    "agentPreset": st.sampled_from(["p", "q"]),
}
_header = st.fixed_dictionaries({}, optional={**_compared, "source": _json, "other": _json}).map(
    lambda fields: {"id": "s", **fields}
)


@settings(max_examples=300, deadline=None)
@given(before=_header, after=_header, live=st.booleans())
def test_retry_rule_ignores_source_property(before, after, live):
    """§6.5 step 2.3 with importers.md §4.4: a listing moved iff a compared field (agentPreset
    included, delegationDepth absent = 0) differs, unless the id is live at both observations.
    ``source`` and other unknown keys never count."""
    store = SessionStore()
    if live:
        store.create(hdr("s", 0))
    one = validate_snapshots([Snapshot(Header.from_value(before), "r")])
    two = validate_snapshots([Snapshot(Header.from_value(after), "r")])

    def compared(header):
        fields = {k: header.get(k) for k in _compared}
        fields["delegationDepth"] = header.get("delegationDepth", 0)
        return fields

    moved = compared(before) != compared(after) and not live
    live_ids = frozenset(store.ids())
    assert _listing_changed(one, two, live_ids, store) is moved


def test_a_version_8_index_is_rebuilt_with_the_source_column(tmp_path):
    path = tmp_path / "index.sqlite"
    _, binding, service = make(path=str(path))
    backend = MemoryBackend()
    backend.put(hdr("p", 1, source=SOURCE), [U(0, "needle", time=5)])
    binding.mount(backend)
    assert ids(sessions(service, "needle")) == ["p"]
    service.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (9,)
    conn.execute("UPDATE persisted_sessions SET source = NULL")
    conn.execute("PRAGMA user_version = 8")
    conn.commit()
    conn.close()
    _, _, reopened = make(binding=binding, path=str(path))
    backend.calls.clear()
    hits = sessions(reopened, "needle")["items"]
    assert [h["header"].get("source") for h in hits] == [SOURCE]
    assert ops(backend).count("inspect") == 1  # rebuilt from nothing, so the log is re-read
    reopened.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    conn.close()
