"""The JSON-RPC server (protocol.md): one ``QueryServer`` per connection, pygls for the LSP
lifecycle and ``workspace/executeCommand``; our own framing (transport.py, stdio.py,
sockets.py), envelope checks and routing (protocol.py) and one dispatch path for the method table
(dispatch.py, methods.py, handlers/); ``sessionQuery/didChange`` from notifier.py. Results are encoded with
msgspec.

What a connection serves comes from its ``Service``: ``serve`` builds a private runtime when its
one connection initializes (``PrivateService``); the hub shares one runtime among all its
connections (hub/service.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter

from .. import __version__, errors, jsoncodec
from ..core.config import ServerConfig, build_config, merge
from ..core.runtime import Runtime
from ..errors import QueryError
from ..progress import Tracker
from .dispatch import Dispatcher
from .methods import COMMANDS, METHODS
from .notifier import ChangeNotifier
from .protocol import QueryProtocol
from .registry import Method
from .rpcerrors import SERVER_NOT_INITIALIZED, to_rpc_error
from .stdio import serve_stdio, tune_malloc
from .workdone import tracker_with

log = logging.getLogger("dsh_query_server")

# Runs once the runtime is up, before the server answers anything but initialize (serve --demo).
Preload = Callable[[Runtime], None]


class Service(Protocol):
    """What a connection serves: the runtime its initialize attaches to, and what shutdown and
    the connection's end mean for it."""

    def attach(self, server: QueryServer, init_options: Any) -> Runtime:
        """initialize: the runtime for this connection; QueryError refuses the initialize."""
        ...

    def shutdown(self, server: QueryServer) -> None:
        """shutdown's answer waits for this (after the connection's requests are answered)."""
        ...

    def ended(self, server: QueryServer, code: int) -> None:
        """exit was handled, or the connection closed (code 1 unless shut down)."""
        ...


class QueryServer(LanguageServer):
    """The LSP endpoint of one connection."""

    protocol: QueryProtocol

    def __init__(
        self,
        service: Service,
        *,
        methods: Mapping[str, Method] = METHODS,
        executor: ThreadPoolExecutor | None = None,
        converter: Any = None,
    ) -> None:
        """``methods``: the method table this connection answers (a hub adds its own);
        ``executor``: the worker pool, ``converter``: the LSP types' cattrs converter, both
        shared by a hub's connections (a converter builds its structuring code once: a fresh
        one per connection cost most of a CLI command's initialize)."""
        factory = default_converter if converter is None else (lambda: converter)
        super().__init__(
            "dsh-query-server", __version__, protocol_cls=QueryProtocol, converter_factory=factory
        )
        self.service = service
        self.methods = methods
        self.runtime: Runtime | None = None
        self.dispatcher = Dispatcher(executor)
        self._register()

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Coded failures are answers, not server errors; everything else was logged already.
        # (pygls' default would also send window/showMessage, which is not in protocol.md.)
        if not isinstance(error, JsonRpcException):
            log.error("server error: %s", error)

    def ended(self, code: int) -> None:
        if self.runtime is not None:
            self.runtime.warm_up_progress.leave(self)
        self.service.ended(self, code)

    def watch_warm_up(self) -> None:
        """After ``initialized`` (no request to the client before it, LSP): a client that can
        create work-done tokens is shown the index warm-up while it runs, under a token of its
        own; cancelling that token stops the warm-up (semantics.md §6.5 [ours])."""
        runtime = self.runtime
        if runtime is None or not self.protocol.client_creates_progress():
            return
        loop = asyncio.get_running_loop()
        tokens, stop = self.dispatcher.tokens, runtime.search.stop_warm_up

        def viewer(title: str) -> Tracker:
            tracker, token = tracker_with(
                self.protocol, loop, title, None, True, delay=0, closed=tokens.unwatch
            )
            tokens.watch(token, stop)
            return tracker

        runtime.warm_up_progress.join(self, viewer)

    def _register(self) -> None:
        @self.feature(types.INITIALIZE)
        def on_initialize(ls: QueryServer, params: types.InitializeParams) -> None:
            try:
                ls.runtime = ls.service.attach(ls, params.initialization_options)
            except QueryError as exc:
                raise to_rpc_error(exc) from None

        @self.feature(types.INITIALIZED)
        def on_initialized(ls: QueryServer, params: types.InitializedParams) -> None:
            ls.watch_warm_up()

        @self.feature(types.SHUTDOWN)
        async def on_shutdown(ls: QueryServer, *args: Any) -> None:
            # Requests in flight are answered before the shutdown result; pygls only cancels its
            # own futures, which our requests do not use.
            await ls.protocol.drain()
            ls.service.shutdown(ls)

        # The method table is dispatched by QueryProtocol and never registered with pygls;
        # commands are registered (executeCommandProvider lists them) and run by the dispatcher.
        for command, method in COMMANDS.items():
            self.command(command)(self._command_handler(method))

    def _command_handler(self, method: Method) -> Callable[..., Any]:
        async def handler(ls: QueryServer, *args: Any) -> Any:
            params = args[0] if args else {}
            return jsoncodec.to_builtins(await ls.run(method, params))

        return handler

    async def run(self, method: Method, params: Any) -> Any:
        runtime = self.runtime
        if runtime is None:  # pygls answers nothing but initialize before it
            raise JsonRpcException(message="server not initialized", code=SERVER_NOT_INITIALIZED)
        msg_id = self.protocol.msg_id
        progress = self.protocol.command_progress(method)
        return await self.dispatcher.run(msg_id, method, runtime, params, progress)


