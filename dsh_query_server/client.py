"""A small synchronous JSON-RPC client that starts the server over stdio, and what every client
of the command line offers (``Client``; the hub's is hub/client.py).

Used by the command line, the demo and the benchmarks. Notifications from the server are kept in
``notifications``; responses are matched by id. Light to import (the codec is loaded when a
server is started): the command line's path to a hub imports this module.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from typing import Any, Protocol

from .server.transport import frame, read_frame


class ProgressView(Protocol):
    """Shows the server's work-done progress (protocol.md §8) of each request: the command
    line's bar (cli/progress_bar.py). ``next_token`` names the next request's progress."""

    def next_token(self) -> str: ...

    def show(self, params: Any) -> None:
        """One ``$/progress`` notification's params."""
        ...

    def stop(self) -> None: ...


def with_progress(method: str, params: Any, progress: ProgressView | None) -> Any:
    """``params`` with a fresh ``workDoneToken`` when something shows progress (our methods
    only: the LSP lifecycle's take none)."""
    params = params or {}
    if progress is None or "/" not in method or not isinstance(params, dict):
        return params
    return {**params, "workDoneToken": progress.next_token()}


class Client(Protocol):
    """A connection to an initialized server: a private one (StdioClient) or a hub's."""

    notifications: list[dict[str, Any]]
    progress: ProgressView | None  # set by the command line on a terminal

    def request(self, method: str, params: Any = None) -> Any: ...

    def request_pretty(self, method: str, params: Any = None) -> bytes:
        """The result as ``--json`` prints it: JSON indented by 2, UTF-8 (a hub indents it
        itself, so a large result is never decoded here)."""
        ...

    def close(self) -> None: ...


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.error = error
        self.code = error.get("code")
        data = error.get("data")
        self.data_code = data.get("code") if isinstance(data, dict) else None
        self.message = error.get("message", "")


class StdioClient:
    process: Any  # subprocess.Popen[bytes]

    def __init__(
        self,
        args: list[str] | None = None,
        *,
        initialization_options: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        import subprocess

        from . import jsoncodec

        self._dumps, self._loads = jsoncodec.dumps, jsoncodec.loads
        command = [sys.executable, "-m", "dsh_query_server", *(args or [])]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("DSH_QUERY_SERVER_STDERR") else subprocess.DEVNULL,
            env=env,
        )
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.notifications: list[dict[str, Any]] = []
        self.progress: ProgressView | None = None
        self.capabilities = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {},
                "initializationOptions": initialization_options or {},
            },
        )["capabilities"]
        self.notify("initialized", {})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame(self._dumps(message)))
        self.process.stdin.flush()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        body = read_frame(self.process.stdout)
        if body is None:
            raise ConnectionError("the server closed its output")
        return self._loads(body)

    def notify(self, method: str, params: Any) -> None:
        with self._lock:
            self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> Any:
        with self._lock:
            msg_id = next(self._ids)
            params = with_progress(method, params, self.progress)
            self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            try:
                while True:
                    message = self._read()
                    if message.get("id") == msg_id and "method" not in message:
                        if "error" in message:
                            raise RpcError(message["error"])
                        return message.get("result")
                    if message.get("method") == "$/progress" and self.progress is not None:
                        self.progress.show(message.get("params"))
                    elif "method" in message:
                        self.notifications.append(message)
            finally:
                if self.progress is not None:
                    self.progress.stop()

    def request_pretty(self, method: str, params: Any = None) -> bytes:
        import json

        result = self.request(method, params)
        return json.dumps(result, indent=2, ensure_ascii=False).encode("utf-8", "surrogateescape")

    def close(self) -> None:
        try:
            self.request("shutdown")
            self.notify("exit", None)
            self.process.wait(10)
        except Exception:  # noqa: BLE001 - closing must not fail the caller
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> StdioClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
