"""The LSP/JSON-RPC protocol of one connection (protocol.md): envelope checks, the routing of our
methods to the dispatcher (dispatch.py) and of the LSP lifecycle to pygls, and the writes of
frames.

Every transport hands this class whole frame bodies: stdio's reader thread through ``take``,
the socket transports (sockets.py) through ``receive`` on the event loop. Each request for our
methods runs in a worker thread with its own cancellation token; the few that need no worker
(an inline method while nothing is in flight, params that are not an object) are answered by the
thread that read them, and stdio's thread hands a request for our methods straight to its worker
while the loop has caught up with everything read before it. ``$/cancelRequest`` fires the
token, so a backend call that has started is awaited and the answer is the coded -32800.

pygls handles the LSP methods (initialize, shutdown, ``workspace/executeCommand``, unknown
methods) through its public ``handle_message``; ``exit`` is ours, because pygls' own exit ends
the process and on a hub it must end only the connection. Where this still relies on how pygls
behaves: pygls_seam.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import msgspec
from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage

from ..core.runtime import Runtime
from ..progress import Tracker
from .dispatch import Dispatcher, Frame, encode_frame
from .envelope import OWN_PREFIXES, own_notification, own_request, refused_message, valid_id
from .pygls_seam import CapabilitiesProtocol, PyglsOutbound
from .registry import Method
from .rpcerrors import (
    INVALID_PARAMS,
    JSONRPC_INVALID_REQUEST,
    JSONRPC_METHOD_NOT_FOUND,
    JSONRPC_PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
)
from .workdone import title_of, tracker_for, tracker_with


class Host(Protocol):
    """What the protocol uses of the server that owns it (app.QueryServer), named here so the
    two modules do not import each other."""

    runtime: Runtime | None  # set once this connection's initialize succeeded
    dispatcher: Dispatcher
    methods: Mapping[str, Method]  # our methods (the method table, and a hub's own)

    def ended(self, code: int) -> None:
        """exit was handled (0 after a shutdown, else 1), requests in flight answered."""
        ...


class Sink(Protocol):
    """Where frames go: stdout (pygls' StdoutWriter) or an asyncio transport."""

    def write(self, data: Any, /) -> Any: ...


log = logging.getLogger("dsh_query_server")
# workspace/executeCommand's workDoneToken, for its handler (pygls hands it the arguments only).
_COMMAND_TOKEN: contextvars.ContextVar[str | int | None] = contextvars.ContextVar(
    "command_token", default=None
)

DRAIN_SECONDS = 5.0  # how long shutdown and exit wait for requests in flight to be answered
_decode = msgspec.json.decode


class QueryProtocol(CapabilitiesProtocol):
    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.host: Host = server
        self.converter = converter
        self.sink: Sink | None = None
        self._inflight = 0  # our requests handed to a worker, not yet written (under _count_lock)
        self._count_lock = threading.Lock()
        # stdio's writer blocks and is safe from any thread under _write_lock, so workers write
        # their own answers; asyncio transports are written on the event loop only.
        self.direct_writes = False
        self.closed = False  # the connection is gone: nothing more is written
        # A shutdown request was read: from then on only exit is handled (pygls' own flag is set
        # only once shutdown's handler has run, after the requests in flight are answered).
        self.shutting_down = False
        self._shutdown_answered: asyncio.Event | None = None  # set once shutdown's answer is out
        self._shutdown_id: Any = None
        self._posted = 0  # messages the stdin thread handed to the loop (stdin thread only)
        self._handled = 0  # ... and the loop has handled (loop only)
        self._write_lock = threading.Lock()  # the stdin thread and workers write too

    def set_writer(self, writer: Any, include_headers: bool = True) -> None:
        """Frames go to ``writer``; pygls' own messages reach it through the seam."""
        self.sink = writer
        super().set_writer(PyglsOutbound(self._send_pygls), include_headers=False)

    def experimental_capabilities(self) -> dict[str, Any]:
        runtime = self.host.runtime
        return {
            "sessionQuery": {
                "version": 1,
                "search": runtime is not None and runtime.config.search.open_at != "never",
                "producer": True,
                "treeViews": ["sessions", "lineage", "events", "eventTrace"],
            }
        }

    # -- reading ----------------------------------------------------------------------------------

    def take(self, body: bytearray, loop: asyncio.AbstractEventLoop) -> None:
        """The stdin thread's side of a frame. A request for our methods, read while the loop
        has handled everything read before it (so it sees that state: initialized, shut down,
        requests in flight), is answered right here (_inline) or handed straight to a worker;
        anything else goes to the loop, in order. Passing a request through the loop on its way
        to a worker cost a wake-up of the loop thread per request."""
        try:
            message = _decode(body)
        except Exception:  # noqa: BLE001 - json.loads decides on the loop (receive)
            self._post(loop, self.receive, body)
            return
        request = own_request(message, self.host.methods)
        if request is not None and self._posted == self._handled:
            try:
                if self._inline(*request) or self._submit(loop, *request):
                    return
            except Exception:  # e.g. a broken stdout
                log.exception("could not handle an incoming message")
                return
        self._post(loop, self.handle_message, message)

    def _post(
        self, loop: asyncio.AbstractEventLoop, handler: Callable[[Any], None], arg: Any
    ) -> None:
        self._posted += 1
        loop.call_soon_threadsafe(self._run_posted, handler, arg)

    def _run_posted(self, handler: Callable[[Any], None], arg: Any) -> None:
        try:
            handler(arg)
        finally:
            self._handled += 1

    def receive(self, body: bytes | bytearray) -> None:
        """One frame's body, on the event loop. msgspec first; what it refuses goes to
        json.loads, so NaN, lone surrogates and UTF-16 bodies are accepted as well."""
        try:
            try:
                message = _decode(body)
            except Exception:  # noqa: BLE001
                message = json.loads(body)
        except Exception as exc:  # noqa: BLE001 - not JSON: -32700, unless it has a usable id
            message = refused_message(body)
            if message is None:
                log.warning("unparseable message body: %s", str(exc)[:200])
                self._reject(None, JSONRPC_PARSE_ERROR, PARSE_ERROR_MESSAGE)
                return
        self.handle_message(message)

    def handle_message(self, message: Any) -> None:
        """Answer every request that has an id, whatever its shape (JSON-RPC 2.0 §5): invalid
        requests get -32600, unknown methods -32601, unstructurable LSP params -32602."""
        # Well-formed requests and notifications for our methods skip pygls entirely: the
        # dispatcher is the only path to the method table.
        request = own_request(message, self.host.methods)
        if request is not None:
            try:
                self._request(*request)
            except Exception:  # e.g. a broken stdout
                log.exception("could not handle an incoming message")
            return
        notification = own_notification(message, self.host.methods)
        if notification is not None:  # run like a request, never answered
            runtime = self.host.runtime
            if runtime is not None and not self.shutting_down:
                self.host.dispatcher.notify(notification[0], runtime, notification[1])
            return
        try:
            structured = self._structure(message)
        except Exception:  # a malformed message never stops the server
            log.exception("could not handle an incoming message")
            return
        if structured is None:
            return
        try:
            self._lsp(message, structured)
        except Exception:  # e.g. a cancel notification naming an odd id
            log.exception("could not handle an incoming message")

    def _lsp(self, message: dict[str, Any], structured: Any) -> None:
        """A structured message for pygls, after the rules pygls does not apply itself."""
        method = message.get("method")
        is_request = "id" in message and "method" in message
        if method == types.EXIT:
            asyncio.ensure_future(self._exit())
            return
        if self.shutting_down:  # the LSP rule: after shutdown only exit is handled
            log.warning("%s after shutdown ignored", method or "a response")
            return
        if is_request and method != types.INITIALIZE and self.host.runtime is None:
            self._reject(message["id"], SERVER_NOT_INITIALIZED, "server not initialized")
            return
        if is_request and method == types.SHUTDOWN:
            # At once, not when the shutdown handler runs: nothing read after shutdown may
            # start while shutdown waits for the requests in flight.
            self.shutting_down = True
            self._shutdown_id, self._shutdown_answered = message["id"], asyncio.Event()
        if type(structured) is types.CancelNotification and self._cancel(structured.params.id):
            return
        if type(structured) is types.ExecuteCommandRequest:
            # Set in this message's context only, which the command's handler task inherits: a
            # command pygls refuses leaves nothing behind for a later request of the same id.
            _COMMAND_TOKEN.set(structured.params.work_done_token)
        if type(structured) is types.WorkDoneProgressCancelNotification:
            # A work-done token of ours names its request (workdone.py); pygls knows none.
            self.host.dispatcher.tokens.cancel_progress(structured.params.token)
            return
        super().handle_message(cast(Any, structured))

    def _cancel(self, msg_id: Any) -> bool:
        """True when the cancellation is settled here: it names one of our requests in flight,
        or no request at all (null, an array, an object); else pygls looks at its own."""
        if not valid_id(msg_id) or msg_id is None:
            return True
        return self.host.dispatcher.tokens.cancel(msg_id)

    def _structure(self, data: Any) -> Any:
        if isinstance(data, list):
            ids = [
                m["id"]
                for m in data
                if isinstance(m, dict)
                and valid_id(m.get("id"))
                and m.get("id") is not None
                and "method" in m
            ]
            for msg_id in ids or [None]:
                self._reject(msg_id, JSONRPC_INVALID_REQUEST, "batch requests are not supported")
            return None
        if not isinstance(data, dict):
            self._reject(None, JSONRPC_INVALID_REQUEST, "a JSON-RPC message must be an object")
            return None
        has_id = "id" in data
        msg_id: Any = data.get("id")
        reply_id = msg_id if valid_id(msg_id) else None
        method: Any = data.get("method")
        is_response = "method" not in data and ("result" in data or "error" in data)
        bad_method = "method" in data and not isinstance(method, str)
        if data.get("jsonrpc") != "2.0" or not valid_id(msg_id) or bad_method:
            if not is_response:
                self._reject(reply_id, JSONRPC_INVALID_REQUEST, "invalid JSON-RPC 2.0 request")
            return None
        if "method" not in data and not is_response:
            self._reject(reply_id, JSONRPC_INVALID_REQUEST, "a request needs a method")
            return None
        if isinstance(method, str) and (
            method.startswith(OWN_PREFIXES) or method in self.host.methods
        ):
            # Our methods keep their params as plain JSON values; the service validates them.
            if has_id:
                params = data.get("params")
                return JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
            return JsonRPCNotification(method=method, jsonrpc="2.0", params=data.get("params"))
        try:
            return self.structure_message(data)
        except Exception:  # noqa: BLE001 - LSP params that do not fit their type
            if has_id and not is_response:
                if self._known(method):
                    self._reject(msg_id, INVALID_PARAMS, f"invalid params for {method}")
                else:
                    self._reject(msg_id, JSONRPC_METHOD_NOT_FOUND, f"method not found: {method}")
            else:
                log.warning("dropped a malformed %s", "response" if is_response else "notification")
            return None

    def _known(self, method: str) -> bool:
        """A method pygls has a handler for (a builtin LSP feature or one we registered)."""
        return method in self.fm.builtin_features or method in self.fm.features

    # -- our methods --------------------------------------------------------------------------------

    def _request(self, msg_id: Any, method: Method, params: Any) -> None:
        if self.shutting_down:  # the LSP rule: after shutdown only exit is handled
            log.warning("request %r after shutdown ignored", method.name)
            return
        runtime = self.host.runtime
        if runtime is None:
            self._reject(msg_id, SERVER_NOT_INITIALIZED, "server not initialized")
            return
        if not self._inline(msg_id, method, params):
            self._submit(asyncio.get_running_loop(), msg_id, method, params)

    def _submit(
        self, loop: asyncio.AbstractEventLoop, msg_id: Any, method: Method, params: Any
    ) -> bool:
        """Run the request in a worker thread, its token registered before the next message is
        read (so a $/cancelRequest behind it finds it); False, doing nothing, when the request
        is not for a worker: before initialize or after shutdown (the loop answers those)."""
        runtime = self.host.runtime
        if runtime is None or self.shutting_down:
            return False
        with self._count_lock:
            self._inflight += 1
        progress = tracker_for(self, loop, method.name, params, self.client_creates_progress())
        self.host.dispatcher.submit(
            msg_id, method, runtime, params, lambda frame: self._answered(loop, frame), progress
        )
        return True

    def command_progress(self, method: Method) -> tuple[Tracker, str | int | None]:
        """The progress of a ``workspace/executeCommand`` running ``method`` (on the loop, in the
        command's handler): its own workDoneToken, else one created as for any request."""
        token = _COMMAND_TOKEN.get()
        loop = asyncio.get_running_loop()
        title = title_of(method.name)
        return tracker_with(self, loop, title, token, self.client_creates_progress())

    def client_creates_progress(self) -> bool:
        """The client said ``window.workDoneProgress`` at initialize (protocol.md §8)."""
        client = self.client_capabilities
        window = client.window if client is not None else None
        return window is not None and bool(window.work_done_progress)

    def _inline(self, msg_id: Any, method: Method, params: Any) -> bool:
        """Answer now, on this thread, a request that needs no worker: an inline method while
        no request is in flight, or params that are not an object. It is answered before the
        next message is read, so no cancel can reach it (§3.0.6: it is past its last
        checkpoint); a params type failure is validation, which beats cancellation anyway."""
        runtime = self.host.runtime
        if runtime is None or self.shutting_down:
            return False
        if type(params) is dict and (self._inflight or not method.inline):
            return False
        self.write_frame(self.host.dispatcher.answer_inline(msg_id, method, runtime, params))
        return True

    def _answered(self, loop: asyncio.AbstractEventLoop, frame: Frame) -> None:
        """In the worker thread that encoded the answer: write it (whole frames under the write
        lock); without direct writes, hand the frame to the loop. Waking the loop for every
        answer cost as much as the rest of a small request."""
        if self.direct_writes:
            self._deliver(frame)
            return
        try:
            loop.call_soon_threadsafe(self._deliver, frame)
        except RuntimeError:  # the loop has closed: the client went away
            with self._count_lock:
                self._inflight -= 1

    def _deliver(self, frame: Frame) -> None:
        try:
            self.write_frame(frame)
        except Exception:  # e.g. a closed stdout: the client went away
            log.exception("could not write an answer")
        finally:
            with self._count_lock:  # after the write: status is answered inline only once it is 0
                self._inflight -= 1

    # -- lifecycle --------------------------------------------------------------------------------

    async def drain(self) -> None:
        """Shutdown, exit and a closed connection: cancel the requests in flight and wait until
        they are answered (coded -32800 once their backend call settles, §3.0.6), so none is
        left unanswered; a backend that ignores its token is waited for DRAIN_SECONDS at most."""
        self.host.dispatcher.tokens.cancel_all()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        while self._inflight and loop.time() < deadline:
            await asyncio.sleep(0.01)

    async def shutdown_answered(self) -> None:
        """Exit sent right behind shutdown: wait until shutdown's answer is written (it waits
        for the requests in flight first), at most DRAIN_SECONDS."""
        if self._shutdown_answered is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._shutdown_answered.wait(), DRAIN_SECONDS)

    async def _exit(self) -> None:
        await self.drain()  # exit without shutdown, or sent right behind it
        await self.shutdown_answered()
        self.host.ended(0 if self.shutting_down else 1)

    # -- writing ------------------------------------------------------------------------------------

    def write_frame(self, frame: Frame) -> None:
        sink = self.sink
        if not frame or sink is None or self.closed:
            return
        with self._write_lock:
            for part in frame:
                # A memoryview part (a large Raw result, dispatch.raw_result_frame) is written as
                # is: stdout's BufferedWriter and asyncio's transports take any buffer.
                sink.write(cast(bytes, part))

    def send_notification(self, method: str, params: Any) -> None:
        message = {"method": method, "jsonrpc": "2.0", "params": params}
        self.write_frame(encode_frame(message, None, answer=False))

    def _send_pygls(self, message: Any) -> None:
        """A message pygls made (pygls_seam.PyglsOutbound), framed like ours."""
        msg_id = message.get("id") if type(message) is dict else None
        self.write_frame(encode_frame(message, msg_id, answer=msg_id is not None))
        if (
            self._shutdown_answered is not None
            and type(message) is dict
            and "result" in message
            and msg_id == self._shutdown_id
        ):
            self._shutdown_answered.set()

    def _reject(self, msg_id: Any, code: int, message: str) -> None:
        error = {"error": {"code": code, "message": message}, "jsonrpc": "2.0", "id": msg_id}
        self.write_frame(encode_frame(error, msg_id))


PARSE_ERROR_MESSAGE = "parse error: the message body is not valid JSON"
