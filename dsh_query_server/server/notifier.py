"""Debounced ``sessionQuery/didChange`` (protocol.md §6): at most one notification per 250 ms,
carrying every session id marked since the last one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

DEBOUNCE_SECONDS = 0.25


class ChangeNotifier:
    def __init__(self, send: Callable[[str, dict[str, Any]], None]) -> None:
        self._send_notification = send
        self.loop: asyncio.AbstractEventLoop | None = None  # set once the server runs
        self._ids: set[str] = set()
        self._corpus = False
        self._scheduled = False
        self._last = 0.0

    def mark(self, session_ids: list[str], corpus: bool) -> None:
        """From any thread: these sessions (or the corpus) changed."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._add, loop, session_ids, corpus)

    def _add(self, loop: asyncio.AbstractEventLoop, session_ids: list[str], corpus: bool) -> None:
        self._ids.update(session_ids)
        self._corpus = self._corpus or corpus
        if not self._scheduled:
            self._scheduled = True
            delay = max(0.0, self._last + DEBOUNCE_SECONDS - loop.time())
            loop.call_later(delay, self._send, loop)

    def _send(self, loop: asyncio.AbstractEventLoop) -> None:
        self._scheduled = False
        params: dict[str, Any] = {}
        if self._ids:
            params["sessionIds"] = sorted(self._ids)
        if self._corpus:
            params["corpus"] = True
        self._ids, self._corpus = set(), False
        self._last = loop.time()
        if params:
            self._send_notification("sessionQuery/didChange", params)
