"""Serving connections on sockets (``serve --tcp``, the hub's Unix socket): each accepted stream
gets its own ``Endpoint``, fed whole frames on the event loop; answers are written to the
asyncio transport on the loop.

A connection whose peer stops reading stops being read (asyncio's flow control), so one slow
client holds at most its own answers in memory; a frame it garbles only ever reaches its own
protocol.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from .dispatch import Dispatcher
from .protocol import QueryProtocol
from .transport import Frames

log = logging.getLogger("dsh_query_server")


class Endpoint(Protocol):
    """What a connection feeds: app.Endpoint."""

    protocol: QueryProtocol
    dispatcher: Dispatcher


class Connection(asyncio.Protocol):
    """One stream. ``open`` gives the server for a new transport (None closes it without a
    byte); ``closed`` is told when the stream is gone, after its requests were cancelled."""

    def __init__(
        self,
        open: Callable[[asyncio.Transport], Endpoint | None],
        closed: Callable[[Endpoint], None],
    ) -> None:
        self._open = open
        self._closed = closed
        self.server: Endpoint | None = None
        self.transport: asyncio.Transport | None = None
        self._frames = Frames(self._body)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        server = self._open(transport)
        if server is None:
            transport.abort()
            return
        server.protocol.set_writer(transport)
        self.server = server

    def _body(self, body: bytearray) -> None:
        if self.server is not None:
            self.server.protocol.receive(body)

    def data_received(self, data: bytes) -> None:
        if self.server is not None:
            self._frames.feed(data)

    def eof_received(self) -> bool:
        return False  # close the transport: a half-closed client is gone

    def pause_writing(self) -> None:  # the peer reads slower than we answer
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        server, self.server = self.server, None
        if server is None:
            return
        server.protocol.closed = True
        server.dispatcher.tokens.cancel_all()  # a connection that closes mid-request
        self._closed(server)


def serve_tcp_once(server: Endpoint, service: Any, host: str, port: int) -> None:
    """``serve --tcp``: one client at a time on a loopback port (others are closed unanswered);
    the end of that client's connection, by exit or by closing it, ends the server."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        service.stopped = done
        busy = False

        def open_(transport: asyncio.Transport) -> Endpoint | None:
            nonlocal busy
            if busy:
                return None
            busy = True
            return server

        def closed(_server: Endpoint) -> None:
            if not done.done():
                done.set_result(None)

        listener = await loop.create_server(lambda: Connection(open_, closed), host, port)
        async with listener:
            await done
        await server.protocol.drain()
        await server.protocol.shutdown_answered()

    asyncio.run(main())


__all__ = ["Connection", "serve_tcp_once"]
