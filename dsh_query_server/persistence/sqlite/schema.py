"""The database file's identity, schema and connection settings (persistence.md §5.2, §5.4):
the opening transaction, the checks every mutation repeats, and the statements the backend runs."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...values import collapse_whitespace
from .codec import Text
from .sessions import UUID_PATTERN, SessionRow

APPLICATION_ID = 0x44534850  # 1146308688
USER_VERSION = 17
JOURNAL_MODES = ("wal", "delete", "truncate", "persist")
MAX_BUSY_TIMEOUT_MS = 2_147_483_647
MEMORY = ":memory:"

EVENTS_SQL = (
    "CREATE TABLE events ( session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, data ANY NOT NULL,"
    " source_event_seqs ANY, surface_op TEXT,"
    " ignorable INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),"
    " PRIMARY KEY (session_id, seq) ) STRICT"
)
PERSISTENCE_STATE_SQL = (
    "CREATE TABLE persistence_state ( singleton INTEGER PRIMARY KEY CHECK (singleton = 1),"
    " store_id TEXT NOT NULL ) STRICT"
)
SESSIONS_SQL = (
    "CREATE TABLE sessions ( id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL, cwd TEXT, parent_session TEXT, seed_length INTEGER,"
    " origin TEXT, delegation_depth INTEGER, agent_preset TEXT, incarnation TEXT NOT NULL,"
    " revision INTEGER NOT NULL ) STRICT"
)
CANONICAL_SCHEMA = (
    ("table", "events", "events", EVENTS_SQL),
    ("table", "persistence_state", "persistence_state", PERSISTENCE_STATE_SQL),
    ("table", "sessions", "sessions", SESSIONS_SQL),
)


_USER_OBJECTS = "FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'"

_JOURNAL_RETRY_SECONDS = 0.01
FETCH_ROWS = 512

SESSION_SELECT = (
    "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth,"
    " agent_preset, incarnation, revision FROM sessions"
)
SESSION_INSERT = (
    "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin,"
    " delegation_depth, agent_preset, incarnation, revision) VALUES (CAST(? AS TEXT), ?, ?,"
    " CAST(? AS TEXT), CAST(? AS TEXT), ?, CAST(? AS TEXT), ?, CAST(? AS TEXT), CAST(? AS TEXT), 0)"
)
EVENT_SELECT = (
    "SELECT seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events"
    " WHERE session_id = CAST(? AS TEXT)"
)
EVENT_INSERT = (
    "INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op,"
    " ignorable) VALUES (CAST(? AS TEXT), ?, CAST(? AS TEXT), ?, ?, ?, ?, ?)"
)


class SessionDatabaseRefused(Exception):
    """The file, its settings or its schema are not a store this build may use (§5.2–§5.4)."""


# ---------------------------------------------------------------------------------------------
# Connection, opening and schema (§5.2, §5.4)


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str) -> Generator[None]:
    """Run the block in one transaction: commit on success, roll back on any failure."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except BaseException as rollback_exc:  # noqa: BLE001 - raised with the first, below
                raise BaseExceptionGroup(
                    "SQLite transaction failed and rolling it back failed too", [exc, rollback_exc]
                ) from None
        raise


def _pragma(conn: sqlite3.Connection, name: str) -> Any:
    row = conn.execute(f"PRAGMA {name}").fetchone()
    value = None if row is None else row[0]
    return value.decode() if isinstance(value, Text) else value


def expect_pragma(conn: sqlite3.Connection, name: str, expected: Any, label: str) -> None:
    value = _pragma(conn, name)
    if value != expected:
        raise refused(label, f"reads back {name} = {value}, expected {expected}")


def apply_settings(
    conn: sqlite3.Connection, busy_timeout_ms: int, label: str, is_file: bool
) -> None:
    """The connection settings of §5.2 that come before the opening transaction."""
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    conn.execute("PRAGMA trusted_schema = OFF")
    expect_pragma(conn, "trusted_schema", 0, label)
    conn.execute("PRAGMA mmap_size = 0")
    if is_file:  # an in-memory database reports no mmap_size at all
        expect_pragma(conn, "mmap_size", 0, label)
    conn.execute("PRAGMA foreign_keys = ON")


