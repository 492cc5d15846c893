"""Many requests in flight on one hub connection (the MCP server's concurrent tool calls); the
command line's one-at-a-time client (client.py) stays free of threads and futures."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..client import RpcError
from .client import HubClient, HubGone


class HubChannel:
    """Many requests in flight on one initialized connection: a reader thread matches answers
    to requests by id (the MCP server's concurrent tool calls) and ``$/progress`` to the
    request whose ``workDoneToken`` it names; other notifications are dropped."""

    def __init__(self, client: HubClient) -> None:
        self.client = client
        self._pending: dict[int, Future[Any]] = {}
        self._progress: dict[Any, Callable[[Any], None]] = {}  # by workDoneToken
        self._lock = threading.Lock()
        self._gone: HubGone | None = None
        self._reader = threading.Thread(target=self._read_all, name="hub-reader", daemon=True)
        self._reader.start()

    def _read_all(self) -> None:
        try:
            while True:
                message = self.client._read()  # noqa: SLF001 - this class owns the reading
                msg_id = message.get("id")
                if message.get("method") == "$/progress":
                    self._forward(message.get("params"))
                    continue
                if "method" in message or not isinstance(msg_id, int):
                    continue
                with self._lock:
                    future = self._pending.pop(msg_id, None)
                if future is None:
                    continue
                if "error" in message:
                    future.set_exception(RpcError(message["error"]))
                else:
                    future.set_result(message.get("result"))
        except (HubGone, ValueError) as exc:
            gone = exc if isinstance(exc, HubGone) else HubGone(f"the hub sent {exc}")
            with self._lock:
                self._gone = gone
                pending, self._pending = list(self._pending.values()), {}
            for future in pending:
                future.set_exception(gone)

    def _forward(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        with self._lock:
            show = self._progress.get(params.get("token"))
        if show is not None:
            show(params.get("value"))

    def submit(
        self, method: str, params: Any, progress: Callable[[Any], None] | None = None
    ) -> tuple[int, Future[Any]]:
        """Send the request; with ``progress``, it carries a ``workDoneToken`` and each of its
        ``$/progress`` values is handed to ``progress`` until it is answered."""
        future: Future[Any] = Future()
        with self._lock:
            if self._gone is not None:
                raise self._gone
            msg_id = next(self.client._ids)  # noqa: SLF001
            self._pending[msg_id] = future
            if progress is not None:
                token = f"hub-channel-{msg_id}"
                params = {**params, "workDoneToken": token}
                self._progress[token] = progress
                future.add_done_callback(lambda _f: self._drop_progress(token))
        self.client.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id, future

    def _drop_progress(self, token: str) -> None:
        with self._lock:
            self._progress.pop(token, None)

    def cancel(self, msg_id: int) -> None:
        with contextlib.suppress(HubGone):
            self.client.notify("$/cancelRequest", {"id": msg_id})

    @property
    def gone(self) -> bool:
        return self._gone is not None

    def close(self) -> None:
        self.client.close()


__all__ = ["HubChannel"]
