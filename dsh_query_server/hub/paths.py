"""Where one hub's files live (hub.md §1): in the private run directory (rundir.py),
``hub-<key>.sock``, ``.lock`` (held by the hub for its life), ``.json`` (who it is, written once
the socket listens), ``.start`` (clients starting a hub take it, so two start one) and ``.log``
(a detached hub's stdout and stderr). Standard library only."""

from __future__ import annotations

import json
import os
from typing import Any

from .. import rundir

# sun_path holds 108 bytes on Linux, NUL included.
MAX_SOCKET_PATH = 107


class HubPathError(rundir.RunDirError):
    pass


class HubPaths:
    __slots__ = ("directory", "key")

    def __init__(self, directory: str, key: str) -> None:
        self.directory = directory
        self.key = key

    def _file(self, suffix: str) -> str:
        return os.path.join(self.directory, f"hub-{self.key}.{suffix}")

    @property
    def socket(self) -> str:
        return self._file("sock")

    @property
    def lock(self) -> str:
        return self._file("lock")

    @property
    def info(self) -> str:
        return self._file("json")

    @property
    def start(self) -> str:
        return self._file("start")

    @property
    def log(self) -> str:
        return self._file("log")


def paths_for(key: str) -> HubPaths:
    """The files of the hub of ``key``, its directory created and checked (RunDirError)."""
    paths = HubPaths(rundir.ensure(), key)
    if len(paths.socket.encode("utf-8", "surrogateescape")) > MAX_SOCKET_PATH:
        raise HubPathError(
            f"the socket path {paths.socket} is too long for a Unix socket; "
            "set XDG_RUNTIME_DIR or TMPDIR to a shorter directory"
        )
    return paths


def read_info(path: str) -> dict[str, Any] | None:
    """A hub's json, or None when it is missing or unreadable (a hub starting or gone)."""
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def all_infos() -> list[dict[str, Any]]:
    """Every hub json of this user's run directory (checked), newest first."""
    directory = rundir.ensure()
    import glob  # only `hub list` lists: every other command knows its key

    infos = [read_info(p) for p in glob.glob(os.path.join(directory, "hub-*.json"))]
    found = [i for i in infos if i is not None]
    return sorted(found, key=lambda i: i.get("started", 0), reverse=True)


__all__ = ["HubPathError", "HubPaths", "all_infos", "paths_for", "read_info"]
