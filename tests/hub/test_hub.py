"""The hub (hub.md) over real sockets with real processes: one process per configuration key,
its files, the CLI that starts and reuses it, connections that each have their own LSP
lifecycle and share one service, hub/status and hub/stop, SIGTERM, idle exit, TCP with a token.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.builders import A, U, hdr, log_only, write_transcript
from tests.hub.hub_helpers import alive
from tests.hub.hub_wire import (
    HubProcess,
    Peer,
    dsh,
    hub_env,
    info,
    key_for,
    run_dir,
    socket_path,
    wait_until,
)

pytestmark = pytest.mark.wire

NONE = {"persistence": None, "index": ":memory:"}


def corpus(tmp_path: Path, sessions: int = 5) -> Path:
    root = tmp_path / "root"
    for i in range(sessions):
        write_transcript(
            root,
            hdr(f"s{i:02d}", 1700000000000 + i, cwd="/w"),
            [U(0, f"find the needle {i}").to_value(), A(1, f"answer {i}").to_value()],
        )
    return root


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.slow
def test_the_cli_starts_one_hub_and_every_command_reuses_it(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    root = corpus(tmp_path)
    first = dsh(env, "sessions", "--json", "--persistence", f"jsonl:{root}")
    assert first.returncode == 0, first.stderr
    assert [s["header"]["id"] for s in json.loads(first.stdout)] == [
        f"s{i:02d}" for i in range(4, -1, -1)
    ]
    options = {"persistence": f"jsonl:{root}"}
    hub = info(env, options)
    assert hub is not None and alive(hub["pid"])
    key = key_for(env, options)
    assert hub["key"] == key and hub["socket"].endswith(f"hub-{key}.sock")
    assert hub["config"]["persistence"] == f"jsonl:{root}"
    directory = run_dir(env)
    assert mode(directory) == 0o700
    assert stat.S_ISSOCK((directory / f"hub-{key}.sock").lstat().st_mode)
    for suffix in ("sock", "json", "lock", "log", "start"):
        assert mode(directory / f"hub-{key}.{suffix}") == 0o600, suffix
    again = dsh(env, "read", "s03", "0", "--after", "1", "--json", "--persistence", f"jsonl:{root}")
    assert again.returncode == 0, again.stderr
    assert [e["seq"] for e in json.loads(again.stdout)["events"]] == [0, 1]
    status = dsh(env, "hub", "status", "--json", "--persistence", f"jsonl:{root}")
    assert json.loads(status.stdout)["pid"] == hub["pid"]  # the same hub answered every command
    listed = json.loads(dsh(env, "hub", "list", "--json").stdout)
    assert [h["pid"] for h in listed] == [hub["pid"]]
    private = dsh(env, "--no-hub", "sessions", "--json", "--persistence", "none")
    assert private.returncode == 0 and json.loads(private.stdout) == []
    after = dsh(env, "sessions", "--no-hub", "--json", "--persistence", "none")
    assert after.returncode == 0 and json.loads(after.stdout) == []
    assert info(env, {"persistence": None}) is None  # --no-hub started no hub
    stopped = dsh(env, "hub", "stop", "--persistence", f"jsonl:{root}")
    assert stopped.returncode == 0 and str(hub["pid"]) in stopped.stdout
    assert wait_until(lambda: not alive(hub["pid"]))
    assert not (directory / f"hub-{key}.sock").exists()
    assert not (directory / f"hub-{key}.json").exists()
    none = dsh(env, "hub", "status", "--persistence", f"jsonl:{root}")
    assert none.returncode == 1 and "no hub is running" in none.stderr


@pytest.mark.slow
def test_a_printed_cursor_works_on_the_next_command(tmp_path: Path) -> None:
    """A nextCursor that --json printed is taken back by the next command (the same hub issued
    it); without the hub it names a server that has exited."""
    env = hub_env(tmp_path)
    root = corpus(tmp_path)
    flags = ["--persistence", f"jsonl:{root}"]
    first = dsh(env, "search", "needle", "--limit", "2", "--json", *flags)
    assert first.returncode == 0, first.stderr
    page = json.loads(first.stdout)
    cursor = page["nextCursor"]
    second = dsh(env, "search", "needle", "--limit", "2", "--cursor", cursor, "--json", *flags)
    assert second.returncode == 0, second.stderr
    following = json.loads(second.stdout)
    assert len(following["items"]) == 2 and "nextCursor" in following
    shown = {item["header"]["id"] for item in page["items"]}
    assert not shown & {item["header"]["id"] for item in following["items"]}
    private = dsh(env, "search", "needle", "--limit", "2", "--cursor", cursor, "--no-hub", *flags)
    assert private.returncode == 2
    assert "SESSION_QUERY_INVALID_CURSOR" in private.stderr and "--page N" in private.stderr


def test_connections_share_one_service(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        producer, reader = Peer(hub.socket), Peer(hub.socket)
        producer.initialize(NONE)
        reader.initialize()  # no options: the hub's own configuration
        producer.result(1, "sessionStore/create", {"header": {"id": "live-1", "createdAt": 5}})
        producer.result(
            2,
            "sessionStore/append",
            {"sessionId": "live-1", "events": [U(0, "shared needle").to_value()]},
        )
        listed = reader.result(1, "sessionQuery/listSessions")
        assert [(r["header"]["id"], r["live"]) for r in listed] == [("live-1", True)]
        for peer in (producer, reader):  # didChange reaches every initialized connection
            assert peer.notified(changed("live-1"))
        page = reader.result(2, "sessionQuery/searchSessions", {"query": "needle", "limit": 1})
        assert page["items"][0]["header"]["id"] == "live-1"
        producer.result(3, "sessionStore/create", {"header": {"id": "live-2", "createdAt": 6}})
        producer.result(
            4,
            "sessionStore/append",
            {"sessionId": "live-2", "events": [U(0, "another needle").to_value()]},
        )
        page = reader.result(3, "sessionQuery/searchSessions", {"query": "needle", "limit": 1})
        cursor = page["nextCursor"]  # one instance: a cursor made here is valid there
        follow = producer.result(
            5, "sessionQuery/searchSessions", {"query": "needle", "limit": 1, "cursor": cursor}
        )
        assert len(follow["items"]) == 1
        ids = {page["items"][0]["header"]["id"], follow["items"][0]["header"]["id"]}
        assert ids == {"live-1", "live-2"}
        producer.close()  # a connection's live sessions are the user's: they stay
        listed = reader.result(4, "sessionQuery/listSessions")
        assert {r["header"]["id"] for r in listed} == {"live-1", "live-2"}
        reader.close()


def changed(session_id: str) -> Any:
    return lambda n: (
        n["method"] == "sessionQuery/didChange" and session_id in n["params"].get("sessionIds", [])
    )


def test_each_connection_has_its_own_lifecycle(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        first, second = Peer(hub.socket), Peer(hub.socket)
        early = first.call(1, "sessionPersistence/status")
        assert early["error"]["code"] == -32002  # this connection has not initialized
        first.initialize(NONE)
        second.initialize(NONE)
        # the same request ids on both connections, answered on each
        assert first.result(1, "sessionPersistence/status")["uri"] is None
        assert second.result(1, "sessionPersistence/status")["uri"] is None
        assert first.result(2, "shutdown") is None
        first.send({"jsonrpc": "2.0", "id": 3, "method": "sessionPersistence/status"})
        first.send({"jsonrpc": "2.0", "method": "exit"})
        assert first.closed()  # exit ends the connection (the status after shutdown unanswered)
        assert second.result(2, "sessionQuery/listSessions") == []
        status = second.result(3, "hub/status")
        assert status["connections"] == 1 and status["pid"] == hub.pid
        second.close()
        assert alive(hub.pid)


def test_another_configuration_is_refused_on_that_connection(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        peer = Peer(hub.socket)
        other = {"persistence": None, "index": str(tmp_path / "other.sqlite")}
        refused = peer.call("i", "initialize", {"capabilities": {}, "initializationOptions": other})
        key = key_for(env, other)
        assert refused["error"] == {
            "code": -32602,
            "message": f"this hub serves another configuration; connect to hub {key}",
            "data": {"code": "SESSION_QUERY_INVALID_REQUEST"},
        }
        bad = peer.call(
            "j", "initialize", {"capabilities": {}, "initializationOptions": {"readWindowMax": -1}}
        )
        assert bad["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
        same = {**NONE, "readWindowMax": 50, "search": {"defaultLimit": 20}}  # resolves the same
        assert "capabilities" in peer.initialize(same)
        assert peer.result(1, "sessionPersistence/status")["uri"] is None


@pytest.mark.slow
def test_status_stop_and_sigterm(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        peer = Peer(hub.socket)
        peer.initialize()
        status = peer.result(1, "hub/status")
        assert set(status) >= {
            "pid",
            "key",
            "socket",
            "startedAt",
            "connections",
            "uptimeMs",
            "config",
            "index",
        }
        assert status["socket"] == hub.socket and status["key"] == key_for(env, NONE)
        assert status["config"]["index"] == ":memory:" and status["index"]["path"] == ":memory:"
        assert peer.result(2, "hub/stop") == {}
        assert peer.closed()
        assert hub.process.wait(30) == 0
        assert not Path(hub.socket).exists() and info(env, NONE) is None
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        peer = Peer(hub.socket)
        peer.initialize()
        os.kill(hub.pid, signal.SIGTERM)
        assert peer.closed()
        assert hub.process.wait(30) == 0
        assert not Path(hub.socket).exists() and info(env, NONE) is None


@pytest.mark.slow
def test_idle_exit_waits_for_connections_and_pending_checkpoints(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    store = {
        "persistence": f"sqlite:{tmp_path / 's.db'}",
        "index": ":memory:",
        "checkpoint": {"mode": "manual"},
    }
    with HubProcess(env, store, "--idle-exit", "1") as hub:
        peer = Peer(hub.socket)
        peer.initialize()
        time.sleep(2.5)
        assert alive(hub.pid)  # a connection is open
        peer.result(1, "sessionStore/create", {"header": {"id": "p", "createdAt": 1}})
        peer.result(2, "sessionStore/append", {"sessionId": "p", "events": [U(0, "x").to_value()]})
        peer.close()
        time.sleep(2.5)
        assert alive(hub.pid)  # nothing open, but events wait for their checkpoint
        late = Peer(hub.socket)
        late.initialize()
        assert late.result(1, "sessionStore/checkpoint", {"sessionId": "p"})["flushed"] == {"p": 0}
        late.close()
        assert hub.process.wait(30) == 0  # then it leaves by itself
    assert info(env, store) is None


@pytest.mark.slow
def test_a_hub_over_tcp_needs_the_token(tmp_path: Path, unused_tcp_port: int) -> None:
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0", "--tcp", f"127.0.0.1:{unused_tcp_port}") as hub:
        peer = Peer(hub.socket)
        peer.initialize()
        tcp = peer.result(1, "hub/status")["tcp"]
        token_file = Path(tcp["tokenFile"])
        assert tcp["port"] == unused_tcp_port and token_file.parent == run_dir(env)
        assert mode(token_file) == 0o600
        import socket as sockets

        from dsh_query_server.server.transport import frame, read_frame

        def tcp_initialize(token: str | None) -> dict[str, Any]:
            with sockets.create_connection(("127.0.0.1", unused_tcp_port), timeout=30) as conn:
                stream = conn.makefile("rwb")
                options = dict(NONE) if token is None else {**NONE, "token": token}
                body = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"capabilities": {}, "initializationOptions": options},
                }
                stream.write(frame(json.dumps(body).encode()))
                stream.flush()
                return json.loads(read_frame(stream) or b"null")

        assert tcp_initialize(None)["error"]["data"]["code"] == "SESSION_QUERY_UNAUTHORIZED"
        assert "capabilities" in tcp_initialize(token_file.read_text())["result"]
    assert not token_file.exists()  # made for this run, removed with it


def test_the_cli_path_to_a_warm_hub_loads_no_server(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    assert dsh(env, "sessions", "--json", "--persistence", "none").returncode == 0
    traced = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "dsh_query_server.cli",
            "sessions",
            "--json",
            "--persistence",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert traced.returncode == 0, traced.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[1].strip() for line in traced.stderr.splitlines() if "|" in line}
    heavy = sorted(
        m
        for m in loaded
        if m.split(".")[0] in ("pygls", "lsprotocol", "apsw", "zstandard", "rich", "cattrs")
        or m.startswith(
            (
                "dsh_query_server.server.app",
                "dsh_query_server.persistence",
                "dsh_query_server.query",
                "dsh_query_server.search",
                "dsh_query_server.session",
                "dsh_query_server.model",
            )
        )
    )
    assert heavy == []
    assert "dsh_query_server.hub.client" in loaded  # it did go through the hub


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before", "after"])
def test_no_hub_before_or_after_the_subcommand(tmp_path: Path, where: str) -> None:
    env = hub_env(tmp_path)
    args = ["sessions", "--json", "--persistence", "none"]
    args = ["--no-hub", *args] if where == "before" else [*args, "--no-hub"]
    done = dsh(env, *args)
    assert done.returncode == 0, done.stderr
    assert list(run_dir(env).glob("hub-*")) == []  # no hub was started (or even looked for)


@pytest.mark.slow
def test_json_output_is_the_same_through_the_hub(tmp_path: Path) -> None:
    """hub/render indents a result in the hub (search, surface and trace --json print it as it
    comes); each command prints what --no-hub prints."""
    env = hub_env(tmp_path)
    root = corpus(tmp_path)
    flags = ["--persistence", f"jsonl:{root}"]
    for command in (
        ["sessions"],
        ["search", "needle"],
        ["search", "needle", "--session", "s01"],
        ["surface", "s01"],
        ["trace", "s01"],
        ["trace", "s01", "1"],
    ):
        shared = dsh(env, *command, "--json", *flags)
        private = dsh(env, *command, "--json", "--no-hub", *flags)
        assert shared.returncode == private.returncode == 0, shared.stderr + private.stderr
        assert shared.stdout == private.stdout, command
        assert shared.stdout.startswith(("[\n  {\n", "{\n  ")), shared.stdout[:40]
    peer = Peer(socket_path(env, {"persistence": f"jsonl:{root}"}))
    peer.initialize()
    refused = peer.call(1, "hub/render", {"method": "hub/stop"})
    assert refused["error"]["data"]["code"] == "SESSION_QUERY_INVALID_REQUEST"
    missing = peer.call(
        2,
        "hub/render",
        {"method": "sessionQuery/readEvent", "params": {"sessionId": "nope", "seq": 0}},
    )
    assert missing["error"]["data"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    peer.close()


@pytest.mark.slow
def test_sessions_json_titles_through_the_hub(tmp_path: Path) -> None:
    """sessions --json takes its titles from hub/render's ``titles`` and prints what --no-hub
    prints, filtered and limited alike; ``titles`` with another method is refused."""
    env = hub_env(tmp_path)
    root = tmp_path / "root"
    for i, title in enumerate(["Café résumé", "   ", None, 'a "quoted" } title']):
        events = [U(0, f"find the needle {i}").to_value(), A(1, f"answer {i}").to_value()]
        if title is not None:
            data = {"title": title, "messageSeqs": [0], "source": {"kind": "user"}}
            events.append(log_only("session/title", 2, data).to_value())
        write_transcript(root, hdr(f"s{i:02d}", 1700000000000 + i, cwd=f"/w{i % 2}"), events)
    flags = ["--persistence", f"jsonl:{root}"]
    for command in (["sessions"], ["sessions", "--limit", "2"], ["sessions", "--cwd", "/w1"]):
        shared = dsh(env, *command, "--json", *flags)
        private = dsh(env, *command, "--json", "--no-hub", *flags)
        assert shared.returncode == private.returncode == 0, shared.stderr + private.stderr
        assert shared.stdout == private.stdout, command
    listed = json.loads(dsh(env, "sessions", "--json", *flags).stdout)
    assert {s["header"]["id"]: s.get("title") for s in listed} == {
        "s00": "Café résumé",
        "s01": None,  # a blank title is no title
        "s02": None,
        "s03": 'a "quoted" } title',
    }
    # A new title is seen by the next command (the hub keeps no stale rendering).
    events = [U(0, "find the needle 2").to_value(), A(1, "answer 2").to_value()]
    data = {"title": "Renamed", "messageSeqs": [0], "source": {"kind": "user"}}
    events.append(log_only("session/title", 2, data).to_value())
    write_transcript(root, hdr("s02", 1700000000002, cwd="/w0"), events)
    again = json.loads(dsh(env, "sessions", "--json", *flags).stdout)
    assert {s["header"]["id"]: s.get("title") for s in again}["s02"] == "Renamed"
    peer = Peer(socket_path(env, {"persistence": f"jsonl:{root}"}))
    peer.initialize()
    refused = peer.call(
        1,
        "hub/render",
        {"method": "sessionQuery/readTitles", "params": {"sessionIds": []}, "titles": True},
    )
    assert refused["error"]["data"]["code"] == "SESSION_QUERY_INVALID_REQUEST"
    peer.close()


def test_call_tool_checks_its_params(tmp_path: Path) -> None:
    """hub/callTool is how dsh-query mcp runs a tool in the hub (tests/test_mcp.py runs every
    tool through it); what it refuses, it refuses with the request code."""
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        peer = Peer(hub.socket)
        peer.initialize()
        good = {
            "name": "session_search",
            "arguments": {"query": "anything"},
            "workspace": {"roots": ["/w"], "base": "/w"},
            "caller": None,
            "maxResults": 5,
        }
        answer = peer.result(1, "hub/callTool", good)
        assert answer["text"].startswith(
            "No prior session matches found.\nWorkspace: /w; 0 sessions are visible there.\n"
        )
        assert answer["structured"] == {
            "items": [],
            "capped": False,
            "workspace": {"roots": ["/w"], "visibleSessions": 0},
        }
        for i, bad in enumerate(
            [
                {**good, "name": "rm_rf"},
                {**good, "arguments": []},
                {**good, "workspace": {"roots": "/w", "base": "/w"}},
                {**good, "caller": 5},
                {**good, "maxResults": 0},
            ]
        ):
            error = peer.call(10 + i, "hub/callTool", bad)["error"]
            assert (error["code"], error["data"]["code"]) == (
                -32602,
                "SESSION_QUERY_INVALID_REQUEST",
            )
        peer.close()


@pytest.mark.slow
def test_a_pipelined_initialize_that_is_refused_fails_the_request_behind_it(tmp_path: Path) -> None:
    """The command line writes its request right behind initialize (one round trip); a refused
    initialize is what that request reports."""
    from dsh_query_server.client import RpcError
    from dsh_query_server.hub.client import HubClient

    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        good = HubClient.connect(hub.socket).initialize(NONE, wait=False)
        assert good.request("sessionPersistence/status")["uri"] is None
        assert good.capabilities["experimental"]["sessionQuery"]["version"] == 1
        good.close()
        other = {"persistence": None, "index": str(tmp_path / "elsewhere.sqlite")}
        bad = HubClient.connect(hub.socket).initialize(other, wait=False)
        with pytest.raises(RpcError) as refused:
            bad.request("sessionPersistence/status")
        assert refused.value.data_code == "SESSION_QUERY_INVALID_REQUEST"
        assert "this hub serves another configuration" in refused.value.message
        bad.close()


@pytest.mark.slow
def test_a_store_the_hub_could_not_mount_is_reported_not_remounted(tmp_path: Path) -> None:
    """A command finds its hub serving without the store it names: it prints the hub's reason
    (hub/status mountFailure) and never mounts it again on the hub, which every client shares;
    a private server is asked to mount it again, as before."""
    env = hub_env(tmp_path)
    store = tmp_path / "store.db"
    store.touch(mode=0o644)  # persistence.md §5.3: a store another user could read is refused
    flags = ["--persistence", f"sqlite:{store}"]
    refused = dsh(env, "sessions", *flags)
    assert refused.returncode == 2 and refused.stdout == ""
    first = refused.stderr.splitlines()
    assert len(first) == 1 and first[0].startswith("error SESSION_QUERY_PERSISTENCE_FAILED: ")
    assert "accessible only by that user" in first[0] and "dsh-query hub stop" in first[0]
    store.chmod(0o600)  # mountable now: a mount asked for again would succeed
    again = dsh(env, "sessions", *flags)
    assert again.returncode == 2 and again.stderr.splitlines() == first
    assert dsh(env, "sessions", "--no-hub", *flags).returncode == 0
    peer = Peer(socket_path(env, {"persistence": f"sqlite:{store}"}))
    peer.initialize()
    status = peer.result(1, "hub/status")
    assert status["mountFailure"]["code"] == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert peer.result(2, "sessionPersistence/status")["uri"] is None
    peer.close()
