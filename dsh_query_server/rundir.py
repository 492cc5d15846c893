"""The per-user directory of hub sockets, locks, logs and TCP tokens (hub.md §1):
``$XDG_RUNTIME_DIR/dsh-query``, else ``${TMPDIR:-/tmp}/dsh-query-<uid>``. It is created 0700 and
must be a directory (not a link) owned by the user and closed to group and others; anything else
is refused, because whoever can write there could stand in for the hub.

A base module of the standard library only: the command line's connect path uses it.
"""

from __future__ import annotations

import os
import stat


class RunDirError(Exception):
    """The directory is unusable; the message names it (clients and the hub exit 2)."""


def run_dir() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "dsh-query")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"dsh-query-{os.getuid()}")


def checked(path: str) -> str:
    """``path`` when it is a private directory of this user; RunDirError otherwise."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise RunDirError(f"cannot use {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise RunDirError(f"refusing {path}: it is not a directory")
    if info.st_uid != os.getuid():
        raise RunDirError(f"refusing {path}: it is owned by uid {info.st_uid}, not {os.getuid()}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise RunDirError(
            f"refusing {path}: its mode is {stat.S_IMODE(info.st_mode):04o}; it must be 0700"
        )
    return path


def ensure() -> str:
    """The directory, created 0700 (with missing parents) when absent, then checked."""
    path = run_dir()
    try:
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RunDirError(f"cannot create {path}: {exc.strerror}") from None
    return checked(path)


def private_file(path: str) -> str:
    """``path`` when it is a regular file of this user with mode 0600 or stricter (a token file
    the user manages); RunDirError otherwise."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise RunDirError(f"cannot read {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise RunDirError(f"refusing {path}: it is not a regular file")
    if info.st_uid != os.getuid():
        raise RunDirError(f"refusing {path}: it is owned by uid {info.st_uid}, not {os.getuid()}")
    if stat.S_IMODE(info.st_mode) & 0o177:
        raise RunDirError(
            f"refusing {path}: its mode is {stat.S_IMODE(info.st_mode):04o}; "
            "it must be 0600 or stricter"
        )
    return path


def write_private(path: str, data: bytes) -> None:
    """Write ``path`` atomically with mode 0600 (a temporary file beside it, then rename)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


__all__ = ["RunDirError", "checked", "ensure", "private_file", "run_dir", "write_private"]
