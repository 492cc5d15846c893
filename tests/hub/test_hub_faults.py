"""The hub's faults (hub.md §4, issue 23) with real processes and real sockets: clients racing
to start it, ``kill -9`` mid-request, stale files, a refused socket directory, a peer of another
uid, a garbage frame beside a long search, and 20 connections × 100 requests beside a producer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.builders import A, U, hdr, write_transcript
from tests.hub.hub_helpers import alive
from tests.hub.hub_wire import HubProcess, Peer, dsh, hub_env, info, key_for, run_dir, wait_until

pytestmark = pytest.mark.wire

NONE = {"persistence": None, "index": ":memory:"}


def corpus(tmp_path: Path, sessions: int = 6) -> Path:
    root = tmp_path / "root"
    for i in range(sessions):
        write_transcript(
            root,
            hdr(f"s{i:02d}", 1700000000000 + i, cwd="/w"),
            [U(0, f"find the needle {i}").to_value(), A(1, f"answer {i}").to_value()],
        )
    return root


def hub_processes(runtime_dir: str) -> list[int]:
    """Hub processes (any state) whose environment names this run directory."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"hub" in cmdline and f"XDG_RUNTIME_DIR={runtime_dir}".encode() in environ:
            found.append(int(entry))
    return found


@pytest.mark.slow
def test_commands_started_at_the_same_instant_start_exactly_one_hub(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    root = corpus(tmp_path)
    barrier = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(barrier)!r}): time.sleep(0.001)\n"
        "from dsh_query_server.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    commands = [
        subprocess.Popen(
            [sys.executable, "-c", script, "sessions", "--json", "--persistence", f"jsonl:{root}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    barrier.touch()
    outputs = [c.communicate(timeout=120) for c in commands]
    assert [c.returncode for c in commands] == [0] * 4, [e for _, e in outputs]
    assert all(len(json.loads(out)) == 6 for out, _ in outputs)
    started = hub_processes(env["XDG_RUNTIME_DIR"])
    hub = info(env, {"persistence": f"jsonl:{root}"})
    assert hub is not None and started == [hub["pid"]]
    log = (run_dir(env) / f"hub-{hub['key']}.log").read_text()
    assert log.count("listening on") == 1 and "already running" not in log


@pytest.mark.slow
def test_kill_9_mid_request_then_the_next_command_starts_a_new_hub(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    root = corpus(tmp_path)
    flags = ["--persistence", f"jsonl:{root}"]
    options = {"persistence": f"jsonl:{root}"}
    # The hub the commands find (run through the test harness: it mounts test: backends).
    harness = HubProcess(env, options)
    searched = dsh(env, "search", "needle", "--json", *flags)  # the hub builds its index
    assert searched.returncode == 0, searched.stderr
    first = info(env, options)
    assert first is not None and first["pid"] == harness.pid
    # A request that hangs in the backend: mount a test backend on the hub, then list.
    hang = tmp_path / "hang"
    hang.mkdir()
    peer = Peer(first["socket"])
    peer.initialize()
    peer.result(1, "sessionPersistence/mount", {"uri": f"test:hang:{hang}"})
    listing = subprocess.Popen(
        [sys.executable, "-m", "dsh_query_server.cli", "sessions", "--json", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert wait_until(lambda: (hang / "list.started").exists())
    os.kill(first["pid"], signal.SIGKILL)
    out, err = listing.communicate(timeout=60)
    assert listing.returncode == 2 and out == ""
    assert err.strip() == "error: the hub closed the connection", err  # clear, one line
    assert peer.closed()
    assert wait_until(lambda: not alive(first["pid"]))
    assert Path(first["socket"]).exists()  # a dead hub's socket and json stay behind...
    again = dsh(env, "search", "needle", "--json", *flags)  # ...and never block the next start
    assert again.returncode == 0, again.stderr
    assert len(json.loads(again.stdout)["items"]) == 6  # the index is usable
    second = info(env, options)
    assert second is not None and second["pid"] != first["pid"] and alive(second["pid"])


@pytest.mark.slow
def test_a_stale_socket_and_json_never_block(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    options = {"persistence": None}
    key = key_for(env, options)
    directory = run_dir(env)
    directory.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(directory / f"hub-{key}.sock"))  # bound, never listening: ECONNREFUSED
    stale.close()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    fake = {"pid": int(dead.stdout), "key": key, "socket": str(directory / f"hub-{key}.sock")}
    (directory / f"hub-{key}.json").write_text(json.dumps(fake))
    done = dsh(env, "sessions", "--json", "--persistence", "none")
    assert done.returncode == 0, done.stderr
    hub = info(env, options)
    assert hub is not None and hub["pid"] != fake["pid"] and alive(hub["pid"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault", ["group-readable", "world-writable", "a file", "a symlink", "another owner"]
)
def test_a_socket_directory_with_a_wrong_owner_or_mode_is_refused(
    tmp_path: Path, fault: str
) -> None:
    env = hub_env(tmp_path)
    directory = run_dir(env)
    if fault == "group-readable":
        directory.mkdir(mode=0o750)
        directory.chmod(0o750)
    elif fault == "world-writable":
        directory.mkdir()
        directory.chmod(0o777)
    elif fault == "a file":
        directory.write_text("")
    elif fault == "a symlink":
        real = tmp_path / "elsewhere"
        real.mkdir(mode=0o700)
        directory.symlink_to(real)
    else:
        if os.getuid() != 0:
            pytest.skip("making a directory another user owns needs root")
        directory.mkdir(mode=0o700)
        os.chown(directory, 65534, 65534)
    done = dsh(env, "sessions", "--persistence", "none")
    assert done.returncode == 2 and str(directory) in done.stderr, done.stderr
    hub = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "hub", "--persistence", "none"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert hub.returncode == 2 and str(directory) in hub.stderr, hub.stderr
    assert list(Path(env["XDG_RUNTIME_DIR"]).glob("**/hub-*")) == []


PEER_SCRIPT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect(sys.argv[1])
body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
try:
    s.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
except OSError:
    pass
received = b""
try:
    while chunk := s.recv(65536):
        received += chunk
except OSError:
    pass
print(len(received))
"""


@pytest.mark.slow
def test_a_peer_of_another_uid_is_closed_without_a_byte(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None:
        pytest.skip("running a client as another uid needs root and util-linux setpriv")
    env = hub_env(tmp_path)
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        # Let the other user reach the socket at all (the hub checks its peer, not the mode).
        for path in (Path(env["XDG_RUNTIME_DIR"]), run_dir(env)):
            path.chmod(0o711)
        os.chmod(hub.socket, 0o666)
        script = tmp_path / "peer.py"
        script.write_text(PEER_SCRIPT)
        script.chmod(0o644)
        tmp_path.chmod(0o755)
        for parent in tmp_path.parents:
            if str(parent) in ("/", "/tmp"):
                break
            parent.chmod(parent.stat().st_mode | 0o011)
        stranger = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-I",
                str(script),
                hub.socket,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stranger.returncode == 0, stranger.stderr
        assert stranger.stdout.strip() == "0"  # closed, not a byte
        own = Peer(hub.socket)  # the hub's own user is served as ever
        assert "capabilities" in own.initialize()
        own.close()


def test_a_garbage_frame_closes_that_connection_only(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    with HubProcess(env, {"persistence": None}, "--idle-exit", "0") as hub:
        searcher, vandal = Peer(hub.socket), Peer(hub.socket)
        searcher.initialize()
        vandal.initialize()
        searcher.result(1, "sessionPersistence/mount", {"uri": f"test:gate:{gate}"})
        searcher.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "sessionQuery/searchSessions",
                "params": {"query": "seeded"},
            }
        )
        assert wait_until(lambda: any(gate.glob("*.started")))  # the search waits in the backend
        vandal.send_raw(b"GET / HTTP/1.1\r\nHost: hub\r\n\r\n")
        assert vandal.closed()
        (gate / "release").touch()
        page = searcher.answer(2)
        assert "result" in page, page
        assert searcher.result(3, "sessionPersistence/status")["uri"] == f"test:gate:{gate}"
        searcher.close()


@pytest.mark.slow
def test_twenty_connections_by_a_hundred_requests_beside_a_producer(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    connections, requests = 20, 100
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        setup = Peer(hub.socket)
        setup.initialize()
        for c in range(connections):
            events = [U(i, f"connection {c} event {i}").to_value() for i in range(requests)]
            setup.result(
                f"c{c}", "sessionStore/create", {"header": {"id": f"own-{c}", "createdAt": c}}
            )
            setup.result(
                f"a{c}", "sessionStore/append", {"sessionId": f"own-{c}", "events": events}
            )
        setup.result("p", "sessionStore/create", {"header": {"id": "produced", "createdAt": 99}})
        stop = threading.Event()
        produced: list[int] = []

        def producer() -> None:
            seq = 0
            while not stop.is_set():
                setup.result(
                    f"e{seq}",
                    "sessionStore/append",
                    {"sessionId": "produced", "events": [U(seq, "tick").to_value()]},
                )
                produced.append(seq)
                seq += 1

        failures: list[str] = []

        def client(c: int) -> None:
            peer = Peer(hub.socket)
            try:
                peer.initialize()
                for i in range(requests):  # pipelined: every id in flight at once
                    peer.send(
                        {
                            "jsonrpc": "2.0",
                            "id": i,
                            "method": "sessionQuery/readEvent",
                            "params": {"sessionId": f"own-{c}", "seq": i},
                        }
                    )
                seen: dict[int, Any] = {}
                while len(seen) < requests:
                    message = peer.read()
                    if message is None:
                        failures.append(f"connection {c} closed")
                        return
                    if "method" in message:
                        continue
                    seen[message["id"]] = message
                for i, answer in seen.items():
                    target = json.dumps(answer["result"]["target"])
                    if (
                        answer["result"]["session"]["id"] != f"own-{c}"
                        or f'connection {c} event {i}"' not in target
                    ):
                        failures.append(f"connection {c} id {i}: {str(answer)[:200]}")
            finally:
                peer.close()

        feeding = threading.Thread(target=producer)
        feeding.start()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        stop.set()
        feeding.join(60)
        assert failures == []
        assert produced  # the producer kept appending meanwhile
        length = setup.result("len", "sessionQuery/listEvents", {"sessionId": "produced"})
        assert len(length) == len(produced)
        setup.close()


@pytest.mark.slow
def test_a_request_longer_than_the_start_wait_is_not_cut_short(tmp_path: Path) -> None:
    """The client waits START_SECONDS for a socket to listen, not for an answer (a first search
    over a large store builds the index for minutes)."""
    from dsh_query_server.hub.start import START_SECONDS

    env = hub_env(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    options = {"persistence": None}
    harness = HubProcess(env, options)  # the test harness's hub: it mounts test: backends
    assert dsh(env, "sessions", "--json", "--persistence", "none").returncode == 0
    hub = info(env, options)
    assert hub is not None and hub["pid"] == harness.pid
    peer = Peer(hub["socket"])
    peer.initialize()
    peer.result(1, "sessionPersistence/mount", {"uri": f"test:gate:{gate}"})
    slow = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dsh_query_server.cli",
            "sessions",
            "--json",
            "--persistence",
            "none",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert wait_until(lambda: (gate / "list.started").exists())
    try:
        slow.wait(START_SECONDS + 1)
    except subprocess.TimeoutExpired:
        pass
    assert slow.poll() is None  # still waiting for its answer
    (gate / "release").touch()
    out, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert [s["header"]["id"] for s in json.loads(out)] == ["persisted-b", "persisted-a"]
    peer.close()
    harness.stop()


@pytest.mark.slow
def test_a_connection_that_closes_mid_request_has_its_request_cancelled(tmp_path: Path) -> None:
    env = hub_env(tmp_path)
    hang = tmp_path / "hang"
    hang.mkdir()
    with HubProcess(env, NONE, "--idle-exit", "0") as hub:
        watcher, leaver = Peer(hub.socket), Peer(hub.socket)
        watcher.initialize()
        leaver.initialize()
        watcher.result(1, "sessionPersistence/mount", {"uri": f"test:hang:{hang}"})
        leaver.send({"jsonrpc": "2.0", "id": 1, "method": "sessionQuery/listSessions"})
        assert wait_until(lambda: (hang / "list.started").exists())
        leaver.close()  # gone mid-request: its token fires, the backend call settles
        assert wait_until(lambda: (hang / "list.settled").exists())
        watcher.result(2, "sessionPersistence/unmount")
        assert watcher.result(3, "hub/status")["connections"] == 1
        watcher.close()