class PrivateService:
    """``serve``: the runtime is built from the flags and the connection's
    initializationOptions when it initializes; shutdown closes it, the end of the connection ends
    the process."""

    def __init__(self, options: dict[str, Any], preload: Preload | None = None) -> None:
        self.options = options
        self.preload = preload
        self.runtime: Runtime | None = None
        self.server: QueryServer | None = None
        self.notifier = ChangeNotifier(self._notify)
        self.exit_code = 0
        self.stopped: asyncio.Future[None] | None = None  # the transport waits for this

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        if self.server is not None:
            self.server.protocol.send_notification(method, params)

    def attach(self, server: QueryServer, init_options: Any) -> Runtime:
        """Build the runtime from flags + initializationOptions; a bad value fails initialize."""
        if self.server is not None and server is not self.server:  # serve --tcp: one client
            raise QueryError(errors.INVALID_REQUEST, "this server already serves another client")
        config = build_config(merge(self.options, init_options))
        runtime = Runtime(config, self.notifier.mark)
        runtime.start()
        if self.preload is not None:
            self.preload(runtime)
        self.notifier.loop = asyncio.get_running_loop()  # initialize runs on the event loop
        self.runtime, self.server = runtime, server
        # Everything alive now (modules, the runtime) lives as long as the server: move it out of
        # the collector's sight, so the full collections a large result triggers stay short.
        gc.collect()
        gc.freeze()
        return runtime

    def shutdown(self, server: QueryServer) -> None:
        if server.runtime is not None:
            server.runtime.close()

    def ended(self, server: QueryServer, code: int) -> None:
        self.exit_code = code
        if self.stopped is not None and not self.stopped.done():
            self.stopped.set_result(None)

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.close()


def serve(
    config_options: dict[str, Any],
    tcp: tuple[str, int] | None = None,
    preload: Preload | None = None,
    tcp_token_file: str | None = None,
) -> None:
    tune_malloc()
    service = PrivateService(config_options, preload=preload)
    try:
        if tcp is not None:
            from .sockets import serve_tcp_once

            serve_tcp_once(lambda: QueryServer(service), service, *tcp, tcp_token_file)
        else:
            serve_stdio(QueryServer(service), service)
    except SystemExit as exc:  # a refused --tcp-token-file or run directory (said on stderr)
        service.exit_code = exc.code if isinstance(exc.code, int) else 2
    finally:
        # The client went away (exit or end of input): flush what is pending, then leave without
        # waiting for worker threads that may still sit in a hung backend call.
        service.close()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(service.exit_code)


__all__ = ["PrivateService", "QueryServer", "Service", "ServerConfig", "serve"]
