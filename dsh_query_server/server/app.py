"""The JSON-RPC server (protocol.md): pygls for framing and the LSP lifecycle, our own dispatch
for the ``sessionQuery/*``, ``sessionStore/*`` and ``sessionPersistence/*`` methods.

Each request runs in a worker thread with its own cancellation token. ``$/cancelRequest`` fires
the token instead of cancelling the asyncio task, so a backend call that has started is awaited
and the answer is the coded -32800. Results are encoded with msgspec.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage
from pygls.protocol.language_server import lsp_method

from .. import __version__, errors, jsoncodec
from ..errors import QueryError
from ..persistence.base import CancelToken
from ..demo import RuntimeProducer, populate
from .config import ServerConfig, build_config, merge
from .methods import COMMANDS, METHODS, Call
from .runtime import Runtime

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

    def structure_message(self, data: dict[str, Any]) -> Any:
        # pygls calls this as json.loads' object_hook, for nested objects too: a params value
        # holding a "jsonrpc" key would be turned into a message, or fail the whole message
        # unanswered. Messages are structured in handle_message, where the top level is known.
        return data

    def handle_message(self, message: Any) -> None:
        """Answer every request that has an id, whatever its shape (JSON-RPC 2.0 §5): invalid
        requests get -32600, unknown methods -32601, unstructurable LSP params -32602."""
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
        if not data or self.writer is None:
            return
        try:
            body = jsoncodec.dumps(self._payload(data))
        except Exception:  # noqa: BLE001 - an unencodable result is a server bug, not a crash
            log.exception("could not encode an outgoing message")
            msg_id = getattr(data, "id", None)
            if msg_id is None:
                return
            body = jsoncodec.dumps(
                {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INTERNAL_ERROR, "message": "internal error",
                                                           "data": {"code": errors.INTERNAL}}}
            )
        header = f"Content-Length: {len(body)}\r\n\r\n".encode("ascii")
        result = self.writer.write(header + body)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            asyncio.ensure_future(result)

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
        def on_shutdown(ls: QueryServer, *args: Any) -> None:
            if ls.runtime is not None:
                ls.runtime.close()

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


def _valid_id(msg_id: Any) -> bool:
    """A JSON-RPC id: a string, a number or null (absent counts as null)."""
    return msg_id is None or isinstance(msg_id, str) or (isinstance(msg_id, (int, float)) and not isinstance(msg_id, bool))


class _ChunkedReads:
    """stdin for pygls' read loop. pygls reads a body with one ``read(Content-Length)``, which
    allocates the announced size up front: a header announcing 10**17 bytes raised MemoryError
    and ended the server. Reading in bounded pieces only holds the bytes that actually arrive."""

    PIECE = 1 << 20

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def readline(self) -> bytes:
        return self._stream.readline()

    def read(self, size: int) -> bytes:
        if size <= self.PIECE:
            return self._stream.read(size)
        pieces, remaining = [], size
        while remaining > 0:
            piece = self._stream.read(min(remaining, self.PIECE))
            if not piece:
                break
            pieces.append(piece)
            remaining -= len(piece)
        return b"".join(pieces)


def _serve_stdio_pipe(server: QueryServer) -> bool:
    """Serve stdio with asyncio's own pipe reader when stdin is a pipe or socket (what editors
    give us). pygls' default reader hands every header line and body to a worker thread; reading
    on the event loop saves those hops on every request. Returns False when stdin cannot be
    watched by the loop (a regular file), so the caller falls back to pygls' reader."""
    import stat as _stat

    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    if not (_stat.S_ISFIFO(mode) or _stat.S_ISSOCK(mode)):
        return False

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
        await run_async(stop_event=server._stop_event, reader=reader, protocol=server.protocol,
                        logger=log, error_handler=server.report_server_error)

    server._stop_event = threading.Event()
    try:
        asyncio.run(main())
    except (BrokenPipeError, ConnectionResetError):
        log.error("the client closed the connection")
    finally:
        server.shutdown()
    return True


def serve(config_options: dict[str, Any], tcp: tuple[str, int] | None = None, demo: bool = False) -> None:
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
        elif not _serve_stdio_pipe(server):
            server.start_io(stdin=_ChunkedReads(sys.stdin.buffer))  # type: ignore[arg-type]
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
