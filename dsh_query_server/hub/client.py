"""A synchronous client of one hub connection (hub.md §2): LSP framing over the Unix socket,
``initialize`` with the options the hub's key was computed from, requests matched by id,
server notifications kept. Standard library only (json, socket): a command against a warm hub
loads neither msgspec nor the server.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import socket
import threading
from typing import Any

from ..client import ProgressView, RpcError, with_progress
from ..server.transport import frame, read_frame


def _frame(message: dict[str, Any]) -> bytes:
    return frame(json.dumps(message).encode("ascii"))


class HubGone(ConnectionError):
    """The hub closed the connection (it stopped, or was killed) before answering."""


class HubClient:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._reader = sock.makefile("rb")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # one request at a time (request())
        self._write_lock = threading.Lock()  # whole frames
        self.notifications: list[dict[str, Any]] = []
        self.progress: ProgressView | None = None  # set by the command line on a terminal
        self.capabilities: dict[str, Any] = {}
        self._initializing: int | None = None  # an initialize whose answer is still to read

    @classmethod
    def connect(cls, path: str, timeout: float | None = None) -> HubClient:
        """Connected, not yet initialized; OSError (FileNotFoundError, ConnectionRefusedError)
        when nothing listens at ``path``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.settimeout(None)  # a request may take long (the first search builds the index)
        except BaseException:
            sock.close()
            raise
        return cls(sock)

    def initialize(self, options: dict[str, Any] | None, wait: bool = True) -> HubClient:
        """``initialize`` then ``initialized``. Without ``wait`` the answer is read with the
        next request's (the hub handles a connection's messages in order, so a request written
        right behind initialize sees it done): a command pays one round trip, not two. A
        refused initialize then fails that next request with its own error."""
        params = {
            "processId": os.getpid(),
            "capabilities": {},
            "initializationOptions": options or {},
        }
        msg_id = next(self._ids)
        initialize = {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}
        initialized = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
        with self._write_lock:
            try:
                self.sock.sendall(_frame(initialize) + _frame(initialized))
            except OSError as exc:
                raise HubGone(f"the hub closed the connection ({exc.strerror})") from None
        self._initializing = msg_id
        if wait:
            with self._lock:
                self._answer(None)
        return self

    def _write(self, message: dict[str, Any]) -> None:
        try:
            self.sock.sendall(_frame(message))
        except OSError as exc:
            raise HubGone(f"the hub closed the connection ({exc.strerror})") from None

    def _read_body(self) -> bytes:
        try:
            body = read_frame(self._reader)
        except OSError as exc:
            raise HubGone(f"the hub closed the connection ({exc})") from None
        if body is None:
            raise HubGone("the hub closed the connection")
        return body

    def _read(self) -> dict[str, Any]:
        return json.loads(self._read_body())

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, message: dict[str, Any]) -> None:
        """Write one message (under the write lock, never waiting for an answer)."""
        with self._write_lock:
            self._write(message)

    def _answer(self, msg_id: int | None, raw: bool = False) -> Any:
        """Read up to the answer to ``msg_id`` (None: only initialize's): its result (its JSON
        text with ``raw``), or RpcError. An initialize still unanswered is answered first."""
        prefix = b'{"jsonrpc":"2.0","id":%d,"result":' % msg_id if raw and msg_id else None
        while True:
            body = self._read_body()
            if prefix is not None and body.startswith(prefix) and body.endswith(b"}"):
                return body[len(prefix) : -1]
            message = json.loads(body)
            if message.get("method") == "$/progress" and self.progress is not None:
                self.progress.show(message.get("params"))
                continue
            if "method" in message:
                self.notifications.append(message)
                continue
            answered = message.get("id")
            if answered == self._initializing:
                self._initializing = None
                if "error" in message:
                    raise RpcError(message["error"])
                self.capabilities = message["result"]["capabilities"]
                if msg_id is None:
                    return None
            elif answered == msg_id:
                if "error" in message:
                    raise RpcError(message["error"])
                result = message.get("result")
                return json.dumps(result).encode("ascii") if raw else result

    def request(self, method: str, params: Any = None) -> Any:
        with self._lock:
            msg_id = next(self._ids)
            params = with_progress(method, params, self.progress)
            self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            try:
                return self._answer(msg_id)
            finally:
                if self.progress is not None:
                    self.progress.stop()

    def request_pretty(self, method: str, params: Any = None) -> bytes:
        """The result indented by the hub (hub/render), written out as it came."""
        return self.request_raw("hub/render", {"method": method, "params": params or {}})

    def request_raw(self, method: str, params: Any = None) -> bytes:
        """The result's JSON text as the hub sent it, not decoded. The hub frames a result as
        ``{"jsonrpc":"2.0","id":N,"result":…}``; any other shape is decoded as usual."""
        with self._lock:
            msg_id = next(self._ids)
            params = with_progress(method, params, self.progress)
            self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            try:
                return self._answer(msg_id, raw=True)
            finally:
                if self.progress is not None:
                    self.progress.stop()

    def shutdown(self) -> None:
        """The LSP goodbye; the hub keeps running."""
        self.request("shutdown")
        self.notify("exit", None)

    def close(self) -> None:
        """Closing is enough: the hub cancels what this connection still had in flight. The
        socket is shut down first: a thread still reading it (an MCP server's hub reader) would
        otherwise hold the close, and the process would never exit after its stdin closed."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._reader.close()
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["HubClient", "HubGone", "RpcError"]
