"""The hub's one service shared by every connection (hub.md §2): one runtime (live store,
binding, checkpointer, search index, instance id), one worker pool, change notifications to
every initialized connection, and what the hub's own methods (handlers.py) answer.

Each connection has its own ``QueryServer`` and so its own LSP lifecycle, request ids and
cancellation tokens; its ``initialize`` attaches it to the runtime when its options resolve to
this hub's key, its ``shutdown`` leaves the runtime alone, and its ``exit`` closes only it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pygls.protocol import default_converter

from .. import __version__, errors
from ..cancel import CancelToken
from ..core.config import build_config, merge
from ..core.runtime import Runtime
from ..errors import QueryError
from ..persistence.mount.uri import display_uri
from ..server.app import QueryServer
from ..server.dispatch import encode_frame, worker_pool
from ..server.notifier import ChangeNotifier
from ..server.sockets import Connection
from .handlers import (
    CallToolParams,
    CallToolResult,
    HubIndex,
    HubStatus,
    HubTcp,
    MountFailure,
    ToolRunner,
    serve_runtime,
)
from .key import hub_key, resolved
from .methods import METHODS
from .paths import HubPaths


def other_configuration(key: str) -> QueryError:
    return QueryError(
        errors.INVALID_REQUEST, f"this hub serves another configuration; connect to hub {key}"
    )


class Hub:
    """The service of ``dsh-query hub``; the daemon (daemon.py) owns its sockets and lifetime."""

    def __init__(
        self,
        options: dict[str, Any],
        paths: HubPaths,
        *,
        tools: ToolRunner | None = None,
        stop: Callable[[], None] = lambda: None,
    ) -> None:
        """``options``: the validated configuration options (flags over ``--config``);
        ``tools``: runs ``hub/callTool`` (the MCP layer's tools); ``stop``: begins the hub's
        orderly exit (on the event loop)."""
        self.options = options
        self.config = build_config(options)
        self.resolved = resolved(options)
        self.key = hub_key(options)
        self.paths = paths
        self.pid = os.getpid()
        self.started = time.time()
        self.executor: ThreadPoolExecutor = worker_pool()
        self.converter = default_converter()
        self.notifier = ChangeNotifier(self._broadcast)
        self.runtime = Runtime(self.config, self.notifier.mark)
        self.connections: dict[QueryServer, Connection[QueryServer]] = {}
        self.tcp: HubTcp | None = None  # with --tcp
        self.last_active = time.monotonic()
        self.tools = tools
        self._stop = stop
        serve_runtime(self.runtime, self)

    # -- connections (Service, server/app.py) ----------------------------------------------------

    def open(self, connection: Connection[QueryServer]) -> QueryServer:
        server = QueryServer(
            self, methods=METHODS, executor=self.executor, converter=self.converter
        )
        self.connections[server] = connection
        self.last_active = time.monotonic()
        return server

    def warm_up(self) -> None:
        """One initialize on a connection of nobody's, so that the LSP types' structuring code
        is built before the first client waits for it (it is built once, on first use)."""
        server = QueryServer(
            self, methods=METHODS, executor=self.executor, converter=self.converter
        )
        server.protocol.set_writer(_Discard())
        server.protocol.handle_message(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"processId": None, "capabilities": {}, "initializationOptions": {}},
            }
        )

    def closed(self, server: QueryServer) -> None:
        self.connections.pop(server, None)
        self.last_active = time.monotonic()

    def attach(self, server: QueryServer, init_options: Any) -> Runtime:
        """initialize: options that resolve to this hub's key (or none) attach the connection;
        a bad value is INVALID_CONFIG as for serve, another configuration is refused."""
        merged = merge(self.options, init_options)
        build_config(merged)
        key = hub_key(merged)
        if key != self.key:
            raise other_configuration(key)
        return self.runtime

    def shutdown(self, server: QueryServer) -> None:
        """The runtime is every connection's: one client's shutdown leaves it running."""

    def ended(self, server: QueryServer, code: int) -> None:
        """exit ends the connection, never the hub."""
        connection = self.connections.get(server)
        if connection is not None:
            connection.close()

    # -- notifications -----------------------------------------------------------------------------

    def _broadcast(self, method: str, params: dict[str, Any]) -> None:
        """sessionQuery/didChange, encoded once, to every initialized connection."""
        frame = encode_frame({"method": method, "jsonrpc": "2.0", "params": params}, None, False)
        for server in list(self.connections):
            if server.runtime is not None:
                server.protocol.write_frame(frame)

    # -- the hub's methods -------------------------------------------------------------------------

    def status(self) -> HubStatus:
        config = dict(self.resolved)
        config["persistence"] = _displayed(config["persistence"])
        failed = self.runtime.start_failure
        extra: dict[str, Any] = {} if self.tcp is None else {"tcp": self.tcp}
        if failed is not None and self.runtime.binding.current() is None:
            extra["mountFailure"] = MountFailure(failed.code, failed.message)
        return HubStatus(
            pid=self.pid,
            key=self.key,
            socket=self.paths.socket,
            startedAt=int(self.started * 1000),
            connections=len(self.connections),
            uptimeMs=int((time.time() - self.started) * 1000),
            config=config,
            index=HubIndex(self.config.search.path, self.runtime.search.index_path),
            version=__version__,
            **extra,
        )

    def stop(self) -> None:
        """hub/stop (a worker thread): the stop runs on the loop and waits for this answer like
        any other in flight."""
        loop = self.notifier.loop
        if loop is not None:
            loop.call_soon_threadsafe(self._stop)

    def run_tool(self, rt: Runtime, p: CallToolParams, token: CancelToken) -> CallToolResult:
        if self.tools is None:
            raise QueryError(errors.INVALID_REQUEST, "this hub runs no tools")
        return self.tools(rt, p, token)

    def info(self) -> dict[str, Any]:
        """hub-<key>.json (hub.md §1)."""
        return {
            "pid": self.pid,
            "key": self.key,
            "socket": self.paths.socket,
            "started": int(self.started * 1000),
            "version": __version__,
            "config": self.status().config,
        }

    async def drain_all(self) -> None:
        """Answer (or cancel) every connection's requests in flight, then close them."""
        servers = list(self.connections)
        await asyncio.gather(*(s.protocol.drain() for s in servers))
        for server in servers:
            connection = self.connections.get(server)
            if connection is not None:
                connection.close()


class _Discard:
    def write(self, data: Any) -> None:
        pass


def _displayed(persistence: Any) -> Any:
    """Passwords redacted (postgres.md §1.3)."""
    if isinstance(persistence, list):
        return [display_uri(u) for u in persistence]
    return persistence if persistence is None else display_uri(persistence)


__all__ = ["Hub", "other_configuration"]
