"""Where ``dsh-query mcp`` runs a tool call (tools.md §1, hub.md §3): in the hub that every
client of this configuration shares (``HubTools``, the default), or in a query service of this
process (``LocalTools``, ``--no-hub``). Both run the same tool functions (bridge.run); a runner
is called in a worker thread with the call's token and returns the outcome, never raising.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from ..cancel import CancelToken
from ..core.runtime import Runtime
from ..hub.channel import HubChannel
from ..hub.client import HubGone, RpcError
from ..hub.start import HubStartError, connect
from ..model.workspace import Workspace
from ..rundir import RunDirError
from . import bridge
from .args import ToolError
from .progress import HubForward
from .tools import FAILED_MESSAGE, TOOL_FAILED, Call, Interrupted

log = logging.getLogger("dsh_query_server.mcp")

CANCEL_POLL_SECONDS = 0.02  # CancelToken has no callback: how often a waiting call looks at it
REQUEST_CANCELLED = -32800
CALL_TOOL = "hub/callTool"  # hub/handlers.py


class ToolRunner(Protocol):
    def run(
        self,
        name: str,
        arguments: dict[str, Any],
        workspace: Workspace,
        caller: str | None,
        max_results: int,
        token: CancelToken,
    ) -> Any: ...

    def close(self) -> None: ...


class LocalTools:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(
        self,
        name: str,
        arguments: dict[str, Any],
        workspace: Workspace,
        caller: str | None,
        max_results: int,
        token: CancelToken,
    ) -> Any:
        return bridge.run(
            name, Call(self.runtime, token, workspace, caller, max_results), arguments
        )

    def close(self) -> None:
        self.runtime.close()


def _failed() -> ToolError:
    return ToolError(TOOL_FAILED, FAILED_MESSAGE)


class _Retry(Exception):
    """The hub went away before answering: the call is sent once more, to a new hub."""


class HubTools:
    """Tool calls sent to the hub as ``hub/callTool`` over one connection; the call's token
    fires ``$/cancelRequest``. A hub that goes away mid-call (it was stopped or killed) is
    reached or started again and the call is sent once more: every tool is read-only."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._channel: HubChannel | None = None
        self._ensure()  # start the hub now: a wrong setup fails at start-up, not on a call

    def _ensure(self) -> HubChannel:
        with self._lock:
            channel = self._channel
            if channel is None or channel.gone:
                client = connect(self.options)
                assert client is not None
                channel = self._channel = HubChannel(client)
            return channel

    def run(
        self,
        name: str,
        arguments: dict[str, Any],
        workspace: Workspace,
        caller: str | None,
        max_results: int,
        token: CancelToken,
    ) -> Any:
        params = {
            "name": name,
            "arguments": arguments,
            "workspace": {
                "roots": list(workspace.roots),
                "base": workspace.base,
                "source": workspace.source,
            },
            "caller": caller,
            "maxResults": max_results,
        }
        for _ in range(2):
            if token.cancelled:
                return Interrupted()
            try:
                channel = self._ensure()
                forward = HubForward(token.progress) if token.progress.active else None
                msg_id, future = channel.submit(CALL_TOOL, params, forward)
                return self._outcome(channel, msg_id, future, token)
            except _Retry:
                continue
            except (HubGone, HubStartError, RunDirError, OSError) as exc:
                log.warning("the hub is unavailable: %s", exc)
                return _failed()
        return _failed()

    def _outcome(
        self, channel: HubChannel, msg_id: int, future: Future[Any], token: CancelToken
    ) -> Any:
        cancel_sent = False
        while True:
            if token.cancelled and not cancel_sent:
                channel.cancel(msg_id)
                cancel_sent = True
            try:
                result = future.result(timeout=CANCEL_POLL_SECONDS)
                break
            except FutureTimeout:
                continue
            except HubGone:
                if token.cancelled:
                    return Interrupted()
                raise _Retry() from None
            except RpcError as exc:
                if exc.code == REQUEST_CANCELLED:
                    return Interrupted()
                log.warning("hub/callTool failed: %s", exc)
                return _failed()
        if not isinstance(result, dict):
            return _failed()
        if result.get("interrupted"):
            return Interrupted()
        error = result.get("error")
        if isinstance(error, dict):
            return ToolError(str(error.get("code")), str(error.get("message")))
        return result.get("text"), result.get("structured")

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = None


__all__ = ["HubTools", "LocalTools", "ToolRunner"]
