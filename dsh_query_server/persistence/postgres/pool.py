"""The connections of one ``postgres:`` mount (postgres.md §1.4): at most ``poolSize``, opened
in the caller's thread when none is idle, reused last in, first out, and checked at checkout.

Opening in the caller's thread, not from a background task that retries with a growing delay,
is what bounds an outage: while the server is down an operation fails as soon as its one
connection attempt does, and once it accepts connections again the very next operation gets
one. Only a caller that finds all ``poolSize`` connections in use waits, ``poolTimeoutMs`` at
most.
"""

from __future__ import annotations

import select
import threading
import time
from collections import deque
from collections.abc import Callable

import psycopg
from psycopg.pq import TransactionStatus

Conn = psycopg.Connection[tuple[object, ...]]

_MAX_IDLE_SECONDS = 600.0  # beyond the most recent one, idle connections are closed after this


class PoolTimeout(Exception):
    """Every connection stayed in use for the whole wait."""


class _Waiter:
    """A caller queued for a connection: handed one that came back, or a freed slot to open
    one in. Callers are served in the order they came, so no caller that keeps returning and
    taking a connection can starve one that waits."""

    __slots__ = ("wake", "conn", "may_open")

    def __init__(self, lock: threading.Lock) -> None:
        self.wake = threading.Condition(lock)
        self.conn: Conn | None = None
        self.may_open = False


class ConnectionPool:
    def __init__(
        self,
        conninfo: str,
        size: int,
        timeout_seconds: float,
        configure: Callable[[Conn], None],
    ) -> None:
        self._conninfo = conninfo
        self._size = size
        self._timeout = timeout_seconds
        self._configure = configure
        self._lock = threading.Lock()
        self._idle: list[tuple[Conn, float]] = []  # (connection, when it came back), a stack
        self._waiting: deque[_Waiter] = deque()
        self._count = 0  # connections open, being opened, or in use
        self._closed = False

    def get(self) -> Conn:
        """An idle connection that passes the checkout check (``_usable``), else a new one;
        ``psycopg.Error`` when connecting fails, ``PoolTimeout`` when all are busy too long."""
        deadline = time.monotonic() + self._timeout
        while True:
            with self._lock:
                conn = self._take(deadline)
            if conn is None:
                return self._connect()
            if _usable(conn):
                return conn
            self._discard(conn)

    def _take(self, deadline: float) -> Conn | None:
        """Under the lock: an idle connection, or None for a slot to open a new one in;
        queued behind earlier callers when there is neither."""
        if self._closed:
            raise psycopg.OperationalError("the connection pool is closed")
        if not self._waiting:
            if self._idle:
                return self._idle.pop()[0]
            if self._count < self._size:
                self._count += 1
                return None
        waiter = _Waiter(self._lock)
        self._waiting.append(waiter)
        while waiter.conn is None and not waiter.may_open:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._closed:
                self._waiting.remove(waiter)
                if self._closed:
                    raise psycopg.OperationalError("the connection pool is closed")
                raise PoolTimeout()
            waiter.wake.wait(remaining)
        return waiter.conn

    def _connect(self) -> Conn:
        conn: Conn | None = None
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
            self._configure(conn)
            return conn
        except BaseException:
            if conn is not None:
                conn.close()
            self._release()
            raise

    def put(self, conn: Conn) -> None:
        """To the first waiting caller, or onto the idle stack, when it is idle and open; a
        transaction left open is rolled back first; anything else is closed, freeing its slot."""
        if not conn.closed and conn.pgconn.transaction_status in (
            TransactionStatus.INTRANS,
            TransactionStatus.INERROR,
        ):
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
        with self._lock:
            idle = not conn.closed and conn.pgconn.transaction_status == TransactionStatus.IDLE
            if idle and not self._closed:
                if self._waiting:
                    waiter = self._waiting.popleft()
                    waiter.conn = conn
                    waiter.wake.notify()
                    return
                now = time.monotonic()
                self._idle.append((conn, now))
                if len(self._idle) == 1 or now - self._idle[0][1] <= _MAX_IDLE_SECONDS:
                    return
                conn = self._idle.pop(0)[0]  # the longest idle one
        self._discard(conn)

    def _discard(self, conn: Conn) -> None:
        conn.close()
        self._release()

    def _release(self) -> None:
        """A connection is gone: its slot goes to the first waiting caller, if any."""
        with self._lock:
            if self._waiting and not self._closed:
                waiter = self._waiting.popleft()
                waiter.may_open = True
                waiter.wake.notify()
            else:
                self._count -= 1

    def close(self) -> None:
        """Closes the idle connections now, and each one in use when it comes back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            for waiter in self._waiting:
                waiter.wake.notify()
        for conn, _ in idle:
            conn.close()


def quiet(conn: Conn) -> bool:
    """An idle pooled connection receives nothing (it never LISTENs), so a socket with input
    pending holds a server's termination notice or EOF (a restart)."""
    if conn.closed or conn.pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    return not readable


def _usable(conn: Conn) -> bool:
    """The checkout check: no round trip for a quiet connection; any other one is checked by an
    empty statement, and a broken one is replaced."""
    if quiet(conn):
        return True
    if conn.closed:
        return False
    try:
        conn.execute("")
    except psycopg.Error:
        return False
    return True
