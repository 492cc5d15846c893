"""Connections of the ``postgres:`` backend (postgres.md §1.4, §3.1, §4): the pool, the
transactions every operation runs in, cancellation, and how failures become messages.

Connections are autocommit and each operation opens an explicit transaction. A read retries
once on a connection that broke under it (a restart); every other failure becomes one scrubbed
message that names the store by its redacted URI.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TypeVar

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from ...cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from .conninfo import PgMount
from .errors import AppendInDoubtError, PostgresUnavailableError

log = logging.getLogger(__name__)

Conn = psycopg.Connection[tuple[object, ...]]
T = TypeVar("T")

_CANCEL_POLL_SECONDS = 0.05
_REPEATABLE_READ = psycopg.IsolationLevel.REPEATABLE_READ
_READ_COMMITTED = psycopg.IsolationLevel.READ_COMMITTED
_RETRIABLE_SQLSTATES = ("57P01", "57P02", "57P03")


def _retriable(exc: BaseException) -> bool:
    """A connection that broke: SQLSTATE class 08, a server shutdown, or a closed socket."""
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _RETRIABLE_SQLSTATES
    return isinstance(exc, psycopg.InterfaceError)


class Pool:
    """One mount's connection pool and its failure vocabulary."""

    def __init__(self, mount: PgMount) -> None:
        self.mount = mount
        self.reachable = False
        self.last_error: str | None = None
        self._fsync_warned = False
        self._pool = psycopg_pool.ConnectionPool(
            mount.conninfo(),
            min_size=1,
            max_size=mount.pool_size,
            open=False,
            kwargs={"autocommit": True},
            configure=self._configure,
            check=psycopg_pool.ConnectionPool.check_connection,
            timeout=mount.pool_timeout_ms / 1000,
            name="dsh-query-postgres",
        )
        self._pool.open(wait=False)

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
        self._pool.close()

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
        elif isinstance(exc, psycopg_pool.PoolTimeout):
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

    @contextmanager
    def connection(self) -> Generator[Conn, None, None]:
        with self._pool.connection() as conn:
            yield conn
        self.reachable = True

    def read(self, work: Callable[[Conn], T], token: CancelToken = NULL_TOKEN) -> T:
        """``work`` in one REPEATABLE READ READ ONLY transaction, retried once on a broken
        connection, cancelled through the server when ``token`` fires."""
        for attempt in (0, 1):
            token.raise_if_cancelled()
            try:
                with self.connection() as conn, cancelling(conn, token):
                    # In the BEGIN itself: a SET TRANSACTION would cost a round trip.
                    conn.isolation_level, conn.read_only = _REPEATABLE_READ, True
                    with conn.transaction():
                        result = work(conn)
                token.raise_if_cancelled()
                return result
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                if attempt == 0 and _retriable(exc) and not token.cancelled:
                    continue
                raise self.failure(exc, token) from None
        raise AssertionError("unreachable")

    def statement(self, work: Callable[[Conn], T]) -> T:
        """``work``, a single statement, in autocommit (its own snapshot, no BEGIN or COMMIT
        round trips), retried once on a broken connection like ``read``."""
        for attempt in (0, 1):
            try:
                with self.connection() as conn:
                    return work(conn)
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                if attempt == 0 and _retriable(exc):
                    continue
                raise self.failure(exc, NULL_TOKEN) from None
        raise AssertionError("unreachable")

    def write(self, work: Callable[[Conn], T], in_doubt: str | None = None) -> T:
        """``work`` in one READ COMMITTED transaction (appends take no token, §4). A connection
        lost after ``work`` finished was lost during COMMIT: that is ``in_doubt`` (§3.7)."""
        finished = False
        try:
            with self.connection() as conn:
                conn.isolation_level, conn.read_only = _READ_COMMITTED, None
                with conn.transaction():
                    result = work(conn)
                    finished = True
            return result
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            if finished and in_doubt is not None and _retriable(exc):
                raise AppendInDoubtError(self.scrub(f"{in_doubt}: {str(exc).strip()}")) from None
            raise self.failure(exc, NULL_TOKEN) from None


@contextmanager
def cancelling(conn: Conn, token: CancelToken) -> Generator[None, None, None]:
    """While the block runs, a fired token cancels the running statement within 100 ms."""
    if token is NULL_TOKEN:
        yield
        return
    # The block never waits for the watcher: it marks itself done under the lock, so a watcher
    # that wakes later cancels nothing (joining cost up to one poll, 50 ms, per read).
    lock = threading.Lock()
    done = threading.Event()

    def watch() -> None:
        while True:
            fired = token.wait(_CANCEL_POLL_SECONDS)
            with lock:
                if done.is_set():
                    return
                if fired:
                    try:
                        conn.cancel_safe(timeout=5)
                    except psycopg.Error as exc:
                        log.debug("cancel failed: %s", type(exc).__name__)
                    return

    watcher = threading.Thread(target=watch, name="dsh-query-pg-cancel", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            done.set()
