"""Connections of the ``postgres:`` backend (postgres.md §1.4, §3.1, §4): the transactions every
operation runs in on a pooled connection (pool.py), cancellation, and how failures become
messages.

Connections are autocommit; an operation runs one statement on its own, or opens an explicit
transaction. A read retries once on a connection that broke under it (a restart), never when no
connection could be had (the server is down); every other failure becomes one scrubbed message
that names the store by its redacted URI. One watcher thread per pool cancels the statements of
reads whose token fired.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import ConnStatus, DiagnosticField, ExecStatus
from psycopg.pq.abc import PGresult

from ...cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from .conninfo import PgMount
from .errors import AppendInDoubtError, PostgresUnavailableError
from .pool import Conn, ConnectionPool, PoolTimeout

log = logging.getLogger(__name__)

T = TypeVar("T")

_CANCEL_POLL_SECONDS = 0.05
_REPEATABLE_READ = psycopg.IsolationLevel.REPEATABLE_READ
_READ_COMMITTED = psycopg.IsolationLevel.READ_COMMITTED
_RETRIABLE_SQLSTATES = ("57P01", "57P02", "57P03")
_NO_SUCH_STATEMENT = b"26000"  # invalid_sql_statement_name: not prepared on this connection

Row = tuple[bytes | None, ...]


def _retriable(exc: BaseException) -> bool:
    """A connection that broke: SQLSTATE class 08, a server shutdown, or a closed socket."""
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _RETRIABLE_SQLSTATES
    return isinstance(exc, psycopg.InterfaceError)


class Pool:
    """One mount's connections (pool.py) and its failure vocabulary."""

    def __init__(self, mount: PgMount) -> None:
        self.mount = mount
        self.reachable = False
        self.last_error: str | None = None
        self._fsync_warned = False
        self._connections = ConnectionPool(
            mount.conninfo(),
            size=mount.pool_size,
            timeout_seconds=mount.pool_timeout_ms / 1000,
            configure=self._configure,
        )
        self._watcher = CancelWatcher()

    def _configure(self, conn: Conn) -> None:
        """Commits are durable (§3.7): a server configured with synchronous_commit off gets
        it back on for our sessions; one that runs with fsync off is logged once per mount (no
        session setting can undo it)."""
        row = conn.execute(
            "SELECT pg_catalog.current_setting('synchronous_commit'),"
            " pg_catalog.current_setting('fsync')"
        ).fetchone()
        if row is None:
            return
        if row[0] == "off":
            conn.execute("SET synchronous_commit TO on")
        if row[1] == "off" and not self._fsync_warned:
            self._fsync_warned = True
            log.warning(
                "postgres server of %s runs with fsync = off: a crash of its machine can lose"
                " committed events",
                self.mount.redacted,
            )

    def close(self) -> None:
        self._connections.close()
        self._watcher.close()

    # -- messages ------------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        return self.mount.scrub(text)

    def unavailable(self, detail: str) -> PostgresUnavailableError:
        message = self.scrub(f"postgres store {self.mount.redacted} is unavailable: {detail}")
        self.reachable, self.last_error = False, message
        return PostgresUnavailableError(message)

    def failure(self, exc: BaseException, token: CancelToken) -> Exception:
        """The exception to raise for a psycopg failure (§4)."""
        if token.cancelled:
            return SessionQueryCancelled("cancelled")
        detail = self.scrub(str(exc).strip())
        if isinstance(exc, pg_errors.QueryCanceled):
            message = (
                f"postgres statement timed out after {self.mount.statement_timeout_ms} ms"
                " (statementTimeoutMs)"
            )
        elif isinstance(exc, pg_errors.ReadOnlySqlTransaction) and not self.mount.read_only:
            message = "postgres server is read-only (a standby?); appends need the primary"
        elif isinstance(exc, pg_errors.InsufficientPrivilege):
            message = f'postgres role "{self.user}" lacks a privilege: {detail}'
        elif isinstance(exc, PoolTimeout):
            return self.unavailable(f"no connection within {self.mount.pool_timeout_ms} ms")
        elif isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return self.unavailable(detail)
        else:
            message = f"postgres store {self.mount.redacted}: {detail}"
        self.last_error = self.scrub(message)
        return PostgresUnavailableError(self.last_error)

    @property
    def user(self) -> str:
        return self.mount.libpq.get("user", "")

    # -- connections and transactions -----------------------------------------------------

    def _checkout(self, token: CancelToken) -> Conn:
        """A connection; failing to get one (the server refused or did not answer, or every
        connection stayed busy) fails the operation at once: a retry is for a connection that
        broke under a statement, not for a server that is down."""
        try:
            return self._connections.get()
        except (psycopg.Error, PoolTimeout) as exc:
            raise self.failure(exc, token) from None

    def read(self, work: Callable[[Conn], T], token: CancelToken = NULL_TOKEN) -> T:
        """``work`` in one REPEATABLE READ READ ONLY transaction, retried once on a broken
        connection, cancelled through the server when ``token`` fires."""

        def in_transaction(conn: Conn) -> T:
            # In the BEGIN itself: a SET TRANSACTION would cost a round trip.
            conn.isolation_level, conn.read_only = _REPEATABLE_READ, True
            with conn.transaction():
                return work(conn)

        return self._retried(in_transaction, token)

    def statement(self, work: Callable[[Conn], T], token: CancelToken = NULL_TOKEN) -> T:
        """``work``, a single statement, in autocommit (its own snapshot, no BEGIN or COMMIT
        round trips), retried once on a broken connection and cancelled like ``read``."""
        return self._retried(work, token)

    def probe(self, name: bytes, text: bytes, token: CancelToken) -> Row | None:
        """The first row (text-format values) of ``text``, one SELECT prepared as ``name`` on
        each connection, run like ``statement`` (autocommit, retried once, cancelled through the
        server) but through libpq itself: no cursor, and no watcher registration, because it
        waits in the caller's thread and looks at ``token`` while it waits."""
        return self._retried(lambda conn: _probe(conn, name, text, token), token, probe=True)

    def _retried(self, work: Callable[[Conn], T], token: CancelToken, probe: bool = False) -> T:
        """``work`` on a pooled connection, watched for ``token`` unless it is a probe (which
        watches it itself); once more on a fresh one when the connection broke under it (a
        restart), unless the token fired."""
        for attempt in (0, 1):
            token.raise_if_cancelled()
            conn = self._checkout(token)
            try:
                try:
                    if probe:
                        result = work(conn)
                    else:
                        with self._watcher.watching(conn, token):
                            result = work(conn)
                finally:
                    self._connections.put(conn)
                self.reachable = True
                token.raise_if_cancelled()
                return result
            except psycopg.Error as exc:
                if attempt == 0 and _retriable(exc) and not token.cancelled:
                    continue
                raise self.failure(exc, token) from None
        raise AssertionError("unreachable")

    def write(self, work: Callable[[Conn], T], in_doubt: str | None = None) -> T:
        """``work`` in one READ COMMITTED transaction (appends take no token, §4). A connection
        lost after ``work`` finished was lost during COMMIT: that is ``in_doubt`` (§3.7)."""
        conn = self._checkout(NULL_TOKEN)
        finished = False
        try:
            conn.isolation_level, conn.read_only = _READ_COMMITTED, None
            with conn.transaction():
                result = work(conn)
                finished = True
            self.reachable = True
            return result
        except psycopg.Error as exc:
            if finished and in_doubt is not None and _retriable(exc):
                raise AppendInDoubtError(self.scrub(f"{in_doubt}: {str(exc).strip()}")) from None
            raise self.failure(exc, NULL_TOKEN) from None
        finally:
            self._connections.put(conn)


