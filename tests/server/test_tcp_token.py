"""A TCP connection must present the token (hub.md §1): real ``serve --tcp`` processes, real
sockets. Anything before a successful initialize, or a wrong token, gets one -32600
``SESSION_QUERY_UNAUTHORIZED`` answer and the connection is closed; a refused connection does
not end the server, which then serves a client that knows the token."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_query_server.server.transport import frame, read_frame
from tests.builders import TEST_ENV

pytestmark = pytest.mark.wire

MESSAGE = "a valid token is required on this TCP connection"


def serve(port: int, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dsh_query_server.cli", "serve", "--persistence", "none"]
        + ["--tcp", f"127.0.0.1:{port}", *extra],
        stderr=subprocess.PIPE,
        env=env or TEST_ENV,
    )


def token_path(server: subprocess.Popen[bytes]) -> Path:
    assert server.stderr is not None
    line = server.stderr.readline().decode()
    assert line.startswith("dsh-query: TCP token in "), line
    return Path(line.removeprefix("dsh-query: TCP token in ").strip())


class Peer:
    def __init__(self, port: int) -> None:
        deadline = time.monotonic() + 20
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.stream = self.sock.makefile("rwb")

    def send(self, message: Any) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.stream.write(frame(body))
        self.stream.flush()

    def read(self) -> dict[str, Any] | None:
        body = read_frame(self.stream)
        return None if body is None else json.loads(body)

    def answer(self, msg_id: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            assert message is not None, "connection closed"
            if message.get("id") == msg_id and "method" not in message:
                return message

    def close(self) -> None:
        self.stream.close()
        self.sock.close()


def initialize(msg_id: Any, options: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"capabilities": {}}
    if options is not None:
        params["initializationOptions"] = options
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


@pytest.fixture
def running(unused_tcp_port: int) -> Iterator[tuple[int, str, Path]]:
    server = serve(unused_tcp_port)
    path = token_path(server)
    try:
        yield unused_tcp_port, path.read_text(), path
    finally:
        server.kill()
        server.wait()


def refused(peer: Peer, msg_id: Any) -> None:
    error = peer.read()
    assert error is not None and error["id"] == msg_id
    assert error["error"] == {
        "code": -32600,
        "message": MESSAGE,
        "data": {"code": "SESSION_QUERY_UNAUTHORIZED"},
    }
    assert peer.read() is None  # closed: nothing else is answered


REFUSED = [
    ("a request first", {"jsonrpc": "2.0", "id": 7, "method": "sessionQuery/listSessions"}, 7),
    ("no options", initialize(8, None), 8),
    ("no token", initialize(9, {"index": ":memory:"}), 9),
    ("wrong token", initialize("w", {"index": ":memory:", "token": "guess"}), "w"),
    ("token not a string", initialize(10, {"token": 12345}), 10),
    ("a notification", {"jsonrpc": "2.0", "method": "initialized", "params": {}}, None),
    ("not JSON", b"{nope", None),
]


@pytest.mark.parametrize(("why", "message", "msg_id"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_then_the_server_still_serves_the_token(
    running: tuple[int, str, Path], why: str, message: Any, msg_id: Any
) -> None:
    port, token, _ = running
    intruder = Peer(port)
    intruder.send(message)
    intruder.send({"jsonrpc": "2.0", "id": 99, "method": "sessionPersistence/status"})
    refused(intruder, msg_id)
    intruder.close()
    client = Peer(port)
    client.send(initialize(1, {"index": ":memory:", "token": token}))
    assert "capabilities" in client.answer(1)["result"]
    client.send({"jsonrpc": "2.0", "id": 2, "method": "sessionPersistence/status"})
    assert client.answer(2)["result"]["uri"] is None
    client.close()


def test_the_generated_token_is_private_and_long(running: tuple[int, str, Path]) -> None:
    port, token, path = running
    assert path.name == f"tcp-{port}.token"
    assert path.parent == Path(os.environ["XDG_RUNTIME_DIR"]) / "dsh-query"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 22 and token.isascii()  # >= 128 bits, URL-safe


def test_a_config_error_does_not_authenticate(running: tuple[int, str, Path]) -> None:
    port, token, _ = running
    peer = Peer(port)
    peer.send(initialize(1, {"token": token, "readWindowMax": -1}))
    assert peer.answer(1)["error"]["data"]["code"] == "SESSION_QUERY_INVALID_CONFIG"
    peer.send({"jsonrpc": "2.0", "id": 2, "method": "sessionPersistence/status"})
    refused(peer, 2)


@pytest.mark.slow
def test_a_token_file_of_the_user(tmp_path: Path, unused_tcp_port: int) -> None:
    path = tmp_path / "token"
    path.write_text("  my-own-token\n")
    for mode in (0o644, 0o640, 0o700):
        path.chmod(mode)
        done = subprocess.run(
            [sys.executable, "-m", "dsh_query_server.cli", "serve", "--persistence", "none"]
            + ["--tcp", f"127.0.0.1:{unused_tcp_port}", "--tcp-token-file", str(path)],
            capture_output=True,
            text=True,
            env=TEST_ENV,
            timeout=60,
        )
        assert done.returncode == 2 and str(path) in done.stderr, (mode, done.stderr)
    missing = tmp_path / "absent"
    done = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "serve", "--tcp-token-file", str(missing)]
        + ["--tcp", f"127.0.0.1:{unused_tcp_port}"],
        capture_output=True,
        text=True,
        env=TEST_ENV,
        timeout=60,
    )
    assert done.returncode == 2 and str(missing) in done.stderr
    path.chmod(0o400)
    server = serve(unused_tcp_port, "--tcp-token-file", str(path))
    try:
        peer = Peer(unused_tcp_port)
        peer.send(initialize(1, {"index": ":memory:", "token": "my-own-token"}))
        assert "capabilities" in peer.answer(1)["result"]
        peer.close()
    finally:
        server.kill()
        server.wait()
