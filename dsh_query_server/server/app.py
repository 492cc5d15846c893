"""The JSON-RPC server (protocol.md): pygls for the LSP lifecycle, our own framing on stdio and
our own dispatch for the ``sessionQuery/*``, ``sessionStore/*`` and ``sessionPersistence/*``
requests (no pygls task, future or context per request: they cost more than the work).

On stdio a thread reads stdin with blocking reads (stdio.py) and hands messages to the event
loop in order. Each request runs in a worker thread with its own cancellation token; the few that
need no worker (methods.INLINE while nothing is in flight, params that are not an object) are
answered by the thread that read them. ``$/cancelRequest`` fires the token, so a backend call that
has started is awaited and the answer is the coded -32800. Results are encoded with msgspec.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import attrs
import msgspec
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pygls.protocol.language_server import lsp_method

from .. import __version__, errors, jsoncodec
from ..errors import QueryError
from ..cancel import CancelToken
from ..demo import RuntimeProducer, populate
from .config import ServerConfig, build_config, merge
from .methods import COMMANDS, INLINE, METHODS, Call
from .runtime import Runtime
from .stdio import serve_stdio, tune_malloc

log = logging.getLogger("dsh_query_server")

OWN_PREFIXES = ("sessionQuery/", "sessionStore/", "sessionPersistence/")
SERVER_NOT_INITIALIZED = -32002
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
REQUEST_CANCELLED = -32800
INTERNAL_ERROR = -32603
JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600
JSONRPC_METHOD_NOT_FOUND = -32601
DEBOUNCE_SECONDS = 0.25
DRAIN_SECONDS = 5.0  # how long shutdown and exit wait for requests in flight to be answered


def to_rpc_error(exc: QueryError) -> JsonRpcException:
    if exc.code == errors.ABORTED:
        number = REQUEST_CANCELLED
    elif exc.code == errors.INTERNAL:
        number = INTERNAL_ERROR
    elif exc.code in errors.VALIDATION_CODES:
        number = INVALID_PARAMS
    else:
        number = REQUEST_FAILED
    return JsonRpcException(message=exc.message, code=number, data=exc.data())


class QueryProtocol(LanguageServerProtocol):
    _server: QueryServer

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
        """The stdin thread's side of a frame: answer it right here when _inline accepts it and
        the loop has handled everything read before it (so it sees that state: initialized, shut
        down, requests in flight); otherwise hand it to the loop, in order."""
        try:
            message = _decode(body)
        except Exception:  # noqa: BLE001 - json.loads decides on the loop (receive)
            self._post(loop, self.receive, body)
            return
        request = _own_request(message)
        if request is not None and self._posted == self._handled:
            try:
                if self._inline(*request):
                    return
            except Exception:  # noqa: BLE001 - e.g. a broken stdout
                log.exception("could not handle an incoming message")
                return
        self._post(loop, self.handle_message, message)

    def _post(self, loop: asyncio.AbstractEventLoop, handler: Callable[[Any], None], arg: Any) -> None:
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
        except Exception as exc:  # noqa: BLE001 - not JSON: -32700
            log.warning("unparseable message body: %s", str(exc)[:200])
            self._server.report_server_error(exc, JsonRpcException)
            return
        self.handle_message(message)

    def handle_message(self, message: Any) -> None:
        """Answer every request that has an id, whatever its shape (JSON-RPC 2.0 §5): invalid
        requests get -32600, unknown methods -32601, unstructurable LSP params -32602."""
        # A well-formed request for one of our methods skips pygls entirely.
        request = _own_request(message)
        if request is not None:
            try:
                self._request(*request)
            except Exception:  # noqa: BLE001 - e.g. a broken stdout
                log.exception("could not handle an incoming message")
            return
        try:
            structured = self._structure(message)
        except Exception:  # noqa: BLE001 - a malformed message never stops the server
            log.exception("could not handle an incoming message")
            return
        if structured is None:
            return
        try:
            super().handle_message(structured)
        except Exception:  # noqa: BLE001 - e.g. a cancel notification naming an odd id
            log.exception("could not handle an incoming message")

    def _structure(self, data: Any) -> Any:
        if isinstance(data, list):
            ids = [m["id"] for m in data if isinstance(m, dict) and _valid_id(m.get("id"))
                   and m.get("id") is not None and "method" in m]
            for msg_id in ids or [None]:
                self._reject(msg_id, JSONRPC_INVALID_REQUEST, "batch requests are not supported")
            return None
        if not isinstance(data, dict):
            self._reject(None, JSONRPC_INVALID_REQUEST, "a JSON-RPC message must be an object")
            return None
        has_id = "id" in data
        msg_id = data.get("id")
        reply_id = msg_id if _valid_id(msg_id) else None
        method = data.get("method")
        is_response = "method" not in data and ("result" in data or "error" in data)
        if data.get("jsonrpc") != "2.0" or not _valid_id(msg_id) or ("method" in data and not isinstance(method, str)):
            if not is_response:
                self._reject(reply_id, JSONRPC_INVALID_REQUEST, "invalid JSON-RPC 2.0 request")
            return None
        if "method" not in data and not is_response:
            self._reject(reply_id, JSONRPC_INVALID_REQUEST, "a request needs a method")
            return None
        if isinstance(method, str) and method.startswith(OWN_PREFIXES):
            # Our methods keep their params as plain JSON values; the service validates them.
            if has_id:
                return JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=data.get("params"))
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

    def _request(self, msg_id: Any, method: str, call: Call, params: Any) -> None:
        if self._shutdown:  # pygls' rule: after shutdown only exit is handled
            log.warning("request %r after shutdown ignored", method)
            return
        runtime = self._server.runtime
        if runtime is None:
            self._reject(msg_id, SERVER_NOT_INITIALIZED, "server not initialized")
            return
        if self._inline(msg_id, method, call, params):
            return
        token = self._server.tokens.register(msg_id)
        with self._count_lock:
            self._inflight += 1
        self._server.executor.submit(self._work, asyncio.get_running_loop(), msg_id, call, runtime, params, token)

    def _inline(self, msg_id: Any, method: str, call: Call, params: Any) -> bool:
        """Answer now, on this thread, a request that needs no worker: an INLINE method while
        no request is in flight, or params that are not an object. It is answered before the
        next message is read, so no cancel can reach it (§3.0.6: it is past its last
        checkpoint); a params type failure is validation, which beats cancellation anyway."""
        runtime = self._server.runtime
        if runtime is None or self._shutdown:
            return False
        if type(params) is dict and (self._inflight or method not in INLINE):
            return False
        # A token of its own, never registered, so nothing fires it: a token names one request
        # (the jsonl backend shares a root survey among one request's calls).
        self._write(self._answer(msg_id, call, runtime, params, CancelToken()))
        return True

    def _work(self, loop: asyncio.AbstractEventLoop, msg_id: Any, call: Call, runtime: Runtime, params: Any,
              token: CancelToken) -> None:
        """In a worker thread: run the call, encode the answer here and write it (whole frames
        under the write lock); without direct writes, hand the frame to the loop. Waking the loop
        for every answer cost as much as the rest of a small request."""
        try:
            frame = self._answer(msg_id, call, runtime, params, token)
        finally:
            self._server.tokens.release(msg_id)
        if self.direct_writes:
            self._deliver(frame)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: the client went away
            loop.call_soon_threadsafe(self._deliver, frame)

    def _deliver(self, frame: Frame) -> None:
        try:
            self._write(frame)
        except Exception:  # noqa: BLE001 - e.g. a closed stdout: the client went away
            log.exception("could not write an answer")
        finally:
            with self._count_lock:  # after the write: status is answered inline only once it is 0
                self._inflight -= 1

    async def drain(self) -> None:
        """Shutdown and exit: cancel the requests in flight and wait until they are answered
        (coded -32800 once their backend call settles, §3.0.6), so none is left unanswered; a
        backend that ignores its token is waited for DRAIN_SECONDS at most."""
        self._server.tokens.cancel_all()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        while self._inflight and loop.time() < deadline:
            await asyncio.sleep(0.01)

    def _answer(self, msg_id: Any, call: Call, runtime: Runtime, params: Any, token: CancelToken) -> Frame:
        try:
            message = {"jsonrpc": "2.0", "id": msg_id, "result": _invoke(call, runtime, params, token)}
        except QueryError as exc:
            rpc = to_rpc_error(exc)
            error = {"code": rpc.code, "message": rpc.message}
            if rpc.data is not None:
                error["data"] = rpc.data
            message = {"jsonrpc": "2.0", "id": msg_id, "error": error}
        return _frame(message, msg_id)

    def _write(self, frame: Frame) -> None:
        writer = self.writer
        if not frame or writer is None:
            return
        with self._write_lock:
            for part in frame:
                result = writer.write(part)
                if result is not None:  # an async writer (websocket)
                    asyncio.ensure_future(result)

    def _reject(self, msg_id: Any, code: int, message: str) -> None:
        self._send_response(msg_id, error=JsonRpcException(message=message, code=code).to_response_error())

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
        if not self._server.tokens.cancel(msg_id):
            super()._handle_cancel_notification(msg_id)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        runtime = self._server.runtime
        search = runtime is not None and runtime.config.search.open_at != "never"
        result.capabilities.experimental = {
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
        except Exception:  # noqa: BLE001 - an unencodable result is a server bug, not a crash
            log.exception("could not encode an outgoing message")
            if msg_id is None:
                return
            payload = {"jsonrpc": "2.0", "id": msg_id, "error": _INTERNAL}
        self._write(_frame(payload, msg_id, answer=msg_id is not None))
        if self._shutdown_answered is not None and msg_id == self._shutdown_id and type(data) is JsonRPCResponseMessage:
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
                if isinstance(error, dict) and isinstance(error.get("data"), dict) and "traceback" in error["data"]:
                    # pygls' own internal errors carry a traceback; none may reach the wire.
                    log.error("internal error answered: %s", error.get("message"))
                    data["error"] = {"code": INTERNAL_ERROR, "message": "internal server error",
                                     "data": {"code": errors.INTERNAL}}
        return data


class Tokens:
    """Cancellation tokens of requests in flight, by JSON-RPC id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[Any, CancelToken] = {}

    def register(self, msg_id: Any) -> CancelToken:
        token = CancelToken()
        with self._lock:
            self._tokens[msg_id] = token
        return token

    def release(self, msg_id: Any) -> None:
        with self._lock:
            self._tokens.pop(msg_id, None)

    def cancel_all(self) -> None:
        with self._lock:
            tokens = list(self._tokens.values())
        for token in tokens:
            token.cancel()

    def cancel(self, msg_id: Any) -> bool:
        with self._lock:
            token = self._tokens.get(msg_id)
        if token is None:
            return False
        token.cancel()
        return True


