"""Many requests in flight on one hub connection (the MCP server's concurrent tool calls); the
command line's one-at-a-time client (client.py) stays free of threads and futures."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future
from typing import Any

from ..client import RpcError
from .client import HubClient, HubGone


class HubChannel:
    """Many requests in flight on one initialized connection: a reader thread matches answers
    to requests by id (the MCP server's concurrent tool calls); notifications are dropped."""

    def __init__(self, client: HubClient) -> None:
        self.client = client
        self._pending: dict[int, Future[Any]] = {}
        self._lock = threading.Lock()
        self._gone: HubGone | None = None
        self._reader = threading.Thread(target=self._read_all, name="hub-reader", daemon=True)
        self._reader.start()

    def _read_all(self) -> None:
        try:
            while True:
                message = self.client._read()  # noqa: SLF001 - this class owns the reading
                msg_id = message.get("id")
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

    def submit(self, method: str, params: Any) -> tuple[int, Future[Any]]:
        future: Future[Any] = Future()
        with self._lock:
            if self._gone is not None:
                raise self._gone
            msg_id = next(self.client._ids)  # noqa: SLF001
            self._pending[msg_id] = future
        self.client.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id, future

    def cancel(self, msg_id: int) -> None:
        with contextlib.suppress(HubGone):
            self.client.notify("$/cancelRequest", {"id": msg_id})

    @property
    def gone(self) -> bool:
        return self._gone is not None

    def close(self) -> None:
        self.client.close()


__all__ = ["HubChannel"]
