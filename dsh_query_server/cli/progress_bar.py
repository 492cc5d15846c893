"""The command line's progress bar (protocol.md §8, README "Progress"): the server's work-done
progress of the request in flight, drawn by rich on stderr when stderr is a terminal; nothing at
all when it is piped or redirected, so scripts and ``--json`` see only their output.

Every request of a command on a terminal carries a fresh ``workDoneToken`` (client.py); the
server reports on it once the request has run past 0.4 s (a quick command draws nothing). The
bar is transient: it is gone when the answer is printed.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ..client import Client

if TYPE_CHECKING:  # rich is imported only when a bar is drawn, so a quick command starts fast
    from rich.progress import Progress, TaskID


class ProgressBar:
    """A ``client.ProgressView``: one bar for the request in flight."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self._tokens = itertools.count(1)
        self._token: str | None = None
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._lock = threading.Lock()

    def next_token(self) -> str:
        self.stop()
        self._token = f"dsh-query-cli-{next(self._tokens)}"
        return self._token

    def show(self, params: Any) -> None:
        if not isinstance(params, dict) or params.get("token") != self._token:
            return  # another request's, or not ours at all
        value = params.get("value")
        if not isinstance(value, dict):
            return
        kind = value.get("kind")
        message = value.get("message")
        percentage = value.get("percentage")
        with self._lock:
            if kind == "begin" and self._bar is None:
                self._start(str(value.get("title") or "dsh-query"))
            if self._bar is None or self._task is None:
                return
            if kind == "end":
                self._stop()
                return
            fields: dict[str, Any] = {}
            if isinstance(message, str):
                fields["message"] = message
            if isinstance(percentage, (int, float)) and not isinstance(percentage, bool):
                self._bar.update(
                    self._task, total=100, completed=percentage, refresh=True, **fields
                )
            elif fields:
                self._bar.update(self._task, refresh=True, **fields)

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _start(self, title: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[message]}"),
            TimeElapsedColumn(),
            console=Console(file=self.err, stderr=False),
            transient=True,
        )
        # No total until the server gives a percentage: rich draws a pulsing bar meanwhile.
        self._task = self._bar.add_task(title, total=None, message="")
        self._bar.start()

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar = self._task = None


def attach(client: Client, err: TextIO) -> None:
    """Draw the client's progress on ``err`` when it is a terminal (else leave it silent)."""
    if err.isatty():
        client.progress = ProgressBar(err)


__all__ = ["ProgressBar", "attach"]
