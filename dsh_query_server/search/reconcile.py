"""Reconciliation (semantics.md §6.5): bring the index in line with the live store and the
persistence binding at the start of every search, and keep the generations cursors bind.

The index mirrors in memory what its session tables hold (revision or fingerprint, generation,
and the rowid span of each session's documents), so an unchanged corpus costs the two listings, one
pass over the live fingerprints and no SQL at all. Each session's documents get contiguous rowids,
which lets a rewrite delete them by rowid range instead of scanning the FTS5 content table.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence

from msgspec import UNSET, Raw

from .. import errors
from ..errors import SEARCH_CANCELLED_MESSAGE, QueryError, cancelled, inner_message
from ..model.event import Event, Header, headers_compatible
from ..persistence.base import CancelToken, Snapshot
from ..persistence.binding import Binding, PersistenceBinding
from ..query.service import as_header, as_inspection, conflict
from ..query.text import documents
from ..session.fold import Fold, FoldError, fold_surface
from ..session.store import LiveSnapshot, SessionStore
from ..values import is_integer, is_number
from .schema import open_failed, open_index, sanitize, sql_text
from .wire import header_raw

_FIRST = object()  # the identity "seen" before this instance's first reconcile

_HEADER_COLUMNS = (
    "id, version, created_at, cwd, parent_session, seed_length, delegation_depth, agent_preset"
)
_DOC_INSERT = (
    "INSERT INTO {docs} (rowid, text, session_id, seq, type, time, surface, codepoint_length) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class _Unstable(Exception):
    """The observation saw the corpus move; the attempt is retried."""


def check(token: CancelToken | None) -> None:
    if token is not None and token.cancelled:
        raise cancelled(search=True)


@dataclass(frozen=True, slots=True)
class Document:
    seq: int
    type: Any
    time: Any
    surface: str
    text: str


@dataclass(frozen=True, slots=True)
class Row:
    """What the index holds for one session. ``tag`` is the persisted revision or the live
    fingerprint; ``persisted`` is the live row's flag; ``span`` the documents' rowid range."""

    tag: str
    generation: int
    span: tuple[int, int] | None
    persisted: bool = False


@dataclass(frozen=True, slots=True)
class SessionWrite:
    key: str
    header: Header
    tag: str
    documents: list[Document]
    persisted: bool = False


@dataclass(frozen=True, slots=True)
class Observation:
    binding: Binding | None
    listed: frozenset[str]
    persisted_writes: list[SessionWrite]
    live_writes: list[SessionWrite]
    live_keys: frozenset[str]


@dataclass(frozen=True, slots=True)
class View:
    """What a search needs from its reconcile: whether persisted rows are visible, and the
    generations of §6.11."""

    bound: bool
    cross_generation: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Target:
    generation: str
    header: Raw


class _Tables:
    """One side of the index: a sessions table and its documents table."""

    def __init__(self, sessions: str, docs: str, tail: tuple[str, ...]) -> None:
        self.sessions = sessions
        self.docs = docs
        columns = f"{_HEADER_COLUMNS}, {', '.join(tail)}"
        marks = ", ".join("?" * (8 + len(tail)))
        self.upsert = f"INSERT OR REPLACE INTO {sessions} ({columns}) VALUES ({marks})"
        self.delete_row = f"DELETE FROM {sessions} WHERE id = ?"
        self.delete_docs = f"DELETE FROM {docs} WHERE rowid BETWEEN ? AND ? AND session_id = ?"
        self.insert_doc = _DOC_INSERT.format(docs=docs)


PERSISTED = _Tables("persisted_sessions", "persisted_docs", ("revision", "generation"))
LIVE = _Tables("live_sessions", "live_docs", ("fingerprint", "persisted", "generation"))


# -- observation helpers -------------------------------------------------------------------------


def _snapshot(item: Any) -> Snapshot:
    if type(item) is Snapshot and type(item.revision) is str and isinstance(item.header, Header):
        return item  # our backends' snapshots are already immutable and well-formed
    if isinstance(item, Snapshot):
        header, revision = item.header, item.revision
    elif isinstance(item, dict):
        header, revision = item.get("header"), item.get("revision")
    else:
        raise TypeError("persistence snapshot must be an object with header and revision")
    if not isinstance(revision, str):
        raise TypeError("persistence snapshot revision must be a string")
    return Snapshot(as_header(header), revision)


def list_snapshots(backend: Any, token: CancelToken | None) -> dict[Any, Snapshot]:
    """``list_snapshots`` validated (§6.5 step 2.1), keyed by id in listing order."""
    result = backend.list_snapshots(token)
    if not isinstance(result, (list, tuple)):
        raise TypeError("persistence snapshots must be an array")
    listing: dict[Any, Snapshot] = {}
    for item in result:
        snapshot = _snapshot(item)
        if snapshot.header.id in listing:
            raise ValueError(f'persistence listed duplicate session "{snapshot.header.id}"')
        listing[snapshot.header.id] = snapshot
    return listing


def _listing_changed(before: dict[Any, Snapshot], after: dict[Any, Snapshot]) -> bool:
    if before.keys() != after.keys():
        return True
    for sid, old in before.items():
        new = after[sid]
        if old.revision != new.revision:
            return True
        # Backends that reuse unchanged headers hand back the very same immutable object.
        if old.header is not new.header and not headers_compatible(old.header, new.header, include_preset=True):
            return True
    return False


def _documents(events: Sequence[Event], fold: Fold) -> list[Document]:
    out = []
    for event, text in documents(events):
        seq = int(event.seq)  # the fold checked that seq is the log index
        out.append(Document(seq, event.type, event.time, fold.surface(seq), text))
    return out


def persisted_documents(session_id: Any, events: Sequence[Event]) -> list[Document]:
    try:
        fold = fold_surface(events)
    except FoldError as exc:
        raise QueryError(
            errors.INVALID_SURFACE,
            f"invalid session surface: {exc.message}",
            session_id=session_id if isinstance(session_id, str) else None,
        ) from None
    return _documents(events, fold)


def live_documents(snapshot: LiveSnapshot) -> list[Document]:
    return _documents(snapshot.events, snapshot.fold)  # the live store folds every append


# -- column values -------------------------------------------------------------------------------


def _integer(value: Any) -> Any:
    """An integral JSON number as int; anything else unchanged (STRICT columns refuse it)."""
    if value is UNSET:
        return None
    return int(value) if is_integer(value) else value


def _header_columns(key: str, header: Header) -> tuple[Any, ...]:
    return (
        key,
        _integer(header.version),
        _integer(header.created_at),
        None if header.cwd is UNSET else sql_text(header.cwd),
        None if header.parent_session is UNSET else sql_text(header.parent_session),
        _integer(header.seed_length),
        _integer(header.delegation_depth),
        None if header.agent_preset is UNSET else sql_text(header.agent_preset),
    )


def _time(value: Any) -> Any:
    if not is_number(value):
        return None
    return int(value) if is_integer(value) else value


# -- the index -----------------------------------------------------------------------------------


class SearchIndex:
    """The open index and this instance's reconcile state. Used only from inside the search
    queue, so nothing here needs a lock."""

    def __init__(self, conn: sqlite3.Connection, store: SessionStore, binding: PersistenceBinding) -> None:
        self.conn = conn
        self.store = store
        self.binding = binding
        stored = conn.execute("SELECT global_generation FROM search_state").fetchone()[0]
        self.persisted_generation = stored
        self.local_generation = stored
        self.cross_generation = stored
        self.epoch = 0
        self.last_identity: Any = _FIRST
        spans = {
            sid: (lo, hi)
            for sid, lo, hi in conn.execute(
                "SELECT session_id, min(rowid), max(rowid) FROM persisted_docs GROUP BY session_id"
            )
        }
        self.persisted: dict[str, Row] = {
            sid: Row(revision, generation, spans.get(sid))
            for sid, revision, generation in conn.execute(
                "SELECT id, revision, generation FROM persisted_sessions"
            )
        }
        self.live: dict[str, Row] = {}
        top = conn.execute("SELECT max(rowid) FROM persisted_docs").fetchone()[0]
        self.next_rowid = {PERSISTED.docs: (top or 0) + 1, LIVE.docs: 1}

    @classmethod
    def open(cls, path: str, journal_mode: str, store: SessionStore, binding: PersistenceBinding) -> SearchIndex:
        conn = open_index(path, journal_mode)
        try:
            return cls(conn, store, binding)
        except sqlite3.Error as exc:
            conn.close()
            raise open_failed(str(exc)) from None

    def close(self) -> None:
        self.conn.close()  # the TEMP overlay goes with the connection

    # -- observation ---------------------------------------------------------------------------

    def observe(self, token: CancelToken | None) -> Observation:
        for _ in range(2):
            try:
                return self._attempt(token)
            except _Unstable:
                continue
        raise QueryError(
            errors.PERSISTENCE_FAILED,
            "session-search persistence observation did not stabilize after one retry",
        )

    def _attempt(self, token: CancelToken | None) -> Observation:
        check(token)
        binding = self.binding.current()
        live_ids = set(self.store.ids())
        listing: dict[Any, Snapshot] = {}
        persisted_writes: list[SessionWrite] = []
        if binding is not None:
            try:
                listing, persisted_writes = self._observe_persisted(binding, live_ids, token)
            except _Unstable:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is mapped (§6.5 step 2.4)
                if token is not None and token.cancelled:
                    if isinstance(exc, QueryError) and exc.code == errors.ABORTED:
                        raise
                    raise QueryError(
                        errors.ABORTED, SEARCH_CANCELLED_MESSAGE, cause=inner_message(exc)
                    ) from None
                if self.binding.current() is not binding:
                    raise _Unstable from None
                if isinstance(exc, QueryError):
                    raise
                inner = inner_message(exc)
                raise QueryError(
                    errors.PERSISTENCE_FAILED,
                    f"session-search persistence observation failed: {inner}",
                    cause=inner,
                ) from None
        live_writes, live_keys = self._observe_live(listing, live_ids)
        return Observation(
            binding,
            frozenset(sql_text(sid) for sid in listing),
            persisted_writes,
            live_writes,
            live_keys,
        )

    def _observe_persisted(
        self, binding: Binding, live_ids: set[str], token: CancelToken | None
    ) -> tuple[dict[Any, Snapshot], list[SessionWrite]]:
        backend = binding.backend
        # Revisions are trusted only against the store that produced them: the same binding as
        # the previous reconcile, or (first reconcile) the rows a previous instance left.
        trust_revisions = self.last_identity is _FIRST or self.last_identity == binding.identity
        listing = list_snapshots(backend, token)
        writes = []
        for sid, snapshot in listing.items():
            key = sql_text(sid)
            row = self.persisted.get(key)
            if trust_revisions and row is not None and row.tag == snapshot.revision:
                continue
            if sid in live_ids or self.store.is_live(sid):
                continue  # a log with a live owner is never inspected
            check(token)
            inspection = as_inspection(backend.inspect(sid, token))
            check(token)
            if not headers_compatible(snapshot.header, inspection.meta):
                raise conflict(sid)
            docs = persisted_documents(sid, inspection.events)
            writes.append(SessionWrite(key, snapshot.header, snapshot.revision, docs))
        check(token)
        again = list_snapshots(backend, token)
        check(token)
        if _listing_changed(listing, again) or self.binding.current() is not binding:
            raise _Unstable
        return listing, writes

    def _observe_live(
        self, listing: dict[Any, Snapshot], live_ids: set[str]
    ) -> tuple[list[SessionWrite], frozenset[str]]:
        fingerprints = self.store.fingerprints()
        writes = []
        for sid, (header, fingerprint) in fingerprints.items():
            listed = listing.get(sid)
            if listed is not None and not headers_compatible(header, listed.header):
                raise conflict(sid)
            persisted = listed is not None
            key = sql_text(sid)
            row = self.live.get(key)
            if row is not None and row.tag == fingerprint and row.persisted == persisted:
                continue
            snapshot = self.store.snapshot(sid)
            if snapshot is None:
                raise _Unstable  # removed meanwhile: the live set changed
            docs = live_documents(snapshot)
            writes.append(SessionWrite(key, snapshot.header, snapshot.fingerprint, docs, persisted))
        if fingerprints.keys() != live_ids:
            raise _Unstable
        return writes, frozenset(sql_text(sid) for sid in fingerprints)

    # -- the write plan ------------------------------------------------------------------------

    def reconcile(self, token: CancelToken | None) -> View:
        observation = self.observe(token)
        bound = observation.binding is not None
        persisted_deletes = (
            [key for key in self.persisted if key not in observation.listed] if bound else []
        )
        live_deletes = [key for key in self.live if key not in observation.live_keys]
        check(token)  # the last checkpoint before the transaction; it then runs to completion
        wrote = bool(
            observation.persisted_writes or persisted_deletes or observation.live_writes or live_deletes
        )
        if wrote:
            self._commit(observation.persisted_writes, persisted_deletes, observation.live_writes, live_deletes)
        identity = observation.binding.identity if bound else None
        rebound = self.last_identity is not _FIRST and identity != self.last_identity
        if wrote or rebound:
            self.cross_generation += 1
        if rebound:
            self.epoch += 1
        self.last_identity = identity
        return View(bound, self.cross_generation, self.epoch)

    def _commit(
        self,
        persisted_writes: list[SessionWrite],
        persisted_deletes: list[str],
        live_writes: list[SessionWrite],
        live_deletes: list[str],
    ) -> None:
        persisted_generation = self.persisted_generation
        if persisted_writes or persisted_deletes:
            persisted_generation += 1
        local = self.local_generation
        next_rowid = dict(self.next_rowid)
        persisted_rows: dict[str, Row | None] = {}
        live_rows: dict[str, Row | None] = {}
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for key in persisted_deletes:
                self._delete(PERSISTED, key, self.persisted[key])
                persisted_rows[key] = None
            for write in persisted_writes:
                self._delete(PERSISTED, write.key, self.persisted.get(write.key), keep_row=True)
                span = self._insert_docs(PERSISTED, write, next_rowid)
                conn.execute(
                    PERSISTED.upsert,
                    (*_header_columns(write.key, write.header), write.tag, persisted_generation),
                )
                persisted_rows[write.key] = Row(write.tag, persisted_generation, span)
            if persisted_generation != self.persisted_generation:
                conn.execute("UPDATE search_state SET global_generation = ?", (persisted_generation,))
            for write in live_writes:  # in live-store creation order
                local = max(local, persisted_generation) + 1
                self._delete(LIVE, write.key, self.live.get(write.key), keep_row=True)
                span = self._insert_docs(LIVE, write, next_rowid)
                conn.execute(
                    LIVE.upsert,
                    (*_header_columns(write.key, write.header), write.tag, int(write.persisted), local),
                )
                live_rows[write.key] = Row(write.tag, local, span, write.persisted)
            for key in live_deletes:
                self._delete(LIVE, key, self.live[key])
                live_rows[key] = None
            conn.execute("COMMIT")
        except Exception as exc:  # noqa: BLE001 - any failure rolls the whole plan back
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            detail = inner_message(exc)
            raise QueryError(
                errors.INDEX_FAILED, f"session-search reconciliation failed: {detail}", cause=detail
            ) from None
        self.persisted_generation = persisted_generation
        self.local_generation = local
        self.next_rowid = next_rowid
        _apply(self.persisted, persisted_rows)
        _apply(self.live, live_rows)

    def _delete(self, tables: _Tables, key: str, row: Row | None, *, keep_row: bool = False) -> None:
        if row is not None and row.span is not None:
            self.conn.execute(tables.delete_docs, (*row.span, key))
        if not keep_row:
            self.conn.execute(tables.delete_row, (key,))

    def _insert_docs(self, tables: _Tables, write: SessionWrite, next_rowid: dict[str, int]) -> tuple[int, int] | None:
        if not write.documents:
            return None
        first = next_rowid[tables.docs]
        rows = []
        for rowid, doc in enumerate(write.documents, first):
            text = sanitize(doc.text)
            rows.append((rowid, text, write.key, doc.seq, sql_text(doc.type), _time(doc.time),
                         doc.surface, len(text)))
        self.conn.executemany(tables.insert_doc, rows)
        next_rowid[tables.docs] = first + len(rows)
        return first, first + len(rows) - 1

    # -- lookups -------------------------------------------------------------------------------

    def target(self, session_id: str, view: View) -> Target | None:
        """The searchEvents target as the index holds it after this reconcile (§6.11)."""
        key = sql_text(session_id)
        live = self.live.get(key)
        if live is not None:
            table, generation = LIVE.sessions, f"live:{live.generation}"
        else:
            persisted = self.persisted.get(key) if view.bound else None
            if persisted is None:
                return None
            table, generation = PERSISTED.sessions, f"persisted:{view.epoch}:{persisted.generation}"
        columns = self.conn.execute(
            "SELECT version, id, created_at, cwd, parent_session, seed_length, delegation_depth, "
            f"agent_preset FROM {table} WHERE id = ?",
            (key,),
        ).fetchone()
        return Target(generation, header_raw(columns))


def _apply(mirror: dict[str, Row], changes: dict[str, Row | None]) -> None:
    for key, row in changes.items():
        if row is None:
            mirror.pop(key, None)
        else:
            mirror[key] = row

