"""The ``sqlite:`` persistence backend (persistence.md §5).

All sessions live in one SQLite database file, or in a private in-memory database for
``:memory:``. The file layout is dsh's (application id 0x44534850, ``user_version`` 17), so either
side can open and append to the other's sessions.

Threading: one connection, guarded by one lock. A ``:memory:`` database exists only inside its
connection, so one shared connection is the only way every worker thread sees the same store; for
files it keeps what opening learnt (store identity, verified tails) in one place, and SQLite
serializes writers anyway. Every call is a few short statements, so the lock is not a bottleneck.

Text columns are read as raw bytes (``codec.Text``) and written through ``CAST(? AS TEXT)`` from
``surrogatepass`` UTF-8: a session id or event type is any JSON string, lone surrogates included,
and stored text that is not UTF-8 must be a finding about a row, not a crash inside ``sqlite3``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Event, Header
from ..contract.backend import PersistenceBackend
from ..contract.capabilities import ListedLookup, OutlineReader, WindowReader
from ..contract.errors import (
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
    naming,
)
from ..contract.results import Inspection, Snapshot, StoredLog, Window
from ..logical import legacy
from ..logical import log as logical
from ..logical.memo import VerificationMemo
from ..logical.windows import Verification, Verified, WindowSource, read_window
from .codec import ROW_DEFECTS, Text, to_text
from .location import birth_ns, check_location, create_private_file
from .queries import discover_tail, not_found, select_rows, select_session, select_span, span_events
from .rows import Columns, batch_start, committed_prefix, physical_rows, scan_prefix
from .schema import (
    EVENT_INSERT,
    FETCH_ROWS,
    JOURNAL_MODES,
    MAX_BUSY_TIMEOUT_MS,
    MEMORY,
    SESSION_INSERT,
    SESSION_SELECT,
    Store,
    apply_settings,
    expect_pragma,
    open_schema,
    recheck_schema,
    set_journal_mode,
    store_identity,
    transaction,
)
from .sessions import SessionRow, bind_text, header_columns, require_format_v0, session_row

# ---------------------------------------------------------------------------------------------
# The backend


@dataclass(frozen=True, slots=True)
class RowHints:
    """A verified log's own facts (memo.py): the seq of the row where its torn tail starts
    (rows from there on are not part of the log), None when it has none."""

    torn_at: int | None


class _RowWindows:
    """windows.WindowSource for one session row, inside the read's transaction."""

    stale_errors: tuple[type[Exception], ...] = (SessionPersistenceCorruptionError, *ROW_DEFECTS)

    def __init__(
        self,
        store: Store,
        session: SessionRow,
        token: CancelToken,
        *,
        decode_whole: Callable[[], tuple[StoredLog, int | None]],
        untorn: Callable[[], None],
    ) -> None:
        self.session_id = session.id
        self._store = store
        self._session = session
        self._token = token
        self._decode_whole = decode_whole
        self._untorn = untorn

    def revision(self) -> str:
        return self._store.revision(self._session)

    def read_known(self, hints: RowHints, lo: int, hi: int) -> tuple[Header, list[Event]]:
        stored = (
            []
            if lo > hi
            else span_events(
                select_span(self._store.conn, self.session_id, lo, hi, hints.torn_at, self._token),
                lo,
                hi,
            )
        )
        return self._session.header, stored

    def verify(self, sink: logical.StreamedLog) -> Verification[RowHints]:
        rows = select_rows(self._store.conn, self.session_id, self._token)
        try:
            _, torn_at = scan_prefix(rows, sink.append, sink.extend)
        except legacy.NeedsHistory:
            rows.close()
            raise
        if torn_at is None:  # as _decode_log: an untorn log is known before it is normalized
            self._untorn()
        return Verification(self._session.header, self.revision(), RowHints(torn_at))

    def verify_whole(self) -> tuple[Verification[RowHints], list[Event]]:
        log, torn_at = self._decode_whole()
        return Verification(self._session.header, self.revision(), RowHints(torn_at)), log.events


