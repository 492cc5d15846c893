"""The hub process (hub.md §1): take ``hub-<key>.lock`` (at most one hub per key), build the
runtime, listen on ``hub-<key>.sock`` (0600; peers of another uid are closed without a byte),
write ``hub-<key>.json`` once listening, and run until ``hub/stop``, SIGTERM, or
``--idle-exit`` seconds with no connection and nothing left to checkpoint. Leaving, it answers
or cancels what is in flight, flushes, closes the index and removes its socket and json.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import json
import logging
import os
import signal
import socket
import struct
import sys
import time
from typing import Any

from ..errors import QueryError
from ..rundir import RunDirError, write_private
from ..server.app import QueryServer
from ..server.sockets import Connection
from ..server.stdio import tune_malloc
from ..server.tcpauth import TokenGate, token_for
from .handlers import HubTcp, ToolRunner
from .key import hub_key
from .paths import HubPaths, paths_for
from .service import Hub

log = logging.getLogger("dsh_query_server")

IDLE_EXIT_DEFAULT = 600.0
IDLE_POLL_SECONDS = 1.0
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_uid(connection: Connection[QueryServer]) -> int | None:
    transport = connection.transport
    sock = None if transport is None else transport.get_extra_info("socket")
    if sock is None:
        return None
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
    except OSError:
        return None
    return _PEERCRED.unpack(raw)[1]


def _lock(paths: HubPaths) -> int | None:
    """The hub lock's fd, held for the process's life; None when another hub holds it."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class Daemon:
    def __init__(
        self,
        options: dict[str, Any],
        paths: HubPaths,
        *,
        idle_exit: float,
        tcp: tuple[str, int] | None,
        tcp_token_file: str | None,
        tools: ToolRunner | None,
    ) -> None:
        self.paths = paths
        self.idle_exit = idle_exit
        self.tcp = tcp
        self.tcp_token_file = tcp_token_file
        self.hub = Hub(options, paths, tools=tools, stop=self.stop)
        self.listeners: list[asyncio.Server] = []
        self.done: asyncio.Future[None] | None = None
        self._stopping = False
        self._token_file: str | None = None  # a token file we made, removed on exit

    # -- connections -------------------------------------------------------------------------------

    def _open_unix(self, connection: Connection[QueryServer]) -> QueryServer | None:
        if self._stopping or peer_uid(connection) != os.getuid():
            return None  # another user's peer: closed without a byte
        return self.hub.open(connection)

    def _open_tcp(self, connection: Connection[QueryServer]) -> QueryServer | None:
        return None if self._stopping else self.hub.open(connection)

    # -- life ------------------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        self.hub.notifier.loop = loop
        self.hub.runtime.start()
        self.hub.warm_up()
        gc.collect()
        gc.freeze()
        _unlink(self.paths.socket)  # we hold the lock: whatever is there is stale
        old = os.umask(0o177)
        try:
            unix = await loop.create_unix_server(
                lambda: Connection(self._open_unix, self.hub.closed), self.paths.socket
            )
        finally:
            os.umask(old)
        os.chmod(self.paths.socket, 0o600)
        self.listeners.append(unix)
        if self.tcp is not None:
            await self._listen_tcp(loop, *self.tcp)
        write_private(self.paths.info, json.dumps(self.hub.info()).encode("utf-8"))
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        log.warning("hub %s listening on %s (pid %d)", self.hub.key, self.paths.socket, os.getpid())
        idle = asyncio.ensure_future(self._idle())
        try:
            await self.done
        finally:
            idle.cancel()

    async def _listen_tcp(self, loop: asyncio.AbstractEventLoop, host: str, port: int) -> None:
        gate: TokenGate | None = None
        server = await loop.create_server(
            lambda: Connection(self._open_tcp, self.hub.closed, gate), host, port
        )
        bound = server.sockets[0].getsockname()[1]
        token, path, made = token_for(bound, self.tcp_token_file)
        gate = TokenGate(token)
        self._token_file = path if made else None
        self.hub.tcp = HubTcp(host, bound, path)
        self.listeners.append(server)

    async def _idle(self) -> None:
        """--idle-exit: no connection for that long and nothing pending to checkpoint."""
        if self.idle_exit <= 0:
            return
        while True:
            await asyncio.sleep(min(IDLE_POLL_SECONDS, self.idle_exit))
            if self.hub.connections:
                continue
            if time.monotonic() - self.hub.last_active < self.idle_exit:
                continue
            if self.hub.runtime.checkpointer.pending_events():
                continue
            self.stop()
            return

    def stop(self) -> None:
        """hub/stop, SIGTERM, idle: on the event loop."""
        if self._stopping:
            return
        self._stopping = True
        asyncio.ensure_future(self._leave())

    async def _leave(self) -> None:
        for listener in self.listeners:
            listener.close()
        _unlink(self.paths.info)
        _unlink(self.paths.socket)
        if self._token_file is not None:
            _unlink(self._token_file)
        await self.hub.drain_all()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.hub.runtime.close)  # flushes, closes the index
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


def run(
    options: dict[str, Any],
    *,
    idle_exit: float = IDLE_EXIT_DEFAULT,
    tcp: tuple[str, int] | None = None,
    tcp_token_file: str | None = None,
    tools: ToolRunner | None = None,
) -> int:
    """Run the hub of ``options`` in this process; the exit status (2: refused)."""
    tune_malloc()
    try:
        paths = paths_for(hub_key(options))
    except RunDirError as exc:
        sys.stderr.write(f"dsh-query hub: {exc}\n")
        return 2
    lock = _lock(paths)
    if lock is None:
        sys.stderr.write(
            f"dsh-query hub: a hub for this configuration is already running ({paths.socket})\n"
        )
        return 1
    try:
        daemon = Daemon(
            options,
            paths,
            idle_exit=idle_exit,
            tcp=tcp,
            tcp_token_file=tcp_token_file,
            tools=tools,
        )
    except QueryError as exc:
        sys.stderr.write(f"dsh-query hub: {exc.message}\n")
        return 2
    try:
        asyncio.run(daemon.run())
    except OSError as exc:  # the socket cannot be bound
        sys.stderr.write(f"dsh-query hub: cannot listen on {paths.socket}: {exc.strerror}\n")
        return 2
    finally:
        _unlink(paths.info)
        os.close(lock)
    return 0


__all__ = ["IDLE_EXIT_DEFAULT", "Daemon", "peer_uid", "run"]