def _probe(conn: Conn, name: bytes, text: bytes, token: CancelToken) -> Row | None:
    """``Pool.probe`` on one connection: the prepared statement, prepared first when this
    connection does not hold it (a new connection, or one whose statements were deallocated)."""
    pgconn = conn.pgconn
    with conn.lock:
        pgconn.send_query_prepared(name, None)
        result = _result(conn, token)
        if (
            result.status == ExecStatus.FATAL_ERROR
            and result.error_field(DiagnosticField.SQLSTATE) == _NO_SUCH_STATEMENT
        ):
            pgconn.send_prepare(name, text)
            prepared = _result(conn, token)
            if prepared.status != ExecStatus.COMMAND_OK:
                raise _error(conn, prepared)
            pgconn.send_query_prepared(name, None)
            result = _result(conn, token)
    if (
        result.status == ExecStatus.FATAL_ERROR
        and result.error_field(DiagnosticField.STATEMENT_POSITION) is not None
    ):
        # An error about the statement's text: psycopg runs it (outside its lock), so that the
        # message reads as psycopg's statement reported it (libpq words a prepared one's
        # position apart).
        row = conn.execute(text).fetchone()
        return None if row is None else tuple(_text(value) for value in row)
    if result.status != ExecStatus.TUPLES_OK:
        raise _error(conn, result)
    if result.ntuples == 0:
        return None
    return tuple([result.get_value(0, column) for column in range(result.nfields)])


