"""The LSP/JSON-RPC protocol of the server (protocol.md): envelope checks, the routing of our
methods to the dispatcher (dispatch.py) and of the LSP lifecycle to pygls, and the writes of
frames.

On stdio a thread reads stdin with blocking reads (stdio.py) and hands messages to the event
loop in order. Each request runs in a worker thread with its own cancellation token; the few that
need no worker (an inline method while nothing is in flight, params that are not an object) are
answered by the thread that read them, which also hands a request for our methods straight to
its worker while the loop has caught up with everything read before it. ``$/cancelRequest`` fires
the token, so a backend call that has started is awaited and the answer is the coded -32800.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

import attrs
import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pygls.protocol.language_server import lsp_method

from .. import errors
from ..core.runtime import Runtime
from .dispatch import Dispatcher, Frame, encode_frame
from .envelope import OWN_PREFIXES, own_notification, own_request, refused_message, valid_id
from .registry import Method
from .rpcerrors import (
    INTERNAL,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    JSONRPC_INVALID_REQUEST,
    JSONRPC_METHOD_NOT_FOUND,
    JSONRPC_PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
)


class Host(Protocol):
    """What the protocol uses of the server that owns it (app.QueryServer), named here so the
    two modules do not import each other."""

    runtime: Runtime | None
    dispatcher: Dispatcher

    def report_server_error(self, error: Exception, source: Any) -> None: ...


log = logging.getLogger("dsh_query_server")

DRAIN_SECONDS = 5.0  # how long shutdown and exit wait for requests in flight to be answered
_decode = msgspec.json.decode


class QueryProtocol(LanguageServerProtocol):
    _server: Host  # pygls types it as its LanguageServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._inflight = 0  # our requests handed to a worker, not yet written (under _count_lock)
        self._count_lock = threading.Lock()
        # stdio's writer blocks and is safe from any thread under _write_lock, so workers write
        # their own answers; other transports (tcp) write on the event loop only.
        self.direct_writes = False
        self._shutdown_answered: asyncio.Event | None = None  # set once shutdown's answer is out
        self._shutdown_id: Any = None
        self._posted = 0  # messages the stdin thread handed to the loop (stdin thread only)
        self._handled = 0  # ... and the loop has handled (loop only)
        self._write_lock = threading.Lock()  # the stdin thread writes too

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls calls this as json.loads' object_hook, for nested objects too: a params value
        # holding a "jsonrpc" key would be turned into a message, or fail the whole message
        # unanswered. Messages are structured in handle_message, where the top level is known.
        return data

    def take(self, body: bytearray, loop: asyncio.AbstractEventLoop) -> None:
        """The stdin thread's side of a frame. A request for our methods, read while the loop
        has handled everything read before it (so it sees that state: initialized, shut down,
        requests in flight), is answered right here (_inline) or handed straight to a worker;
        anything else goes to the loop, in order. Passing a request through the loop on its way
        to a worker cost a wake-up of the loop thread per request: 3-5% of a no-change search
        over stdio at 10,000 sessions, more on a busy machine."""
        try:
            message = _decode(body)
        except Exception:  # noqa: BLE001 - json.loads decides on the loop (receive)
            self._post(loop, self.receive, body)
            return
        request = own_request(message)
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
        """One frame's body. msgspec first; what it refuses goes to json.loads, the parser pygls
        used, so NaN, lone surrogates and UTF-16 bodies are accepted exactly as before."""
        try:
            try:
                message = _decode(body)
            except Exception:  # noqa: BLE001
                message = json.loads(body)
        except Exception as exc:  # noqa: BLE001 - not JSON: -32700, unless it has a usable id
            message = refused_message(body)
            if message is None:
                log.warning("unparseable message body: %s", str(exc)[:200])
                self._server.report_server_error(exc, JsonRpcException)
                return
        self.handle_message(message)

    def handle_message(self, message: Any) -> None:
        """Answer every request that has an id, whatever its shape (JSON-RPC 2.0 §5): invalid
        requests get -32600, unknown methods -32601, unstructurable LSP params -32602."""
        # Well-formed requests and notifications for our methods skip pygls entirely: the
        # dispatcher is the only path to the method table.
        request = own_request(message)
        if request is not None:
            try:
                self._request(*request)
            except Exception:  # e.g. a broken stdout
                log.exception("could not handle an incoming message")
            return
        notification = own_notification(message)
        if notification is not None:  # run like a request, never answered
            runtime = self._server.runtime
            if runtime is not None and not self._shutdown:
                self._server.dispatcher.notify(notification[0], runtime, notification[1])
            return
        try:
            structured = self._structure(message)
        except Exception:  # a malformed message never stops the server
            log.exception("could not handle an incoming message")
            return
        if structured is None:
            return
        try:
            super().handle_message(structured)
        except Exception:  # e.g. a cancel notification naming an odd id
            log.exception("could not handle an incoming message")

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
        if isinstance(method, str) and method.startswith(OWN_PREFIXES):
            # Our methods keep their params as plain JSON values; the service validates them.
            if has_id:
                params = data.get("params")
                return JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params)
            return JsonRPCNotification(method=method, jsonrpc="2.0", params=data.get("params"))
        try:
            return super().structure_message(data)
        except Exception:  # noqa: BLE001 - LSP params that do not fit their type
            if has_id and not is_response:
                try:
                    self._get_handler(method)
                except JsonRpcException:
                    self._reject(msg_id, JSONRPC_METHOD_NOT_FOUND, f"method not found: {method}")
                else:
                    self._reject(msg_id, INVALID_PARAMS, f"invalid params for {method}")
            else:
                log.warning("dropped a malformed %s", "response" if is_response else "notification")
            return None

    def _request(self, msg_id: Any, method: Method, params: Any) -> None:
        if self._shutdown:  # pygls' rule: after shutdown only exit is handled
            log.warning("request %r after shutdown ignored", method.name)
            return
        runtime = self._server.runtime
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
        runtime = self._server.runtime
        if runtime is None or self._shutdown:
            return False
        with self._count_lock:
            self._inflight += 1
        self._server.dispatcher.submit(
            msg_id, method, runtime, params, lambda frame: self._answered(loop, frame)
        )
        return True

    def _inline(self, msg_id: Any, method: Method, params: Any) -> bool:
        """Answer now, on this thread, a request that needs no worker: an inline method while
        no request is in flight, or params that are not an object. It is answered before the
        next message is read, so no cancel can reach it (§3.0.6: it is past its last
        checkpoint); a params type failure is validation, which beats cancellation anyway."""
        runtime = self._server.runtime
        if runtime is None or self._shutdown:
            return False
        if type(params) is dict and (self._inflight or not method.inline):
            return False
        self._write(self._server.dispatcher.answer_inline(msg_id, method, runtime, params))
        return True

    def _answered(self, loop: asyncio.AbstractEventLoop, frame: Frame) -> None:
        """In the worker thread that encoded the answer: write it (whole frames under the write
        lock); without direct writes, hand the frame to the loop. Waking the loop for every
        answer cost as much as the rest of a small request."""
        if self.direct_writes:
            self._deliver(frame)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: the client went away
            loop.call_soon_threadsafe(self._deliver, frame)

    def _deliver(self, frame: Frame) -> None:
        try:
            self._write(frame)
        except Exception:  # e.g. a closed stdout: the client went away
            log.exception("could not write an answer")
        finally:
            with self._count_lock:  # after the write: status is answered inline only once it is 0
                self._inflight -= 1

    async def drain(self) -> None:
        """Shutdown and exit: cancel the requests in flight and wait until they are answered
        (coded -32800 once their backend call settles, §3.0.6), so none is left unanswered; a
        backend that ignores its token is waited for DRAIN_SECONDS at most."""
        self._server.dispatcher.tokens.cancel_all()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        while self._inflight and loop.time() < deadline:
            await asyncio.sleep(0.01)

    def _write(self, frame: Frame) -> None:
        writer = self.writer
        if not frame or writer is None:
            return
        with self._write_lock:
            for part in frame:
                # A memoryview part (a large Raw result, dispatch.raw_result_frame) is written as
                # is: stdout's BufferedWriter and asyncio's transports take any buffer.
                result = writer.write(cast(bytes, part))
                if result is not None:  # an async writer (websocket)
                    asyncio.ensure_future(result)

    def _reject(self, msg_id: Any, code: int, message: str) -> None:
        self._send_response(
            msg_id, error=JsonRpcException(message=message, code=code).to_response_error()
        )

    def send_parse_error(self) -> None:
        """JSON-RPC 2.0: a body that is not JSON is answered -32700 with a null id."""
        self._reject(None, JSONRPC_PARSE_ERROR, "parse error: the message body is not valid JSON")

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        if method_name != types.INITIALIZE and self._server.runtime is None:
            error = JsonRpcException(message="server not initialized", code=SERVER_NOT_INITIALIZED)
            self._send_response(msg_id, error=error.to_response_error())
            return
        if method_name == types.SHUTDOWN:
            # At once, not when on_shutdown runs: nothing read after shutdown may start while
            # shutdown waits for the requests in flight (or be answered by the stdin thread).
            self._shutdown = True
            self._shutdown_id, self._shutdown_answered = msg_id, asyncio.Event()
        super()._handle_request(msg_id, method_name, params)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if not valid_id(msg_id) or msg_id is None:
            return  # names no request (null, an array, an object): nothing to cancel
        if not self._server.dispatcher.tokens.cancel(msg_id):
            super()._handle_cancel_notification(msg_id)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        runtime = self._server.runtime
        search = runtime is not None and runtime.config.search.open_at != "never"
        offered = result.capabilities  # the LSP server capabilities, not persistence's
        offered.experimental = {
            "sessionQuery": {
                "version": 1,
                "search": search,
                "producer": True,
                "treeViews": ["sessions", "lineage", "events", "eventTrace"],
            }
        }
        return result

    def _send_data(self, data: Any) -> None:
        """pygls' way out (LSP lifecycle, notifications, rejections)."""
        if not data or self.writer is None:
            return
        msg_id = getattr(data, "id", None)
        try:
            payload = self._payload(data)
        except Exception:  # an unencodable result is a server bug, not a crash
            log.exception("could not encode an outgoing message")
            if msg_id is None:
                return
            payload = {"jsonrpc": "2.0", "id": msg_id, "error": INTERNAL}
        self._write(encode_frame(payload, msg_id, answer=msg_id is not None))
        if (
            self._shutdown_answered is not None
            and msg_id == self._shutdown_id
            and type(data) is JsonRPCResponseMessage
        ):
            self._shutdown_answered.set()

    async def shutdown_answered(self) -> None:
        """Exit sent right behind shutdown: wait until shutdown's answer is written (it waits
        for the requests in flight first), at most DRAIN_SECONDS."""
        if self._shutdown_answered is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._shutdown_answered.wait(), DRAIN_SECONDS)

    def _payload(self, data: Any) -> Any:
        if type(data) is JsonRPCResponseMessage:
            result = data.result
            if attrs.has(type(result)):  # LSP results (initialize) use lsprotocol's camelCase
                result = self._converter.unstructure(result)
            return {"jsonrpc": "2.0", "id": data.id, "result": result}
        if attrs.has(type(data)):
            data = self._converter.unstructure(data)
            if isinstance(data, dict) and "error" in data:
                data["id"] = data.get("id")  # an unknown id is sent as null, never omitted
                error = data["error"]
                if (
                    isinstance(error, dict)
                    and isinstance(error.get("data"), dict)
                    and "traceback" in error["data"]
                ):
                    # pygls' own internal errors carry a traceback; none may reach the wire.
                    log.error("internal error answered: %s", error.get("message"))
                    data["error"] = {
                        "code": INTERNAL_ERROR,
                        "message": "internal server error",
                        "data": {"code": errors.INTERNAL},
                    }
        return data
