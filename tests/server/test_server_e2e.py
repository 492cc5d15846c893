"""The real server over stdio (pytest-lsp): every method, the error codes, cancellation, and a
persistence backend that fails while live reads keep working."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from dsh_query_server.server.transport import ByteReader, frame, read_frame
from tests.builders import (
    TEST_ENV,
    TEST_SERVER,
    A,
    R,
    U,
    chunk,
    hdr,
    log_only,
    user_data,
    write_transcript,
)
from tests.lsp_client import config, init_params

pytestmark = pytest.mark.wire


async def call(client, method, params=None):
    return await client.protocol.send_request_async(method, params if params is not None else {})


async def fails(client, method, params):
    with pytest.raises(JsonRpcException) as info:
        await call(client, method, params)
    exc = info.value
    return exc.code, (exc.data or {}).get("code"), exc.message


def next_frame(stream: ByteReader) -> bytes:
    body = read_frame(stream)
    assert body is not None, "the server closed its output"
    return body


@pytest_lsp.fixture(config=config("--persistence", "none", env=TEST_ENV, server=TEST_SERVER))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(init_params({"index": ":memory:"}))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def test_request_before_initialize_is_refused():
    # pytest-lsp's client refuses to send before initialize, so speak the framing by hand.
    server = subprocess.Popen(
        [sys.executable, "-m", "dsh_query_server", "--persistence", "none"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )

    assert server.stdin is not None and server.stdout is not None
    stdin, stdout = server.stdin, server.stdout

    def exchange(message):
        stdin.write(frame(json.dumps(message).encode()))
        stdin.flush()
        return json.loads(next_frame(stdout))

    try:
        early = exchange(
            {"jsonrpc": "2.0", "id": 1, "method": "sessionQuery/listSessions", "params": {}}
        )
        assert early["error"]["code"] == -32002
        init = exchange(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "initialize",
                "params": {"capabilities": {}, "initializationOptions": {"index": ":memory:"}},
            }
        )
        capabilities = init["result"]["capabilities"]
        experimental = capabilities["experimental"]["sessionQuery"]
        assert experimental["version"] == 1 and experimental["producer"] is True
        assert experimental["treeViews"] == ["sessions", "lineage", "events", "eventTrace"]
        assert set(capabilities["executeCommandProvider"]["commands"]) == {
            "dshQuery.server.mount",
            "dshQuery.server.unmount",
            "dshQuery.server.checkpoint",
            "dshQuery.server.status",
        }
        later = exchange(
            {"jsonrpc": "2.0", "id": 3, "method": "sessionQuery/listSessions", "params": {}}
        )
        assert later["result"] == []
    finally:
        server.kill()
        server.wait()


@pytest_lsp.fixture(config=config("--persistence", "none"))
async def bad_config_client(lsp_client: LanguageClient):
    yield
    lsp_client.exit(None)  # initialize failed, so there is no session to shut down


async def test_bad_initialization_option_fails_initialize(bad_config_client):
    with pytest.raises(JsonRpcException) as info:
        await bad_config_client.initialize_session(init_params({"readWindowMax": -1}))
    data = info.value.data
    assert info.value.code == -32602 and data is not None
    assert data["code"] == "SESSION_QUERY_INVALID_CONFIG"


async def test_producer_and_every_query_method(client):
    seed = [
        e.to_value()
        for e in [U(0, "find the needle"), chunk(1), A(2, "compacted", op=R(0, 0), src=[0])]
    ]
    created = await call(
        client, "sessionStore/create", {"header": hdr("s1", 10, cwd="/proj"), "seed": seed}
    )
    assert created == {"header": hdr("s1", 10, cwd="/proj")}
    appended = await call(
        client,
        "sessionStore/append",
        {
            "sessionId": "s1",
            "events": [
                {
                    "type": "session/title",
                    "data": {
                        "title": "Needle hunt",
                        "messageSeqs": [0],
                        "source": {"kind": "user"},
                    },
                    "time": 77,
                },
                {
                    "type": "user/message",
                    "data": user_data("second question"),
                    "surfaceOp": "append",
                },
            ],
        },
    )
    assert appended == {"firstSeq": 4, "lastSeq": 5}
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("child", 11, parentSession="s1", origin="subagent", delegationDepth=1)},
    )

    sessions = await call(client, "sessionQuery/listSessions")
    assert [s["header"]["id"] for s in sessions] == ["child", "s1"]
    assert sessions[1] == {"header": hdr("s1", 10, cwd="/proj"), "live": True, "persisted": False}
    filtered = await call(
        client, "sessionQuery/filterSessions", {"filters": [{"kind": "parent", "values": [None]}]}
    )
    assert [s["header"]["id"] for s in filtered] == ["s1"]

    events = await call(client, "sessionQuery/listEvents", {"sessionId": "s1"})
    assert [(e["seq"], e["type"], e["surface"]) for e in events] == [
        (0, "user/message", "shadowed"),
        (1, "assistant/chunk", "log-only"),
        (2, "assistant/message", "current"),
        (3, "session/end-seed", "log-only"),
        (4, "session/title", "log-only"),
        (5, "user/message", "current"),
    ]
    docs = await call(
        client,
        "sessionQuery/filterEvents",
        {"sessionId": "s1", "filters": [{"kind": "text", "text": "NEEDLE"}]},
    )
    assert [(d["seq"], d["text"], d["surface"]) for d in docs] == [
        (0, "find the needle", "shadowed")
    ]

    window = await call(
        client, "sessionQuery/readEvent", {"sessionId": "s1", "seq": 2, "before": 1, "after": 1}
    )
    assert (window["startSeq"], window["endSeq"], window["target"]["seq"]) == (1, 3, 2)
    surface = await call(client, "sessionQuery/readSurface", {"sessionId": "s1"})
    assert [e["seq"] for e in surface["events"]] == [2, 5] and surface["capturedThroughSeq"] == 5
    log = await call(client, "sessionQuery/readSession", {"sessionId": "s1"})
    assert len(log["events"]) == 6 and log["session"]["id"] == "s1"

    title = await call(client, "sessionQuery/readTitle", {"sessionId": "s1"})
    assert title["title"] == {
        "title": "Needle hunt",
        "messageSeqs": [0],
        "source": {"kind": "user"},
        "eventSeq": 4,
        "updatedAt": 77,
    }
    titles = await call(client, "sessionQuery/readTitles", {"sessionIds": ["child", "nope"]})
    assert titles[0] == {
        "sessionId": "child",
        "status": "fulfilled",
        "value": {
            "session": hdr("child", 11, parentSession="s1", origin="subagent", delegationDepth=1)
        },
    }
    assert (
        titles[1]["status"] == "rejected"
        and titles[1]["reason"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    )

    lineage = await call(client, "sessionQuery/traceSession", {"sessionId": "child"})
    assert lineage["complete"] is True and lineage["root"]["header"]["id"] == "s1"
    assert [a["header"]["id"] for a in lineage["ancestors"]] == ["s1"]
    top = await call(client, "sessionQuery/traceSession", {"sessionId": "s1"})
    assert [n["session"]["header"]["id"] for n in top["descendants"]] == ["child"]

    trace = await call(client, "sessionQuery/traceEvent", {"sessionId": "s1", "seq": 0})
    assert (
        trace["replacedBy"] == 2
        and trace["replacementChain"] == [2]
        and trace["derivedEventSeqs"] == [2]
    )
    assert trace["target"] == {
        "sessionId": "s1",
        "seq": 0,
        "type": "user/message",
        "time": seed[0]["time"],
        "surface": "shadowed",
    }
    current = await call(client, "sessionQuery/traceEvent", {"sessionId": "s1", "seq": 2})
    assert "replacedBy" not in current and current["replacedEventSeqs"] == [0]

    assert await call(client, "sessionStore/remove", {"sessionId": "child"}) == {}
    assert [s["header"]["id"] for s in await call(client, "sessionQuery/listSessions")] == ["s1"]


@pytest.mark.slow  # a server per case
@pytest.mark.parametrize(
    "method,params,expected",
    [
        (
            "sessionQuery/readEvent",
            {"sessionId": 5, "seq": 0},
            (-32602, "SESSION_QUERY_INVALID_REQUEST"),
        ),
        (
            "sessionQuery/readEvent",
            {"sessionId": "s", "seq": "0"},
            (-32602, "SESSION_QUERY_INVALID_REQUEST"),
        ),
        (
            "sessionQuery/readEvent",
            {"sessionId": "s", "seq": 0, "before": 51},
            (-32602, "SESSION_QUERY_INVALID_WINDOW"),
        ),
        (
            "sessionQuery/readEvent",
            {"sessionId": "s", "seq": 0, "after": None},
            (-32602, "SESSION_QUERY_INVALID_WINDOW"),
        ),
        (
            "sessionQuery/readEvent",
            {"sessionId": "s", "seq": 99},
            (-32803, "SESSION_QUERY_EVENT_NOT_FOUND"),
        ),
        (
            "sessionQuery/readEvent",
            {"sessionId": "missing", "seq": 0},
            (-32803, "SESSION_QUERY_SESSION_NOT_FOUND"),
        ),
        ("sessionQuery/filterSessions", {"filters": "x"}, (-32602, "SESSION_QUERY_INVALID_FILTER")),
        ("sessionQuery/filterSessions", {}, (-32602, "SESSION_QUERY_INVALID_FILTER")),
        (
            "sessionQuery/filterEvents",
            {"sessionId": "s", "filters": [{"kind": "text", "text": " "}]},
            (-32602, "SESSION_QUERY_INVALID_FILTER"),
        ),
        ("sessionQuery/readTitles", {"sessionIds": [1]}, (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        ("sessionQuery/listEvents", [], (-32602, "SESSION_QUERY_INVALID_REQUEST")),
        (
            "sessionStore/create",
            {"header": {"id": "x", "cwd": "rel"}},
            (-32602, "SESSION_STORE_INVALID_HEADER"),
        ),
        ("sessionStore/create", {"header": hdr("s")}, (-32803, "SESSION_STORE_DUPLICATE_SESSION")),
        (
            "sessionStore/append",
            {"sessionId": "s", "events": [{"type": "user/message", "data": {}}]},
            (-32602, "SESSION_STORE_INVALID_EVENT"),
        ),
        (
            "sessionStore/append",
            {"sessionId": "zz", "events": [{"type": "x", "data": {}}]},
            (-32803, "SESSION_STORE_SESSION_NOT_FOUND"),
        ),
        ("sessionPersistence/mount", {"uri": "ftp:/x"}, (-32602, "SESSION_QUERY_INVALID_CONFIG")),
        (
            "sessionPersistence/mount",
            {"uri": "jsonl:relative/root"},
            (-32602, "SESSION_QUERY_INVALID_CONFIG"),
        ),
        (
            "sessionPersistence/mount",
            {"uri": "jsonl:/tmp?compression=brotli"},
            (-32602, "SESSION_QUERY_INVALID_CONFIG"),
        ),
        ("sessionQuery/nope", {}, (-32601, None)),
    ],
)
async def test_error_codes(client, method, params, expected):
    await call(client, "sessionStore/create", {"header": hdr("s"), "seed": [U(0).to_value()]})
    code, data_code, message = await fails(client, method, params)
    assert (code, data_code) == expected
    assert "Traceback" not in message and "/work" not in message


async def test_persisted_error_codes_over_jsonl(client, tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("a", parentSession="b"), [U(0)])
    write_transcript(root, hdr("b", parentSession="a"), [U(0)])
    write_transcript(
        root,
        hdr("bad-surface"),
        [{"type": "user/message", "seq": 0, "time": 1, "data": user_data()}],
    )
    write_transcript(
        root,
        hdr("bad-shape"),
        [
            {
                "type": "user/message",
                "seq": 0,
                "time": 1,
                "data": {"role": "user"},
                "surfaceOp": "append",
            }
        ],
    )
    corrupt = write_transcript(root, hdr("corrupt"), [log_only("turn/start", 0, {"turn": 1})])
    corrupt.write_text(
        corrupt.read_text()
        + "{not json\n"
        + json.dumps(
            log_only("turn/end", 1, {"turn": 1, "reason": {"kind": "completed"}}).to_value()
        )
        + "\n"
    )
    write_transcript(root, hdr("shared", 5, cwd="/p"), [U(0, "persisted")])
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}"})
    expectations = [
        ("sessionQuery/traceSession", {"sessionId": "a"}, "SESSION_QUERY_INVALID_LINEAGE"),
        ("sessionQuery/listEvents", {"sessionId": "bad-surface"}, "SESSION_QUERY_INVALID_SURFACE"),
        (
            "sessionQuery/readEvent",
            {"sessionId": "bad-shape", "seq": 0},
            "SESSION_QUERY_CORRUPT_SESSION",
        ),
        ("sessionQuery/readSurface", {"sessionId": "corrupt"}, "SESSION_QUERY_CORRUPT_SESSION"),
        ("sessionQuery/readSession", {"sessionId": "bad-surface"}, "SESSION_QUERY_CORRUPT_SESSION"),
    ]
    for method, params, data_code in expectations:
        assert (await fails(client, method, params))[:2] == (-32803, data_code), method
    window = await call(client, "sessionQuery/readEvent", {"sessionId": "bad-surface", "seq": 0})
    assert window["target"]["seq"] == 0  # readEvent does not fold
    assert (await call(client, "sessionQuery/readEvent", {"sessionId": "shared", "seq": 0}))[
        "target"
    ]["data"]["content"][0]["text"] == "persisted"
    await call(client, "sessionStore/create", {"header": hdr("shared", 5, cwd="/elsewhere")})
    assert (await fails(client, "sessionQuery/listSessions", {}))[:2] == (
        -32803,
        "SESSION_QUERY_SOURCE_CONFLICT",
    )


async def test_jsonl_root_replaced_by_a_file_after_mounting(client, tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("persisted"), [U(0)])
    await call(client, "sessionStore/create", {"header": hdr("live"), "seed": [U(0).to_value()]})
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}?readOnly=true"})
    assert len(await call(client, "sessionQuery/listSessions")) == 2
    shutil.rmtree(root)
    root.write_text("not a directory")
    assert (await fails(client, "sessionQuery/listSessions", {}))[:2] == (
        -32803,
        "SESSION_QUERY_PERSISTENCE_FAILED",
    )
    assert (await fails(client, "sessionQuery/readSurface", {"sessionId": "persisted"}))[
        1
    ] == "SESSION_QUERY_PERSISTENCE_FAILED"
    surface = await call(client, "sessionQuery/readSurface", {"sessionId": "live"})
    assert [e["seq"] for e in surface["events"]] == [0]
    titles = await call(client, "sessionQuery/readTitles", {"sessionIds": ["live", "persisted"]})
    assert [t["status"] for t in titles] == ["fulfilled", "rejected"]


async def test_failing_backend_keeps_live_sessions_readable(client, tmp_path):
    await call(client, "sessionStore/create", {"header": hdr("live"), "seed": [U(0).to_value()]})
    mounted = await call(client, "sessionPersistence/mount", {"uri": "test:failing"})
    assert mounted == {
        "uri": "test:failing",
        "writable": True,
        "members": [{"uri": "test:failing", "writable": True}],
    }
    assert (await call(client, "sessionQuery/readSurface", {"sessionId": "live"}))["events"][0][
        "seq"
    ] == 0
    assert len(await call(client, "sessionQuery/listEvents", {"sessionId": "live"})) == 2
    code, data_code, message = await fails(client, "sessionQuery/listSessions", {})
    assert (code, data_code) == (-32803, "SESSION_QUERY_PERSISTENCE_FAILED")
    assert message == "session persistence listing failed: injected failure"
    assert (await fails(client, "sessionQuery/readEvent", {"sessionId": "other", "seq": 0}))[
        1
    ] == "SESSION_QUERY_PERSISTENCE_FAILED"
    await call(client, "sessionPersistence/unmount", {})
    assert [s["header"]["id"] for s in await call(client, "sessionQuery/listSessions")] == ["live"]


async def test_cancellation_awaits_the_backend_call(client, tmp_path):
    marker = tmp_path / "marker"
    await call(client, "sessionPersistence/mount", {"uri": f"test:slow:600:{marker}"})
    task = asyncio.ensure_future(call(client, "sessionQuery/listSessions"))
    await asyncio.sleep(0.2)
    request_id = max(client.protocol._request_futures)  # the id of the request in flight
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=request_id))
    with pytest.raises(JsonRpcException) as info:
        await task
    assert info.value.code == -32800
    assert info.value.data == {"code": "SESSION_QUERY_ABORTED"}
    assert info.value.message == "session query request cancelled"
    assert marker.read_text() == "list settled\n"  # answered only after the call settled
    # The server keeps serving after a cancellation.
    assert (await call(client, "sessionPersistence/status"))["uri"].startswith("test:slow")


async def test_concurrent_requests_proceed_while_one_is_slow(client, tmp_path):
    marker = tmp_path / "marker"
    await call(client, "sessionStore/create", {"header": hdr("live")})
    await call(client, "sessionPersistence/mount", {"uri": f"test:slow:800:{marker}"})
    slow = asyncio.ensure_future(call(client, "sessionQuery/listSessions"))
    await asyncio.sleep(0.1)
    fast = await call(client, "sessionQuery/listEvents", {"sessionId": "live"})
    assert fast == [] and not marker.exists()  # answered while the listing was still running
    assert len(await slow) == 1


async def test_checkpoint_persistence_status_and_commands(client):
    await call(client, "sessionStore/create", {"header": hdr("s"), "seed": [U(0).to_value()]})
    assert await call(client, "sessionStore/checkpoint", {}) == {"flushed": {}}  # nothing mounted
    await call(client, "sessionPersistence/mount", {"uri": "test:memory"})
    flushed = await call(client, "sessionStore/checkpoint", {"sessionId": "s"})
    assert flushed == {"flushed": {"s": 1}}
    status = await call(client, "sessionPersistence/status")
    assert status == {
        "uri": "test:memory",
        "writable": True,
        "pendingEvents": 0,
        "members": [{"uri": "test:memory", "writable": True}],
    }
    listed = await call(client, "sessionQuery/listSessions")
    assert listed[0]["live"] and listed[0]["persisted"]
    via_command = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="dshQuery.server.status", arguments=[{}])
    )
    assert via_command == status
    await call(client, "sessionPersistence/unmount", {})
    assert (await call(client, "sessionPersistence/status")) == {
        "uri": None,
        "writable": False,
        "pendingEvents": 0,
        "members": [],
    }


async def test_did_change_is_debounced(client):
    await call(client, "sessionStore/create", {"header": hdr("s")})
    for i in range(5):
        await call(
            client,
            "sessionStore/append",
            {"sessionId": "s", "events": [{"type": "turn/start", "data": {"turn": i}}]},
        )
    await asyncio.sleep(0.7)
    changes = client.did_change
    assert 1 <= len(changes) <= 3
    assert all("s" in c["sessionIds"] for c in changes)
    assert changes[0].get("corpus") is True


async def test_search_over_live_persisted_and_lagging(client, tmp_path):
    root = tmp_path / "root"
    write_transcript(root, hdr("persisted-only", 1), [U(0, "the needle in the archive")])
    write_transcript(root, hdr("lagging", 2), [U(0, "old needle")])
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("lagging", 2), "seed": [U(0, "old needle").to_value()]},
    )
    await call(
        client,
        "sessionStore/append",
        {
            "sessionId": "lagging",
            "events": [
                {
                    "type": "user/message",
                    "data": user_data("needle needle fresh"),
                    "surfaceOp": "append",
                }
            ],
        },
    )
    await call(
        client,
        "sessionStore/create",
        {"header": hdr("live-only", 3), "seed": [U(0, "a needle live").to_value()]},
    )
    await call(client, "sessionPersistence/mount", {"uri": f"jsonl:{root}?readOnly=true"})
    page = await call(client, "sessionQuery/searchSessions", {"query": "NEEDLE", "limit": 2})
    hits = [
        (h["header"]["id"], h["live"], h["persisted"], h["bestMatch"]["seq"]) for h in page["items"]
    ]
    assert hits[0] == (
        "lagging",
        True,
        True,
        2,
    )  # the live log (two needles) shadows its persisted copy
    assert len(hits) == 2 and "nextCursor" in page
    rest = await call(
        client,
        "sessionQuery/searchSessions",
        {"query": " NEEDLE ", "limit": 2, "cursor": page["nextCursor"]},
    )
    assert len(rest["items"]) == 1 and "nextCursor" not in rest
    events = await call(
        client, "sessionQuery/searchEvents", {"sessionId": "lagging", "query": "needle", "limit": 1}
    )
    assert (
        events["session"]["id"] == "lagging"
        and events["items"][0]["snippet"] == "needle needle fresh"
    )
    await call(
        client,
        "sessionStore/append",
        {"sessionId": "lagging", "events": [{"type": "turn/start", "data": {"turn": 1}}]},
    )
    code, data_code, _ = await fails(
        client,
        "sessionQuery/searchSessions",
        {"query": " NEEDLE ", "limit": 2, "cursor": page["nextCursor"]},
    )
    assert (code, data_code) == (-32803, "SESSION_QUERY_STALE_CURSOR")
    code, data_code, _ = await fails(
        client,
        "sessionQuery/searchEvents",
        {"sessionId": "lagging", "query": "needle", "limit": 1, "cursor": events["nextCursor"]},
    )
    assert data_code == "SESSION_QUERY_STALE_CURSOR"
    assert (await fails(client, "sessionQuery/searchSessions", {"query": "  "}))[:2] == (
        -32602,
        "SESSION_QUERY_INVALID_QUERY",
    )


@pytest_lsp.fixture(config=config("--persistence", "none"))
async def no_search_client(lsp_client: LanguageClient):
    result = await lsp_client.initialize_session(init_params({"search": {"openAt": "never"}}))
    experimental = result.capabilities.experimental
    assert isinstance(experimental, dict)
    # Kept on the client for the test: pytest-lsp fixtures hand the test the client only.
    lsp_client.search_capability = experimental["sessionQuery"]["search"]  # pyright: ignore[reportAttributeAccessIssue]
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), 10)


async def test_search_disabled(no_search_client):
    assert no_search_client.search_capability is False
    code, data_code, message = await fails(
        no_search_client, "sessionQuery/searchSessions", {"query": 5}
    )
    assert (code, data_code) == (-32803, "SESSION_QUERY_SEARCH_DISABLED")
    assert await call(no_search_client, "sessionQuery/listSessions") == []


def test_serves_over_loopback_tcp(unused_tcp_port, tmp_path):
    import socket
    import time as _time

    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    token_file.chmod(0o600)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dsh_query_server.cli",
            "serve",
            "--persistence",
            "none",
            "--tcp",
            f"127.0.0.1:{unused_tcp_port}",
            "--tcp-token-file",
            str(token_file),
        ]
    )
    try:
        deadline = _time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", unused_tcp_port), timeout=5)
                break
            except OSError:
                if _time.monotonic() > deadline:
                    raise
                _time.sleep(0.1)
        stream = sock.makefile("rwb")

        def exchange(message):
            stream.write(frame(json.dumps(message).encode()))
            stream.flush()
            while True:  # skip didChange notifications
                reply = json.loads(next_frame(stream))
                if reply.get("id") == message["id"]:
                    return reply

        init = exchange(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "capabilities": {},
                    "initializationOptions": {"index": ":memory:", "token": "s3cret-token"},
                },
            }
        )
        assert init["result"]["capabilities"]["experimental"]["sessionQuery"]["version"] == 1
        created = exchange(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "sessionStore/create",
                "params": {"header": {"id": "over-tcp", "createdAt": 1}},
            }
        )
        assert created["result"]["header"]["id"] == "over-tcp"
        listed = exchange(
            {"jsonrpc": "2.0", "id": 3, "method": "sessionQuery/listSessions", "params": {}}
        )
        assert [r["header"]["id"] for r in listed["result"]] == ["over-tcp"]
        sock.close()
    finally:
        server.kill()
        server.wait()


def test_tcp_refuses_non_loopback_addresses():
    result = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "serve", "--tcp", "0.0.0.0:7777"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0 and "loopback" in result.stderr


@pytest.mark.slow
def test_demo_never_writes_into_a_named_store(tmp_path):
    from dsh_query_server.client import StdioClient

    store = f"sqlite:{tmp_path / 'named' / 'sessions.db'}"
    for _ in range(2):  # a restart must work the same way
        with StdioClient(["--demo", "--persistence", store]) as client:
            sessions = client.request("sessionQuery/listSessions")
            assert "fix-flaky-tests" in [s["header"]["id"] for s in sessions]
            assert not any(s["persisted"] for s in sessions)  # the demo's persisted side is private
            assert client.request("sessionPersistence/status")["uri"] == store
    with StdioClient(["--demo"]) as client:
        states = {
            s["header"]["id"]: (s["live"], s["persisted"])
            for s in client.request("sessionQuery/listSessions")
        }
        assert states["release-notes-2-4"] == (False, True) and states["fix-flaky-tests"] == (
            True,
            True,
        )
