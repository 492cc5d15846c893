"""The progress bar of ``dsh-query sync`` (postgres.md §6): rich, on stderr, only when stderr is a
terminal. Other stderr lines go through it so that they print above the bar, not through it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # rich is imported only when a bar is shown, so the command starts fast
    from rich.progress import Progress, TaskID


class SyncProgress:
    """A rich progress bar on stderr when stderr is a terminal (§6), one bar per source:
    sessions done of all, events appended. Other stderr lines go through it so that they print
    above the bar instead of through it. On anything but a terminal it only prints the lines."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.enabled = err.isatty()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._events = 0
        self._lock = threading.Lock()

    def start(self, source: str, total: int) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._events = 0
        self._bar = Progress(
            TextColumn("sync {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("sessions, {task.fields[events]} events appended"),
            TimeElapsedColumn(),
            console=Console(file=self.err, stderr=False),
            transient=False,
        )
        self._task = self._bar.add_task(source, total=total, events=0)
        self._bar.start()

    def appended(self, count: int) -> None:
        with self._lock:
            self._events += count
            events = self._events
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, events=events)

    def advance(self) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar = self._task = None

    def say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=self.err)
