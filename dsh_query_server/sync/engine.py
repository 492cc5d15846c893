"""The sync engine (postgres.md §6): copy sessions incrementally into a postgres store.

Each source is mounted read-only and its sessions are taken by createdAt, then id. What is copied
is the stored valid prefix (``read_stored``): no normalization and no closers, because a closer
would end an open turn for good. The target is only ever appended to: a source log that no
longer extends the stored one is reported and skipped, never written over.

``Sync`` copies one source's sessions (jobs, groups, retries); ``cycle.run_cycle`` runs one pass
over every source. The command line (cli/sync.py) parses arguments and prints.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from ..cancel import CancelToken
from ..errors import QueryError
from ..model.event import headers_compatible
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.contract.results import Snapshot
from ..persistence.logical.records import Piece
from ..persistence.postgres.backend import PostgresBackend
from ..persistence.postgres.errors import AppendInDoubtError, SessionAppendConflictError
from .group import (
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    Member,
    Pending,
    Report,
    Skip,
    batches,
    first_difference,
    long_first,
    member,
    packed_batch,
    read_source,
)
from .log import SourceLog, count_of
from .state import Entry, SyncState

_RETRIES = 3
_CHUNK = 8  # consecutive sessions per job


class Progress(Protocol):
    """Where the engine reports while it copies: the command's progress bar, or plain lines."""

    def start(self, source: str, total: int) -> None: ...

    def appended(self, count: int) -> None: ...

    def advance(self) -> None: ...

    def stop(self) -> None: ...

    def say(self, text: str) -> None: ...


