"""The JSON-RPC server (protocol.md): pygls for the LSP lifecycle and ``workspace/executeCommand``;
our own framing (transport.py, stdio.py), envelope checks and routing (protocol.py) and one
dispatch path for the method table (dispatch.py, methods.py, handlers/); ``sessionQuery/didChange`` from
notifier.py. Results are encoded with msgspec.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from .. import __version__, jsoncodec
from ..core.config import ServerConfig, build_config, merge
from ..core.runtime import Runtime
from ..errors import QueryError
from .dispatch import Dispatcher
from .methods import COMMANDS
from .notifier import ChangeNotifier
from .protocol import QueryProtocol
from .registry import Method
from .rpcerrors import SERVER_NOT_INITIALIZED, to_rpc_error
from .stdio import serve_stdio, tune_malloc

log = logging.getLogger("dsh_query_server")

# Runs once the runtime is up, before the server answers anything but initialize (serve --demo).
Preload = Callable[[Runtime], None]


class QueryServer(LanguageServer):
    protocol: QueryProtocol

    def __init__(
        self, options: dict[str, Any] | None = None, *, preload: Preload | None = None
    ) -> None:
        super().__init__("dsh-query-server", __version__, protocol_cls=QueryProtocol)
        self.flag_options = options or {}
        self.preload = preload
        self.runtime: Runtime | None = None
        self.dispatcher = Dispatcher()
        self.notifier = ChangeNotifier(lambda method, params: self.protocol.notify(method, params))
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls' read loop reports a body json.loads refused with source JsonRpcException (every
        # other failure is caught in QueryProtocol.handle_message): answer it -32700.
        if source is JsonRpcException and isinstance(
            error, (ValueError, RecursionError, MemoryError)
        ):
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

        # The method table is dispatched by QueryProtocol and never registered with pygls;
        # commands are registered (executeCommandProvider lists them) and run by the dispatcher.
        for command, method in COMMANDS.items():
            self.command(command)(self._command_handler(method))

    def activate(self, init_options: Any) -> None:
        """Build the runtime from flags + initializationOptions; a bad value fails initialize."""
        try:
            config = build_config(merge(self.flag_options, init_options))
            runtime = Runtime(config, self.notifier.mark)
            runtime.start()
            if self.preload is not None:
                self.preload(runtime)
        except QueryError as exc:
            raise to_rpc_error(exc) from None
        self.notifier.loop = asyncio.get_running_loop()  # initialize runs on the event loop
        self.runtime = runtime
        # Everything alive now (modules, the runtime) lives as long as the server: move it out of
        # the collector's sight, so the full collections a large result triggers stay short.
        gc.collect()
        gc.freeze()

    def _command_handler(self, method: Method) -> Callable[..., Any]:
        async def handler(ls: QueryServer, *args: Any) -> Any:
            params = args[0] if args else {}
            return jsoncodec.to_builtins(await ls.run(method, params))

        return handler

    async def run(self, method: Method, params: Any) -> Any:
        runtime = self.runtime
        if runtime is None:  # pygls answers nothing but initialize before it
            raise JsonRpcException(message="server not initialized", code=SERVER_NOT_INITIALIZED)
        return await self.dispatcher.run(self.protocol.msg_id, method, runtime, params)


def serve(
    config_options: dict[str, Any],
    tcp: tuple[str, int] | None = None,
    preload: Preload | None = None,
) -> None:
    tune_malloc()
    server = QueryServer(config_options, preload=preload)
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
