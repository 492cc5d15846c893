"""The ``opencode:<dir>`` backend (importers.md §8.1, §8.6): sessions of ``opencode.db`` and of
the legacy ``storage/`` files, their headers and revisions, and ``inspect``."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat as stat_module
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Event, Header
from ..contract.errors import SessionPersistenceCorruptionError, SessionPersistenceReadOnlyError
from ..contract.results import Inspection, SkippedArtifact, Snapshot, Window
from . import queries
from .cache import InspectionCache
from .database import Database, DatabaseError, Schema, UnknownSchema, warn
from .headers import depth_of, header_of, parents_of
from .layout import db_path
from .legacy import LegacyChanged, LegacyStore, Listed
from .mapper import OpenCodeMapper
from .queries import Aggregate
from .rows import Native, Session

SAFE_AGE_MS = 2_000  # a row updated this recently may change again within the same millisecond
BULK_WINDOW = 4096  # a window this long or longer is a bulk read (importing/backend.py's too)
Clock = Callable[[], int]


class OpenCodeError(Exception):
    """A plain failure of this backend (PERSISTENCE_FAILED on the wire)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One listed session: its header, its revision, and where it is read from."""

    header: Header
    revision: str | None  # None when the listing asked for headers only
    legacy: Listed | None = None


def _fingerprint(ident: object, row: tuple[object, ...], aggs: tuple[Aggregate, Aggregate]) -> str:
    text = repr((ident, row, aggs[0], aggs[1])).encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(text).hexdigest()[:16]


def _newest(row: dict[str, object], aggs: tuple[Aggregate, Aggregate]) -> int:
    times = [row.get("time_updated"), aggs[0].updated, aggs[1].updated]
    return max((t for t in times if isinstance(t, int)), default=0)


class OpenCodeBackend:
    """A read-only OpenCode home: ``opencode.db`` first, then legacy sessions it lacks."""

    def __init__(
        self, home: str, uri: str, clock: Clock = time.time_ns, database: Database | None = None
    ) -> None:
        self.home = home
        self._uri = uri
        self._clock = clock
        self.db_path = db_path(home)
        self.db = database or Database(self.db_path)
        self.legacy = LegacyStore(home)
        self._lock = threading.Lock()
        # the last database listing: its generation, and per session its revision (None when
        # only headers were asked for)
        self._listed: tuple[int, dict[str, tuple[Session, str | None]], bool] | None = None
        self._warned: object = None
        self._cache = InspectionCache()
        # [ours] the legacy session files the last listing left out (semantics.md §6.5)
        self._skipped: tuple[SkippedArtifact, ...] = ()

    # -- the contract ------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def writable(self) -> bool:
        return False

    @property
    def cheap_windows(self) -> bool:
        return True

    def close(self) -> None:
        self.db.close()

    def create(self, header: Header) -> None:
        raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def append(self, session_id: str, events: list[Event]) -> None:
        raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def skipped_artifacts(self) -> tuple[SkippedArtifact, ...]:
        """SkippedReporter: the legacy session files the last listing could not use, but for
        ids it lists anyway (from the database or another file)."""
        return self._skipped

    def check_home(self) -> bool:
        """False for an absent home; one that is no readable directory fails (importers.md
        §3.1)."""
        try:
            st = os.stat(self.home)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise OpenCodeError(f'home "{self.home}" is not readable: {exc.strerror}') from None
        if not stat_module.S_ISDIR(st.st_mode) or not os.access(self.home, os.R_OK | os.X_OK):
            raise OpenCodeError(f'home "{self.home}" is not a readable directory')
        return True

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        entries = self._entries(token or NULL_TOKEN, revisions=False)
        return [e.header for e in entries.values()]

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        entries = self._entries(token or NULL_TOKEN, revisions=True)
        return [Snapshot(e.header, e.revision or "") for e in entries.values()]

    def stored_count(self, session_id: str) -> int | None:
        if session_id not in self._entries(NULL_TOKEN, revisions=False):
            return None
        return len(self.inspect(session_id).events)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        return self._inspect(session_id, token or NULL_TOKEN)[0]

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """A slice of ``inspect``'s log. A log read for a window is kept (bounded) under the proof
        of its rows, checked again at the next window, so a window costs that check, not a
        mapping. A bulk window (the search index's) that holds the whole log keeps nothing: such
        logs are read once."""
        token = token or NULL_TOKEN
        hit = None
        if session_id in self._cache:  # else a plain read: its proof comes with its rows
            key = self._proof(session_id)
            hit = self._cache.get(session_id, key) if key is not None else None
        if hit is None:
            ins, proof = self._inspect(session_id, token)
            if last - first < BULK_WINDOW or len(ins.events) > last - first + 1:
                self._cache.put(session_id, proof, ins)
        else:
            ins = hit
        n = len(ins.events)
        lo = min(max(first, 0), n)
        events = ins.events[lo : max(lo, min(last, n - 1) + 1)]
        title = next((e.seq for e in reversed(ins.events) if e.type == "session/title"), None)
        return Window(ins.meta, n, lo, events, title)

    # -- listing -----------------------------------------------------------------------

    def _entries(self, token: CancelToken, *, revisions: bool) -> dict[str, _Entry]:
        out: dict[str, _Entry] = {}
        if not self.check_home():
            self._skipped = ()
            return out
        db = self._db_sessions(revisions)
        legacy = {
            sid: listed for sid, listed in self._legacy_sessions(token).items() if sid not in db
        }
        parents = parents_of([s for s, _ in db.values()] + [x.session for x in legacy.values()])
        for sid, (session, revision) in db.items():
            depth = depth_of(parents, sid)
            out[sid] = _Entry(header_of(session, self.db_path, depth), revision)
        for sid, listed in legacy.items():
            token.raise_if_cancelled()
            depth = depth_of(parents, sid)
            header = header_of(listed.session, listed.path, depth)
            revision = self.legacy.revision(listed) if revisions else None
            out[sid] = _Entry(header, revision, listed)
        self._skipped = tuple(a for sid, a in self.legacy.skipped.items() if sid not in out)
        return out

    def _legacy_sessions(self, token: CancelToken) -> dict[str, Listed]:
        try:
            return self.legacy.sessions(token)
        except OSError as exc:
            raise OpenCodeError(f"opencode storage is unreadable: {exc.strerror}") from None

    def _db_sessions(self, revisions: bool) -> dict[str, tuple[Session, str | None]]:
        """The database's sessions, with their revisions when asked (one scan of the message and
        part tables); reused while no other connection has committed since they were read
        (``PRAGMA data_version``)."""
        with self._lock:
            try:
                generation = self.db.current()
                listed = self._listed
                if generation is None:
                    return {}
                if listed is not None and listed[0] == generation and (listed[2] or not revisions):
                    return listed[1]
                now = self._clock() // 1_000_000
                got = self.db.read(lambda c, s: self._scan(c, s, now, revisions))
            except UnknownSchema as exc:
                self._warn(str(exc))
                return {}
            except DatabaseError as exc:
                raise OpenCodeError(str(exc)) from None
            if got is None:
                return {}
            self._listed = (got[1], got[0], revisions)
            return got[0]

    def _scan(
        self, conn: sqlite3.Connection, schema: Schema, now: int, revisions: bool
    ) -> dict[str, tuple[Session, str | None]]:
        aggs = queries.aggregates(conn, schema) if revisions else {}
        columns = queries.session_columns(schema)
        out: dict[str, tuple[Session, str | None]] = {}
        for session, row in queries.sessions(conn, schema):
            revision = None
            if revisions:
                pair = aggs.get(session.id, (Aggregate(), Aggregate()))
                revision = self._revision(columns, row, pair, now)
            out[session.id] = (session, revision)
        return out

    def _revision(
        self,
        columns: list[str],
        row: tuple[object, ...],
        aggs: tuple[Aggregate, Aggregate],
        now: int,
    ) -> str:
        """The rows' proof; a session updated within ``SAFE_AGE_MS`` of the read also carries
        the database generation, so any later commit changes its revision."""
        revision = "opencode:" + _fingerprint(self.db.identity, row, aggs)
        if _newest(dict(zip(columns, row, strict=True)), aggs) >= now - SAFE_AGE_MS:
            revision += f";young:{self.db.nonce}:{self.db.generation}"
        return revision

    def _warn(self, reason: str) -> None:
        ident = self.db.identity or os.path.exists(self.db_path)
        if self._warned != ident:
            self._warned = ident
            warn(self.db_path, reason)

    # -- reading -----------------------------------------------------------------------

    def _proof(self, sid: str) -> str | None:
        """What proves one session's rows unchanged now (no mapping), or None."""
        try:
            got = self.db.read(lambda c, s: _row_proof(c, s, sid))
        except (UnknownSchema, DatabaseError):
            return None
        if got is not None and got[0] is not None:
            return got[0]
        listed = self._legacy_sessions(NULL_TOKEN).get(sid)
        return self.legacy.revision(listed) if listed is not None else None

    def _inspect(self, sid: str, token: CancelToken) -> tuple[Inspection, str]:
        try:
            meter = token.reading_items
            got = self.db.read(lambda c, s: _load(c, s, sid, self.db_path, meter))
        except UnknownSchema:
            got = None
        except DatabaseError as exc:
            raise OpenCodeError(str(exc)) from None
        loaded = got[0] if got is not None else None
        if loaded is not None:
            native, depth, proof = loaded
        else:
            listed = self._legacy_sessions(token).get(sid)
            if listed is None:
                skipped = self.legacy.skipped.get(sid)
                if skipped is not None:  # as status names it (importers.md §8.6 [ours])
                    raise SessionPersistenceCorruptionError(skipped.message)
                raise OpenCodeError(f'session "{sid}" not found')
            try:
                native = self.legacy.load(listed, token)
            except LegacyChanged as exc:
                raise OpenCodeError(str(exc)) from None
            db = self._db_sessions(False) if self.check_home() else {}
            legacy = {k: v for k, v in self._legacy_sessions(token).items() if k not in db}
            sessions = [s for s, _ in db.values()] + [x.session for x in legacy.values()]
            depth = depth_of(parents_of(sessions), sid)
            proof = self.legacy.revision(listed)
        token.raise_if_cancelled()
        header = header_of(native.session, native.path, depth)
        events, reasons = OpenCodeMapper(native, header.to_value()["createdAt"]).run()
        return Inspection(header_of(native.session, native.path, depth, reasons), events), proof


def _row_proof(conn: sqlite3.Connection, schema: Schema, sid: str) -> str | None:
    found = queries.session_row(conn, schema, sid)
    if found is None:
        return None
    aggs = queries.aggregate_of(conn, schema, sid)
    return "db:" + _fingerprint(None, found[1], aggs)


def _load(
    conn: sqlite3.Connection, schema: Schema, sid: str, path: str, meter: queries.Meter | None
) -> tuple[Native, int, str] | None:
    """One session's records, its depth and its proof, from one transaction."""
    found = queries.session_row(conn, schema, sid)
    if found is None:
        return None
    session, row = found
    messages, aggs = queries.messages(conn, schema, sid, meter)
    depth, seen, cur = 0, {sid}, session.parent
    while cur is not None:  # as depth_of does over a listing
        depth += 1
        if cur in seen:
            break
        seen.add(cur)
        found_parent = queries.parent_of(conn, schema, cur)
        if found_parent is None:
            break
        cur = found_parent[0]
    return Native(session, messages, path), depth, "db:" + _fingerprint(None, row, aggs)