class ChangeNotifier:
    """Debounced ``sessionQuery/didChange``: at most one notification per 250 ms."""

    def __init__(self, server: QueryServer) -> None:
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ids: set[str] = set()
        self._corpus = False
        self._scheduled = False
        self._last = 0.0

    def mark(self, session_ids: list[str], corpus: bool) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._add, session_ids, corpus)

    def _add(self, session_ids: list[str], corpus: bool) -> None:
        self._ids.update(session_ids)
        self._corpus = self._corpus or corpus
        if not self._scheduled:
            self._scheduled = True
            delay = max(0.0, self._last + DEBOUNCE_SECONDS - self.loop.time())  # type: ignore[union-attr]
            self.loop.call_later(delay, self._send)  # type: ignore[union-attr]

    def _send(self) -> None:
        self._scheduled = False
        params: dict[str, Any] = {}
        if self._ids:
            params["sessionIds"] = sorted(self._ids)
        if self._corpus:
            params["corpus"] = True
        self._ids, self._corpus = set(), False
        self._last = self.loop.time()  # type: ignore[union-attr]
        if params:
            self.server.protocol.notify("sessionQuery/didChange", params)


class QueryServer(LanguageServer):
    def __init__(self, options: dict[str, Any] | None = None, *, demo_store: str | None = None) -> None:
        super().__init__("dsh-query-server", __version__, protocol_cls=QueryProtocol)
        self.flag_options = options or {}
        self.demo_store = demo_store
        self.runtime: Runtime | None = None
        self.tokens = Tokens()
        # Threads are made on demand and reused; the ceiling is high because a backend call that
        # ignores its token must be awaited, and such calls must never starve live reads.
        self.executor = ThreadPoolExecutor(max_workers=1024, thread_name_prefix="query")
        self.notifier = ChangeNotifier(self)
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls' read loop reports a body json.loads refused with source JsonRpcException (every
        # other failure is caught in QueryProtocol.handle_message): answer it -32700.
        if source is JsonRpcException and isinstance(error, (ValueError, RecursionError, MemoryError)):
            self.protocol.send_parse_error()
            return
        # Coded failures are answers, not server errors; everything else was logged already.
        if not isinstance(error, JsonRpcException):
            log.error("server error: %s", error)

    def _register(self) -> None:
        @self.feature(types.INITIALIZE)
        def on_initialize(ls: QueryServer, params: types.InitializeParams) -> None:
            ls.activate(params.initialization_options)

        @self.feature(types.SHUTDOWN)
        async def on_shutdown(ls: QueryServer, *args: Any) -> None:
            # Requests in flight are answered before the shutdown result; pygls only cancels its
            # own futures, which our requests do not use.
            await ls.protocol.drain()
            if ls.runtime is not None:
                ls.runtime.close()

        @self.feature(types.EXIT)
        async def on_exit(ls: QueryServer, *args: Any) -> None:
            await ls.protocol.drain()  # exit without shutdown, or sent right behind it
            await ls.protocol.shutdown_answered()

        for method, call in METHODS.items():
            self.feature(method)(self._handler(call))
        for command, call in COMMANDS.items():
            self.command(command)(self._command_handler(call))

    def activate(self, init_options: Any) -> None:
        """Build the runtime from flags + initializationOptions; a bad value fails initialize."""
        try:
            config = build_config(merge(self.flag_options, init_options))
            runtime = Runtime(config, self.notifier.mark)
            runtime.start()
            if self.demo_store is not None:
                self._populate_demo(runtime, self.demo_store)
        except QueryError as exc:
            raise to_rpc_error(exc) from None
        self.notifier.loop = asyncio.get_running_loop()  # initialize runs on the event loop
        self.runtime = runtime
        # Everything alive now (modules, the runtime) lives as long as the server: move it out of
        # the collector's sight, so the full collections a large result triggers stay short.
        gc.collect()
        gc.freeze()

    @staticmethod
    def _populate_demo(runtime: Runtime, demo_store: str) -> None:
        """The demo writes its persisted side only into its own private store, so a named store
        is never touched and restarting the demo always works; the named store is mounted back
        afterwards (the demo's live sessions stay live)."""
        configured = runtime.binding.current()
        if configured is None or configured.backend.uri != demo_store:
            runtime.mount(demo_store)
        populate(RuntimeProducer(runtime))
        if configured is not None and configured.backend.uri != demo_store:
            runtime.binding.mount(configured.backend)

    def _handler(self, call: Call) -> Callable[..., Any]:
        async def handler(ls: QueryServer, params: Any) -> Any:
            return await ls.run(call, params)

        return handler

    def _command_handler(self, call: Call) -> Callable[..., Any]:
        async def handler(ls: QueryServer, *args: Any) -> Any:
            params = args[0] if args else {}
            return jsoncodec.to_builtins(await ls.run(call, params))

        return handler

    async def run(self, call: Call, params: Any) -> Any:
        msg_id = self.protocol.msg_id
        token = self.tokens.register(msg_id)
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.executor, _invoke, call, self.runtime, params, token)
        except QueryError as exc:
            raise to_rpc_error(exc) from None
        finally:
            self.tokens.release(msg_id)


