"""A pipelining JSON-RPC client over a server's stdio, for the benchmarks and the wire tests.

Unlike ``dsh_query_server.client.StdioClient`` (one request at a time), this client multiplexes:
any number of threads may have requests in flight on the one connection; a reader thread matches
responses to requests by id. It can also write raw bytes (malformed frames), send cancellations,
and read the server's memory from ``/proc``. Frames are read by the
server's own transport module (dsh_query_server/server/transport.py).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

import msgspec

from dsh_query_server import jsoncodec
from dsh_query_server.server.transport import frame, read_frame

SERVER = [sys.executable, "-m", "dsh_query_server"]


class RpcError(Exception):
    """An error response; ``code``, ``data_code``, ``message`` and the raw ``error`` object."""

    def __init__(self, error: Any) -> None:
        error = error if isinstance(error, dict) else {"message": repr(error)}
        super().__init__(f"{error.get('code')} {error.get('message')}")
        self.error = error
        self.code = error.get("code")
        data = error.get("data")
        self.data = data
        self.data_code = data.get("code") if isinstance(data, dict) else None
        self.message = error.get("message", "")


class ServerGone(ConnectionError):
    pass


def encode(message: Any) -> bytes:
    return jsoncodec.dumps(message)


class WireClient:
    def __init__(
        self,
        args: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        initialization_options: dict[str, Any] | None = None,
        initialize: bool = True,
        command: list[str] | None = None,
        stderr: Any = None,
        timeout: float = 60.0,
    ) -> None:
        if stderr is None:
            stderr = None if os.environ.get("DSH_QUERY_SERVER_STDERR") else subprocess.DEVNULL
        self.process = subprocess.Popen(
            command or [*SERVER, *(args or [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            bufsize=0,
        )
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._pending: dict[Any, Future] = {}
        self._pending_lock = threading.Lock()
        self.notifications: list[dict[str, Any]] = []
        self.orphans: list[Any] = []  # responses whose id matched no request (id null, ...)
        self.undecodable: list[bytes] = []
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="wire-reader", daemon=True)
        self._reader.start()
        self.capabilities: dict[str, Any] = {}
        if initialize:
            result = self.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "capabilities": {},
                    "initializationOptions": initialization_options or {},
                },
            )
            self.capabilities = result["capabilities"]
            self.notify("initialized", {})

    # -- writing -------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.process.pid

    def send_raw(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        with self._write_lock:
            try:
                stdin.write(data)
                stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise ServerGone(str(exc)) from None

    def send(self, message: Any) -> None:
        self.send_raw(frame(encode(message)))

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def expect(self, msg_id: Any) -> Future:
        """A future for the response to ``msg_id`` (for requests written with ``send_raw``)."""
        future: Future = Future()
        with self._pending_lock:
            self._pending[_key(msg_id)] = future
        if self.closed.is_set():
            future.set_exception(ServerGone("the server closed its output"))
        return future

    def submit(self, method: str, params: Any = None, *, msg_id: Any = None) -> tuple[Any, Future]:
        """Send a request without waiting; returns (id, future of the whole response object)."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        future = self.expect(msg_id)
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return msg_id, future

    def call(self, method: str, params: Any = None, timeout: float | None = None) -> dict[str, Any]:
        """The whole response object (result or error)."""
        _, future = self.submit(method, {} if params is None else params)
        return future.result(self.timeout if timeout is None else timeout)

    def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        response = self.call(method, params, timeout)
        if "error" in response:
            raise RpcError(response["error"])
        return response.get("result")

    def cancel(self, msg_id: Any) -> None:
        self.notify("$/cancelRequest", {"id": msg_id})

    # -- reading -------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while (body := read_frame(stdout)) is not None:
                self._dispatch(body)
        finally:
            self.closed.set()
            with self._pending_lock:
                pending, self._pending = self._pending, {}
            for future in pending.values():
                if not future.done():
                    future.set_exception(ServerGone("the server closed its output"))

    def _dispatch(self, body: bytes) -> None:
        try:
            message = msgspec.json.decode(body)
        except msgspec.DecodeError:
            try:
                message = jsoncodec.loads(body)
            except ValueError:
                self.undecodable.append(body)
                return
        if not isinstance(message, dict):
            self.orphans.append(message)
            return
        if "method" in message:
            if "id" in message:  # a server-to-client request: answer it so nothing waits on us
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            self.notifications.append(message)
            return
        with self._pending_lock:
            future = self._pending.pop(_key(message.get("id")), None)
        if future is None:
            self.orphans.append(message)
        elif not future.done():
            future.set_result(message)

    # -- process ---------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.process.poll() is None

    def proc_status(self, field: str) -> int:
        """A ``/proc/<pid>/status`` field in KiB (VmRSS, VmHWM, ...); 0 once the process is gone."""
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def rss_kib(self) -> int:
        return self.proc_status("VmRSS")

    def peak_rss_kib(self) -> int:
        return self.proc_status("VmHWM")

    def close(self, timeout: float = 10.0) -> int | None:
        """Shut down politely; kill if the server does not leave within ``timeout``."""
        if self.alive():
            try:
                self.call("shutdown", None, timeout=timeout)
                self.notify("exit")
            except Exception:  # noqa: BLE001 - closing must not fail the caller
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.wait()

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.wait()

    def wait(self) -> int | None:
        try:
            code = self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        # The process has exited, so its stdout ends: let the reader see EOF before closing the
        # pipe under it (closing first made its read fail with EBADF).
        self._reader.join(5)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return code

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _key(msg_id: Any) -> Any:
    """Ids as dictionary keys: 1 and 1.0 are one JSON number; unhashable ids by their JSON."""
    if isinstance(msg_id, bool):
        return ("bool", msg_id)
    if isinstance(msg_id, float) and msg_id.is_integer():
        return int(msg_id)
    if isinstance(msg_id, (dict, list)):
        return ("json", encode(msg_id))
    return msg_id


def wait_until(predicate: Any, timeout: float, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
