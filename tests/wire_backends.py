"""Backends a test server can mount as ``test:<name>`` (tests/harness_server.py registers them).

They run inside the server process, so tests steer them through files (markers and flags).

- ``memory``: a writable in-memory store.
- ``failing``: every read call raises.
- ``slow:<ms>:<marker>``: each call ignores its token, sleeps, then appends a line to ``marker``.
- ``seeded``: ``memory`` holding two valid persisted sessions, ``persisted-a`` and ``persisted-b``.
- ``raise:<ops>:<kind>``: ``seeded``, but the listed operations (comma separated: ``list``,
  ``list_snapshots``, ``inspect``) raise. ``kind``: ``os`` (OSError), ``corrupt``
  (SessionPersistenceCorruptionError), ``key`` (KeyError), ``type`` (TypeError), ``recursion``,
  ``memory`` (MemoryError), ``coded`` (a ``SESSION_QUERY_*`` error of the backend's own), ``empty``
  (an exception with no message), ``base`` (a BaseException that is not an Exception), ``exit``
  (SystemExit, a backend calling sys.exit()), ``interrupt`` (KeyboardInterrupt).
- ``hang:<dir>``: ``seeded``; every read call writes ``<dir>/<op>.started``, blocks until its
  cancellation token fires, keeps running for ``SETTLE_SECONDS`` (a backend finishing its I/O),
  writes ``<dir>/<op>.settled`` and raises SessionQueryCancelled. A call whose token never fires
  gives up after 30 s.
- ``hang-on:<ops>:<dir>``: ``hang`` for the listed operations only (``inspect``, say).
- ``gate:<dir>``: ``seeded``; every read call ignores its token and blocks until ``<dir>/release``
  exists (30 s at most), recording ``<dir>/<op>.started``.
- ``inconsistent:<mode>``: ``seeded`` with listings that do not add up: ``flip`` (every other list
  omits ``persisted-b``), ``revisions`` (each snapshot listing has new revisions), ``phantom``
  (``ghost`` is listed, inspect says it does not exist), ``conflict`` (inspect reports another
  cwd than the listing), ``duplicates`` (every id listed twice), ``garbage`` (listings and
  inspections are not the contract's shapes), ``badlog`` (``persisted-a``'s log has a seq gap),
  ``churn-live`` (also holds ``live``, the live session's persisted copy, whose revision changes on
  every listing, as when the checkpointer keeps writing it).
- ``flaky-writes:<flag>``: a writable memory store whose writes (create, append, stored_count)
  raise OSError while the file ``<flag>`` exists.
"""

from __future__ import annotations

import os
import time

from dsh_query_server import errors
from dsh_query_server.cancel import SessionQueryCancelled
from dsh_query_server.errors import QueryError
from dsh_query_server.model.event import Header
from dsh_query_server.persistence.contract.errors import SessionPersistenceCorruptionError
from dsh_query_server.persistence.contract.results import Inspection, Snapshot

from .builders import A, U, hdr
from .fakes import MemoryBackend

READ_OPS = ("list", "list_snapshots", "inspect")
SETTLE_SECONDS = 0.3
GIVE_UP_SECONDS = 30.0


class SlowBackend(MemoryBackend):
    def __init__(self, delay: float, marker: str) -> None:
        super().__init__()
        self.delay, self.marker = delay, marker

    def _enter(self, op, arg, token):
        time.sleep(self.delay)  # ignores the token on purpose: the server must await us
        with open(self.marker, "a") as f:
            f.write(f"{op} settled\n")
        super()._enter(op, arg, token)


def seed(backend: MemoryBackend) -> MemoryBackend:
    backend.put(
        Header.from_value(hdr("persisted-a", 1, cwd="/p")),
        [U(0, "alpha needle"), A(1, "beta answer")],
    )
    backend.put(Header.from_value(hdr("persisted-b", 2)), [U(0, "gamma needle")])
    return backend


def _touch(path: str, line: str = "") -> None:
    with open(path, "a") as f:
        f.write(line + "\n")


class _BaseFailure(BaseException):
    """Not an Exception: what a backend calling sys.exit() or a C extension gone wrong raises."""


def _error(kind: str, op: str) -> BaseException:
    message = f"injected {op} failure"
    return {
        "os": lambda: OSError(message),
        "corrupt": lambda: SessionPersistenceCorruptionError(message),
        "key": lambda: KeyError(message),
        "type": lambda: TypeError(message),
        "recursion": lambda: RecursionError(message),
        "memory": lambda: MemoryError(message),
        "coded": lambda: QueryError(errors.SESSION_NOT_FOUND, f"backend says: {message}"),
        "empty": lambda: OSError(),
        "base": lambda: _BaseFailure(message),
        "exit": lambda: SystemExit(3),
        "interrupt": lambda: KeyboardInterrupt(),
    }[kind]()


class RaisingBackend(MemoryBackend):
    def __init__(self, ops: list[str], kind: str) -> None:
        super().__init__()
        seed(self)
        self.ops, self.kind = ops, kind

    def _enter(self, op, arg, token):
        super()._enter(op, arg, token)
        if op in self.ops:
            raise _error(self.kind, op)