def _invoke(call: Call, runtime: Runtime, params: Any, token: CancelToken) -> Any:
    try:
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise QueryError(errors.INVALID_REQUEST, "params must be an object")
        return call(runtime, params, token)
    except QueryError:
        raise
    except BaseException:  # noqa: BLE001 - a bug: log it with its traceback, answer INTERNAL
        # BaseException too: a backend raising SystemExit or another non-Exception in this worker
        # thread would otherwise escape the handler task and leave the request unanswered.
        log.exception("unexpected failure")
        raise QueryError(errors.INTERNAL, "internal server error") from None


_decode = msgspec.json.decode


def _own_request(message: Any) -> tuple[Any, str, Call, Any] | None:
    """(id, method, call, params) of a well-formed request for one of our methods, else None
    (pygls' path and _structure deal with everything else)."""
    if type(message) is dict and message.get("jsonrpc") == "2.0" and "id" in message:
        method = message.get("method")
        call = METHODS.get(method) if type(method) is str else None
        msg_id = message["id"]
        if call is not None and _valid_id(msg_id):
            params = message.get("params")
            return msg_id, method, call, {} if params is None else params
    return None


_INTERNAL = {"code": INTERNAL_ERROR, "message": "internal error", "data": {"code": errors.INTERNAL}}


