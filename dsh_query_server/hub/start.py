"""Finding or starting the hub of a configuration (hub.md §3).

Connect to ``hub-<key>.sock``. If nothing answers (no file, ``ECONNREFUSED``, a stale socket
whose lock is free), take ``hub-<key>.start`` (``flock``), look again, remove a stale socket,
start ``dsh-query hub`` detached (its own session, stdio to ``hub-<key>.log``, 0600) and wait
for the socket, at most ``START_SECONDS``. Two clients racing start one hub: the second waits on
the start lock and then finds the first one's hub.

The options travel to the new hub in ``DSH_QUERY_HUB_OPTIONS`` rather than on its command line,
where other users could read a persistence URI's password in the process list.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from .client import HubClient
from .key import hub_key
from .paths import HubPaths, paths_for

START_SECONDS = 10.0
POLL_SECONDS = 0.02
OPTIONS_ENV = "DSH_QUERY_HUB_OPTIONS"
IDLE_EXIT_STARTED = 600  # seconds, for a hub a client starts


class HubStartError(Exception):
    """No hub could be reached or started; the message names the path to look at."""


def _connect(paths: HubPaths) -> HubClient | None:
    try:
        return HubClient.connect(paths.socket, timeout=START_SECONDS)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            return None
        raise HubStartError(f"cannot connect to {paths.socket}: {exc.strerror}") from None


def lock_is_free(path: str) -> bool:
    """No hub holds ``hub-<key>.lock`` (it is taken and given back at once)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


@contextlib.contextmanager
def _start_lock(paths: HubPaths) -> Iterator[None]:
    fd = os.open(paths.start, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + 2 * START_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise HubStartError(
                        f"another client has been starting the hub for too long ({paths.start})"
                    ) from None
                time.sleep(POLL_SECONDS)
        yield
    finally:
        os.close(fd)


def _spawn(paths: HubPaths, options: dict[str, Any]) -> int:
    import subprocess

    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        env = {**os.environ, OPTIONS_ENV: json.dumps(options)}
        process = subprocess.Popen(
            [sys.executable, "-m", "dsh_query_server.cli", "hub"]
            + ["--idle-exit", str(IDLE_EXIT_STARTED)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log)
    return process.pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a child that exited stays a zombie until reaped: reap it if it is ours
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _log_tail(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f.read().splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _wait(paths: HubPaths, pid: int) -> HubClient:
    deadline = time.monotonic() + START_SECONDS
    while True:
        client = _connect(paths)
        if client is not None:
            return client
        if not _alive(pid):
            detail = _log_tail(paths.log)
            raise HubStartError(
                f"the hub exited before it listened{': ' + detail if detail else ''} "
                f"(log: {paths.log})"
            )
        if time.monotonic() > deadline:
            raise HubStartError(
                f"the hub did not listen on {paths.socket} within {START_SECONDS:.0f} s "
                f"(log: {paths.log})"
            )
        time.sleep(POLL_SECONDS)


def _find_or_start(paths: HubPaths, options: dict[str, Any]) -> HubClient:
    """Under the start lock: the hub that answers, or a new one once no hub holds the lock."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        client = _connect(paths)
        if client is not None:
            return client
        if lock_is_free(paths.lock):  # a dead hub's socket and json are stale
            for stale in (paths.socket, paths.info):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
            return _wait(paths, _spawn(paths, options))
        if time.monotonic() > deadline:  # a hub holds its lock but does not listen
            raise HubStartError(f"the hub holding {paths.lock} does not answer on {paths.socket}")
        time.sleep(POLL_SECONDS)  # it is starting, or leaving


def reach(options: dict[str, Any], *, start: bool = True) -> HubClient | None:
    """A connection (not yet initialized) to the hub of ``options``, started when needed
    (``start``); None when none runs and ``start`` is false. HubStartError (and RunDirError)
    name what is wrong."""
    paths = paths_for(hub_key(options))
    client = _connect(paths)
    if client is None and start:
        with _start_lock(paths):
            client = _find_or_start(paths, options)
    return client


def connect(options: dict[str, Any], *, start: bool = True, wait: bool = True) -> HubClient | None:
    """``reach``, initialized with ``options`` (without ``wait``: its answer is read with the
    first request's, HubClient.initialize)."""
    client = reach(options, start=start)
    if client is None:
        return None
    try:
        return client.initialize(options, wait=wait)
    except BaseException:
        client.close()
        raise


__all__ = ["HubStartError", "OPTIONS_ENV", "START_SECONDS", "connect", "lock_is_free", "reach"]
