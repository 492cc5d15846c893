"""Backends a test server can mount as ``test:<name>`` (see persistence/uri.py's test hook).

Names: ``memory`` (a writable in-memory store), ``failing`` (every call raises), and
``slow:<ms>:<marker>`` (each call ignores its token, sleeps, then appends a line to ``marker``).
"""

from __future__ import annotations

import time

from .fakes import MemoryBackend


class SlowBackend(MemoryBackend):
    def __init__(self, delay: float, marker: str) -> None:
        super().__init__()
        self.delay, self.marker = delay, marker

    def _enter(self, op, arg, token):
        time.sleep(self.delay)  # ignores the token on purpose: the server must await us
        with open(self.marker, "a") as f:
            f.write(f"{op} settled\n")
        super()._enter(op, arg, token)


def make(name: str):
    if name == "memory":
        return MemoryBackend()
    if name == "failing":
        backend = MemoryBackend()
        for op in ("list", "list_snapshots", "inspect"):
            backend.fail[op] = OSError("injected failure")
        return backend
    if name.startswith("slow:"):
        _, ms, marker = name.split(":", 2)
        return SlowBackend(int(ms) / 1000, marker)
    raise ValueError(f"unknown test backend {name!r}")
