"""``dsh-query hub connect`` (**[ours]**): stdin and stdout joined to a hub connection, for an
editor that speaks LSP over a child's stdio but cannot open a Unix socket itself (Neovim before
0.10). Bytes are copied as they come; the editor's own initialize goes to the hub unchanged.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK = 1 << 16


def _to_hub(sock: socket.socket) -> None:
    fd = sys.stdin.fileno()
    try:
        while data := os.read(fd, CHUNK):
            sock.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)  # the editor is done: the hub sees the end of input


def pump(sock: socket.socket) -> int:
    """Copy until the hub closes the connection; 0, or 1 when it went away unexpectedly."""
    sock.settimeout(None)
    threading.Thread(target=_to_hub, args=(sock,), name="stdin", daemon=True).start()
    out = sys.stdout.fileno()
    try:
        while data := sock.recv(CHUNK):
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
    except OSError:
        return 1
    return 0


__all__ = ["pump"]