class SqliteBackend:
    """persistence.md §5. Synchronous; safe to call from several threads."""

    def __init__(
        self,
        path: str,
        *,
        journal_mode: str = "wal",
        busy_timeout_ms: int = 5000,
        read_only: bool = False,
        uri: str | None = None,
    ) -> None:
        if journal_mode not in JOURNAL_MODES:
            raise ValueError(f"journalMode must be one of {', '.join(JOURNAL_MODES)}")
        if type(busy_timeout_ms) is not int or not 0 <= busy_timeout_ms <= MAX_BUSY_TIMEOUT_MS:
            raise ValueError(f"busyTimeoutMs must be an integer from 0 to {MAX_BUSY_TIMEOUT_MS}")
        self._uri = uri if uri is not None else f"sqlite:{path}"
        self._writable = not read_only
        self._memory = path == MEMORY
        self._path = path if self._memory else os.path.abspath(path)
        self._journal_mode = journal_mode
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._store: Store | None = None
        # Headers of sessions created through this instance, as session-column values.
        self._created: dict[str, tuple[Any, ...]] = {}
        # (incarnation, revision) of logs this instance read whole and found untorn, or wrote:
        # an append at that same revision needs only the cheap tail discovery, not a full decode.
        self._verified: dict[str, tuple[str, int]] = {}
        # What full reads proved per (session, revision), so window reads at the same revision
        # read only their rows (memo.py explains why this is not a cache).
        self._memo: VerificationMemo[Verified[RowHints]] = VerificationMemo()
        # The last listing and the change token it was read under (see _change_token).
        self._listing: tuple[tuple[Any, ...], tuple[Snapshot, ...]] | None = None
        self._commits = 0
        if not self._memory:
            check_location(self._path, create_parents=False)  # mount-time checks, no creation

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def cheap_windows(self) -> bool:
        """inspect_window reads only a window's rows once a log is verified at its revision, so
        a long log can be read window by window (search/documents.py)."""
        return True

    # -- opening ---------------------------------------------------------------------------

    def _prepare_file(self, create: bool) -> bool:
        """The file checks just before an open; False when there is nothing to open yet. Only a
        write (``create``) makes the directory and the file: until then a read finds an absent
        or empty file holding no sessions, and leaves it so (persistence.md §1, §5.3)."""
        create = create and self.writable
        if check_location(self._path, create_parents=create):
            return create or os.stat(self._path).st_size > 0
        if not create:
            return False
        create_private_file(self._path)
        return True

    def _connect(self) -> sqlite3.Connection:
        if self._memory:
            target = MEMORY
        else:
            mode = "rw" if self.writable else "ro"
            target = f"file:{urllib.parse.quote(self._path)}?mode={mode}"
        conn = sqlite3.connect(
            target,
            uri=not self._memory,
            isolation_level=None,
            check_same_thread=False,
            timeout=self._busy_timeout_ms / 1000,
        )
        conn.text_factory = Text
        return conn

    def _source(self, store_id: str) -> str:
        if self._memory:
            return f"memory:store:{store_id}"
        st = os.stat(self._path)
        return f"file:{st.st_dev}:{st.st_ino}:{birth_ns(st)}:store:{store_id}"

    def _configure(self, conn: sqlite3.Connection, started: float) -> Store | None:
        """Settings, opening transaction and identity (§5.2, §5.4); None for a pristine
        read-only database."""
        apply_settings(conn, self._busy_timeout_ms, self._path, is_file=not self._memory)
        if not open_schema(conn, self._path, self.writable):
            return None
        if self.writable:  # a read-only mount leaves journal_mode and synchronous as they are
            expected = "memory" if self._memory else self._journal_mode
            set_journal_mode(
                conn,
                self._journal_mode,
                expected,
                self._path,
                started + self._busy_timeout_ms / 1000,
            )
            conn.execute("PRAGMA synchronous = FULL")
            expect_pragma(conn, "synchronous", 2, self._path)
        return Store(conn, self._source(store_identity(conn, self._path)))

    def _open(self, create: bool) -> Store | None:
        """Open the database; None when a read finds it absent or empty, or a read-only mount
        finds it pristine."""
        started = time.monotonic()
        if not self._memory and not self._prepare_file(create):
            return None
        conn = self._connect()
        try:
            store = self._configure(conn, started)
        except BaseException:
            conn.close()
            raise
        if store is None:
            conn.close()
        return store

    @contextmanager
    def _locked(
        self, token: CancelToken = NULL_TOKEN, *, create: bool = False
    ) -> Generator[Store | None]:
        """The opened store (opening it lazily; ``create``: making it, for a write), held under
        the lock for the block. None while there is no store to read."""
        token.raise_if_cancelled()
        with self._lock:
            token.raise_if_cancelled()
            if self._store is None:
                self._store = self._open(create)
                token.raise_if_cancelled()
            yield self._store

    # -- reading ---------------------------------------------------------------------------

    def _decode_log(
        self, store: Store, session: SessionRow, token: CancelToken, outline: bool = False
    ) -> tuple[StoredLog, int | None]:
        """The stored valid prefix of one session (§5.6), inside the caller's transaction, and
        the seq of the row where its torn tail starts (None: no torn tail)."""
        require_format_v0(session.header)
        rows = select_rows(store.conn, session.id, token)
        events, torn_at = committed_prefix(rows, outline)
        if torn_at is None:
            self._mark_verified(session)
        return StoredLog(
            session.header, events, torn_at is not None, store.revision(session)
        ), torn_at

    def _read(
        self, session_id: str, token: CancelToken, outline: bool = False
    ) -> tuple[StoredLog, int | None] | None:
        with self._locked(token) as store:
            if store is None:
                return None
            with transaction(store.conn, "BEGIN"):
                session = select_session(store.conn, session_id)
                token.raise_if_cancelled()
                read = None if session is None else self._decode_log(store, session, token, outline)
        token.raise_if_cancelled()
        return read

    def read_stored(self, session_id: str, token: CancelToken = NULL_TOKEN) -> StoredLog:
        """What the database holds for one session: header, valid prefix, torn flag, revision."""
        read = self._read(session_id, token)
        if read is None:
            raise not_found(session_id)
        return read[0]

    def _verified_log(
        self, session_id: str, read: tuple[StoredLog, int | None] | None
    ) -> Inspection:
        """The logical log of a stored prefix; its shape is remembered for window reads."""
        if read is None:
            raise not_found(session_id)
        log, torn_at = read
        events, shape = logical.verified_log(session_id, log.events)
        self._memo.put(session_id, log.revision, Verified(shape, RowHints(torn_at)))
        return Inspection(log.header, events)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        with naming(self._row_name(session_id), self._path):
            return self._verified_log(session_id, self._read(session_id, token))

    def _row_name(self, session_id: str) -> str:
        """Where a damaged log lives, for reports of unreadable sessions (errors.naming)."""
        return f'sessions row "{session_id}" of {self._path}'

    def inspect_outline(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        """``inspect`` with packed chunk members as ChunkOutlines (same validation, same errors)."""
        return self._verified_log(session_id, self._read(session_id, token, outline=True))

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """The logical events ``first..last`` (clipped) with exactly the result and errors of
        ``inspect``. At a revision this instance already verified whole, only the window's rows
        are read; otherwise the whole log is read and verified, as ``inspect`` does
        (windows.py)."""
        with self._locked(token) as store:
            if store is None:
                raise not_found(session_id)
            with transaction(store.conn, "BEGIN"):
                session = select_session(store.conn, session_id)
                token.raise_if_cancelled()
                if session is None:
                    raise not_found(session_id)
                require_format_v0(session.header)
                source = _RowWindows(
                    store,
                    session,
                    token,
                    decode_whole=lambda: self._decode_log(store, session, token),
                    untorn=lambda: self._mark_verified(session),
                )
                with naming(self._row_name(session_id), self._path):
                    window = read_window(self._memo, source, first, last, token)
        token.raise_if_cancelled()
        return window

    def _mark_verified(self, session: SessionRow) -> None:
        """A read found the log untorn at this revision: an append there needs only the cheap
        tail discovery."""
        self._verified[session.id] = (session.incarnation, session.revision)

    def stored_count(self, session_id: str) -> int | None:
        read = self._read(session_id, NULL_TOKEN)
        return None if read is None else len(read[0].events)

    def _change_token(self, store: Store) -> tuple[Any, ...]:
        """Changes whenever the sessions table may have: ``data_version`` moves on every commit
        by another connection, ``_commits`` on ours, and the file's identity, size and mtime on
        anything that rewrites the file behind SQLite's back. Equal tokens mean the last listing
        still describes the database, so it is reused instead of re-validating every row."""
        data_version = store.conn.execute("PRAGMA data_version").fetchone()[0]
        if self._memory:
            return (data_version, self._commits)
        st = os.stat(self._path)
        return (data_version, self._commits, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> Sequence[Snapshot]:
        with self._locked(token) as store:
            if store is None:
                return []
            with transaction(store.conn, "BEGIN"):
                changed = self._change_token(store)
                if self._listing is None or self._listing[0] != changed:
                    sessions: list[SessionRow] = []
                    cursor = store.conn.execute(f"{SESSION_SELECT} ORDER BY id")
                    while chunk := cursor.fetchmany(FETCH_ROWS):
                        token.raise_if_cancelled()
                        sessions.extend(map(session_row, chunk))
                    snapshots = tuple(
                        Snapshot(session.header, store.revision(session)) for session in sessions
                    )
                    self._listing = (changed, snapshots)
                snapshots = self._listing[1]
        token.raise_if_cancelled()
        # Snapshots and the tuple are immutable, so sharing them is handing out fresh values;
        # the very same tuple back tells search's reconcile "unchanged" in O(1), where comparing
        # every snapshot, twice per search, grows with the store.
        return snapshots

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        return [snapshot.header for snapshot in self.list_snapshots(token)]

    def list_revisions(self, token: CancelToken = NULL_TOKEN) -> Sequence[Snapshot]:
        """ListedRevisions: ``list`` is these snapshots' headers."""
        return self.list_snapshots(token)

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """ListedLookup: the header ``list`` lists for the id, from its own sessions row (the
        row ``list`` makes it from, checked the same way)."""
        with self._locked(token) as store:
            if store is None:
                return None
            with transaction(store.conn, "BEGIN"):
                session = select_session(store.conn, session_id)
        token.raise_if_cancelled()
        return None if session is None else session.header

    # -- writing ---------------------------------------------------------------------------

    def _require_writable(self) -> None:
        if not self.writable:
            raise SessionPersistenceReadOnlyError(
                f"persistence backend {self.uri} is mounted read-only"
            )

    def create(self, header: Header) -> None:
        """Remember a new session's header (§2.1); nothing is written until its first append."""
        self._require_writable()
        columns = header_columns(header)
        session_id = header.id
        with self._locked() as store:
            if session_id in self._created:
                raise ValueError(f'session "{session_id}" already exists in this backend')
            stored = False  # no store yet: its first append makes it
            if store is not None:
                with transaction(store.conn, "BEGIN"):
                    stored = select_session(store.conn, session_id) is not None
            if stored:
                raise ValueError(
                    f'session "{session_id}" already has a persisted log on disk; load/resume it'
                    " instead of creating"
                )
            self._created[session_id] = columns

    def _stored_next_seq(self, store: Store, session: SessionRow) -> int:
        """Where the stored log continues. A log not verified at this revision is decoded whole,
        so a torn tail anywhere is refused before anything is written on top of it."""
        if self._verified.get(session.id) == (session.incarnation, session.revision):
            return discover_tail(store.conn, session.id)
        log, _ = self._decode_log(store, session, NULL_TOKEN)
        if log.torn:
            raise ValueError(
                f'session "{session.id}" has a torn stored tail; repair it before appending'
            )
        return len(log.events)

    def _append_rows(
        self, store: Store, session_id: str, first: int, rows: list[Columns]
    ) -> tuple[str, int]:
        """Steps 1–7 of §5.7 in one BEGIN IMMEDIATE; the committed (incarnation, revision)."""
        conn = store.conn
        with transaction(conn, "BEGIN IMMEDIATE"):
            recheck_schema(conn, self._path)
            session = select_session(conn, session_id)
            if session is None and session_id not in self._created:
                raise not_found(session_id)
            expected = 0 if session is None else self._stored_next_seq(store, session)
            if first != expected:
                raise ValueError(
                    f"session {session_id} append starts at seq {first}, stored next seq is"
                    f" {expected}"
                )
            if session is None:
                incarnation, revision = str(uuid.uuid4()), 0
                columns = self._created[session_id]
                conn.execute(SESSION_INSERT, (*map(bind_text, columns), incarnation))
            else:
                incarnation, revision = session.incarnation, session.revision
            text_id = to_text(session_id)
            conn.executemany(
                EVENT_INSERT, [(text_id, seq, to_text(kind), *rest) for seq, kind, *rest in rows]
            )
            conn.execute(
                "UPDATE sessions SET revision = revision + 1 WHERE id = CAST(? AS TEXT)", (text_id,)
            )
        return incarnation, revision + 1

    def append(self, session_id: str, events: list[Event]) -> None:
        """Store one batch durably and atomically after the stored log (§5.7)."""
        self._require_writable()
        if not events:
            return
        first = batch_start(session_id, events)
        rows = physical_rows(events)
        with self._locked(create=True) as store:
            assert store is not None  # a write opens (creating) or raises
            try:
                self._verified[session_id] = self._append_rows(store, session_id, first, rows)
            finally:
                self._commits += 1  # any attempt may have changed the table: list afresh

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.conn.close()
                self._store = None


if TYPE_CHECKING:  # the contract (persistence/contract/), checked by pyright
    _backend: type[PersistenceBackend] = SqliteBackend
    _windows: type[WindowReader] = SqliteBackend
    _outline: type[OutlineReader] = SqliteBackend
    _listed: type[ListedLookup] = SqliteBackend
    _source: type[WindowSource[RowHints]] = _RowWindows
