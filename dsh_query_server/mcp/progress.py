"""Tool-call progress over MCP (tools.md §1, protocol.md §8 **[ours]**): when the client's
``tools/call`` carried ``_meta.progressToken``, the call's Tracker (progress.py) is shown as
``notifications/progress``.

MCP has no begin or end and wants ``progress`` to increase with each notification, so the
tracker's percentage is sent as ``progress`` of ``total`` 100, and a report that would not
increase it is not sent; the answer itself ends the call's progress. In the hub the call runs
with a tracker of its own whose LSP ``$/progress`` comes back on the hub connection
(``HubForward``) and is fed to the MCP call's tracker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from ..progress import Tracker

log = logging.getLogger("dsh_query_server.mcp")


class Session(Protocol):
    """What the sink needs of the SDK's server session."""

    async def send_progress_notification(
        self,
        progress_token: str | int,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        related_request_id: str | None = None,
    ) -> None: ...


class McpSink:
    """``notifications/progress`` for one call; called from worker threads, sent on the loop."""

    def __init__(
        self,
        session: Session,
        loop: asyncio.AbstractEventLoop,
        token: str | int,
        request_id: str | None,
    ) -> None:
        self.session = session
        self.loop = loop
        self.token = token
        self.request_id = request_id
        self._last: float | None = None

    def open(self, ready: Callable[[bool], None]) -> None:
        ready(True)

    def begin(self, title: str, message: str | None, percentage: int | None) -> None:
        self._send(float(percentage or 0), message or title)

    def report(self, message: str | None, percentage: int | None) -> None:
        if percentage is not None:
            self._send(float(percentage), message)

    def end(self, message: str) -> None:
        if message == "done":
            self._send(100.0, message)

    def _send(self, progress: float, message: str | None) -> None:
        if self._last is not None and progress <= self._last:
            return  # MCP: progress increases with each notification
        self._last = progress
        coroutine = self.session.send_progress_notification(
            self.token, progress, 100.0, message, self.request_id
        )
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except RuntimeError:  # the loop has closed: the client went away
            coroutine.close()
            return
        future.add_done_callback(_logged)


def _logged(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("progress notification not sent: %s", future.exception())


def tracker_for(
    meta: Any, session: Session, loop: asyncio.AbstractEventLoop, request_id: Any, title: str
) -> Tracker | None:
    """The call's tracker when the client asked for progress (``_meta.progressToken``)."""
    token = meta.get("progress_token") if isinstance(meta, dict) else None
    if not isinstance(token, (str, int)) or isinstance(token, bool):
        return None
    related = None if request_id is None else str(request_id)
    return Tracker(McpSink(session, loop, token, related), title)


class HubForward:
    """The hub's ``$/progress`` for one ``hub/callTool``, fed to the MCP call's tracker."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def __call__(self, value: Any) -> None:
        if not isinstance(value, dict) or value.get("kind") == "end":
            return  # the MCP call's own tracker ends with the answer
        message = value.get("message")
        percentage = value.get("percentage")
        done = percentage if isinstance(percentage, int) else None
        self.tracker.report(
            message if isinstance(message, str) else None, done, 100 if done is not None else None
        )


__all__ = ["HubForward", "McpSink", "tracker_for"]
