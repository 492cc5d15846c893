"""Fault injection over the wire: backends that raise, hang, or list inconsistently; a SQLite file
overwritten while mounted; a JSONL root deleted or replaced mid-run; kill -9 during checkpoints.

Invariants checked everywhere: every live read keeps working, every cross-corpus read fails with
the code the spec gives (semantics.md §3.13), no answer carries a traceback or a server path, the
server never dies, and nothing a checkpoint acknowledged is lost.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import signal
import sys
import threading
import time
from typing import Any

import pytest

from bench.wire import RpcError, ServerGone, WireClient, wait_until
from dsh_query_server.model.event import Event, Header
from dsh_query_server.persistence.sqlite import SqliteBackend
from tests.builders import ROOT, TEST_ENV, TEST_SERVER, A, U, hdr, user_data, write_transcript

pytestmark = [pytest.mark.wire, pytest.mark.slow]

PERSISTENCE_FAILED = "SESSION_QUERY_PERSISTENCE_FAILED"
CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"
NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"
CONFLICT = "SESSION_QUERY_SOURCE_CONFLICT"
ABORTED = "SESSION_QUERY_ABORTED"


def start(options=None, **kw) -> WireClient:
    init = {"index": ":memory:", "checkpoint": {"mode": "manual"}, **(options or {})}
    return WireClient(
        command=[*TEST_SERVER, "--persistence", "none"],
        env=TEST_ENV,
        initialization_options=init,
        timeout=30,
        **kw,
    )


def outcome(client: WireClient, method: str, params=None, timeout: float = 30) -> tuple[Any, ...]:
    """("ok", result) or ("error", json-rpc code, data.code, message); checks message hygiene."""
    response = client.call(method, {} if params is None else params, timeout=timeout)
    if "error" not in response:
        return ("ok", response["result"])
    error = response["error"]
    assert_clean(error)
    data = error.get("data") or {}
    return ("error", error.get("code"), data.get("code"), error.get("message"))


FORBIDDEN = ("Traceback", 'File "', '.py"', ".py,", ".py:", "site-packages", ROOT, sys.prefix)


def assert_clean(error) -> None:
    """No traceback, stack or server path in an error (protocol.md §2)."""
    text = json.dumps(error)
    for needle in FORBIDDEN:
        assert needle not in text, f"{needle!r} leaked into {text[:400]}"
    data = error.get("data")
    assert (
        isinstance(data, dict) and isinstance(data.get("code"), str) or error.get("code") == -32601
    ), text


def code_of(result):
    return result[2] if result[0] == "error" else "ok"


LIVE_READS = [
    (
        "sessionQuery/listEvents",
        {"sessionId": "live"},
        lambda r: [e["seq"] for e in r] == [0, 1, 2],
    ),
    (
        "sessionQuery/filterEvents",
        {"sessionId": "live", "filters": [{"kind": "text", "text": "needle"}]},
        lambda r: [d["seq"] for d in r] == [0],
    ),
    (
        "sessionQuery/readEvent",
        {"sessionId": "live", "seq": 1, "before": 1, "after": 1},
        lambda r: (r["startSeq"], r["endSeq"]) == (0, 2),
    ),
    (
        "sessionQuery/readSurface",
        {"sessionId": "live"},
        lambda r: [e["seq"] for e in r["events"]] == [0, 1],
    ),
    ("sessionQuery/readSession", {"sessionId": "live"}, lambda r: len(r["events"]) == 3),
    ("sessionQuery/readTitle", {"sessionId": "live"}, lambda r: r["session"]["id"] == "live"),
    ("sessionQuery/traceEvent", {"sessionId": "live", "seq": 0}, lambda r: r["target"]["seq"] == 0),
]


def assert_live_reads_work(client: WireClient) -> None:
    for method, params, check in LIVE_READS:
        result = outcome(client, method, params)
        assert result[0] == "ok", (method, result)
        assert check(result[1]), (method, result[1])


def create_live(client: WireClient) -> None:
    client.request(
        "sessionStore/create",
        {
            "header": hdr("live", 5, cwd="/p"),
            "seed": [U(0, "live needle").to_value(), A(1, "ok").to_value()],
        },
    )


@pytest.fixture(scope="module")
def server():
    client = start()
    create_live(client)
    yield client
    assert client.alive(), "the server died"
    client.close()


def mount(client: WireClient, uri: str) -> None:
    assert client.request("sessionPersistence/mount", {"uri": uri})["uri"] == uri


def cross_corpus(client: WireClient) -> dict[str, object]:
    """The code each cross-corpus read reports ('ok' when it answers)."""
    titles = outcome(client, "sessionQuery/readTitles", {"sessionIds": ["live", "persisted-a"]})
    assert titles[0] == "ok", titles
    assert titles[1][0]["status"] == "fulfilled"  # the live id never touches persistence
    persisted_title = titles[1][1]
    return {
        "listSessions": code_of(outcome(client, "sessionQuery/listSessions")),
        "filterSessions": code_of(outcome(client, "sessionQuery/filterSessions", {"filters": []})),
        "traceSession": code_of(
            outcome(client, "sessionQuery/traceSession", {"sessionId": "live"})
        ),
        "readEvent": code_of(
            outcome(client, "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0})
        ),
        "readTitles": "ok"
        if persisted_title["status"] == "fulfilled"
        else persisted_title["reason"]["code"],
        "search": code_of(outcome(client, "sessionQuery/searchSessions", {"query": "needle"})),
    }


# -- backends that raise -------------------------------------------------------------------------------

KINDS = ["os", "key", "type", "recursion", "memory", "empty", "coded", "corrupt"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_read_operation_raises(server, kind):
    mount(server, f"test:raise:list,list_snapshots,inspect:{kind}")
    codes = cross_corpus(server)
    search = (
        NOT_FOUND if kind == "coded" else PERSISTENCE_FAILED
    )  # §6.5 2.4: coded errors pass through
    assert codes == {
        "listSessions": PERSISTENCE_FAILED,
        "filterSessions": PERSISTENCE_FAILED,
        "traceSession": PERSISTENCE_FAILED,
        "readEvent": PERSISTENCE_FAILED,
        "readTitles": PERSISTENCE_FAILED,
        "search": search,
    }
    assert_live_reads_work(server)


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_raises(server, kind):
    mount(server, f"test:raise:inspect:{kind}")
    codes = cross_corpus(server)
    exact = CORRUPT if kind == "corrupt" else PERSISTENCE_FAILED
    # [ours] (semantics.md §6.5): a log whose inspect raises corruption is left out of the
    # search and named; any other failure still fails it (coded errors pass through).
    search = {"coded": NOT_FOUND, "corrupt": "ok"}.get(kind, PERSISTENCE_FAILED)
    assert codes == {
        "listSessions": "ok",
        "filterSessions": "ok",
        "traceSession": "ok",
        "readEvent": exact,
        "readTitles": exact,
        "search": search,
    }
    if kind == "corrupt":
        page = outcome(server, "sessionQuery/searchSessions", {"query": "needle"})[1]
        assert page["unreadableCount"] >= 1
        assert {u["code"] for u in page["unreadable"]} == {CORRUPT}
    assert_live_reads_work(server)


def test_list_failure_message_keeps_the_cause(server):
    mount(server, "test:raise:list:os")
    _, code, data_code, message = outcome(server, "sessionQuery/listSessions")
    assert (code, data_code, message) == (
        -32803,
        PERSISTENCE_FAILED,
        "session persistence listing failed: injected list failure",
    )
    error = server.call("sessionQuery/listSessions")["error"]
    assert error["data"]["cause"] == "injected list failure"


@pytest.mark.parametrize("kind", ["base", "exit", "interrupt"])
def test_backend_raising_a_base_exception_is_answered(server, kind):
    """A BaseException that is not an Exception (a backend calling sys.exit(), say) must still be
    answered, and must not take the server down."""
    mount(server, f"test:raise:list,list_snapshots,inspect:{kind}")
    for method, params in [
        ("sessionQuery/listSessions", {}),
        ("sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0}),
        ("sessionQuery/searchSessions", {"query": "needle"}),
    ]:
        result = outcome(server, method, params, timeout=10)
        assert result[0] == "error" and result[1] in (-32603, -32803), (method, result)
    assert server.alive()
    assert_live_reads_work(server)


# -- backends that hang ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,params,op,message",
    [
        ("sessionQuery/listSessions", {}, "list", "session query request cancelled"),
        (
            "sessionQuery/readEvent",
            {"sessionId": "persisted-a", "seq": 0},
            "list",
            "session query request cancelled",
        ),
        (
            "sessionQuery/searchSessions",
            {"query": "needle"},
            "list_snapshots",
            "session-search aborted",
        ),
    ],
)
def test_hung_call_is_cancelled_only_after_it_settles(
    server, tmp_path, method, params, op, message
):
    mount(server, f"test:hang:{tmp_path}")
    msg_id, future = server.submit(method, params)
    assert wait_until(lambda: (tmp_path / f"{op}.started").exists(), 10), (
        "the backend call never started"
    )
    # While the call hangs, live reads are answered.
    assert_live_reads_work(server)
    assert not future.done()
    server.cancel(msg_id)
    response = future.result(15)
    settled = tmp_path / f"{op}.settled"
    assert settled.exists(), "answered before the backend call settled"
    assert response["error"]["code"] == -32800
    assert response["error"]["data"]["code"] == ABORTED
    assert response["error"]["message"] == message
    assert_clean(response["error"])


@pytest.mark.parametrize(
    "method,params,message",
    [
        (
            "sessionQuery/readEvent",
            {"sessionId": "persisted-a", "seq": 0},
            "session query request cancelled",
        ),
        (
            "sessionQuery/readTitles",
            {"sessionIds": ["live", "persisted-a", "persisted-b"]},
            "session query request cancelled",
        ),
        ("sessionQuery/searchSessions", {"query": "needle"}, "session-search aborted"),
    ],
)
def test_hung_inspect_is_cancelled_only_after_it_settles(server, tmp_path, method, params, message):
    mount(server, f"test:hang-on:inspect:{tmp_path}")
    msg_id, future = server.submit(method, params)
    assert wait_until(lambda: (tmp_path / "inspect.started").exists(), 10), "inspect never started"
    assert_live_reads_work(server)
    server.cancel(msg_id)
    response = future.result(15)
    assert (tmp_path / "inspect.settled").exists(), "answered before inspect settled"
    assert (
        response["error"]["code"],
        response["error"]["data"]["code"],
        response["error"]["message"],
    ) == (-32800, ABORTED, message)
    # The title batch ran at most persistedInspectConcurrency inspections and claimed nothing after
    # the cancel: every started inspection settled before the answer.
    started = (tmp_path / "inspect.started").read_text().split()
    settled = (tmp_path / "inspect.settled").read_text().split()
    assert len(started) == len(settled)


def test_hung_listing_in_a_title_batch_cancels_the_whole_batch(server, tmp_path):
    mount(server, f"test:hang:{tmp_path}")
    # The one list call of the batch hangs: cancelling it cancels the whole batch.
    msg_id, future = server.submit(
        "sessionQuery/readTitles", {"sessionIds": ["live", "persisted-a", "persisted-b"]}
    )
    assert wait_until(lambda: (tmp_path / "list.started").exists(), 10)
    server.cancel(msg_id)
    response = future.result(15)
    assert (tmp_path / "list.settled").exists()
    assert response["error"]["code"] == -32800
    # Cancelling an id that is not in flight (or already answered) is harmless.
    server.cancel(msg_id)
    server.cancel(987654321)
    assert_live_reads_work(server)


def test_validation_is_answered_without_waiting_for_a_blocked_backend(server, tmp_path):
    mount(server, f"test:gate:{tmp_path}")  # every backend call blocks until released
    try:
        _, blocked = server.submit("sessionQuery/listSessions", {})
        assert wait_until(lambda: (tmp_path / "list.started").exists(), 10)
        started = time.monotonic()
        invalid = outcome(
            server, "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0, "before": -1}
        )
        assert invalid[:3] == ("error", -32602, "SESSION_QUERY_INVALID_WINDOW")
        assert time.monotonic() - started < 2 and not blocked.done()
        # A cancel for an id that is not in flight is ignored.
        server.cancel("no-such-request")
    finally:
        (tmp_path / "release").write_text("")
    assert "result" in blocked.result(15)


def test_hung_backend_calls_do_not_starve_live_reads(tmp_path):
    client = start()
    try:
        create_live(client)
        mount(client, f"test:gate:{tmp_path}")
        hung = [client.submit("sessionQuery/listSessions", {})[1] for _ in range(40)]
        assert wait_until(lambda: (tmp_path / "list.started").exists(), 10)
        started = time.monotonic()
        try:
            result = outcome(client, "sessionQuery/listEvents", {"sessionId": "live"}, timeout=5)
        except TimeoutError:
            result = None
        finally:
            (tmp_path / "release").write_text("")
            for future in hung:
                future.result(60)
        assert result is not None and result[0] == "ok", (
            "a live read waited behind hung persisted reads"
        )
        assert time.monotonic() - started < 5
    finally:
        client.close()


# -- inconsistent listings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode,expected",
    [
        (
            "revisions",
            {
                "listSessions": "ok",
                "filterSessions": "ok",
                "traceSession": "ok",
                "readEvent": "ok",
                "readTitles": "ok",
                "search": PERSISTENCE_FAILED,
            },
        ),
        (
            "phantom",
            {
                "listSessions": "ok",
                "filterSessions": "ok",
                "traceSession": "ok",
                "readEvent": "ok",
                "readTitles": "ok",
                "search": PERSISTENCE_FAILED,
            },
        ),
        (
            "conflict",
            {
                "listSessions": "ok",
                "filterSessions": "ok",
                "traceSession": "ok",
                "readEvent": CONFLICT,
                "readTitles": CONFLICT,
                "search": CONFLICT,
            },
        ),
        (
            "duplicates",
            {
                "listSessions": "ok",
                "filterSessions": "ok",
                "traceSession": "ok",
                "readEvent": "ok",
                "readTitles": "ok",
                "search": PERSISTENCE_FAILED,
            },
        ),
        (
            "garbage",
            {
                "listSessions": PERSISTENCE_FAILED,
                "filterSessions": PERSISTENCE_FAILED,
                "traceSession": PERSISTENCE_FAILED,
                "readEvent": PERSISTENCE_FAILED,
                "readTitles": PERSISTENCE_FAILED,
                "search": PERSISTENCE_FAILED,
            },
        ),
        (
            "badlog",
            {
                "listSessions": "ok",
                "filterSessions": "ok",
                "traceSession": "ok",
                "readEvent": "ok",
                "readTitles": "ok",
                "search": "SESSION_QUERY_INVALID_SURFACE",
            },
        ),
    ],
)
def test_inconsistent_listings(server, mode, expected):
    mount(server, f"test:inconsistent:{mode}")
    assert cross_corpus(server) == expected
    assert_live_reads_work(server)


def test_inconsistent_listing_details(server):
    mount(server, "test:inconsistent:revisions")
    _, _, _, message = outcome(server, "sessionQuery/searchSessions", {"query": "needle"})
    assert message == "session-search persistence observation did not stabilize after one retry"
    mount(server, "test:inconsistent:phantom")
    assert "ghost" in [s["header"]["id"] for s in server.request("sessionQuery/listSessions")]
    assert (
        code_of(outcome(server, "sessionQuery/readEvent", {"sessionId": "ghost", "seq": 0}))
        == PERSISTENCE_FAILED
    )
    mount(server, "test:inconsistent:duplicates")
    ids = [s["header"]["id"] for s in server.request("sessionQuery/listSessions")]
    assert sorted(ids) == ["live", "persisted-a", "persisted-b"]  # a later duplicate overwrites
    mount(server, "test:inconsistent:badlog")
    assert (
        code_of(outcome(server, "sessionQuery/listEvents", {"sessionId": "persisted-a"}))
        == "SESSION_QUERY_INVALID_SURFACE"
    )
    assert (
        code_of(outcome(server, "sessionQuery/readSession", {"sessionId": "persisted-a"}))
        == CORRUPT
    )
    # A listing that flips between calls never fails a call; each answer is one of the two states.
    mount(server, "test:inconsistent:flip")
    seen = set()
    for _ in range(4):
        seen.add(
            tuple(sorted(s["header"]["id"] for s in server.request("sessionQuery/listSessions")))
        )
    for _ in range(4):
        assert code_of(
            outcome(server, "sessionQuery/readEvent", {"sessionId": "persisted-b", "seq": 0})
        ) in ("ok", NOT_FOUND)
    assert seen == {("live", "persisted-a", "persisted-b"), ("live", "persisted-a")}
    assert (
        code_of(outcome(server, "sessionQuery/searchSessions", {"query": "needle"}))
        == PERSISTENCE_FAILED
    )
    assert_live_reads_work(server)
    server.request("sessionPersistence/unmount")


def test_checkpoint_churn_of_a_live_session_does_not_fail_searches(server):
    """semantics.md §6.5 step 2.3: a writer checkpointing a live session (its revision moves on
    every listing) never fails a search; the live copy is what it finds."""
    mount(server, "test:inconsistent:churn-live")
    for _ in range(3):
        result = outcome(server, "sessionQuery/searchSessions", {"query": "needle"})
        assert result[0] == "ok", result
        hits = {h["header"]["id"]: (h["live"], h["persisted"]) for h in result[1]["items"]}
        assert hits["live"] == (True, True)
    # The same churn on an id that is not live still retries, and then fails.
    server.request("sessionStore/remove", {"sessionId": "live"})
    try:
        assert (
            code_of(outcome(server, "sessionQuery/searchSessions", {"query": "needle"}))
            == PERSISTENCE_FAILED
        )
    finally:
        create_live(server)
        server.request("sessionPersistence/unmount")


# -- spec conformance over the wire ----------------------------------------------------------


UNTIMED = [{"id": "untimed"}, {"version": 0, "id": "untimed", "cwd": "/p"}]


@pytest.mark.parametrize("header", UNTIMED)
def test_create_without_created_at_is_refused_and_creates_nothing(tmp_path, header):
    """semantics.md §1.2: createdAt is required; the server never stamps one. Nothing is created:
    not live, not listed, not searchable, and nothing reaches a writable backend."""
    root = tmp_path / "root"
    client = start({"checkpoint": {"mode": "auto", "intervalMs": 10}})
    try:
        mount(client, f"jsonl:{root}")
        seed = [U(0, "untimed needle").to_value()]
        result = outcome(client, "sessionStore/create", {"header": header, "seed": seed})
        assert result == (
            "error",
            -32602,
            "SESSION_STORE_INVALID_HEADER",
            "session header createdAt must be a non-negative safe integer",
        )
        assert client.request("sessionQuery/listSessions") == []
        listed = outcome(client, "sessionQuery/listEvents", {"sessionId": "untimed"})
        assert code_of(listed) == NOT_FOUND
        assert client.request("sessionQuery/searchSessions", {"query": "needle"})["items"] == []
        assert client.request("sessionStore/checkpoint", {}) == {"flushed": {}}
        assert not root.exists() or not any(p.is_file() for p in root.rglob("*"))
        # The same header with a time is accepted and keeps exactly that time.
        timed = {**header, "createdAt": 7}
        created = client.request("sessionStore/create", {"header": timed, "seed": seed})
        assert created["header"] == {"version": 0, **header, "createdAt": 7}
        listing = client.request("sessionQuery/listSessions")
        assert [s["header"] for s in listing] == [created["header"]]
    finally:
        client.close()


def test_mount_and_unmount_between_pages_make_a_cross_session_cursor_stale(tmp_path):
    """semantics.md §6.12: any mount, unmount or replacement between two pages makes a
    cross-session cursor stale, even with identical data and no search in between; nothing else
    here does, and a within-session cursor of a live target is unaffected."""
    root = tmp_path / "empty-root"
    root.mkdir()
    client = start()
    try:
        for sid in ("a", "b"):
            client.request(
                "sessionStore/create",
                {
                    "header": hdr(sid, 1),
                    "seed": [U(0, "needle one").to_value(), U(1, "needle two").to_value()],
                },
            )

        def cursor():
            page = client.request("sessionQuery/searchSessions", {"query": "needle", "limit": 1})
            return page["nextCursor"]

        def events_cursor():
            return client.request(
                "sessionQuery/searchEvents", {"sessionId": "a", "query": "needle", "limit": 1}
            )["nextCursor"]

        def page(c):
            return code_of(
                outcome(
                    client,
                    "sessionQuery/searchSessions",
                    {"query": "needle", "limit": 1, "cursor": c},
                )
            )

        def events_page(c):
            return code_of(
                outcome(
                    client,
                    "sessionQuery/searchEvents",
                    {"sessionId": "a", "query": "needle", "limit": 1, "cursor": c},
                )
            )

        stale = "SESSION_QUERY_STALE_CURSOR"
        c, e = cursor(), events_cursor()
        client.request("sessionPersistence/status")
        assert (page(c), events_page(e)) == ("ok", "ok")  # no change: both still valid
        c, e = cursor(), events_cursor()
        mount(client, f"jsonl:{root}")
        client.request("sessionPersistence/unmount")  # back to nothing bound, no search between
        assert (page(c), events_page(e)) == (stale, "ok")
        c = cursor()
        mount(client, f"jsonl:{root}")  # a mount of an empty store
        assert page(c) == stale
        c = cursor()
        mount(client, f"jsonl:{root}")  # replacement by the same store
        assert page(c) == stale
        c = cursor()
        client.request("sessionPersistence/unmount")
        client.request("sessionPersistence/unmount")  # nothing bound: not a change
        assert page(c) == stale
        c = cursor()
        client.request("sessionPersistence/unmount")
        assert page(c) == "ok"
    finally:
        client.close()


# -- real stores damaged while mounted --------------------------------------------------------------------


def sqlite_store(path: pathlib.Path, sessions: dict[str, list[Event]]) -> None:
    backend = SqliteBackend(str(path))
    for sid, events in sessions.items():
        backend.create(Header.from_value(hdr(sid, 1, cwd="/p")))
        backend.append(sid, events)
    backend.close()


def test_sqlite_file_overwritten_with_garbage_while_mounted(server, tmp_path):
    db = tmp_path / "store.db"
    sqlite_store(db, {"persisted-a": [U(0, "alpha needle"), A(1)]})
    mount(server, f"sqlite:{db}?readOnly=true")
    assert (
        code_of(outcome(server, "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 1}))
        == "ok"
    )
    assert code_of(outcome(server, "sessionQuery/searchSessions", {"query": "alpha"})) == "ok"
    rng = random.Random(7)
    for path in [db, *tmp_path.glob("store.db-*")]:
        size = max(path.stat().st_size, 8192)
        with open(path, "r+b") as f:  # in place: the server keeps its descriptor
            f.write(bytes(rng.getrandbits(8) for _ in range(size)))
    codes = cross_corpus(server)
    assert set(codes.values()) <= {PERSISTENCE_FAILED, CORRUPT}, codes
    assert codes["listSessions"] == PERSISTENCE_FAILED and codes["search"] == PERSISTENCE_FAILED
    assert_live_reads_work(server)
    # Truncated to nothing, then removed: still coded failures or an empty store, never a crash.
    db.write_bytes(b"")
    assert code_of(outcome(server, "sessionQuery/listSessions")) in ("ok", PERSISTENCE_FAILED)
    db.unlink()
    assert code_of(outcome(server, "sessionQuery/listSessions")) in ("ok", PERSISTENCE_FAILED)
    assert_live_reads_work(server)
    server.request("sessionPersistence/unmount")


def test_jsonl_root_deleted_or_replaced_mid_run(server, tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("persisted-a", 1, cwd="/p"), [U(0, "alpha needle")])
    mount(server, f"jsonl:{root}?readOnly=true")
    assert (
        code_of(outcome(server, "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0}))
        == "ok"
    )
    # Deleted: an absent root is an empty store, not a failure.
    shutil.rmtree(root)
    ids = [s["header"]["id"] for s in server.request("sessionQuery/listSessions")]
    assert ids == ["live"]
    assert (
        code_of(outcome(server, "sessionQuery/readEvent", {"sessionId": "persisted-a", "seq": 0}))
        == NOT_FOUND
    )
    assert code_of(outcome(server, "sessionQuery/searchSessions", {"query": "alpha"})) == "ok"
    assert_live_reads_work(server)
    # Replaced by another root: read per call, no cache, so the new content shows at once.
    other = tmp_path / "other"
    write_transcript(other, hdr("persisted-z", 3), [U(0, "zeta")])
    other.rename(root)
    ids = [s["header"]["id"] for s in server.request("sessionQuery/listSessions")]
    assert sorted(ids) == ["live", "persisted-z"]
    # Replaced by a file: every cross-corpus read fails with PERSISTENCE_FAILED.
    shutil.rmtree(root)
    root.write_text("not a directory")
    codes = cross_corpus(server)
    assert codes == {k: PERSISTENCE_FAILED for k in codes}, codes
    # Unreadable directory contents: a session directory that is a file, a transcript that is a dir.
    root.unlink()
    write_transcript(root, hdr("persisted-a", 1, cwd="/p"), [U(0, "alpha needle")])
    project = next(root.iterdir())
    (project / "stray-file").write_text("x")
    (project / "weird" / "session.jsonl").mkdir(parents=True)
    assert code_of(outcome(server, "sessionQuery/listSessions")) in ("ok", PERSISTENCE_FAILED)
    assert_live_reads_work(server)
    server.request("sessionPersistence/unmount")


# -- nothing acknowledged is lost ----------------------------------------------------------------------------


def turn_events(n: int, text: str) -> list[dict]:
    return [
        {"type": "turn/start", "data": {"turn": n}},
        {"type": "user/message", "surfaceOp": "append", "data": user_data(text)},
        {"type": "turn/end", "data": {"turn": n, "reason": {"kind": "completed"}}},
    ]


def test_failing_writes_keep_live_data_until_a_checkpoint_succeeds(tmp_path):
    flag = tmp_path / "disk-full"
    client = start({"checkpoint": {"mode": "auto", "intervalMs": 20}})
    try:
        mount(client, f"test:flaky-writes:{flag}")
        client.request("sessionStore/create", {"header": hdr("w", 1)})
        client.request("sessionStore/append", {"sessionId": "w", "events": turn_events(1, "one")})
        assert client.request("sessionStore/checkpoint", {"sessionId": "w"}) == {
            "flushed": {"w": 2}
        }
        flag.write_text("")
        sent = 3
        for n in range(2, 6):
            client.request(
                "sessionStore/append", {"sessionId": "w", "events": turn_events(n, f"turn {n}")}
            )
            sent += 3
        failed = outcome(client, "sessionStore/checkpoint", {})
        assert failed[:3] == ("error", -32803, "SESSION_STORE_PERSISTENCE_FAILED"), failed
        # remove refuses to drop unpersisted events
        assert (
            code_of(outcome(client, "sessionStore/remove", {"sessionId": "w"}))
            == "SESSION_STORE_PERSISTENCE_FAILED"
        )
        assert len(client.request("sessionQuery/listEvents", {"sessionId": "w"})) == sent
        status = client.request("sessionPersistence/status")
        assert status["pendingEvents"] >= sent - 3
        flag.unlink()
        # The auto checkpointer retries on its own; the explicit call states the postcondition.
        assert client.request("sessionStore/checkpoint", {}) == {"flushed": {"w": sent - 1}}
        assert client.request("sessionStore/remove", {"sessionId": "w"}) == {}
        persisted = client.request("sessionQuery/readSession", {"sessionId": "w"})
        assert [e["seq"] for e in persisted["events"]] == list(range(sent))
        assert client.request("sessionPersistence/status")["pendingEvents"] == 0
    finally:
        client.close()


def test_live_data_survives_a_store_destroyed_under_the_checkpointer(tmp_path):
    db = tmp_path / "store.db"
    client = start({"checkpoint": {"mode": "auto", "intervalMs": 20}})
    try:
        mount(client, f"sqlite:{db}")
        client.request("sessionStore/create", {"header": hdr("s", 1)})
        client.request(
            "sessionStore/append", {"sessionId": "s", "events": turn_events(1, "before")}
        )
        assert client.request("sessionStore/checkpoint", {}) == {"flushed": {"s": 2}}
        for path in [db, *tmp_path.glob("store.db-*")]:
            with open(path, "r+b") as f:
                f.write(os.urandom(max(8192, path.stat().st_size)))
        client.request("sessionStore/append", {"sessionId": "s", "events": turn_events(2, "after")})
        time.sleep(0.2)  # the auto checkpointer hits the garbage
        assert (
            code_of(outcome(client, "sessionStore/checkpoint", {}))
            == "SESSION_STORE_PERSISTENCE_FAILED"
        )
        assert len(client.request("sessionQuery/listEvents", {"sessionId": "s"})) == 6
        # A fresh store: the next checkpoint writes the whole live log there.
        fresh = tmp_path / "fresh.db"
        mount(client, f"sqlite:{fresh}")
        assert client.request("sessionStore/checkpoint", {}) == {"flushed": {"s": 5}}
        client.request("sessionStore/remove", {"sessionId": "s"})
        assert len(client.request("sessionQuery/readSession", {"sessionId": "s"})["events"]) == 6
    finally:
        client.close()


# -- crash safety: kill -9 during checkpoints ------------------------------------------------------------


def producer_batch(rng: random.Random, turn: int) -> list[dict]:
    """One batch as a producer sends it: sometimes a closed turn, sometimes an open one, with chunk
    runs (packed rows in both stores)."""
    events = [
        {"type": "turn/start", "data": {"turn": turn}},
        {"type": "user/message", "surfaceOp": "append", "data": user_data(f"question {turn}")},
    ]
    for i in range(rng.randint(0, 12)):
        events.append(
            {
                "type": "assistant/chunk",
                "data": {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": "text-delta", "index": 0, "text": f"piece {i} "},
                },
            }
        )
    events.append(
        {
            "type": "assistant/message",
            "surfaceOp": "append",
            "data": {
                "turn": turn,
                "step": 1,
                "message": {
                    "id": f"a{turn}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "answer"}],
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                },
            },
        }
    )
    if rng.random() < 0.7:
        events.append({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
    else:
        events.append(
            {
                "type": "turn/end",
                "data": {"turn": turn, "reason": {"kind": "aborted", "reason": {"kind": "user"}}},
            }
        )
    return events


def crash_iteration(uri: str, sid: str, rng: random.Random) -> tuple[int, list[dict]]:
    """Produce into ``sid`` with checkpoints until kill -9; the last acknowledged seq and the events
    the server acknowledged (with their assigned seqs)."""
    client = start({"persistence": uri, "checkpoint": {"mode": "auto", "intervalMs": 5}})
    acked = -1
    accepted: list[dict] = []
    stop = threading.Event()

    def produce() -> None:
        nonlocal acked
        turn = 0
        try:
            client.request("sessionStore/create", {"header": hdr(sid, 1, cwd="/crash")})
            while not stop.is_set():
                turn += 1
                batch = producer_batch(rng, turn)
                answer = client.request(
                    "sessionStore/append", {"sessionId": sid, "events": batch}, timeout=10
                )
                for seq, event in zip(
                    range(answer["firstSeq"], answer["lastSeq"] + 1), batch, strict=True
                ):
                    accepted.append({**event, "seq": seq})
                if turn % 3 == 0:
                    flushed = client.request(
                        "sessionStore/checkpoint", {"sessionId": sid}, timeout=10
                    )["flushed"]
                    acked = max(acked, flushed.get(sid, -1))
        except (ServerGone, TimeoutError, RpcError, ConnectionError, OSError):
            return

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    time.sleep(rng.uniform(0.25, 0.6))
    os.kill(client.pid, signal.SIGKILL)
    stop.set()
    thread.join(10)
    client.wait()
    return acked, accepted


def comparable(event: dict) -> tuple:
    return (
        event["type"],
        event["seq"],
        json.dumps(event["data"], sort_keys=True),
        json.dumps(event.get("surfaceOp"), sort_keys=True),
    )


@pytest.mark.parametrize("scheme", ["sqlite", "jsonl"])
def test_kill_9_during_checkpoints_loses_nothing_acknowledged(tmp_path, scheme):
    uri = f"sqlite:{tmp_path / 'store.db'}" if scheme == "sqlite" else f"jsonl:{tmp_path / 'root'}"
    rng = random.Random(2024)
    acknowledged: dict[str, tuple[int, list[dict]]] = {}
    for iteration in range(3):
        sid = f"crash-{iteration}"
        acked, accepted = crash_iteration(uri, sid, rng)
        acknowledged[sid] = (acked, accepted)
        # After each restart, every session acknowledged so far is intact and valid.
        reader = start({"persistence": uri + "?readOnly=true"})
        try:
            for known, (last, sent) in acknowledged.items():
                if last < 0:
                    continue
                log = reader.request(
                    "sessionQuery/readSession", {"sessionId": known}
                )  # replay-validates
                stored = log["events"]
                assert len(stored) >= last + 1, (
                    f"{known}: acknowledged seq {last} but {len(stored)} stored"
                )
                expected = [comparable(e) for e in sent[: last + 1]]
                assert [comparable(e) for e in stored[: last + 1]] == expected
                assert all(e["seq"] == i for i, e in enumerate(stored))
        finally:
            reader.close()
    assert any(last >= 0 for last, _ in acknowledged.values()), (
        "no checkpoint was acknowledged at all"
    )
