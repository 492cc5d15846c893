"""LSP work-done progress (protocol.md §8): a request's Tracker (progress.py) shown as
``$/progress`` begin / report / end on the connection that sent it.

The token is the request's own ``workDoneToken`` when it carries one (a string or an integer:
the command line sends one); otherwise, when the client said ``window.workDoneProgress`` at
initialize (VS Code, Neovim), the server asks it to create one with
``window/workDoneProgress/create`` once the request has run past the delay, so a quick request
costs the client nothing. ``window/workDoneProgress/cancel`` for a token fires its request's
cancellation token (protocol.py routes it to ``Dispatcher.cancel_progress``).

``workspace/executeCommand`` gets the same: the command's ``workDoneToken`` (beside
``command`` and ``arguments``), else a created one; its title is the method the command runs.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Callable
from typing import Any, Protocol

from lsprotocol import types

from ..progress import NULL_TRACKER, Tracker
from .dispatch import Frame, encode_frame

_counter = itertools.count(1)


class Outbound(Protocol):
    """What the sink needs of the connection (QueryProtocol)."""

    direct_writes: bool
    closed: bool

    def write_frame(self, frame: Frame) -> None: ...

    def send_request(
        self, method: str, params: Any = None, callback: Any = None, msg_id: Any = None
    ) -> asyncio.Future[Any] | Any: ...


def progress_token(params: Any) -> str | int | None:
    """The request's ``workDoneToken`` when it is one LSP allows (an integer or a string)."""
    if type(params) is not dict:
        return None
    token = params.get("workDoneToken")
    if type(token) is str or type(token) is int:
        return token
    return None


def title_of(method: str, params: Any = None) -> str:
    """What the client shows as the progress' title: the method's name without its namespace;
    for a request that runs another method (``hub/render``'s ``method``), that method's."""
    inner = params.get("method") if type(params) is dict else None
    if type(inner) is str and "/" in inner:
        method = inner
    return f"dsh-query {method.rsplit('/', 1)[-1]}"


class LspSink:
    """``$/progress`` for one token on one connection. Frames are written by the caller's
    thread when the connection writes directly (stdio), else on the event loop, in order."""

    def __init__(
        self,
        out: Outbound,
        loop: asyncio.AbstractEventLoop,
        token: str | int,
        create: bool,
        cancellable: bool,
        closed: Callable[[], None] | None = None,
    ) -> None:
        self.out = out
        self.loop = loop
        self.token = token
        self.create = create
        self.cancellable = cancellable
        self._closed = closed  # called once the token is done with: ended, or never opened

    def open(self, ready: Callable[[bool], None]) -> None:
        if not self.create:
            ready(True)
            return

        def created(ok: bool) -> None:
            if not ok:
                self._close()
            ready(ok)

        try:
            self.loop.call_soon_threadsafe(self._create, created)
        except RuntimeError:  # the loop has closed: the client went away
            created(False)

    def _create(self, ready: Callable[[bool], None]) -> None:
        if self.out.closed:
            ready(False)
            return
        params = types.WorkDoneProgressCreateParams(token=self.token)
        future = self.out.send_request(types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)
        future.add_done_callback(lambda f: ready(not f.cancelled() and f.exception() is None))

    def begin(self, title: str, message: str | None, percentage: int | None) -> None:
        value: dict[str, Any] = {"kind": "begin", "title": title, "cancellable": self.cancellable}
        self._send(value, message, percentage)

    def report(self, message: str | None, percentage: int | None) -> None:
        self._send({"kind": "report"}, message, percentage)

    def end(self, message: str) -> None:
        self._send({"kind": "end", "message": message}, None, None)
        self._close()

    def _close(self) -> None:
        closed, self._closed = self._closed, None
        if closed is not None:
            closed()

    def _send(self, value: dict[str, Any], message: str | None, percentage: int | None) -> None:
        if message is not None:
            value["message"] = message
        if percentage is not None:
            value["percentage"] = percentage
        notification = {
            "jsonrpc": "2.0",
            "method": "$/progress",
            "params": {"token": self.token, "value": value},
        }
        frame = encode_frame(notification, None, answer=False)
        if self.out.direct_writes:
            self.out.write_frame(frame)
            return
        try:
            self.loop.call_soon_threadsafe(self.out.write_frame, frame)
        except RuntimeError:  # the loop has closed: the client went away
            pass


def tracker_for(
    out: Outbound,
    loop: asyncio.AbstractEventLoop,
    method: str,
    params: Any,
    client_creates: bool,
) -> tuple[Tracker, str | int | None]:
    """The request's tracker and its token: the one it sent, else one the server creates when
    the client supports that, else none (NULL_TRACKER)."""
    return tracker_with(out, loop, title_of(method, params), progress_token(params), client_creates)


def tracker_with(
    out: Outbound,
    loop: asyncio.AbstractEventLoop,
    title: str,
    token: str | int | None,
    client_creates: bool,
    delay: float | None = None,
    closed: Callable[[str | int], None] | None = None,
) -> tuple[Tracker, str | int | None]:
    """``tracker_for`` with the token already found: ``workspace/executeCommand`` carries its
    ``workDoneToken`` beside the command, not in the argument the method reads. ``delay``: as
    ``Tracker``'s (0 for a viewer of work that has waited already, progress.Broadcast).
    ``closed(token)``: once the token is done with (its end sent, or the client refused it)."""
    create = False
    if token is None:
        if not client_creates:
            return NULL_TRACKER, None
        token = f"dsh-query-{os.getpid()}-{next(_counter)}"
        create = True
    done = token
    on_close = None if closed is None else (lambda: closed(done))
    sink = LspSink(out, loop, token, create, cancellable=True, closed=on_close)
    return Tracker(sink, title, delay), token


__all__ = ["LspSink", "progress_token", "title_of", "tracker_for", "tracker_with"]