# The parts of one frame, written in order under the write lock.
Frame = tuple[bytes, ...]
JOIN_BELOW = 1 << 16


def _frame(message: Any, msg_id: Any, answer: bool = True) -> Frame:
    """Header and body: one write for a small body; a large one is written after its header
    rather than copied behind it (a 10 MB listing would briefly take twice its size). A message
    that cannot be encoded is a server bug: a response becomes -32603, anything else is dropped
    (logged)."""
    try:
        body = jsoncodec.dumps(message)
    except Exception:  # noqa: BLE001
        log.exception("could not encode an outgoing message")
        if not answer:
            return ()
        body = jsoncodec.dumps({"jsonrpc": "2.0", "id": msg_id, "error": _INTERNAL})
    header = b"Content-Length: %d\r\n\r\n" % len(body)
    return (header + body,) if len(body) < JOIN_BELOW else (header, body)


def _valid_id(msg_id: Any) -> bool:
    """A JSON-RPC id: a string, a number or null (absent counts as null)."""
    return msg_id is None or isinstance(msg_id, str) or (isinstance(msg_id, (int, float)) and not isinstance(msg_id, bool))


def serve(config_options: dict[str, Any], tcp: tuple[str, int] | None = None, demo: bool = False) -> None:
    tune_malloc()
    demo_store = None
    if demo:
        # The demo's persisted side lives in a private temporary store; without a named store
        # that is also the store the server keeps mounted.
        demo_store = "sqlite:" + os.path.join(tempfile.mkdtemp(prefix="dsh-query-demo-"), "sessions.db")
        config_options.setdefault("persistence", demo_store)
        config_options.setdefault("index", ":memory:")
        config_options.setdefault("checkpoint", {"mode": "manual"})
    server = QueryServer(config_options, demo_store=demo_store)
    code: Any = 0
    try:
        if tcp is not None:
            server.start_tcp(*tcp)
        else:
            serve_stdio(server)
    except SystemExit as exc:  # pygls ends the loop this way on `exit`
        code = exc.code
    finally:
        # The client went away (exit or end of input): flush what is pending, then leave without
        # waiting for worker threads that may still sit in a hung backend call.
        if server.runtime is not None:
            server.runtime.close()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # pygls may have closed stdout already
                stream.flush()
        os._exit(code if isinstance(code, int) else 1)


__all__ = ["QueryServer", "serve", "ServerConfig"]