class Sync:
    """Copies the sessions of one cycle, source by source, into the target (§6)."""

    def __init__(
        self,
        target: PostgresBackend,
        dry_run: bool,
        progress: Progress,
        reported: set[tuple[str, str, str, str]],
    ) -> None:
        self.target = target
        # (source, id, source revision, target revision) of skips already printed: --watch
        # reports a skip once per revision pair (§6).
        self.reported = reported
        self._lock = threading.Lock()  # the counts, the lists and ``reported``, across jobs
        self._local = threading.local()  # this job's revision pair, for _skip
        self.dry_run = dry_run
        self.skipped: list[Skip] = []
        self.failed: list[Skip] = []
        self.progress = progress
        self.created: set[str] = set()
        # id -> (source revision, events synced, their digest), until settle() records them
        self.settled: dict[str, tuple[str, int, str]] = {}
        # Small sessions new to the target wait here to share a transaction (group.py).
        # With one job (strict createdAt order) every other write commits the group first.
        self.pending = Pending(MAX_BATCH_EVENTS, MAX_BATCH_BYTES)
        self.strict = False
        self.group_failed = False

    def _append(self, session_id: str, pieces: Sequence[Piece]) -> None:
        """Commits in batches (§6), so an interrupted run leaves a valid prefix; each stores
        the source's kept lines in it as they are. A long log's batches are packed by a helper
        thread ahead of the one committing, so packing overlaps the commits' waits (they are
        sequential: each starts where the last ended)."""
        parts = batches(pieces)
        if len(parts) < 2:
            for batch in parts:
                self.target.append_group([packed_batch(session_id, batch)])
                self.progress.appended(count_of(batch))
            return
        with ThreadPoolExecutor(1, thread_name_prefix="dsh-query-sync-pack") as packer:
            packed = [packer.submit(packed_batch, session_id, part) for part in parts]
            try:
                for part, write in zip(parts, packed, strict=True):
                    self.target.append_group([write.result()])
                    self.progress.appended(count_of(part))
            finally:
                for write in packed:
                    write.cancel()

    def session(
        self,
        report: Report,
        source: PersistenceBackend,
        snapshot: Snapshot,
        state: SyncState,
        target_revision: str | None,
        token: CancelToken,
    ) -> None:
        session_id = str(snapshot.header.id)
        self._local.pair = (snapshot.revision, target_revision or "")
        entry = state.get(session_id)
        known = (
            entry is not None and target_revision is not None and entry.target == (target_revision)
        )
        log = read_source(source, session_id, token)
        absent = target_revision is None  # the cycle's listing had no such session
        # Not one this run created empty: its first append takes that header (see _decide).
        if absent and not self.dry_run and session_id not in self.created:
            grouped = member(report, snapshot, log, MAX_BATCH_EVENTS, MAX_BATCH_BYTES)
            if grouped is not None:
                full = self.pending.add(grouped)
                if full is not None:
                    self.commit_group(full)
                return  # counted when its group commits
        if self.strict and not self.dry_run:
            self.commit_group(self.pending.take())
        outcome = None
        if (
            known
            and entry is not None
            and log.count >= entry.count
            and log.digest(entry.count) == entry.sha256
        ):
            outcome = self._extend(session_id, log, entry.count)
        self._resolve(report, snapshot, log, absent, outcome)

    @staticmethod
    def _unchanged(snapshot: Snapshot, state: SyncState, revisions: dict[str, str]) -> bool:
        """Both revisions as last synced (§6): ``unchanged`` without any read."""
        session_id = str(snapshot.header.id)
        entry = state.get(session_id)
        return (
            entry is not None
            and entry.source == snapshot.revision
            and entry.target == revisions.get(session_id)
        )

    def _resolve(
        self,
        report: Report,
        snapshot: Snapshot,
        log: SourceLog,
        absent: bool,
        outcome: str | None,
    ) -> None:
        """Decides (reading the target where needed) unless ``outcome`` is known, and counts."""
        session_id = str(snapshot.header.id)
        for _ in range(_RETRIES):
            if outcome is not None:
                break
            try:
                outcome = self._decide(report, log, absent)
            except SessionAppendConflictError:
                absent = False  # another writer moved the target: read it, decide again
        if outcome is None:
            raise RuntimeError(f'session "{session_id}" kept changing under sync')
        self._settled(report, snapshot, outcome, log)

    def _settled(
        self,
        report: Report,
        snapshot: Snapshot,
        outcome: str,
        log: SourceLog,
        digest: str | None = None,
    ) -> None:
        """Counts the outcome and keeps what the state file records: the events' count and
        the log's digest (``digest`` when already known)."""
        self._count(report, outcome)
        if outcome in ("created", "grown", "unchanged") and not self.dry_run:
            entry = (snapshot.revision, log.count, digest or log.digest())
            with self._lock:
                self.settled[str(snapshot.header.id)] = entry

    def commit_group(self, group: list[Member]) -> None:
        """One transaction for the group's sessions; if it fails, each is redone on its own
        (the one-by-one path's reports, conflicts and errors), except a commit in doubt, which
        fails them all as the one-by-one path fails its session."""
        if not group:
            return
        try:
            self.target.append_group([item.write for item in group])
        except AppendInDoubtError as exc:
            for item in group:
                self.fail(item.report, item.write.session_id, target_message(exc))
            self.group_failed = True
            return
        except Exception:  # noqa: BLE001 - redone one by one, which reports each session
            for item in group:
                self._local.pair = (item.snapshot.revision, "")
                try:
                    self._resolve(item.report, item.snapshot, item.log, True, None)
                except Exception as exc:  # noqa: BLE001 - reported per session
                    self.fail(item.report, item.write.session_id, target_message(exc))
                    self.group_failed = True
            return
        for item in group:
            self.progress.appended(item.count)
            self._settled(item.report, item.snapshot, "created", item.log, item.digest)

    def settle(self, state: SyncState) -> None:
        """The state entries of what this source's pass left in sync, from one listing of the
        target instead of a read per session. An entry is kept only where the target still holds
        exactly the events synced (another writer may have appended since): a revision names its
        event count (postgres.md §3.2). That listing's stamp then proves the entries (§6)."""
        if not self.settled:
            return
        try:
            snapshots, stamp = self.target.stamped_listing()
        except Exception:  # noqa: BLE001 - the state is a shortcut: without it, the next run reads
            self.settled.clear()
            return
        listed = {str(s.header.id): s.revision for s in snapshots}
        for session_id, (source_revision, count, digest) in self.settled.items():
            revision = listed.get(session_id)
            if revision is not None and f":events:{count}:revision:" in revision:
                state.put(session_id, Entry(source_revision, revision, count, digest))
        self.settled.clear()
        state.prove_target(stamp, listed)

    def _extend(self, session_id: str, log: SourceLog, synced: int) -> str | None:
        """Only the source moved since the last sync: its digest proves the target's prefix,
        so the new events are appended without reading the target (None: decide by reading)."""
        if log.count == synced:
            return "unchanged"
        if not self.dry_run:
            try:
                self._append(session_id, log.tail(synced))
            except SessionAppendConflictError:
                return None
        return "grown"

    def _decide(self, report: Report, log: SourceLog, absent: bool) -> str:
        header = log.header
        session_id = str(header.id)
        # Absent from the cycle's listing: create straight away (create checks the row itself,
        # and a writer that got there since makes the first append conflict: then we read).
        stored_count = None if absent else self.target.stored_count(session_id)
        if stored_count is None:
            if not self.dry_run:
                if session_id not in self.created:  # a retry after a conflict created it
                    try:
                        self.target.create(header)
                    except ValueError:
                        if self.target.stored_count(session_id) is None:
                            raise
                        raise SessionAppendConflictError(
                            f'session "{session_id}" appeared in the target', session_id, 0, 0
                        ) from None
                    self.created.add(session_id)
                self._append(session_id, log.pieces)
            return "created"
        stored = self.target.read_stored(session_id)
        if not headers_compatible(header, stored.header):
            self._skip(
                report, session_id, "conflict", None, "its header conflicts with the stored header"
            )
            return "conflict"
        m, n = log.count, len(stored.events)
        difference = first_difference(log.events(), stored.events)
        if difference is None and m >= n:
            if m == n:
                return "unchanged"
            if not self.dry_run:
                self._append(session_id, log.tail(n))
            return "grown"
        if difference is None:
            return "behind"
        self._skip(
            report,
            session_id,
            "diverged",
            difference,
            "the source log no longer extends the stored log (first difference at seq"
            f" {difference}); the stored log is never overwritten",
        )
        return "diverged"

    def _count(self, report: Report, outcome: str) -> None:
        with self._lock:
            report.counts[outcome] += 1

    def _skip(
        self, report: Report, session_id: str, reason: str, seq: int | None, detail: str
    ) -> None:
        pair: tuple[str, str] = self._local.pair
        key = (report.source, session_id, pair[0], pair[1])
        with self._lock:
            self.skipped.append(Skip(session_id, report.source, reason, seq, detail))
            if key in self.reported:
                return
            self.reported.add(key)
            self.progress.say(f'sync: skipped "{session_id}" from {report.source}: {detail}')

    def fail(self, report: Report, session_id: str, message: str) -> None:
        with self._lock:
            report.counts["failed"] += 1
            self.failed.append(Skip(session_id, report.source, "failed", None, message))
            self.progress.say(f'sync: failed "{session_id}" from {report.source}: {message}')

    def run_source(
        self,
        report: Report,
        source: PersistenceBackend,
        ordered: list[Snapshot],
        state: SyncState,
        revisions: dict[str, str],
        jobs: int,
        stop: threading.Event,
        token: CancelToken,
    ) -> bool | None:
        """The sessions of one source, ``jobs`` at a time (started in order); False when one
        failed, None when ``stop`` ended it early (what was running finishes first). ``token``
        names the source's pass as one request, so a backend shares its root survey across the
        pass's reads (a jsonl: root is surveyed once, not once per session)."""

        def one(snapshot: Snapshot) -> bool:
            session_id = str(snapshot.header.id)
            try:
                self.session(report, source, snapshot, state, revisions.get(session_id), token)
                return True
            except Exception as exc:  # noqa: BLE001 - reported per session, the run goes on
                self.fail(report, session_id, target_message(exc))
                return False
            finally:
                self.progress.advance()

        def some(chunk: list[Snapshot]) -> bool:
            ok = True
            for snapshot in chunk:
                if stop.is_set():
                    break
                ok = one(snapshot) and ok
            return ok

        ok, running = True, set[Future[bool]]()
        self.strict, self.group_failed = jobs == 1, False
        if jobs > 1:
            ordered = long_first(source, ordered)
        chunk: list[Snapshot] = []
        with ThreadPoolExecutor(jobs, thread_name_prefix="dsh-query-sync") as pool:
            # A job is a few consecutive sessions: a job per session cost as much in thread
            # hand-offs as the small sessions' writes.
            for snapshot in [*ordered, None]:
                if stop.is_set():
                    break
                if snapshot is not None and self._unchanged(snapshot, state, revisions):
                    self._count(report, "unchanged")  # nothing to read: no job for it
                    self.progress.advance()
                    continue
                if snapshot is not None:
                    chunk.append(snapshot)
                    if len(chunk) < _CHUNK:
                        continue
                if not chunk:
                    continue
                if len(running) >= jobs:
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    ok = all(f.result() for f in done) and ok
                running.add(pool.submit(some, chunk))
                chunk = []
            ok = all(f.result() for f in running) and ok
        if stop.is_set():
            self.pending.take()  # stop after the current transaction: the group is not begun
            return None
        self.commit_group(self.pending.take())
        return ok and not self.group_failed


def target_message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, QueryError) else str(exc)
