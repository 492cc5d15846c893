"""Serving connections on sockets (``serve --tcp``, the hub's Unix socket): each accepted stream
gets its own ``Endpoint``, fed whole frames on the event loop; answers are written to the
asyncio transport on the loop.

A connection whose peer stops reading stops being read (asyncio's flow control), so one slow
client holds at most its own answers in memory; framing is strict, and a connection that breaks
it is closed, alone (a body that is not JSON is answered -32700, as on stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from .dispatch import Dispatcher
from .protocol import QueryProtocol
from .tcpauth import TokenGate, token_for
from .transport import Frames, FramingError

log = logging.getLogger("dsh_query_server")


class Endpoint(Protocol):
    """What a connection feeds: app.QueryServer."""

    protocol: QueryProtocol
    dispatcher: Dispatcher


E = TypeVar("E", bound=Endpoint)


class Connection(asyncio.Protocol, Generic[E]):
    """One stream. ``open`` gives the server for a new connection (None closes it without a
    byte); ``closed`` is told when the stream is gone, after its requests were cancelled."""

    def __init__(
        self,
        open: Callable[[Connection[E]], E | None],
        closed: Callable[[E], None],
        gate: TokenGate | None = None,
    ) -> None:
        """``gate``: a TCP listener's token check, before the first successful initialize."""
        self._open = open
        self._closed = closed
        self._gate = gate
        self.server: E | None = None
        self.transport: asyncio.Transport | None = None
        self._frames = Frames(self._body, strict=True)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        server = self._open(self)
        if server is None:
            transport.abort()
            return
        server.protocol.set_writer(transport)
        self.server = server

    def _body(self, body: bytearray) -> None:
        server = self.server
        if server is None or server.protocol.closed:
            return
        if self._gate is not None and not self._gate.admit(server.protocol, body, self.close):
            return
        server.protocol.receive(body)

    def close(self) -> None:
        """End the connection from our side (after what was written is sent)."""
        if self.server is not None:
            self.server.protocol.closed = True  # nothing more is read or written
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.server is None:
            return
        try:
            self._frames.feed(data)
        except FramingError as exc:  # this connection only (hub.md §2)
            log.warning("closing a connection that sent %s", exc)
            self.close()

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
        server.protocol.closed = True  # also written when we closed it: that is fine
        server.dispatcher.tokens.cancel_all()  # a connection that closes mid-request
        self._closed(server)


class PrivateTcp(Protocol):
    """What serve_tcp_once needs of app.PrivateService."""

    stopped: asyncio.Future[None] | None

    @property
    def server(self) -> Endpoint | None:
        """The connection that initialized, once one has."""
        ...


def serve_tcp_once(
    make_server: Callable[[], Endpoint],
    service: PrivateTcp,
    host: str,
    port: int,
    token_file: str | None,
) -> None:
    """``serve --tcp`` on a loopback port: connections must present the token; the first that
    initializes is the server's one client (later ones are closed unanswered), and the end of
    its connection, by exit or by closing it, ends the server. A connection refused for its
    token ends nothing."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        service.stopped = done

        def open_(connection: Connection[Endpoint]) -> Endpoint | None:
            return make_server() if service.server is None else None

        def closed(server: Endpoint) -> None:
            if server is service.server and not done.done():
                done.set_result(None)

        gate: TokenGate | None = None
        listener = await loop.create_server(lambda: Connection(open_, closed, gate), host, port)
        bound = listener.sockets[0].getsockname()[1]
        token, path, made = token_for(bound, token_file)
        gate = TokenGate(token)
        try:
            async with listener:
                await done
        finally:
            if made:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        if service.server is not None:
            await service.server.protocol.drain()
            await service.server.protocol.shutdown_answered()

    asyncio.run(main())


__all__ = ["Connection", "serve_tcp_once"]
