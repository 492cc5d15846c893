"""File safety (persistence.md §5.3): a private parent directory and a private regular file,
created so at the first write, checked at mount and before every open."""

from __future__ import annotations

import os
import stat

from ...files import SQLITE_MAGIC, make_private_dirs
from .schema import SessionDatabaseRefused

# ---------------------------------------------------------------------------------------------
# File safety (§5.3)

_POSIX = os.name == "posix"


def _lstat_or_none(path: str) -> os.stat_result | None:
    """``lstat``; None only when the path does not exist (other failures must surface)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _require_private_dir(directory: str, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise SessionDatabaseRefused(
            f'session database parent "{directory}" must be a real directory'
        )
    if _POSIX and (st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        raise SessionDatabaseRefused(
            f'session database parent "{directory}" must be owned by the current user and not'
            " group/world-writable"
        )


def _require_database(path: str) -> None:
    """**[ours]** A file that is not a SQLite database, or cannot be read, is refused for that
    reason before its ownership and mode are judged: blaming the permissions of a file that is
    not a store at all sends people the wrong way. An empty file is a database not yet begun."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except PermissionError:
        raise SessionDatabaseRefused(
            f'session database "{path}" cannot be read: permission denied'
        ) from None
    if head and head != SQLITE_MAGIC:
        raise SessionDatabaseRefused(f'session database "{path}" is not a SQLite database')


def _require_private_file(path: str, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise SessionDatabaseRefused(
            f'session database "{path}" must be a regular file, not a symbolic link'
        )
    _require_database(path)
    if _POSIX and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
        raise SessionDatabaseRefused(
            f'session database "{path}" must be owned by the current user and accessible only'
            " by that user"
        )


def check_location(path: str, *, create_parents: bool) -> bool:
    """The checks of §5.3 for an absolute path; whether the database file exists."""
    parent = os.path.dirname(path)
    if create_parents:
        make_private_dirs(parent)
    parent_stat = _lstat_or_none(parent)
    if parent_stat is None:
        return False
    _require_private_dir(parent, parent_stat)
    file_stat = _lstat_or_none(path)
    if file_stat is None:
        return False
    _require_private_file(path, file_stat)
    return True


def create_private_file(path: str) -> None:
    """Create the database file exclusively with mode 0600 (or check the one a racer created)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        _require_private_file(path, os.lstat(path))


def birth_ns(st: os.stat_result) -> int:
    """The file's birth time in nanoseconds where the platform reports it, else 0 (§5.8)."""
    birth_ns = getattr(st, "st_birthtime_ns", None)
    if birth_ns is not None:
        return birth_ns
    birth = getattr(st, "st_birthtime", None)
    return 0 if birth is None else int(birth * 1_000_000_000)
