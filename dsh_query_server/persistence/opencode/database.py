"""Reading ``opencode.db``, another program's live SQLite file, without ever writing it
(importers.md §8.6): opened ``mode=ro`` (never ``immutable``, which would let a concurrent
checkpoint tear a read), every read one short transaction ended before the call returns, and
``SQLITE_BUSY`` retried a bounded number of times.

``generation`` moves whenever ``PRAGMA data_version`` on this connection moves (another
connection committed) or the connection is replaced, so equal generations prove that nothing in
the file changed between two reads.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import quote

T = TypeVar("T")

ATTEMPTS = 3
BUSY_TIMEOUT_S = 1.0
_BUSY = (sqlite3.SQLITE_BUSY if hasattr(sqlite3, "SQLITE_BUSY") else 5, 6)  # BUSY, LOCKED

# The columns a read needs (packages/opencode/src/session/session.sql.ts); others are optional.
_REQUIRED = {
    "session": ("id", "time_created"),
    "message": ("id", "session_id", "data"),
    "part": ("id", "message_id", "session_id", "data"),
}


class DatabaseError(Exception):
    """A plain read failure of the database (PERSISTENCE_FAILED on the wire)."""


class UnknownSchema(Exception):
    """The file is no OpenCode database this reader understands (no such tables, not SQLite)."""


@dataclass(frozen=True, slots=True)
class Schema:
    """The columns each table has, in table order."""

    session: tuple[str, ...]
    message: tuple[str, ...]
    part: tuple[str, ...]

    def has(self, table: str, column: str) -> bool:
        return column in getattr(self, table)


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY
    text = str(exc)
    return "locked" in text or "busy" in text


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


class Database:
    """One read-only connection to ``path``, used by one caller at a time."""

    def __init__(
        self,
        path: str,
        *,
        attempts: int = ATTEMPTS,
        busy_timeout: float = BUSY_TIMEOUT_S,
        on_busy: Callable[[int], None] | None = None,
    ) -> None:
        self.path = path
        self.attempts = attempts
        self.busy_timeout = busy_timeout
        self.on_busy = on_busy  # told of each busy attempt before the next (tests steer with it)
        self.nonce = secrets.token_hex(4)  # tells this process's generations from others'
        self.generation = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._ident: tuple[int, int] | None = None
        self._version: int | None = None
        self._schema: Schema | None = None

    @property
    def identity(self) -> tuple[int, int] | None:
        return self._ident

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._ident, self._version, self._schema = None, None, None, None
        self.generation += 1

    def _connect(self) -> sqlite3.Connection:
        uri = f"file:{quote(self.path)}?mode=ro"
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute("PRAGMA query_only = 1")
            self._schema = _schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection | None:
        """The connection, reopened when the file at ``path`` is another one; None when absent."""
        ident = _identity(self.path)
        if ident != self._ident or self._conn is None:
            self._drop()
            if ident is None:
                return None
            self._conn = self._connect()
            self._ident = ident
        return self._conn

    def _observe(self, conn: sqlite3.Connection) -> None:
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if version != self._version:
            self._version = version
            self.generation += 1

    def current(self) -> int | None:
        """The generation now (None when the file is absent), read without a transaction."""
        got = self.read(lambda conn, schema: None, transaction=False)
        return None if got is None else got[1]

    def read(
        self, fn: Callable[[sqlite3.Connection, Schema], T], *, transaction: bool = True
    ) -> tuple[T, int] | None:
        """``fn`` run inside one read transaction, and the generation it read at; None when the
        file is absent. The transaction always ends before this returns."""
        with self._lock:
            for attempt in range(self.attempts):
                try:
                    conn = self._connection()
                    if conn is None:
                        return None
                    self._observe(conn)
                    generation = self.generation
                    if transaction:
                        conn.execute("BEGIN")
                    try:
                        assert self._schema is not None
                        return fn(conn, self._schema), generation
                    finally:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                except sqlite3.DatabaseError as exc:
                    if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                        if attempt + 1 < self.attempts:
                            if self.on_busy is not None:
                                self.on_busy(attempt)
                            else:
                                time.sleep(0.05 * (attempt + 1))
                            continue
                        raise DatabaseError(
                            f'opencode database "{self.path}" stayed busy: {exc}'
                        ) from None
                    self._drop()
                    if isinstance(exc, sqlite3.OperationalError) and "no such" in str(exc):
                        raise UnknownSchema(str(exc)) from None
                    if "not a database" in str(exc) or "malformed" in str(exc):
                        raise UnknownSchema(str(exc)) from None
                    raise DatabaseError(f'opencode database "{self.path}": {exc}') from None
                except UnknownSchema:
                    self._drop()
                    raise
            raise DatabaseError(f'opencode database "{self.path}" stayed busy')  # not reached


def _schema(conn: sqlite3.Connection) -> Schema:
    tables: dict[str, tuple[str, ...]] = {}
    for table, required in _REQUIRED.items():
        columns = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
        missing = [c for c in required if c not in columns]
        if missing:
            raise UnknownSchema(f"table {table} lacks {', '.join(missing)}")
        tables[table] = columns
    return Schema(tables["session"], tables["message"], tables["part"])


def warn(path: str, reason: str) -> None:
    print(f"dsh-query: skipping opencode database {path}: {reason}", file=sys.stderr)