class HangBackend(MemoryBackend):
    """Blocks until cancelled, then settles (slowly) and raises."""

    def __init__(self, directory: str, ops: tuple[str, ...] = READ_OPS) -> None:
        super().__init__()
        seed(self)
        self.directory = directory
        self.ops = ops

    def _enter(self, op, arg, token):
        super()._enter(op, arg, token)
        if op not in self.ops:
            return
        _touch(os.path.join(self.directory, f"{op}.started"), str(arg))
        deadline = time.monotonic() + GIVE_UP_SECONDS
        while token is None or not token.wait(0.01):
            if time.monotonic() > deadline:
                return
        time.sleep(SETTLE_SECONDS)  # still finishing I/O after the token fired
        _touch(os.path.join(self.directory, f"{op}.settled"), f"{time.time():.6f}")
        raise SessionQueryCancelled("cancelled")


class GateBackend(MemoryBackend):
    """Ignores the token; waits for a release file."""

    def __init__(self, directory: str) -> None:
        super().__init__()
        seed(self)
        self.directory = directory

    def _enter(self, op, arg, token):
        super()._enter(op, arg, token)
        if op not in READ_OPS:
            return
        _touch(os.path.join(self.directory, f"{op}.started"), str(arg))
        release = os.path.join(self.directory, "release")
        deadline = time.monotonic() + GIVE_UP_SECONDS
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.01)


class InconsistentBackend(MemoryBackend):
    def __init__(self, mode: str) -> None:
        super().__init__()
        seed(self)
        self.mode = mode
        self.counter = 0
        if mode == "phantom":
            self.revisions["ghost"] = 1
        if mode == "churn-live":  # the live session's persisted copy, rewritten by a checkpointer
            self.put(Header.from_value(hdr("live", 5, cwd="/p")), [U(0, "live needle")])
        if mode == "badlog":
            h, events = self.sessions["persisted-a"]
            self.sessions["persisted-a"] = (h, [events[0], A(2, "after a gap")])

    def _headers(self) -> list[Header]:
        self.counter += 1
        headers = [h for h, _ in self.sessions.values()]
        if self.mode == "flip" and self.counter % 2 == 0:
            headers = [h for h in headers if h.id != "persisted-b"]
        if self.mode == "phantom":
            headers.append(Header.from_value(hdr("ghost", 3)))
        if self.mode == "duplicates":
            headers = headers + headers
        return headers

    def list(self, token=None):
        self._enter("list", None, token)
        if self.mode == "garbage":
            return [None, 5, "x"]
        return self._headers()

    def list_snapshots(self, token=None):
        self._enter("list_snapshots", None, token)
        if self.mode == "garbage":
            return "not a list"
        return [Snapshot(h, self._revision(h)) for h in self._headers()]

    def _revision(self, h):
        if self.mode == "revisions":
            return f"rev-{self.counter}"
        if self.mode == "churn-live":
            return f"rev-{self.counter}" if h.id == "live" else f"rev-{self.revisions[h.id]}"
        return f"rev-{self.revisions.get(h.id, 0)}"

    def inspect(self, session_id, token=None):
        self._enter("inspect", session_id, token)
        if self.mode == "garbage":
            return {"meta": 5, "events": "no"}
        if session_id not in self.sessions:  # the phantom: listed, but not there
            raise KeyError(f'session "{session_id}" not found')
        h, events = self.sessions[session_id]
        if self.mode == "conflict":
            h = Header.from_value({**h.to_value(), "cwd": "/somewhere/else"})
        return Inspection(h, list(events))

    def _enter(self, op, arg, token):
        with self._lock:
            self.calls.append((op, arg))


class FlakyWritesBackend(MemoryBackend):
    """Writes fail while the flag file exists; reads always work."""

    def __init__(self, flag: str) -> None:
        super().__init__()
        self.flag = flag

    def _check(self, op: str) -> None:
        if os.path.exists(self.flag):
            raise OSError(f"injected {op} failure (disk full)")

    def create(self, header):
        self._check("create")
        super().create(header)

    def append(self, session_id, events):
        self._check("append")
        super().append(session_id, events)

    def stored_count(self, session_id):
        self._check("stored_count")
        return super().stored_count(session_id)


def make(name: str):
    if name == "memory":
        return MemoryBackend()
    if name == "seeded":
        return seed(MemoryBackend())
    if name == "failing":
        backend = MemoryBackend()
        for op in READ_OPS:
            backend.fail[op] = OSError("injected failure")
        return backend
    if name.startswith("slow:"):
        _, ms, marker = name.split(":", 2)
        return SlowBackend(int(ms) / 1000, marker)
    if name.startswith("raise:"):
        _, ops, kind = name.split(":", 2)
        return RaisingBackend(ops.split(","), kind)
    if name.startswith("hang:"):
        return HangBackend(name.split(":", 1)[1])
    if name.startswith("hang-on:"):
        _, ops, directory = name.split(":", 2)
        return HangBackend(directory, tuple(ops.split(",")))
    if name.startswith("gate:"):
        return GateBackend(name.split(":", 1)[1])
    if name.startswith("inconsistent:"):
        return InconsistentBackend(name.split(":", 1)[1])
    if name.startswith("flaky-writes:"):
        return FlakyWritesBackend(name.split(":", 1)[1])
    raise ValueError(f"unknown test backend {name!r}")
