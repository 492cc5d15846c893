"""Serving stdio: frames (transport.py) read by a thread with blocking reads and handed to the
protocol (``QueryProtocol.take``), answers written by whoever produced them under the protocol's
write lock; plus the process-level tuning that serving large answers needs (pipe size, malloc).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from typing import Any

from pygls.io_ import StdoutWriter

from .transport import Frames

log = logging.getLogger("dsh_query_server")


def _read_stdin(protocol: Any, loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> None:
    """The stdin thread: blocking reads, frames handed to QueryProtocol.take; ends the loop at
    end of input (after everything read before it, call_soon_threadsafe keeps the order)."""
    frames = Frames(lambda body: protocol.take(body, loop))
    try:
        fd = sys.stdin.fileno()
        while data := os.read(fd, 1 << 16):
            frames.feed(data)
    except RuntimeError:  # the loop has closed (exit)
        return
    except (OSError, ValueError, AttributeError) as exc:  # no usable stdin: as end of input
        log.error("stdin: %s", exc)
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))


PIPE_BYTES = 1 << 20


def _widen_pipe(stream: Any) -> None:
    """A 10 MB answer through Linux's default 64 KiB pipe costs ~150 context switches; a 1 MiB
    pipe sends it in ten. Best effort: other systems, or a limit below 1 MiB, keep the default."""
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError, ValueError, AttributeError):
        pass


def serve_stdio(server: Any, service: Any) -> None:
    """Serve stdio until exit or the end of input. stdin is read by a thread with blocking
    reads, like a bare echo loop: waking the event loop's selector for every message cost more
    than the rest of a trivial request. pygls and the dispatch stay on the event loop."""
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    server.protocol.direct_writes = True
    _widen_pipe(sys.stdout)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        service.stopped = done  # exit sets it too
        threading.Thread(
            target=_read_stdin, args=(server.protocol, loop, done), name="stdin", daemon=True
        ).start()
        await done
        # End of input: the messages read before it may still be running (a shutdown waiting
        # for its requests, an exit waiting for shutdown). Answer what can be answered.
        await server.protocol.drain()
        await server.protocol.shutdown_answered()

    try:
        asyncio.run(main())
    except (BrokenPipeError, ConnectionResetError):
        log.error("the client closed the connection")


def tune_malloc() -> None:
    """glibc only, best effort. Each request runs on its own worker thread, and glibc gives
    threads their own malloc arenas and raises its mmap threshold after a large block is freed:
    a large answer built on one thread was then kept in that arena and the next one built in
    another, and the server's RSS grew with every large result. One arena and a fixed 128 KiB
    threshold (large blocks always mapped, so always returned) keep the peak at about one
    result's size."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, 1)  # M_ARENA_MAX
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD (also stops its dynamic raising)
    except (OSError, AttributeError):
        pass
