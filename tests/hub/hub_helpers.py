"""Hub test plumbing: short private run directories (a Unix socket path holds 107 bytes, more
than a pytest tmp_path leaves) and stopping every hub a test started (conftest stops those in
every directory made here after each test, and those in the session's own directory at the end).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator

_made: list[str] = []
_users: dict[str, int] = {}  # run directory -> clients open on it (mcp_session)


def short_run_dir() -> str:
    """A fresh 0700 directory for ``XDG_RUNTIME_DIR``; its hubs are stopped after each test
    while no ``using_hubs`` holds it, and it is removed at the end of the session."""
    path = tempfile.mkdtemp(prefix="dq-", dir="/tmp")
    os.chmod(path, 0o700)
    _made.append(path)
    return path


@contextlib.contextmanager
def using_hubs(runtime_dir: str) -> Iterator[None]:
    """A client (an MCP server process, say) that may start hubs in ``runtime_dir`` is open:
    when the last one closes, those hubs are stopped (a module-scoped session outlives tests)."""
    _users[runtime_dir] = _users.get(runtime_dir, 0) + 1
    try:
        yield
    finally:
        _users[runtime_dir] -= 1
        if not _users[runtime_dir]:
            del _users[runtime_dir]
            stop_hubs(runtime_dir)


def hub_pids(runtime_dir: str) -> list[int]:
    pids = []
    for path in glob.glob(os.path.join(runtime_dir, "dsh-query", "hub-*.json")):
        with contextlib.suppress(OSError, ValueError):
            with open(path, encoding="utf-8") as f:
                pid = json.load(f).get("pid")
            if isinstance(pid, int):
                pids.append(pid)
    return pids


def alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # reap it when it is our own child
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Exited, reaped or not. A hub is not our child: the CLI or an editor started it, and it was
    handed to PID 1, which may reap only now and then (about once a second where these tests run:
    each stop waited a second for a process that had exited within milliseconds)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[:1] == ["Z"]
    except FileNotFoundError:  # reaped meanwhile, or no /proc (kill() has answered then)
        return os.path.isdir("/proc")


def stop_pid(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM (the hub's orderly exit), then SIGKILL after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)


def stop_hubs(runtime_dir: str) -> None:
    if not runtime_dir:
        return
    for pid in hub_pids(runtime_dir):
        stop_pid(pid)


def stop_idle_dirs(*more: str) -> None:
    """After a test: the hubs of every directory (made here, or ``more``) no open client
    holds."""
    for path in [*_made, *more]:
        if path not in _users:
            stop_hubs(path)


def cleanup_made() -> None:
    """At the end of the session: every hub stopped, every directory removed."""
    while _made:
        path = _made.pop()
        stop_hubs(path)
        shutil.rmtree(path, ignore_errors=True)


__all__ = [
    "alive",
    "cleanup_made",
    "hub_pids",
    "short_run_dir",
    "stop_hubs",
    "stop_idle_dirs",
    "stop_pid",
    "using_hubs",
]
