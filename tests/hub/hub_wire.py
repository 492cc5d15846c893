"""Real hub processes and raw socket clients for the hub tests (hub.md), no in-process
shortcut: a hub is ``dsh-query hub`` run by the test through tests/harness_hub.py (which adds the
``test:`` backends), or started by a client as users start it; a client is a Unix socket
speaking LSP framing."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsh_query_server.hub.key import hub_key
from dsh_query_server.server.transport import frame, read_frame
from tests.builders import ROOT, TEST_ENV
from tests.hub.hub_helpers import alive, short_run_dir, stop_pid

WAIT_SECONDS = 30.0


def hub_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A private world: run directory (short), state, cache and an empty home."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        **TEST_ENV,
        "PYTHONPATH": ROOT,
        "XDG_RUNTIME_DIR": short_run_dir(),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HOME": str(home),
        "DSH_HOME": str(home / ".dsh"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "COLUMNS": "120",
        **extra,
    }


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """This process computes keys and paths as the hub of ``env`` does."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_dir(env: dict[str, str]) -> Path:
    return Path(env["XDG_RUNTIME_DIR"]) / "dsh-query"


def key_for(env: dict[str, str], options: dict[str, Any]) -> str:
    with environment(env):
        return hub_key(options)


def socket_path(env: dict[str, str], options: dict[str, Any]) -> str:
    return str(run_dir(env) / f"hub-{key_for(env, options)}.sock")


def info(env: dict[str, str], options: dict[str, Any]) -> dict[str, Any] | None:
    path = run_dir(env) / f"hub-{key_for(env, options)}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def dsh(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def wait_until(predicate: Any, timeout: float = WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class HubProcess:
    """``dsh-query hub`` run by the test in the foreground through the test harness (its stderr
    kept in a file); a client of the same configuration finds it as it would find any hub."""

    def __init__(self, env: dict[str, str], options: dict[str, Any], *flags: str) -> None:
        self.env = env
        self.options = options
        self.log = Path(env["XDG_RUNTIME_DIR"]) / "foreground.log"
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.harness_hub", *flags],
                env={**env, "DSH_QUERY_HUB_OPTIONS": json.dumps(options)},
                stdout=log,
                stderr=log,
            )
        self.socket = socket_path(env, options)
        assert wait_until(lambda: info(env, options) is not None or self.process.poll() is not None)
        assert self.process.poll() is None, self.log.read_text()

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> int:
        stop_pid(self.process.pid)
        return self.process.wait(30)

    def __enter__(self) -> HubProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        if alive(self.process.pid):
            self.stop()


class Peer:
    """One raw connection to a hub's socket; a reader thread queues what arrives."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT_SECONDS)
        self.sock.connect(path)
        self.sock.settimeout(None)
        self.stream = self.sock.makefile("rwb")
        self.notifications: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_all, daemon=True)
        self._reader.start()

    def _read_all(self) -> None:
        try:
            while (body := read_frame(self.stream)) is not None:
                self._queue.put(json.loads(body))
        except (OSError, ValueError):
            pass
        self._queue.put(None)

    def send(self, message: Any) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.send_raw(frame(body))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self, timeout: float = WAIT_SECONDS) -> dict[str, Any] | None:
        """The next message; None at the end of the stream. queue.Empty after ``timeout``."""
        message = self._queue.get(timeout=timeout)
        if message is None:
            self._queue.put(None)  # the end stays the end
        return message

    def answer(self, msg_id: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            assert message is not None, f"connection closed before answering {msg_id!r}"
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") == msg_id:
                return message

    def call(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.answer(msg_id)

    def result(self, msg_id: Any, method: str, params: Any = None) -> Any:
        answer = self.call(msg_id, method, params)
        assert "result" in answer, answer
        return answer["result"]

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        result = self.result("init", "initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    def notified(self, predicate: Any, timeout: float = WAIT_SECONDS) -> bool:
        """A notification that satisfies ``predicate`` arrived (others are kept)."""
        deadline = time.monotonic() + timeout
        while not any(predicate(n) for n in self.notifications):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                message = self.read(left)
            except queue.Empty:
                return False
            if message is None:
                return False
            if "method" in message:
                self.notifications.append(message)
        return True

    def closed(self, timeout: float = WAIT_SECONDS) -> bool:
        """The hub closed this connection: the stream ends (notifications before are kept),
        with no answer before it."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.read(max(0.0, deadline - time.monotonic()))
            if message is None:
                return True
            if "method" not in message:
                return False
            self.notifications.append(message)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.stream.close()
        with contextlib.suppress(OSError):
            self.sock.close()


__all__ = ["HubProcess", "Peer", "dsh", "hub_env", "info", "key_for", "run_dir", "socket_path"]