def _text(value: object) -> bytes | None:
    """A value psycopg loaded, in the text format libpq gives it (text and integers only)."""
    return None if value is None else str(value).encode()


def _error(conn: Conn, result: PGresult) -> psycopg.Error:
    """The error psycopg raises for ``result``; on a connection that broke, an OperationalError
    even without a SQLSTATE (so that it is retried, as a broken psycopg read is)."""
    error = pg_errors.error_from_result(result, conn.info.encoding)
    if conn.pgconn.status == ConnStatus.BAD and not isinstance(error, psycopg.OperationalError):
        return psycopg.OperationalError(str(error))
    return error


def _result(conn: Conn, token: CancelToken) -> PGresult:
    """The one result of the query just sent, read as psycopg reads it (flush, then consume
    input until libpq is not busy), waiting on the socket at most _CANCEL_POLL_SECONDS at a
    time: when ``token`` has fired, the statement is cancelled through the server (once) and its
    answer, the cancellation's error, is still read, so the connection stays usable."""
    pgconn = conn.pgconn
    sock = pgconn.socket
    while pgconn.flush():
        readable, _, _ = select.select([sock], [sock], [], _CANCEL_POLL_SECONDS)
        if readable:
            pgconn.consume_input()
    results: list[PGresult] = []
    cancelled = False
    while True:
        while pgconn.is_busy():  # PQisBusy parses what consume_input read
            if not cancelled and token.cancelled:
                cancelled = True
                try:
                    conn.cancel_safe(timeout=5)
                except psycopg.Error as exc:
                    log.debug("cancel failed: %s", type(exc).__name__)
            select.select([sock], [], [], _CANCEL_POLL_SECONDS)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            break
        results.append(result)
    if len(results) != 1:
        raise psycopg.OperationalError(f"expected one result, got {len(results)}")
    return results[0]


class _Watched:
    __slots__ = ("conn", "token", "lock", "done")

    def __init__(self, conn: Conn, token: CancelToken) -> None:
        self.conn, self.token = conn, token
        self.lock = threading.Lock()
        self.done = False


class CancelWatcher:
    """One thread per pool that cancels, within 100 ms of its token firing, the running statement
    of every read registered with ``watching``; it sleeps while no read is registered. A read
    costs a registration, not a thread."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._reads: set[_Watched] = set()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextmanager
    def watching(self, conn: Conn, token: CancelToken) -> Generator[None, None, None]:
        if token is NULL_TOKEN:
            yield
            return
        read = _Watched(conn, token)
        with self._lock:
            self._reads.add(read)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="dsh-query-pg-cancel", daemon=True
                )
                self._thread.start()
            self._lock.notify()
        try:
            yield
        finally:
            # Marked done under its own lock: a cancel that starts later cancels nothing, and
            # one in progress finishes before the connection can go back to the pool.
            with read.lock:
                read.done = True
            with self._lock:
                self._reads.discard(read)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._reads and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                fired = [read for read in self._reads if read.token.cancelled]
                self._reads.difference_update(fired)
            for read in fired:  # rare: a thread each, so one slow cancel delays no other
                threading.Thread(target=_cancel, args=(read,), daemon=True).start()
            time.sleep(_CANCEL_POLL_SECONDS)


def _cancel(read: _Watched) -> None:
    with read.lock:
        if read.done:
            return
        try:
            read.conn.cancel_safe(timeout=5)
        except psycopg.Error as exc:
            log.debug("cancel failed: %s", type(exc).__name__)
