"""The stdio transport: frames read by a thread with blocking reads and handed to the protocol
(``QueryProtocol.take``), answers written by whoever produced them under the protocol's write
lock; plus the process-level tuning that serving large answers needs (pipe size, malloc).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import sys
import threading
from typing import Any, Callable

from pygls.io_ import StdoutWriter

log = logging.getLogger("dsh_query_server")

_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")
_LINE_LIMIT = 1 << 20


class Frames:
    """LSP frames out of a byte stream, with pygls' rules (``run_async``): headers are lines; the
    first exact ``Content-Length: N`` line (N > 0) counts, other lines are skipped; a blank line
    after it starts a body of N bytes. Bytes without a usable header are skipped up to the next
    one, and a huge N only holds the bytes that actually arrive."""

    def __init__(self, on_body: Callable[[bytearray], None]) -> None:
        self._on_body = on_body
        self._buf = bytearray()
        self._length = 0  # Content-Length of the frame being read; 0 while none was seen
        self._in_body = False
        self._skipping = False  # inside an over-long line: drop it up to its newline

    def feed(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos = 0
        try:
            while True:
                if self._in_body:
                    end = pos + self._length
                    if len(buf) < end:
                        return
                    body = buf[pos:end]
                    pos = end
                    self._in_body, self._length = False, 0
                    self._on_body(body)
                    continue
                newline = buf.find(b"\n", pos)
                if newline < 0:
                    if len(buf) - pos > _LINE_LIMIT:  # no header is this long
                        pos, self._skipping = len(buf), True
                    return
                line = buf[pos:newline + 1]
                pos = newline + 1
                if self._skipping:
                    self._skipping = False
                elif not self._length:
                    match = _CONTENT_LENGTH.fullmatch(line)
                    if match:
                        self._length = int(match.group(1))
                elif not line.strip():
                    self._in_body = True
        finally:
            del buf[:pos]


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


def serve_stdio(server: Any) -> None:
    """Serve stdio. stdin is read by a thread with blocking reads, like a bare echo loop: waking
    the event loop's selector for every message cost more than the rest of a trivial request.
    pygls, the dispatch and the writes of worker answers stay on the event loop."""
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    server.protocol.direct_writes = True
    _widen_pipe(sys.stdout)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        threading.Thread(target=_read_stdin, args=(server.protocol, loop, done), name="stdin", daemon=True).start()
        await done
        # End of input: the messages read before it may still be running (a shutdown waiting
        # for its requests, an exit waiting for shutdown). Answer what can be answered.
        await server.protocol.drain()
        await server.protocol.shutdown_answered()

    server._stop_event = threading.Event()
    try:
        asyncio.run(main())
    except (BrokenPipeError, ConnectionResetError):
        log.error("the client closed the connection")
    finally:
        server.shutdown()


def tune_malloc() -> None:
    """glibc only, best effort. Each request runs on its own worker thread, and glibc gives
    threads their own malloc arenas and raises its mmap threshold after a large block is freed:
    a 10 MB answer built on one thread was then kept in that arena and the next one built in
    another, and the server's RSS grew with every large result (three listEvents of 100,000
    events over the benchmark's live store: peak 145 MiB; with this, 122 MiB). One arena and a
    fixed 128 KiB threshold (large blocks always mapped, so always returned) keep the peak at
    about one result's size."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, 1)  # M_ARENA_MAX
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD (also stops its dynamic raising)
    except (OSError, AttributeError):
        pass
