"""The command line's progress bar (protocol.md §8, README "Progress"): the server's work-done
progress of the request in flight, drawn by rich on stderr when stderr is a terminal; nothing at
all when it is piped or redirected, so scripts and ``--json`` see only their output.

Every request of a command on a terminal carries a fresh ``workDoneToken`` (client.py); the
server reports on it once the request has run past 0.4 s (a quick command draws nothing). The
bar is transient: it is gone when the answer is printed.

The server's progress can only begin once the server runs: a private server or a hub first
imports and opens its store (~0.6 s on a quiet machine, seconds on a busy one), and its
request's progress then begins 0.4 s into the request. So the command draws its own bar from
the start (``expect``): when nothing has shown within ``WAIT_SECONDS``, "starting the server"
(or the hub) shows until the server's own progress takes the bar over, and a person sees the
command working within half a second of pressing enter (the interpreter's own start takes
~0.15 s of it). Once a bar has shown, each later request of the command shows one at once: a
quick request in between (the mount's status) does not leave a gap (issue 28) [ours].
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, TextIO

from ..client import Client
from ..progress import delay_seconds

# The command's own wait shows after this long (or the server's delay, when shorter): a command
# through a running hub that answers at once draws nothing.
WAIT_SECONDS = 0.25

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
        self._waiting: str | None = None  # what the command waits for, until the server shows
        self._timer: threading.Timer | None = None
        self._shown = False  # a bar has been drawn for this command

    def expect(self, message: str) -> None:
        """The command waits for ``message`` ("starting the server"): shown after the delay
        unless the server's own progress shows first (module docstring)."""
        with self._lock:
            self._waiting = message
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, message=message, refresh=True)
            elif self._timer is None:
                delay = min(WAIT_SECONDS, delay_seconds())
                self._timer = threading.Timer(delay, self._waited)
                self._timer.daemon = True
                self._timer.start()

    def _waited(self) -> None:
        with self._lock:
            self._timer = None
            if self._waiting is not None and self._bar is None:
                self._start("dsh-query", self._waiting)

    def next_token(self) -> str:
        """A fresh token for the next request. A bar still waiting for the server stays up,
        now waiting for that request's progress; after a bar has shown, one shows at once."""
        with self._lock:
            if self._waiting is None:
                self._stop()
            if self._shown and self._bar is None:
                self._waiting = "waiting for the server"
                self._start("dsh-query", self._waiting)
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
            if kind == "begin":
                self._waiting = None  # the server shows its own progress from now on
                title = str(value.get("title") or "dsh-query")
                if self._bar is None:
                    self._start(title)
                elif self._task is not None:
                    self._bar.update(self._task, description=title, message="", refresh=True)
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
        """The request was answered: no bar, and nothing waited for any more."""
        with self._lock:
            self._waiting = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._stop()

    def _start(self, title: str, message: str = "") -> None:
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
        self._task = self._bar.add_task(title, total=None, message=message)
        self._shown = True
        self._bar.start()

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar = self._task = None


def waiting(err: TextIO, message: str) -> ProgressBar | None:
    """A bar on ``err`` when it is a terminal (else None: silent), already waiting for
    ``message`` while the command reaches its server."""
    if not err.isatty():
        return None
    bar = ProgressBar(err)
    bar.expect(message)
    return bar


def attach(client: Client, bar: ProgressBar | None) -> None:
    """Draw the client's progress on ``bar`` (None: nothing); the command now waits for its
    first request's answer."""
    if bar is not None:
        bar.expect("waiting for the server")
        client.progress = bar


__all__ = ["ProgressBar", "attach", "waiting"]
