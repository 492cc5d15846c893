"""Private files and directories: everything we create is 0700 (dirs) or 0600 (files); and the
SQLite file header the store (persistence/sqlite/location.py) and the command line's input check
(cli/stores.py) both look for."""

from __future__ import annotations

import os

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private_dirs(directory: str, *, durable: bool = False) -> None:
    """Create ``directory`` and its missing ancestors with mode 0700. Stops at the first path that
    exists, whatever it is, so callers' own checks see what is really there. ``durable`` fsyncs
    each new directory's parent, so a crash cannot lose a directory a later write relies on."""
    missing = []
    while not os.path.lexists(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue  # made concurrently; checked like any existing directory
        if durable:
            fsync_dir(os.path.dirname(path))
