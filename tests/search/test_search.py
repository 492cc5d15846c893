"""The full-text search service (semantics.md §6) in process: every rule and every worked example."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import stat
import threading
import time

import pytest

from dsh_query_server import errors
from dsh_query_server.cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from dsh_query_server.errors import QueryError
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.contract.results import Snapshot
from dsh_query_server.search import schema
from dsh_query_server.search.cursor import encode_cursor, sessions_fingerprint
from dsh_query_server.search.reconcile import SearchIndex
from dsh_query_server.search.schema import APPLICATION_ID
from dsh_query_server.search.snippet import END, START, snippet
from tests.builders import R, T, U, chunk, hdr, log_only
from tests.fakes import MemoryBackend, ops
from tests.search_helpers import (
    ChurningBackend,
    TokenBackend,
    code,
    error,
    events,
    from_json,
    ids,
    j,
    make,
    page_all,
    sessions,
    values,
)


def live(store, sid, *texts, created=0, time_=5, **header):
    """A live session whose seed is one user message per text (all at the same time)."""
    store.create(
        hdr(sid, created, **header), seed=values([U(i, t, time=time_) for i, t in enumerate(texts)])
    )


def persisted(backend, sid, *texts, created=0, time_=5, **header):
    backend.put(hdr(sid, created, **header), [U(i, t, time=time_) for i, t in enumerate(texts)])


def db_file(path):
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
            sorted(
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ),
            conn.execute("PRAGMA journal_mode").fetchone()[0],
        )
    finally:
        conn.close()


# -- §6.1 opening phases and closing ----------------------------------------------------------------


def test_startup_open_creates_private_file_and_schema(tmp_path):
    path = tmp_path / "a" / "b" / "index.sqlite"
    store, _, service = make(path=str(path))
    service.open()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    live(store, "s", "needle")
    assert ids(sessions(service, "needle")) == ["s"]
    wal = tmp_path / "a" / "b" / "index.sqlite-wal"
    assert stat.S_IMODE(wal.stat().st_mode) == 0o600  # sidecars inherit the file's mode
    service.close()
    app_id, version, tables, mode = db_file(path)
    assert (app_id, version, mode) == (APPLICATION_ID, schema.SCHEMA_VERSION, "wal")
    assert {"search_state", "persisted_sessions", "persisted_docs"} <= set(tables)
    assert "live_sessions" not in tables  # the overlay is TEMP


def test_existing_file_keeps_its_mode_and_journal_mode_is_configurable(tmp_path):
    path = tmp_path / "index.sqlite"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    _, _, service = make(path=str(path), journal_mode="delete")
    service.open()
    service.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert db_file(path)[3] == "delete"


def _foreign(path, app_id, tables=("t",), version=0):
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = delete")
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.execute(f"PRAGMA user_version = {version}")
    for name in tables:
        conn.execute(f'CREATE TABLE "{name}" (x)')
        conn.execute(f'INSERT INTO "{name}" VALUES (1)')
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "app_id, tables",
    [
        (123, ()),  # another application's id, even when empty
        (123, ("t",)),
        (0, ("t",)),  # unrecognised and not empty
        (APPLICATION_ID, ("search_state", "notes")),  # ours, with an unknown table
        (APPLICATION_ID, ("sqliteX",)),  # GLOB `sqlite_*` has a literal `_`: a user table
    ],
)
def test_opening_safety_refuses_without_modifying(tmp_path, app_id, tables):
    path = tmp_path / "index.sqlite"
    _foreign(path, app_id, tables, version=8)
    before = db_file(path)
    _, _, service = make(path=str(path))
    exc = error(service.open)
    assert exc.code == errors.INDEX_FAILED
    assert exc.message.startswith("session-search SQLite index failed to open: ")
    assert db_file(path) == before  # contents and journal mode untouched
    assert before[3] == "delete"


def test_old_schema_version_is_rebuilt(tmp_path):
    path = tmp_path / "index.sqlite"
    _, binding, service = make(path=str(path))
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    assert ids(sessions(service, "needle")) == ["p"]
    service.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    _, _, reopened = make(binding=binding, path=str(path))
    backend.calls.clear()
    assert ids(sessions(reopened, "needle")) == ["p"]
    assert ops(backend).count("inspect") == 1  # the rows were dropped, so the log is re-read
    reopened.close()
    assert db_file(path)[:2] == (APPLICATION_ID, schema.SCHEMA_VERSION)


def test_unusable_path_is_index_failed_with_cause(tmp_path):
    _, _, service = make(path=str(tmp_path / "bad\x00name"))
    exc = error(service.open)
    assert exc.code == errors.INDEX_FAILED
    assert exc.cause and "null" in exc.cause


def test_first_search_open_failure_is_final(tmp_path, monkeypatch):
    attempts = []
    real_open = SearchIndex.open.__func__
    monkeypatch.setattr(
        SearchIndex,
        "open",
        classmethod(lambda cls, *args: attempts.append(args) or real_open(cls, *args)),
    )
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store, _, service = make(path=str(blocker / "index.sqlite"), open_at="first-search")
    live(store, "s", "needle")
    concurrent = [
        threading.Thread(
            target=error, args=(from_json(service.search_sessions), {"query": "needle"})
        )
        for _ in range(3)
    ]
    for thread in concurrent:
        thread.start()
    for thread in concurrent:
        thread.join(5)
    assert len(attempts) == 1  # concurrent first searches share one attempt
    first = error(from_json(service.search_sessions), {"query": "needle"})
    assert first.code == errors.INDEX_FAILED
    assert first.message.startswith("session-search SQLite index failed to open: ")
    blocker.unlink()  # the problem goes away, but the open is never retried
    again = error(from_json(service.search_events), {"sessionId": "s", "query": "needle"})
    assert (again.code, again.message) == (first.code, first.message)
    assert not (tmp_path / "file").exists()
    assert len(attempts) == 1


def test_open_failure_without_a_message(monkeypatch):
    def refuse(*args, **kwargs):
        raise schema.Error()

    monkeypatch.setattr(schema, "connect", refuse)
    _, _, service = make()
    assert code(service.open) == (
        errors.INDEX_FAILED,
        "session-search SQLite index failed to open: session-search dependency rejected with a non-Error value",
    )


def test_first_search_opens_lazily_and_close_before_touches_nothing(tmp_path):
    path = tmp_path / "dir" / "index.sqlite"
    _, _, service = make(path=str(path), open_at="first-search")
    service.close()
    assert not (tmp_path / "dir").exists()
    store, _, lazy = make(path=str(path), open_at="first-search")
    assert not path.exists()
    live(store, "s", "needle")
    assert ids(sessions(lazy, "needle")) == ["s"]
    assert path.exists()
    lazy.close()


def test_never_is_disabled_before_validation(tmp_path):
    path = tmp_path / "index.sqlite"
    backend = MemoryBackend()
    store, binding, service = make(path=str(path), open_at="never")
    binding.mount(backend)
    token = CancelToken()
    token.cancel()
    for call in (from_json(service.search_sessions), from_json(service.search_events)):
        for request in ({"query": 7}, {"query": "x"}):  # params are an object (dispatch)
            assert code(call, request, token) == (
                errors.SEARCH_DISABLED,
                "session search is disabled: this deployment configures the session-query index "
                'with openAt "never"',
            )
    service.open()
    service.close()
    assert not path.exists()
    assert backend.calls == []


def test_close_is_idempotent_and_later_searches_fail():
    store, _, service = make()
    live(store, "s", "needle")
    assert ids(sessions(service, "needle")) == ["s"]
    service.close()
    service.close()
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.INDEX_FAILED,
        "session-search SQLite index is closed",
    )
    assert (
        code(from_json(service.search_events), {"sessionId": "s", "query": "needle"})[0]
        == errors.INDEX_FAILED
    )
    # validation still comes first
    assert code(from_json(service.search_sessions), {"query": " "})[0] == errors.INVALID_QUERY


def test_close_waits_for_running_search_and_fails_queued_ones():
    store, binding, service = make()
    live(store, "s", "needle")
    backend = MemoryBackend()
    backend.gate = threading.Event()
    binding.mount(backend)
    results = {}

    def run(name):
        try:
            results[name] = sessions(service, "needle")
        except QueryError as exc:
            results[name] = exc.code

    first = threading.Thread(target=run, args=("first",))
    first.start()
    assert backend.started.wait(5)
    second = threading.Thread(target=run, args=("second",))
    second.start()
    time.sleep(0.05)
    closer = threading.Thread(target=service.close)
    closer.start()
    second.join(5)
    assert results["second"] == errors.INDEX_FAILED  # failed while queued, promptly
    assert closer.is_alive()  # still waiting for the running search
    backend.gate.set()
    first.join(5)
    closer.join(5)
    assert ids(results["first"]) == ["s"]
    assert not closer.is_alive()


# -- §6.6 normalization ---------------------------------------------------------------------------


def test_query_is_one_phrase_of_literal_tokens():
    store, _, service = make()
    live(store, "quote", 'please say "needle" or * now')
    live(store, "or", "needle or absent")
    live(store, "split", "needle maybe absent")
    assert ids(sessions(service, 'say "needle" OR *')) == ["quote"]
    assert sessions(service, "*")["items"] == []
    assert sessions(service, '"')["items"] == []
    assert ids(sessions(service, "needle OR absent")) == ["or"]
    assert ids(sessions(service, "needle AND")) == []
    assert sessions(service, "NEAR(needle absent)")["items"] == []


def test_phrase_matching_over_unicode61_tokens():
    store, _, service = make()
    live(store, "cafe", "un café noir")
    live(store, "braid", "a BRAID here")
    live(store, "ai", "An AI assistant")
    live(store, "order", "beta alpha")
    assert ids(sessions(service, "CAFE")) == ["cafe"]
    assert ids(sessions(service, "Café Noir")) == ["cafe"]
    assert ids(sessions(service, "AI")) == ["ai"]
    assert ids(sessions(service, "ai assistant")) == ["ai"]
    assert sessions(service, "alpha beta")["items"] == []
    assert sessions(service, "raid")["items"] == []


def test_query_whitespace_is_normalized_for_matching_and_cursors():
    store, _, service = make()
    live(store, "s", "alpha beta", "x alpha beta")
    first = j(
        from_json(service.search_events)({"sessionId": "s", "query": "alpha beta", "limit": 1})
    )
    assert len(first["items"]) == 1
    second = j(
        from_json(service.search_events)(
            {
                "sessionId": "s",
                "query": "  alpha\n beta\u3000 ",
                "limit": 1,
                "cursor": first["nextCursor"],
            }
        )
    )
    assert len(second["items"]) == 1
    assert second["items"][0]["seq"] != first["items"][0]["seq"]


@pytest.mark.parametrize(
    "request_, expected",
    [
        ({}, (errors.INVALID_QUERY, "session-search query must be text")),
        ({"query": None}, (errors.INVALID_QUERY, "session-search query must be text")),
        (
            {"query": " \t\u00a0\ufeff"},
            (errors.INVALID_QUERY, "session-search query must contain non-whitespace text"),
        ),
        ({"query": "a\x00b"}, (errors.INVALID_QUERY, "session-search query must not contain NUL")),
        (
            {"query": "x", "cursor": None},
            (errors.INVALID_CURSOR, "session-search cursor must be text"),
        ),
        (
            {"query": "x", "cursor": 3},
            (errors.INVALID_CURSOR, "session-search cursor must be text"),
        ),
        (
            {"query": "x", "limit": 0},
            (errors.INVALID_LIMIT, "session-search limit must be an integer between 1 and 100"),
        ),
        (
            {"query": "x", "limit": 101},
            (errors.INVALID_LIMIT, "session-search limit must be an integer between 1 and 100"),
        ),
        (
            {"query": "x", "limit": 1.5},
            (errors.INVALID_LIMIT, "session-search limit must be an integer between 1 and 100"),
        ),
        (
            {"query": "x", "limit": True},
            (errors.INVALID_LIMIT, "session-search limit must be an integer between 1 and 100"),
        ),
        (
            {"query": "x", "limit": "5"},
            (errors.INVALID_LIMIT, "session-search limit must be an integer between 1 and 100"),
        ),
        (
            {"query": "x", "sessionFilters": {}},
            (errors.INVALID_FILTER, "session filters must be an array"),
        ),
        (
            {"query": "x", "sessionFilters": [{"kind": "seq"}]},
            (errors.INVALID_FILTER, 'session unknown filter kind "seq"'),
        ),
        (
            {"query": "x", "eventFilters": [{"kind": "id", "values": []}]},
            (errors.INVALID_FILTER, 'session unknown filter kind "id"'),
        ),
        (
            {"query": "x", "eventFilters": [{"kind": "text", "text": "a"}]},
            (errors.INVALID_FILTER, "session-search metadata filters do not accept text clauses"),
        ),
        (
            {
                "query": "x",
                "eventFilters": [{"kind": "seq", "from": None}, {"kind": "text", "text": "a"}],
            },
            (errors.INVALID_FILTER, "session-search metadata filters do not accept text clauses"),
        ),
        (
            {"query": "x", "eventFilters": [{"kind": "surface", "values": ["gone"]}]},
            (errors.INVALID_FILTER, 'session surface filter contains unknown value "gone"'),
        ),
    ],
)
def test_sessions_request_validation(request_, expected):
    _, _, service = make()
    assert code(from_json(service.search_sessions), request_) == expected


def test_validation_order_and_precedence_over_cancellation():
    _, binding, service = make()
    backend = MemoryBackend()
    binding.mount(backend)
    token = CancelToken()
    token.cancel()
    everything_wrong = {
        "sessionFilters": 1,
        "eventFilters": 1,
        "cursor": None,
        "query": 1,
        "limit": 0,
    }
    steps = [
        ("sessionFilters", errors.INVALID_FILTER),
        ("eventFilters", errors.INVALID_FILTER),
        ("cursor", errors.INVALID_CURSOR),
        ("query", errors.INVALID_QUERY),
        ("limit", errors.INVALID_LIMIT),
    ]
    request = dict(everything_wrong)
    for key, expected in steps:
        assert code(from_json(service.search_sessions), request, token)[0] == expected
        request[key] = {"sessionFilters": [], "eventFilters": [], "query": "x", "limit": 1}.get(key)
        if key == "cursor":
            del request["cursor"]
    assert code(from_json(service.search_sessions), request, token) == (
        errors.ABORTED,
        "session-search aborted",
    )
    assert code(from_json(service.search_events), {"sessionId": 1, "filters": 1}, token) == (
        errors.INVALID_FILTER,
        "session-search session id must be text",
    )
    assert code(from_json(service.search_events), {"sessionId": "s", "filters": 1}, token) == (
        errors.INVALID_FILTER,
        "session filters must be an array",
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "s", "filters": None, "query": "x"},
            token,
        )[0]
        == errors.ABORTED
    )
    assert backend.calls == []


def test_limit_ceiling_is_two_to_the_53_minus_2():
    _, _, service = make(max_limit=2**53 - 2, default_limit=1)
    big = code(from_json(service.search_sessions), {"query": "x", "limit": 2**53 - 1})
    assert big == (
        errors.INVALID_LIMIT,
        "session-search limit must be an integer between 1 and 9007199254740990",
    )
    assert j(from_json(service.search_sessions)({"query": "x", "limit": 2**53 - 2})) == {
        "items": []
    }
    assert j(from_json(service.search_sessions)({"query": "x", "limit": None})) == {"items": []}


def test_reserved_code_points_are_sanitized():
    store, _, service = make()
    live(store, "s", "a\ufdd0b needle\ufdd1 c\x00d")
    hit = events(service, "s", "needle")["items"][0]
    assert hit["snippet"] == "a\ufffdb needle\ufffd c\ufffdd"
    # The query's marker becomes U+FFFD, a separator: the phrase is "b needle".
    assert ids(sessions(service, "\ufdd0b needle\ufdd1")) == ["s"]
    assert ids(sessions(service, "a b")) == ["s"]


# -- §6.7 predicates and budgets --------------------------------------------------------------------


def _clauses(kind, n, values=("v",)):
    return [{"kind": kind, "values": list(values)} for _ in range(n)]


BUDGET = (
    errors.INVALID_FILTER,
    "session-search request exceeds the supported SQLite FTS5 outer-predicate budget of 14; reduce filters",
)
BINDING = (
    errors.INVALID_FILTER,
    "session-search request exceeds SQLite's portable 32766-variable limit; reduce filter values",
)


def test_budget_examples():
    store, _, service = make()
    live(store, "s", "needle", cwd="/proj")
    # Each range bound is one predicate, a bare created-at and a two-value availability none.
    four = [
        {"kind": "id", "values": ["s"]},
        {"kind": "cwd", "values": ["/proj"]},
        {"kind": "created-at", "from": 0},
        {"kind": "parent", "values": [None]},
        {"kind": "availability", "values": ["live", "persisted"]},
        {"kind": "created-at"},
    ]
    ten_more = _clauses("cwd", 10, ["/proj", None])
    assert ids(sessions(service, "needle", sessionFilters=four + ten_more)) == ["s"]  # 4 + 10 = 14
    assert ids(
        sessions(service, "needle", sessionFilters=_clauses("cwd", 14, ["/proj", None]))
    ) == ["s"]
    assert (
        len(events(service, "s", "needle", filters=_clauses("type", 13, ["user/message"]))["items"])
        == 1
    )
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": _clauses("id", 15)},
        )
        == BUDGET
    )
    assert (
        code(
            from_json(service.search_sessions),
            {
                "query": "needle",
                "sessionFilters": _clauses("id", 7),
                "eventFilters": _clauses("type", 8),
            },
        )
        == BUDGET
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "s", "query": "needle", "filters": _clauses("type", 14)},
        )
        == BUDGET
    )
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": _clauses("id", 1100)},
        )
        == BUDGET
    )
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "eventFilters": _clauses("type", 1100)},
        )
        == BUDGET
    )
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": four + _clauses("cwd", 11, ["/proj", None])},
        )
        == BUDGET
    )
    both_bounds = [{"kind": "created-at", "from": 0, "to": 0}] + _clauses("cwd", 13, ["/proj"])
    assert (
        code(from_json(service.search_sessions), {"query": "needle", "sessionFilters": both_bounds})
        == BUDGET
    )


def test_binding_limit_examples():
    store, _, service = make()
    live(store, "s", "needle")
    ids_ = [f"id{i}" for i in range(16383)]
    types = ["user/message"] * 16383
    assert (
        code(
            from_json(service.search_sessions),
            {
                "query": "needle",
                "sessionFilters": [{"kind": "id", "values": ids_}],
                "eventFilters": [{"kind": "type", "values": types}],
            },
        )
        == BINDING
    )
    assert (
        code(
            from_json(service.search_events),
            {
                "sessionId": "s",
                "query": "needle",
                "filters": [
                    {"kind": "type", "values": types},
                    {"kind": "surface", "values": ["current"] * 16383},
                ],
            },
        )
        == BINDING
    )
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": [{"kind": "id", "values": ids_ * 8}]},
        )
        == BINDING
    )
    # 32,754 values cross-session and 32,753 within one session are the maximum.
    most = [{"kind": "id", "values": ["s"] + [f"x{i}" for i in range(32753)]}]
    assert ids(sessions(service, "needle", sessionFilters=most)) == ["s"]
    within = [{"kind": "type", "values": ["user/message"] * 32753}]
    assert len(events(service, "s", "needle", filters=within)["items"]) == 1
    within[0]["values"].append("x")
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "s", "query": "needle", "filters": within},
        )
        == BINDING
    )


def test_budget_check_order():
    store, _, service = make()
    live(store, "s", "needle")
    heavy_sessions = _clauses("id", 15, [f"v{i}" for i in range(3000)])
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": heavy_sessions},
        )
        == BINDING
    )
    assert (
        code(
            from_json(service.search_sessions),
            {
                "query": "needle",
                "sessionFilters": _clauses("id", 15),
                "eventFilters": [{"kind": "type", "values": ["t"] * 40000}],
            },
        )
        == BUDGET
    )
    # Budget failures come after the cursor and target checks.
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "sessionFilters": _clauses("id", 15), "cursor": "!"},
        )[0]
        == errors.INVALID_CURSOR
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "gone", "query": "needle", "filters": _clauses("type", 14)},
        )[0]
        == errors.SESSION_NOT_FOUND
    )


def test_predicates_and_empty_lists():
    store, binding, service = make()
    live(store, "root", "needle", created=10)
    live(store, "child", "needle", created=20, cwd="/c", parentSession="root")
    backend = MemoryBackend()
    persisted(backend, "durable", "needle", created=30)
    binding.mount(backend)

    def only(**request):
        return sorted(ids(sessions(service, "needle", **request)))

    assert only() == ["child", "durable", "root"]
    assert only(sessionFilters=[{"kind": "cwd", "values": [None]}]) == ["durable", "root"]
    assert only(sessionFilters=[{"kind": "cwd", "values": ["/c", None]}]) == [
        "child",
        "durable",
        "root",
    ]
    assert only(sessionFilters=[{"kind": "parent", "values": ["root"]}]) == ["child"]
    assert only(sessionFilters=[{"kind": "created-at", "from": 10.5, "to": 30}]) == [
        "child",
        "durable",
    ]
    assert only(sessionFilters=[{"kind": "created-at", "to": 19.9999}]) == ["root"]
    assert only(sessionFilters=[{"kind": "availability", "values": ["persisted"]}]) == ["durable"]
    assert only(sessionFilters=[{"kind": "availability", "values": ["live", "live"]}]) == [
        "child",
        "root",
    ]
    assert only(sessionFilters=[{"kind": "availability", "values": []}]) == []
    assert only(sessionFilters=[{"kind": "id", "values": []}]) == []
    assert only(eventFilters=[{"kind": "surface", "values": []}]) == []
    assert only(eventFilters=[{"kind": "time", "from": 5, "to": 5}]) == ["child", "durable", "root"]
    assert only(eventFilters=[{"kind": "time", "from": 5.00001}]) == []
    assert only(eventFilters=[{"kind": "seq", "from": -1e300, "to": 10**30}]) == [
        "child",
        "durable",
        "root",
    ]
    assert only(eventFilters=[{"kind": "type", "values": ["tool/result"]}]) == []


# -- §6.8 candidates and visibility ------------------------------------------------------------------


def _example_a(store):
    log = [
        U(0, "needle original", time=10),
        chunk(1, "needle raw", time=11),
        U(2, "needle summary", op=R(0, 0), src=[0], time=12),
        log_only(
            "turn/end",
            3,
            {"turn": 1, "reason": {"kind": "error", "error": {"message": "needle failure"}}},
            time=13,
        ),
    ]
    store.create(hdr("a", 20, cwd="/a", parentSession="p"), seed=values(log))  # + end-seed at seq 4


def test_visibility_example():
    store, _, service = make()
    _example_a(store)
    hits = events(service, "a", "needle")["items"]
    assert sorted((h["seq"], h["surface"]) for h in hits) == [
        (0, "shadowed"),
        (2, "current"),
        (3, "log-only"),
    ]
    filtered = events(
        service,
        "a",
        "needle",
        filters=[
            {"kind": "seq", "from": 2, "to": 2},
            {"kind": "time", "from": 12, "to": 12},
            {"kind": "type", "values": ["user/message"]},
            {"kind": "surface", "values": ["current"]},
        ],
    )
    assert [h["seq"] for h in filtered["items"]] == [2]
    every_session_clause = [
        {"kind": "id", "values": ["a"]},
        {"kind": "cwd", "values": ["/a"]},
        {"kind": "created-at", "from": 20, "to": 20},
        {"kind": "parent", "values": ["p"]},
        {"kind": "availability", "values": ["live"]},
    ]
    page = sessions(
        service,
        "needle",
        sessionFilters=every_session_clause,
        eventFilters=[{"kind": "surface", "values": ["shadowed"]}],
    )
    assert len(page["items"]) == 1
    hit = page["items"][0]
    assert (hit["header"]["id"], hit["live"], hit["persisted"]) == ("a", True, False)
    assert (hit["bestMatch"]["seq"], hit["bestMatch"]["surface"]) == (0, "shadowed")


def test_live_overlay_shadows_persisted_base():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "s", "alpha stored", created=1)
    binding.mount(backend)
    assert (
        j(from_json(service.search_sessions)({"query": "alpha"}))["items"][0]["persisted"] is True
    )
    live(store, "s", "beta live", created=1)
    assert sessions(service, "alpha")["items"] == []
    hit = sessions(service, "beta")["items"][0]
    assert (hit["live"], hit["persisted"]) == (True, True)
    assert ops(backend).count("inspect") == 1  # the live id was never inspected again
    store.remove("s")
    back = sessions(service, "alpha")["items"][0]
    assert (back["live"], back["persisted"]) == (False, True)
    assert ops(backend).count("inspect") == 1  # same revision: the hidden row is reused
    binding.unmount()
    live(store, "s", "beta live", created=1)
    hit = sessions(service, "beta")["items"][0]
    assert (hit["live"], hit["persisted"]) == (True, False)


def test_live_id_is_never_inspected_and_revealed_later():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "s", "stored needle")
    binding.mount(backend)
    live(store, "s", "live needle")
    assert [h["snippet"] for h in events(service, "s", "needle")["items"]] == ["live needle"]
    assert "inspect" not in ops(backend)
    store.remove("s")
    assert [h["snippet"] for h in events(service, "s", "needle")["items"]] == ["stored needle"]
    assert ops(backend).count("inspect") == 1


def test_unmount_hides_but_does_not_delete(tmp_path):
    path = tmp_path / "index.sqlite"
    store, binding, service = make(path=str(path))
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    live(store, "l", "needle")
    mount = binding.mount(backend)
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]
    binding.unmount(mount)
    assert ids(sessions(service, "needle")) == ["l"]
    assert code(from_json(service.search_events), {"sessionId": "p", "query": "needle"}) == (
        errors.SESSION_NOT_FOUND,
        'session "p" not found',
    )
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id FROM persisted_sessions").fetchall() == [("p",)]
    conn.close()
    backend.calls.clear()
    binding.mount(backend)  # a new binding: every non-live persisted log is re-read
    assert sorted(ids(sessions(service, "needle"))) == ["l", "p"]
    assert ops(backend) == ["list_snapshots", "inspect", "list_snapshots"]


def test_session_without_documents_is_found_with_no_hits():
    store, binding, service = make()
    store.create(hdr("empty", 3, origin="subagent"))
    page = events(service, "empty", "needle")
    assert page == {"session": {"version": 0, "id": "empty", "createdAt": 3}, "items": []}
    backend = MemoryBackend()
    backend.put(hdr("quiet", 4), [chunk(0)])
    binding.mount(backend)
    assert events(service, "quiet", "x")["session"]["id"] == "quiet"
    assert code(from_json(service.search_events), {"sessionId": "nobody", "query": "x"}) == (
        errors.SESSION_NOT_FOUND,
        'session "nobody" not found',
    )


# -- §6.9 ranking and hits -----------------------------------------------------------------------------


def test_ranking_example_with_snippet_chars_5():
    store, _, service = make(snippet_chars=5)
    live(store, "a", "😀😀 alpha beta BRAID 😀😀")
    live(store, "b", "alpha beta")
    live(store, "c", "alpha middle beta")
    live(store, "d", "alpha beta")
    page = sessions(service, "alpha beta")
    assert ids(page) == ["b", "d", "a"]
    assert all(len(item["bestMatch"]["snippet"]) <= 5 for item in page["items"])
    assert sessions(service, "AI")["items"] == []


def test_live_and_persisted_share_one_scale():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "z-persisted", "needle needle")
    persisted(backend, "m-persisted", "needle")
    binding.mount(backend)
    live(store, "a-live", "needle needle")
    live(store, "b-live", "needle")
    two = [{"kind": "id", "values": ["z-persisted", "a-live"]}]
    assert ids(sessions(service, "needle", sessionFilters=two)) == ["a-live", "z-persisted"]
    assert ids(sessions(service, "needle")) == ["a-live", "z-persisted", "b-live", "m-persisted"]


def test_event_ranking_keys():
    store, _, service = make()
    log = [
        U(0, "needle", time=1),
        U(1, "needle needle", time=1),  # two spans win
        U(2, "needle x", time=9),  # longer loses to shorter
        U(3, "needle", time=2),  # later time wins among equals
        U(4, "needle", time=2),  # then higher seq
        U(5, "alpha alpha alpha needle", time=1),
    ]
    store.create(hdr("s"), seed=values(log))
    assert [h["seq"] for h in events(service, "s", "needle")["items"]] == [1, 4, 3, 0, 2, 5]
    # Overlapping phrase instances are one span: "alpha alpha alpha" has one for `alpha alpha`.
    store.create(
        hdr("t"),
        seed=values([U(0, "alpha alpha alpha", time=1), U(1, "alpha alpha x alpha alpha", time=1)]),
    )
    assert [h["seq"] for h in events(service, "t", "alpha alpha")["items"]] == [1, 0]


def test_session_best_match_and_ties():
    store, _, service = make()
    store.create(hdr("B"), seed=values([U(0, "needle long text", time=1), U(1, "needle", time=1)]))
    store.create(hdr("a"), seed=values([U(0, "needle", time=1)]))
    page = sessions(service, "needle")
    assert ids(page) == ["B", "a"]  # code-point order: uppercase first
    assert page["items"][0]["bestMatch"]["seq"] == 1


def test_hit_headers_are_rebuilt_from_index_columns():
    store, _, service = make()
    store.create(
        hdr(
            "s",
            7,
            cwd="/w",
            seedLength=1,
            delegationDepth=2,
            agentPreset="minimal",
            origin="subagent",
            extra="dropped",
        ),
        seed=values([U(0, "An AI assistant")]),
    )
    expected = {
        "version": 0,
        "id": "s",
        "createdAt": 7,
        "cwd": "/w",
        "seedLength": 1,
        "delegationDepth": 2,
        "agentPreset": "minimal",
    }
    page = events(service, "s", "AI")
    assert page["session"] == expected
    assert page["items"] == [
        {
            "sessionId": "s",
            "seq": 0,
            "type": "user/message",
            "time": 0,
            "surface": "current",
            "snippet": "An AI assistant",
        }
    ]
    hit = sessions(service, "AI")["items"][0]
    assert hit == {
        "header": expected,
        "live": True,
        "persisted": False,
        "bestMatch": page["items"][0],
    }
    store.create(hdr("zero", 7, delegationDepth=0), seed=values([U(0, "AI")]))
    assert events(service, "zero", "AI")["session"]["delegationDepth"] == 0


def test_extracted_text_feeds_the_index():
    store, _, service = make()
    log = [
        U(0, "hello"),
        T(1, "failed", error={"name": "Oops", "code": "E_OOPS"}),
        log_only("todo/write", 2, {"todos": [{"content": "ship search", "status": "in_progress"}]}),
        log_only(
            "turn/end", 3, {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}
        ),
        log_only("turn/end", 4, {"turn": 1, "reason": {"kind": "blocked"}}),
        log_only(
            "tool/call",
            5,
            {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": '{"cmd":"pwd"}'},
        ),
    ]
    store.create(hdr("s"), seed=values(log))
    assert [h["seq"] for h in events(service, "s", "E_OOPS")["items"]] == [1]
    assert (
        events(service, "s", "in_progress ship")["items"][0]["snippet"] == "in_progress ship search"
    )
    assert [h["seq"] for h in events(service, "s", "aborted")["items"]] == [3]
    assert events(service, "s", "blocked")["items"] == []
    assert events(service, "s", "cmd pwd")["items"][0]["snippet"] == 'bash {"cmd":"pwd"}'


# -- §6.10 snippets ----------------------------------------------------------------------------------


def _mark(text):
    return text.replace("[", START).replace("]", END)


@pytest.mark.parametrize(
    "marked, limit, expected",
    [
        ("  short\ntext  ", 20, "short text"),
        ("abcde[f]", 1, "…"),
        ("abcdefghij", 5, "abcd…"),
        ("ab[c]defghij", 5, "…bcd…"),
        ("ab[c]defghij", 3, "…c…"),
        ("abcde[f]", 2, "…f"),
        ("abcde[f]", 5, "…cdef"),
        ("  x—[café]\n y  ", 20, "x—café y"),
        ("😀😀😀 [x]", 4, "…😀 x"),
    ],
)
def test_snippet_table(marked, limit, expected):
    assert snippet(_mark(marked), limit) == expected


def test_snippet_cafe_example():
    store, _, service = make(snippet_chars=14)
    live(store, "s", "long long long—café,\nnext value")
    text = events(service, "s", "CAFE")["items"][0]["snippet"]
    assert "café" in text and "—" in text and "\n" not in text and len(text) <= 14


# -- §6.11 cursors ---------------------------------------------------------------------------------


def _cursor_value(cursor):
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))


def _encode(value):
    return (
        base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode())
        .decode()
        .rstrip("=")
    )


def test_cursor_wire_format_and_paging():
    store, _, service = make()
    live(store, "s1", "needle", "needle x", "needle x y")
    first = events(service, "s1", "needle", limit=1)
    value = _cursor_value(first["nextCursor"])
    assert list(value) == ["version", "instance", "scope", "fingerprint", "generation", "offset"]
    assert (
        value["version"] == 1
        and value["instance"] == service.instance
        and value["scope"] == "events"
    )
    assert value["fingerprint"] == (
        '{"scope":"events","sessionId":"s1","query":"needle","filters":[],"limit":1}'
    )
    assert value["generation"].startswith("live:") and value["offset"] == 1
    assert "=" not in first["nextCursor"]
    items = page_all(
        from_json(service.search_events), {"sessionId": "s1", "query": "needle", "limit": 1}
    )
    assert [h["seq"] for h in items] == [0, 1, 2]
    # A client may re-encode a cursor with another offset, padded or not.
    value["offset"] = 2
    padded = base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()
    assert [h["seq"] for h in events(service, "s1", "needle", limit=1, cursor=padded)["items"]] == [
        2
    ]
    assert "nextCursor" not in events(service, "s1", "needle", limit=1, cursor=padded)


def test_sessions_fingerprint_is_canonical():
    f1 = [
        {"kind": "id", "values": ["b", "a", "b"]},
        {"kind": "cwd", "values": ["/x", None]},
        {"kind": "created-at", "from": 3.0},
    ]
    f2 = [
        {"kind": "created-at", "from": 3, "extra": 1},
        {"kind": "cwd", "values": [None, "/x"]},
        {"kind": "id", "values": ["b", "b", "a"]},
    ]
    store, _, service = make()
    live(store, "a", "needle", created=3, cwd="/x")
    live(store, "b", "needle", created=3)
    first = sessions(service, "needle", sessionFilters=f1, limit=1)
    second = sessions(service, "needle", sessionFilters=f2, limit=1, cursor=first["nextCursor"])
    assert ids(first) + ids(second) == ["a", "b"]
    fingerprint = _cursor_value(first["nextCursor"])["fingerprint"]
    assert fingerprint == (
        '{"scope":"sessions","query":"needle","sessionFilters":['
        '{"kind":"created-at","from":3,"to":null},'
        '{"kind":"cwd","values":[null,"/x"]},'
        '{"kind":"id","values":["a","b","b"]}],"eventFilters":[],"limit":1}'
    )


def test_cursor_decoding_errors_are_invalid():
    store, _, service = make()
    live(store, "s", "needle", "needle x")
    cursor = sessions(service, "needle", limit=1)
    store.create(hdr("t"), seed=values([U(0, "needle")]))
    cursor = sessions(service, "needle", limit=1)["nextCursor"]
    good = _cursor_value(cursor)
    invalid = (errors.INVALID_CURSOR, "session-search cursor is invalid")
    bad = [
        "",
        "!!!",
        "a",
        cursor + "=",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _encode("just a string")[:-1] + "x",
        base64.urlsafe_b64encode(b"[1]").decode(),
        _encode({**good, "version": 2}),
        _encode({**good, "version": True}),
        _encode({**good, "instance": "6f1d"}),
        _encode({**good, "scope": "events"}),
        _encode({**good, "fingerprint": good["fingerprint"].replace('"limit":1', '"limit":2')}),
        _encode({**good, "offset": 1e100}),
        _encode({**good, "offset": -1}),
        _encode({**good, "offset": "1"}),
        _encode({k: v for k, v in good.items() if k != "offset"}),
    ]
    for text in bad:
        assert (
            code(
                from_json(service.search_sessions), {"query": "needle", "limit": 1, "cursor": text}
            )
            == invalid
        ), text
    assert (
        code(from_json(service.search_sessions), {"query": "needle", "limit": 2, "cursor": cursor})
        == invalid
    )
    assert (
        code(from_json(service.search_sessions), {"query": "other", "limit": 1, "cursor": cursor})
        == invalid
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "s", "query": "needle", "limit": 1, "cursor": cursor},
        )
        == invalid
    )
    # Identity first: changed generation plus another request is INVALID, not STALE.
    store.create(hdr("u"), seed=values([U(0, "x")]))
    assert (
        code(from_json(service.search_sessions), {"query": "other", "limit": 1, "cursor": cursor})
        == invalid
    )
    assert (
        code(from_json(service.search_sessions), {"query": "needle", "limit": 1, "cursor": cursor})[
            0
        ]
        == errors.STALE_CURSOR
    )
    _, _, other_instance = make(store)
    assert (
        code(
            from_json(other_instance.search_sessions),
            {"query": "needle", "limit": 1, "cursor": cursor},
        )
        == invalid
    )


def test_encode_cursor_round_trip():
    fingerprint = sessions_fingerprint("q", [], [], 3)
    text = encode_cursor("i", "sessions", fingerprint, "7", 9)
    assert _cursor_value(text)["offset"] == 9


# -- §6.12 staleness --------------------------------------------------------------------------------

STALE = (errors.STALE_CURSOR, "session-search cursor is stale because its relevant corpus changed")


def test_staleness_example():
    store, binding, service = make()
    live(store, "target", "needle one", "needle two", "needle three")
    live(store, "other", "needle")
    hits = page_all(
        from_json(service.search_events), {"sessionId": "target", "query": "needle", "limit": 1}
    )
    assert len({h["seq"] for h in hits}) == 3
    assert len(page_all(from_json(service.search_sessions), {"query": "needle", "limit": 1})) == 2
    event_cursor = events(service, "target", "needle", limit=1)["nextCursor"]
    session_cursor = sessions(service, "needle", limit=1)["nextCursor"]
    # Repeated searches with no change keep both valid.
    assert events(service, "target", "needle", limit=1, cursor=event_cursor)["items"]
    assert sessions(service, "needle", limit=1, cursor=session_cursor)["items"]
    live(store, "unrelated", "nothing")
    assert events(service, "target", "needle", limit=1, cursor=event_cursor)["items"]
    assert (
        code(
            from_json(service.search_sessions),
            {"query": "needle", "limit": 1, "cursor": session_cursor},
        )
        == STALE
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "target", "query": "other", "limit": 1, "cursor": event_cursor},
        )[0]
        == errors.INVALID_CURSOR
    )
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "target", "query": "needle", "limit": 2, "cursor": event_cursor},
        )[0]
        == errors.INVALID_CURSOR
    )
    store.append("target", [{"type": "turn/start", "data": {"turn": 9}}])
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "target", "query": "needle", "limit": 1, "cursor": event_cursor},
        )
        == STALE
    )
    store.remove("target")
    assert (
        code(
            from_json(service.search_events),
            {"sessionId": "target", "query": "needle", "limit": 1, "cursor": event_cursor},
        )[0]
        == errors.SESSION_NOT_FOUND
    )


def test_cross_session_cursor_stales_on_every_corpus_change():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle", "needle x")
    live(store, "l", "needle", "needle x")
    binding.mount(backend)

    def fresh():
        return sessions(service, "needle", limit=1)["nextCursor"]

    def stale(cursor):
        return (
            code(
                from_json(service.search_sessions),
                {"query": "needle", "limit": 1, "cursor": cursor},
            )
            == STALE
        )

    cursor = fresh()
    store.append("l", [{"type": "turn/start", "data": {"turn": 1}}])
    assert stale(cursor)
    cursor = fresh()
    store.create(hdr("p"), seed=values([U(0, "needle")]))  # attaches: the overlay shadows p
    assert stale(cursor)
    cursor = fresh()
    store.remove("p")
    assert stale(cursor)
    cursor = fresh()
    backend.put(hdr("l"), [])  # l's persisted flag flips
    assert stale(cursor)
    cursor = fresh()
    persisted(backend, "q", "other")
    assert stale(cursor)
    cursor = fresh()
    del backend.sessions["q"]
    assert stale(cursor)
    cursor = fresh()
    mount = binding.current()
    binding.unmount(mount)
    binding.mount(backend)  # mount and unmount between pages, identical data
    assert stale(cursor)
    cursor = fresh()
    binding.mount(backend)  # replacement
    assert stale(cursor)
    cursor = fresh()
    assert sessions(service, "needle", limit=1, cursor=cursor)["items"]


def test_within_session_cursor_for_persisted_target():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle", "needle x")
    binding.mount(backend)

    def fresh():
        return events(service, "p", "needle", limit=1)["nextCursor"]

    def check(cursor):
        try:
            events(service, "p", "needle", limit=1, cursor=cursor)
            return "ok"
        except QueryError as exc:
            return exc.code

    cursor = fresh()
    persisted(backend, "unrelated", "needle")
    live(store, "l", "needle")
    assert check(cursor) == "ok"
    binding.mount(backend)  # epoch changes while the target is persisted
    assert check(cursor) == errors.STALE_CURSOR
    cursor = fresh()
    backend.sessions["p"][1].append(U(2, "more"))
    backend.revisions["p"] += 1  # re-indexed after a revision change
    assert check(cursor) == errors.STALE_CURSOR
    cursor = fresh()
    store.create(hdr("p"), seed=values([U(0, "needle"), U(1, "needle x")]))  # attach
    assert check(cursor) == errors.STALE_CURSOR
    cursor = fresh()
    binding.mount(backend)  # the target is live now: the epoch does not matter
    assert check(cursor) == "ok"
    store.remove("p")  # detach
    assert check(cursor) == errors.STALE_CURSOR
    binding.unmount()
    assert check(cursor) == errors.SESSION_NOT_FOUND


# -- §6.5 reconciliation -----------------------------------------------------------------------------


def test_unchanged_revisions_are_not_inspected_and_reopen_reuses_rows(tmp_path):
    path = str(tmp_path / "index.sqlite")
    store, binding, service = make(path=path)
    backend = MemoryBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "b", "needle")
    binding.mount(backend)
    sessions(service, "needle")
    assert ops(backend) == ["list_snapshots", "inspect", "inspect", "list_snapshots"]
    backend.calls.clear()
    sessions(service, "needle")
    assert ops(backend) == ["list_snapshots", "list_snapshots"]
    service.close()
    _, _, reopened = make(store, binding, path=path)
    backend.calls.clear()
    assert sorted(ids(sessions(reopened, "needle"))) == ["a", "b"]
    assert ops(backend) == ["list_snapshots", "list_snapshots"]
    # A remount re-reads, even though the revisions are equal.
    binding.mount(backend)
    backend.calls.clear()
    sessions(reopened, "needle")
    assert ops(backend).count("inspect") == 2
    reopened.close()


def test_no_change_path_reads_no_logs():
    store, _, service = make()
    for i in range(300):
        store.create(hdr(f"s{i:03}", i), seed=values([U(0, f"needle {i}")]))
    assert len(sessions(service, "needle", limit=100)["items"]) == 100
    calls = []
    original = store.snapshot
    store.snapshot = lambda session_id: calls.append(session_id) or original(session_id)
    store.snapshots = lambda: pytest.fail("no full copy of the store")
    assert len(sessions(service, "needle", limit=100)["items"]) == 100
    assert calls == []
    store.append("s007", [{"type": "turn/start", "data": {"turn": 1}}])
    sessions(service, "needle")
    assert calls == ["s007"]


def test_observation_that_never_stabilizes():
    _, binding, service = make()
    backend = ChurningBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation did not stabilize after one retry",
    )
    assert ops(backend).count("list_snapshots") == 4


def test_retry_once_then_succeed():
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    original = backend.list_snapshots
    listings = []

    def list_snapshots(token: CancelToken = NULL_TOKEN):
        listings.append(1)
        if len(listings) == 2:
            store.create(hdr("late"), seed=values([U(0, "needle")]))  # the live set changes once
        return original(token)

    backend.list_snapshots = list_snapshots
    assert sorted(ids(sessions(service, "needle"))) == ["late", "p"]
    assert len(listings) == 4


def test_attach_during_inspect_retries_and_live_wins(monkeypatch):
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "s", "stored needle")
    binding.mount(backend)
    original = backend.inspect

    def inspect(sid: str, token: CancelToken = NULL_TOKEN):
        result = original(sid, token)
        if not store.is_live(sid):
            store.create(hdr("s"), seed=values([U(0, "live needle")]))
        return result

    monkeypatch.setattr(backend, "inspect", inspect)
    assert [h["snippet"] for h in events(service, "s", "needle")["items"]] == ["live needle"]
    assert ops(backend) == [
        "list_snapshots",
        "inspect",
        "list_snapshots",
        "list_snapshots",
        "list_snapshots",
    ]


def test_binding_replaced_during_observation_discards_error(monkeypatch):
    store, binding, service = make()
    broken = MemoryBackend("memory:broken")
    persisted(broken, "p", "needle")
    broken.fail["inspect"] = OSError("gone")
    healthy = MemoryBackend("memory:healthy")
    persisted(healthy, "p", "needle")
    binding.mount(broken)
    original = broken.inspect

    def inspect(sid: str, token: CancelToken = NULL_TOKEN):
        binding.mount(healthy)
        return original(sid, token)

    monkeypatch.setattr(broken, "inspect", inspect)
    assert ids(sessions(service, "needle")) == ["p"]
    assert ops(healthy) == ["list_snapshots", "inspect", "list_snapshots"]


@pytest.mark.parametrize(
    "listing, inner",
    [
        ({"p": 1}, "persistence snapshots must be an array"),
        ([{"header": hdr("p"), "revision": 3}], "persistence snapshot revision must be a string"),
        (
            [{"header": hdr("p"), "revision": "1"}, {"header": hdr("p"), "revision": "2"}],
            'persistence listed duplicate session "p"',
        ),
    ],
)
def test_malformed_listing_is_persistence_failed(listing, inner):
    _, binding, service = make()
    backend = MemoryBackend()
    backend.list_snapshots = lambda token=None: listing
    binding.mount(backend)
    exc = error(from_json(service.search_sessions), {"query": "x"})
    assert (exc.code, exc.message, exc.cause) == (
        errors.PERSISTENCE_FAILED,
        f"session-search persistence observation failed: {inner}",
        inner,
    )


def test_backend_failures_map_to_persistence_failed_and_next_search_retries():
    store, binding, service = make()
    live(store, "l", "needle")
    backend = MemoryBackend()
    persisted(backend, "bad", "needle")
    binding.mount(backend)
    backend.fail["list_snapshots"] = OSError("disk on fire")
    exc = error(from_json(service.search_sessions), {"query": "needle"})
    assert (exc.code, exc.message, exc.cause) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: disk on fire",
        "disk on fire",
    )
    del backend.fail["list_snapshots"]
    backend.corrupt.add("bad")
    # [ours] (§6.5): a corrupt log is left out and named; the search goes on.
    page = sessions(service, "needle")
    assert ids(page) == ["l"]
    assert page["unreadable"] == [
        {
            "sessionId": "bad",
            "code": errors.CORRUPT_SESSION,
            "message": 'bad bytes (the stored log of session "bad")',
        }
    ]
    assert page["unreadableCount"] == 1
    backend.corrupt.clear()
    persisted(backend, "bad", "needle")  # repaired: a new revision
    backend.fail["inspect"] = RuntimeError()
    assert code(from_json(service.search_events), {"sessionId": "l", "query": "needle"}) == (
        errors.PERSISTENCE_FAILED,
        "session-search persistence observation failed: unknown error",
    )
    backend.fail["inspect"] = QueryError(errors.SESSION_NOT_FOUND, "coded by the backend")
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.SESSION_NOT_FOUND,
        "coded by the backend",
    )
    del backend.fail["inspect"]
    assert sorted(ids(sessions(service, "needle"))) == ["bad", "l"]


def test_invalid_surface_and_conflicts_fail_every_search():
    store, binding, service = make()
    live(store, "fine", "needle")
    backend = MemoryBackend()
    backend.put(hdr("broken"), [U(0, "needle", op=R(5, 5))])
    binding.mount(backend)
    for _ in range(2):
        exc = error(from_json(service.search_events), {"sessionId": "fine", "query": "needle"})
        assert exc.code == errors.INVALID_SURFACE
        assert exc.message.startswith("invalid session surface: surface replace: start seq 5")
    backend.put(hdr("broken"), [U(0, "needle")])
    backend.inspect_meta["broken"] = backend.sessions["broken"][0].from_value(hdr("broken", 99))
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.SOURCE_CONFLICT,
        'session source headers conflict for session "broken"',
    )
    del backend.inspect_meta["broken"]
    assert sorted(ids(sessions(service, "needle"))) == ["broken", "fine"]
    persisted(backend, "fine", "needle", cwd="/elsewhere")
    assert code(from_json(service.search_sessions), {"query": "needle"}) == (
        errors.SOURCE_CONFLICT,
        'session source headers conflict for session "fine"',
    )
    persisted(backend, "fine", "needle", agentPreset="other", delegationDepth=0)
    assert sorted(ids(sessions(service, "needle"))) == ["broken", "fine"]


def test_failed_transaction_is_index_failed_and_commits_nothing():
    store, binding, service = make()
    backend = MemoryBackend()
    # createdAt cannot be stored: deliberately not an integer
    backend.put(hdr("bad", "yesterday"), [U(0, "needle")])  # pyright: ignore[reportArgumentType]
    persisted(backend, "good", "needle")
    binding.mount(backend)
    exc = error(from_json(service.search_sessions), {"query": "needle"})
    assert exc.code == errors.INDEX_FAILED
    assert exc.message.startswith("session-search reconciliation failed: ")
    del backend.sessions["bad"]
    backend.calls.clear()
    assert ids(sessions(service, "needle")) == ["good"]
    assert ops(backend).count("inspect") == 1  # nothing was committed, so good is read again


def test_the_same_token_reaches_every_backend_call():
    _, binding, service = make()
    backend = TokenBackend()
    persisted(backend, "a", "needle")
    persisted(backend, "b", "needle")
    binding.mount(backend)
    token = CancelToken()
    from_json(service.search_sessions)({"query": "needle"}, token)
    assert len(backend.tokens) == 4 and all(t is token for t in backend.tokens)


# -- §6.13 serialization and cancellation --------------------------------------------------------------


def test_cancelled_before_queueing_reads_nothing():
    _, binding, service = make()
    backend = MemoryBackend()
    binding.mount(backend)
    token = CancelToken()
    token.cancel()
    assert code(from_json(service.search_sessions), {"query": "x"}, token) == (
        errors.ABORTED,
        "session-search aborted",
    )
    assert (
        code(from_json(service.search_events), {"sessionId": "s", "query": "x"}, token)[0]
        == errors.ABORTED
    )
    assert backend.calls == []


def test_cancelled_while_queued_reports_promptly():
    store, binding, service = make()
    live(store, "s", "needle")
    backend = MemoryBackend()
    backend.gate = threading.Event()
    binding.mount(backend)
    results = {}
    first = threading.Thread(
        target=lambda: results.setdefault("first", sessions(service, "needle"))
    )
    first.start()
    assert backend.started.wait(5)
    token = CancelToken()
    done = threading.Event()

    def queued():
        try:
            from_json(service.search_sessions)({"query": "needle"}, token)
        except QueryError as exc:
            results["queued"] = exc.code
        done.set()

    threading.Thread(target=queued).start()
    time.sleep(0.05)
    assert not done.is_set()  # waits behind the running search
    token.cancel()
    assert done.wait(2)  # without waiting for the search ahead
    assert results["queued"] == errors.ABORTED
    assert first.is_alive()
    backend.gate.set()
    first.join(5)
    assert ids(results["first"]) == ["s"]
    assert ops(backend) == ["list_snapshots", "list_snapshots"]  # the cancelled search read nothing


def test_searches_never_overlap():
    store, binding, service = make()
    live(store, "s", "needle")
    backend = MemoryBackend()
    backend.gate = threading.Event()
    binding.mount(backend)
    threads = [threading.Thread(target=sessions, args=(service, "needle")) for _ in range(3)]
    for t in threads:
        t.start()
    assert backend.started.wait(5)
    time.sleep(0.05)
    assert ops(backend) == ["list_snapshots"]  # the others wait in the queue
    backend.gate.set()
    for t in threads:
        t.join(5)
    assert ops(backend) == ["list_snapshots"] * 6


def test_cancel_during_backend_call_awaits_it_and_commits_nothing(monkeypatch):
    store, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    binding.mount(backend)
    token = CancelToken()
    release = threading.Event()
    original = backend.inspect
    settled = []

    def inspect(sid: str, tok: CancelToken = NULL_TOKEN):
        token.cancel()
        release.wait(5)  # ignores the token
        settled.append(sid)
        return original(sid, tok)

    monkeypatch.setattr(backend, "inspect", inspect)
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault(
            "exc", error(from_json(service.search_sessions), {"query": "needle"}, token)
        )
    )
    thread.start()
    time.sleep(0.05)
    assert thread.is_alive()  # the in-flight call is awaited
    release.set()
    thread.join(5)
    assert settled == ["p"]
    assert (result["exc"].code, result["exc"].message) == (errors.ABORTED, "session-search aborted")
    assert ops(backend) == ["list_snapshots", "inspect"]  # no further listing
    backend.inspect = original
    backend.calls.clear()
    assert ids(sessions(service, "needle")) == ["p"]
    assert ops(backend).count("inspect") == 1  # nothing was committed


def test_backend_error_after_cancellation_is_aborted_with_cause(monkeypatch):
    _, binding, service = make()
    backend = MemoryBackend()
    token = CancelToken()

    def list_snapshots(tok: CancelToken = NULL_TOKEN):
        tok.cancel()
        tok.raise_if_cancelled()

    monkeypatch.setattr(backend, "list_snapshots", list_snapshots)
    binding.mount(backend)
    exc = error(from_json(service.search_sessions), {"query": "x"}, token)
    assert (exc.code, exc.message, exc.cause) == (
        errors.ABORTED,
        "session-search aborted",
        "cancelled",
    )


def test_cancel_at_the_last_listing_commits_nothing(monkeypatch):
    store, binding, service = make()
    live(store, "l", "needle")
    backend = MemoryBackend()
    binding.mount(backend)
    token = CancelToken()
    original = backend.list_snapshots

    def list_snapshots(tok: CancelToken = NULL_TOKEN):
        result = original(tok)
        if ops(backend).count("list_snapshots") == 2:
            token.cancel()
        return result

    monkeypatch.setattr(backend, "list_snapshots", list_snapshots)
    assert code(from_json(service.search_sessions), {"query": "needle"}, token)[0] == errors.ABORTED
    cursor_free = sessions(service, "needle", limit=1)
    assert ids(cursor_free) == ["l"]


def test_coded_cancellation_from_backend_class():
    _, binding, service = make()
    backend = MemoryBackend()
    backend.fail["list_snapshots"] = SessionQueryCancelled("cancelled")
    binding.mount(backend)
    assert (
        code(from_json(service.search_sessions), {"query": "x"})[0] == errors.PERSISTENCE_FAILED
    )  # token not fired


def test_snapshot_objects_and_dicts_are_both_accepted(monkeypatch):
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    original = backend.list_snapshots
    monkeypatch.setattr(
        backend,
        "list_snapshots",
        lambda token=NULL_TOKEN: [
            {"header": s.header.to_value(), "revision": s.revision} for s in original(token)
        ],
    )
    binding.mount(backend)
    assert ids(sessions(service, "needle")) == ["p"]
    assert isinstance(original()[0], Snapshot)


def test_corruption_in_search_path_is_never_corrupt_session():
    _, binding, service = make()
    backend = MemoryBackend()
    persisted(backend, "p", "needle")
    backend.fail["inspect"] = SessionPersistenceCorruptionError("torn frame")
    binding.mount(backend)
    exc = error(from_json(service.search_events), {"sessionId": "p", "query": "needle"})
    assert (exc.code, exc.cause) == (errors.PERSISTENCE_FAILED, "torn frame")
