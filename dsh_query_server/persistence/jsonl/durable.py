"""Writing transcripts (persistence.md §4.11): record lines, batches refused unless they read
back as the same JSON, files created private and durable, appends rolled back on failure."""

from __future__ import annotations

import os

from ... import jsoncodec
from ...model.event import Event
from ..logical.records import PACKED_TAGS, PackedRow
from .errors import RollbackError
from .lines import is_utf8

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _event_line(event: Event) -> bytes:
    # ``raw`` is the event's exact JSON; a newline in it can only be insignificant whitespace,
    # which would split the record, so such events are re-serialized compactly.
    return event.raw if b"\n" not in event.raw else jsoncodec.dumps(event.to_value())


def record_line(record: Event | PackedRow) -> bytes:
    return record.to_json() if isinstance(record, PackedRow) else _event_line(record)


def check_serializable(events: list[Event]) -> None:
    """Refuse a batch that cannot be written as the same JSON values (§4.11)."""
    for index, event in enumerate(events):
        if not isinstance(event, Event):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                "session event batch is not losslessly JSON-serializable: "
                f"element {index} is not an event"
            )
        if not is_utf8(event.raw):
            raise ValueError(
                "session event batch is not losslessly JSON-serializable: "
                f"event {index} holds invalid UTF-8"
            )
        if isinstance(event.type, str) and event.type in PACKED_TAGS:
            # A JSONL reader takes such a line for a packed row (§3.2).
            raise ValueError(
                "session event batch is not losslessly JSON-serializable: "
                f"event {index} has the packed-row type {event.type}"
            )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new_file(path: str, content: bytes) -> None:
    """Create ``path`` exclusively with mode 0600 and make ``content`` durable in it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC
    fd = os.open(path, flags | _NOFOLLOW, 0o600)
    try:
        _write_all(fd, content)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove_quietly(path)
        raise
    os.close(fd)


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def append_durably(path: str, data: bytes) -> None:
    """Append and fsync; on failure truncate back to the old size (§4.11 later appends)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | _CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException as error:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError as rollback_error:
                raise RollbackError(path, error, rollback_error) from error
            raise
    finally:
        os.close(fd)
