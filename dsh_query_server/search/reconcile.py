"""Reconciliation (semantics.md §6.5): bring the index in line with the live store and the
persistence binding at the start of every search, and keep the generations cursors bind.

The index mirrors in memory what its session tables hold (revision or fingerprint, generation,
and the rowid span of each session's documents), so an unchanged session costs no SQL at all.
An unchanged *corpus* costs less still: the last successful reconcile remembers the binding, the
live store's generation and the validated listing it saw. When the binding and the generation are
the same and the backend lists the very same snapshots again (backends reuse an unchanged
listing), a full observation could find nothing to write, so none is made; the backend is still
asked for both listings, so its failures and changes are seen exactly as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msgspec import Raw

from .. import errors
from ..cancel import NULL_TOKEN, CancelToken
from ..errors import SEARCH_CANCELLED_MESSAGE, QueryError, cancelled, inner_message
from ..model.event import headers_compatible
from ..persistence.checks import Snapshots
from ..persistence.contract.errors import SessionPersistenceCorruptionError
from ..persistence.contract.results import BulkResult, Digested, Snapshot
from ..persistence.mount.binding import Binding, PersistenceBinding
from ..persistence.reads import LogMoved, StoredLogs
from ..query.loaded import conflict
from ..session.store import SessionStore
from .documents import (
    DIGEST,
    PAYLOADS,
    WINDOW,
    BadDigest,
    Read,
    live_documents,
    persisted_documents,
    read_persisted,
    undigest,
)
from .plan import LIVE, PERSISTED, Row, WritePlan
from .schema import Connection, Error, open_failed, open_index, scalar, sql_text
from .unreadable import Unreadable, unreadable
from .wire import header_raw

_FIRST = -1  # the binding changes "seen" before this instance's first reconcile


class _Unstable(Exception):
    """The observation saw the corpus move; the attempt is retried."""


def check(token: CancelToken | None) -> None:
    if token is not None and token.cancelled:
        raise cancelled(search=True)


@dataclass(frozen=True, slots=True)
class View:
    """What a search needs from its reconcile: whether persisted rows are visible, the
    generations of §6.11, and the listed sessions left out because their log is unreadable
    ([ours], search/unreadable.py)."""

    bound: bool
    cross_generation: int
    epoch: int
    unreadable: dict[str, Unreadable]


@dataclass(frozen=True, slots=True)
class Target:
    generation: str
    header: Raw


# -- listings ------------------------------------------------------------------------------------


def _keys(listing: Snapshots) -> frozenset[Any]:
    """The listed ids as the index stores them."""
    return frozenset(sql_text(sid) for sid in listing.by_id)


def _listing_changed(
    before: Snapshots, after: Snapshots, live_ids: frozenset[str], store: SessionStore
) -> bool:
    """Step 2.3: did the listing move between the two calls? A new revision or header of an id
    live at both observations does not count: it is never inspected and its persisted row stays
    hidden under the live overlay, so a writer checkpointing live sessions cannot fail searches."""
    if before is after:
        return False
    if before.by_id.keys() != after.by_id.keys():
        return True
    for sid, old in before.by_id.items():
        new = after.by_id[sid]
        # Backends that reuse unchanged headers hand back the very same immutable object.
        same_header = old.header is new.header or headers_compatible(
            old.header, new.header, include_preset=True
        )
        if old.revision == new.revision and same_header:
            continue
        if sid not in live_ids or not store.is_live(sid):
            return True
    return False


# -- the index -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Seen:
    """The sources as a successful reconcile observed them; the index reflects exactly these.

    ``generation`` is the live store's generation read *before* the live store was observed, so
    a change racing the observation leaves it behind and the next search looks again.
    ``unindexed`` are the listed ids that were neither indexed at their revision nor inspected,
    because they were live: the only snapshots a repeated listing could still need to inspect.
    ``changes`` counts the mounts and unmounts made before ``binding`` was read with it.
    ``unreadable`` are the listed ids whose log raised corruption at their listed revision
    (search/unreadable.py): not indexed, and not read again until that revision changes."""

    binding: Binding | None
    changes: int
    generation: int
    listing: Snapshots | None
    unindexed: frozenset[Any]
    live_ids: frozenset[str]
    live_keys: frozenset[Any]
    unreadable: dict[str, Unreadable]


_NONE: dict[str, Unreadable] = {}


class SearchIndex:
    """The open index and this instance's reconcile state. Used only from inside the search
    queue, so nothing here needs a lock."""

    def __init__(self, conn: Connection, store: SessionStore, binding: PersistenceBinding) -> None:
        self.conn = conn
        self.store = store
        self.binding = binding
        stored = scalar(conn, "SELECT global_generation FROM search_state") or 0
        self.persisted_generation = stored
        self.local_generation = stored
        self.cross_generation = stored
        self.epoch = 0
        # Mounts and unmounts seen by the previous reconcile. Counted by the binding itself, so a
        # mount undone between two searches is a change though both saw "no binding" (§6.12).
        self.last_changes = _FIRST
        self._seen: _Seen | None = None
        self._subset: tuple[frozenset[Any], frozenset[str], bool] | None = None
        self.writes = 0  # committed plans that wrote: the sessions tables changed
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
        top = scalar(conn, "SELECT max(rowid) FROM persisted_docs")
        self.next_rowid = {PERSISTED.docs: (top or 0) + 1, LIVE.docs: 1}

    @classmethod
    def open(
        cls, path: str, journal_mode: str, store: SessionStore, binding: PersistenceBinding
    ) -> SearchIndex:
        conn = open_index(path, journal_mode)
        try:
            return cls(conn, store, binding)
        except Error as exc:
            conn.close()
            raise open_failed(str(exc)) from None

    def close(self) -> None:
        self.conn.close()  # the TEMP overlay goes with the connection

    @property
    def cold(self) -> bool:
        """Nothing reconciled yet, and no session indexed: the first reconcile reads every
        listed log."""
        return self._seen is None and not self.persisted

    # -- reconcile -----------------------------------------------------------------------------

    def reconcile(self, token: CancelToken | None) -> View:
        """Observe (up to two attempts), then commit the write plan the observation filled."""
        for _ in range(2):
            plan = WritePlan(
                self.conn,
                self.persisted,
                self.live,
                self.persisted_generation,
                self.local_generation,
                self.next_rowid,
            )
            try:
                seen = self._attempt(token, plan)
                check(token)  # the last checkpoint before the commit; it then runs to completion
                plan.commit()
            except _Unstable:
                plan.abandon()
                self._keep_settled(plan)
                continue
            except BaseException:
                plan.abandon()
                self._keep_settled(plan)
                raise
            break
        else:
            raise QueryError(
                errors.PERSISTENCE_FAILED,
                "session-search persistence observation did not stabilize after one retry",
            )
        _apply(self.persisted, plan.changes[PERSISTED])
        _apply(self.live, plan.changes[LIVE])
        self.persisted_generation = plan.persisted_generation
        self.local_generation = plan.local_generation
        self.next_rowid = plan.next_rowid
        rebound = self.last_changes != _FIRST and seen.changes != self.last_changes
        if plan.wrote:
            self.writes += 1
        if plan.wrote or rebound:
            self.cross_generation += 1
        if rebound:
            self.epoch += 1
        self.last_changes = seen.changes
        self._seen = seen
        return View(seen.binding is not None, self.cross_generation, self.epoch, self._unread(seen))

    def _unread(self, seen: _Seen) -> dict[str, Unreadable]:
        """The unreadable sessions a search names: not one that is live now (an unchanged
        listing keeps them; the live copy is searched, and the damaged log is never read)."""
        found = seen.unreadable
        if not any(sql_text(sid) in self.live for sid in found):
            return found
        return {sid: u for sid, u in found.items() if sql_text(sid) not in self.live}

    def _keep_settled(self, plan: WritePlan) -> None:
        """An attempt that ends early keeps the batches it committed (plan.py): the mirror has
        their rows already; the generations and rowids follow, and cursors made before them
        go stale as after any write."""
        if not plan.settled:
            return
        self.persisted_generation = plan.base_generation + 1
        self.local_generation = max(self.local_generation, self.persisted_generation)
        self.next_rowid[PERSISTED.docs] = plan.settled_rowid
        self.writes += 1
        self.cross_generation += 1

    def _attempt(self, token: CancelToken | None, plan: WritePlan) -> _Seen:
        check(token)
        binding, changes = self.binding.observe()
        generation = self.store.generation
        seen = self._seen
        if seen is not None and seen.binding is not binding:
            seen = None  # observed against another binding: nothing of it carries over
        # An untouched live store as well: the last successful reconcile's view holds.
        steady = seen is not None and seen.generation == generation
        live_ids = seen.live_ids if seen is not None and steady else frozenset(self.store.ids())
        listing: Snapshots | None = None
        unindexed: frozenset[Any] = frozenset()
        found: dict[str, Unreadable] = _NONE
        unchanged = steady
        if binding is not None:
            # A repeated listing needs no inspection while every id it skipped as live still is.
            known = seen.listing if seen is not None and self._still_live(seen, live_ids) else None
            listing, unindexed, found = self._observe_persisted_mapped(
                binding, changes, live_ids, token, plan, known
            )
            if listing is not known:
                unchanged = False
                listed = _keys(listing)
                for key in self.persisted:
                    if key not in listed:
                        plan.delete_persisted(key)
            elif seen is not None:
                unindexed, found = seen.unindexed, seen.unreadable
        if seen is not None and unchanged and self.store.generation == generation:
            return _Seen(
                binding, changes, generation, listing, unindexed, live_ids, seen.live_keys, found
            )
        live_keys = self._observe_live(listing, live_ids, plan)
        return _Seen(binding, changes, generation, listing, unindexed, live_ids, live_keys, found)

    def _still_live(self, seen: _Seen, live_ids: frozenset[str]) -> bool:
        """``seen.unindexed <= live_ids``, remembered for the last two sets asked about (held
        here, immutable, so identity is equality): the check grows with the live sessions and
        runs on every search, and an unchanged corpus asks it about the same two sets."""
        memo = self._subset
        if memo is not None and memo[0] is seen.unindexed and memo[1] is live_ids:
            return memo[2]
        result = seen.unindexed <= live_ids
        self._subset = (seen.unindexed, live_ids, result)
        return result

    def _observe_persisted_mapped(
        self,
        binding: Binding,
        changes: int,
        live_ids: frozenset[str],
        token: CancelToken | None,
        plan: WritePlan,
        known: Snapshots | None,
    ) -> tuple[Snapshots, frozenset[Any], dict[str, Unreadable]]:
        try:
            return self._observe_persisted(binding, changes, live_ids, token, plan, known)
        except _Unstable:
            raise
        except Exception as exc:  # every failure is mapped (§6.5 step 2.4)
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

    def _observe_persisted(
        self,
        binding: Binding,
        changes: int,
        live_ids: frozenset[str],
        token: CancelToken | None,
        plan: WritePlan,
        known: Snapshots | None,
    ) -> tuple[Snapshots, frozenset[Any], dict[str, Unreadable]]:
        """Steps 2.1–2.3. Returns ``known`` itself when the backend listed exactly it again: then
        every snapshot is indexed at its revision, unreadable at it, or has a live owner, and
        nothing is inspected."""
        logs, tok = binding.logs, NULL_TOKEN if token is None else token
        if self.cold:
            # Every listed log will be read, so the bulk read's worker starts now and gets
            # ready beside this listing (persistence/importing/pool.py) [ours].
            logs.prepare_many()
        tok.progress.report("listing transcripts")
        with tok.counting(share=False):  # the index build owns the percentage
            listing = logs.snapshots(tok, known)
        unindexed: frozenset[Any] = frozenset()
        found: dict[str, Unreadable] = _NONE
        if listing is not known:
            unindexed, found = self._inspect_changed(logs, listing, live_ids, token, plan, changes)
        check(token)
        again = logs.snapshots(tok, listing)
        check(token)
        if _listing_changed(listing, again, live_ids, self.store):
            raise _Unstable
        if self.binding.current() is not binding:
            raise _Unstable
        return listing, unindexed, found

    def _inspect_changed(
        self,
        logs: StoredLogs,
        listing: Snapshots,
        live_ids: frozenset[str],
        token: CancelToken | None,
        plan: WritePlan,
        changes: int,
    ) -> tuple[frozenset[Any], dict[str, Unreadable]]:
        """Step 2.2: inspect every snapshot the index does not hold at its revision; returns the
        ids skipped because they are live, and the unreadable ones (search/unreadable.py)."""
        # Revisions are trusted only against the store that produced them: the same binding as
        # the previous reconcile, or (first reconcile) the rows a previous instance left.
        trust_revisions = self.last_changes in (_FIRST, changes)
        before = self._seen.unreadable if trust_revisions and self._seen is not None else _NONE
        found: dict[str, Unreadable] = {}
        tok = NULL_TOKEN if token is None else token
        progress, done = tok.progress, 0  # "indexing <done> of <total> transcripts"
        skipped: list[str] = []
        todo: list[tuple[str, Snapshot]] = []
        for sid, snapshot in listing.by_id.items():
            row = self.persisted.get(sql_text(sid))
            if trust_revisions and row is not None and row.tag == snapshot.revision:
                continue
            if sid in live_ids or self.store.is_live(sid):
                skipped.append(sid)
                continue  # a log with a live owner is never inspected
            known = before.get(sid)
            if known is not None and known.revision == snapshot.revision:
                found[sid] = known  # still damaged: read again once its revision changes
                continue
            todo.append((sid, snapshot))
        # Each id gets what ``inspect`` would give, read in bulk where the mount can, and the
        # documents are made from it as from ``inspect``; an id left to its own read (None) is
        # read the ordinary way, window by window. One that went live meanwhile is skipped. A
        # worker process may make an id's documents itself (DIGEST): this process then inserts.
        results = logs.many([sid for sid, _ in todo], WINDOW, tok, PAYLOADS, DIGEST)
        for (sid, snapshot), result in zip(todo, results, strict=True):
            total = len(todo)
            progress.report(f"indexing {done:,} of {total:,} transcripts", done, total)
            done += 1
            if self.store.is_live(sid):
                skipped.append(sid)
                continue
            check(token)
            try:
                _index(logs, sid, snapshot, result, token, plan)
            except SessionPersistenceCorruptionError as exc:
                # That log alone is damaged: the search goes on without it, and without any
                # documents it had (a bulk read's other results are unaffected).
                plan.drop_persisted(sql_text(sid))
                found[sid] = unreadable(sid, snapshot.revision, snapshot.header, exc)
            plan.settle()
        if todo:
            progress.report(f"indexed {len(todo):,} transcripts", len(todo), len(todo))
        return frozenset(skipped), found or _NONE

    def _observe_live(
        self, listing: Snapshots | None, live_ids: frozenset[str], plan: WritePlan
    ) -> frozenset[Any]:
        """Steps 3–4, writing each changed live session and then the live deletes."""
        listed_by_id = listing.by_id if listing is not None else {}
        fingerprints = self.store.fingerprints()
        for sid, (header, fingerprint) in fingerprints.items():
            listed = listed_by_id.get(sid)
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
            plan.write_live(
                key, snapshot.header, snapshot.fingerprint, persisted, live_documents(snapshot)
            )
        if fingerprints.keys() != live_ids:
            raise _Unstable
        live_keys = frozenset(sql_text(sid) for sid in fingerprints)
        for key in self.live:
            if key not in live_keys:
                plan.delete_live(key)
        return live_keys

    # -- lookups -------------------------------------------------------------------------------

    def unreadable_under(self, binding: Binding) -> dict[str, Unreadable]:
        """The unreadable sessions the last reconcile found under ``binding`` (none when it
        observed another). Read from any thread: ``_seen`` is replaced whole, never mutated."""
        seen = self._seen
        return seen.unreadable if seen is not None and seen.binding is binding else _NONE

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
            f"agent_preset, source FROM {table} WHERE id = ?",
            (key,),
        ).fetchone()
        if columns is None:
            return None  # the mirror and the table are written together; never reached
        return Target(generation, header_raw(columns))


def _index(
    logs: StoredLogs,
    sid: str,
    snapshot: Snapshot,
    result: BulkResult,
    token: CancelToken | None,
    plan: WritePlan,
) -> None:
    """Step 2.2 for one snapshot: its log as ``inspect`` gives it (``result``, else read now);
    its documents go to the plan."""
    tok = NULL_TOKEN if token is None else token
    try:
        read = _read(logs, sid, result, tok)
        check(token)
        if not headers_compatible(snapshot.header, read.meta):
            raise conflict(sid)
        key, header, revision = sql_text(sid), snapshot.header, snapshot.revision
        plan.write_persisted(key, header, revision, read, read.meta, ready=read.ready)
        try:
            read.raise_error()
        except BadDigest:  # never from our own worker; any doubt: the log is read here instead
            read = read_persisted(logs, sid, tok)
            plan.write_persisted(key, header, revision, read, read.meta)
            read.raise_error()
    except LogMoved:
        raise _Unstable from None


def _read(logs: StoredLogs, sid: str, result: BulkResult, token: CancelToken) -> Read:
    """The Read of one bulk result, as ``read_persisted`` gives it; None: read it now."""
    if result is None:
        return read_persisted(logs, sid, token)
    if isinstance(result, Exception):
        raise result
    if isinstance(result, Digested):  # a BadDigest met while inserting is raised after it
        return Read(result.meta, undigest(result.data, result.ends), reading=True, ready=True)
    return Read(result.meta, persisted_documents(sid, result.events))


def _apply(mirror: dict[str, Row], changes: dict[str, Row | None]) -> None:
    for key, row in changes.items():
        if row is None:
            mirror.pop(key, None)
        else:
            mirror[key] = row