def set_journal_mode(
    conn: sqlite3.Connection, mode: str, expected: str, label: str, deadline: float
) -> None:
    """Change the journal mode; it fails with SQLITE_BUSY at once, so retry until ``deadline``."""
    while True:
        try:
            row = conn.execute(f"PRAGMA journal_mode = {mode}").fetchone()
            break
        except sqlite3.OperationalError as exc:
            busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(_JOURNAL_RETRY_SECONDS)
    value = row[0].decode().lower()
    if value != expected:
        raise refused(label, f"reads back journal_mode = {value}, expected {expected}")


def _identity(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(user_version, application_id, number of user objects)."""
    objects = conn.execute(f"SELECT count(*) {_USER_OBJECTS}").fetchone()[0]
    return _pragma(conn, "user_version"), _pragma(conn, "application_id"), objects


def refused(label: str, defect: str) -> SessionDatabaseRefused:
    return SessionDatabaseRefused(f'session database at "{label}" {defect}')


def _wrong_version(label: str, user_version: int) -> SessionDatabaseRefused:
    return refused(
        label, f"has schema version {user_version}, incompatible with this build ({USER_VERSION})"
    )


def _wrong_application(label: str, application_id: int) -> SessionDatabaseRefused:
    return refused(label, f"has application id {application_id}, expected {APPLICATION_ID}")


def _refuse_foreign(label: str, user_version: int, application_id: int, objects: int) -> None:
    """Checks 2–4 of the opening transaction."""
    if user_version == 0 and (application_id != 0 or objects):
        raise refused(label, "has an unversioned schema or application identity")
    if user_version not in (0, USER_VERSION):
        raise _wrong_version(label, user_version)
    if user_version == USER_VERSION and application_id != APPLICATION_ID:
        raise _wrong_application(label, application_id)


def _initialize(conn: sqlite3.Connection) -> None:
    for _, _, _, sql in CANONICAL_SCHEMA:
        conn.execute(sql)
    conn.execute(
        "INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?)", (str(uuid.uuid4()),)
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {USER_VERSION}")


def _schema_text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, Text) else value


def _require_canonical_schema(conn: sqlite3.Connection, label: str) -> None:
    found = tuple(
        (*(_schema_text(v) for v in row[:3]), collapse_whitespace(_schema_text(row[3]) or ""))
        for row in conn.execute(
            f"SELECT type, name, tbl_name, sql {_USER_OBJECTS} ORDER BY type, name"
        )
    )
    if found != CANONICAL_SCHEMA:
        raise refused(label, "does not contain the required schema objects")


def open_schema(conn: sqlite3.Connection, label: str, writable: bool) -> bool:
    """The opening transaction of §5.4; False when a read-only mount finds a pristine file."""
    with transaction(conn, "BEGIN IMMEDIATE" if writable else "BEGIN"):
        user_version, application_id, objects = _identity(conn)
        _refuse_foreign(label, user_version, application_id, objects)
        if user_version == 0:
            if not writable:
                return False
            _initialize(conn)
        _require_canonical_schema(conn, label)
    return True


def recheck_schema(conn: sqlite3.Connection, label: str) -> None:
    """What every mutation re-checks inside its own transaction (§5.4)."""
    user_version, application_id, _ = _identity(conn)
    if application_id != APPLICATION_ID:
        raise _wrong_application(label, application_id)
    _require_canonical_schema(conn, label)
    if user_version != USER_VERSION:
        raise _wrong_version(label, user_version)


def store_identity(conn: sqlite3.Connection, label: str) -> str:
    row = conn.execute("SELECT store_id FROM persistence_state WHERE singleton = 1").fetchone()
    store_id = row[0] if row is not None else None
    if isinstance(store_id, Text):
        store_id = store_id.decode("utf-8", "replace")
    if not (isinstance(store_id, str) and UUID_PATTERN.fullmatch(store_id)):
        raise refused(label, "has no valid store identity")
    return store_id


@dataclass(frozen=True, slots=True)
class Store:
    """An opened, validated database."""

    conn: sqlite3.Connection
    source: str  # the revision prefix of §5.8, computed once at opening

    def revision(self, session: SessionRow) -> str:
        return f"{self.source}:incarnation:{session.incarnation}:revision:{session.revision}"
