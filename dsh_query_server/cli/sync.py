"""``dsh-query sync`` (postgres.md §6): copy sessions incrementally into a postgres store.

Each source is mounted read-only and its sessions are taken by createdAt, then id. What is copied
is the stored valid prefix (``read_stored``): no normalization and no closers, because a closer
would end an open turn for good. The target is only ever appended to: a source log that no
longer extends the stored one is reported and skipped, never written over.

Exit codes: 2 usage error, 1 any failure, 3 sessions skipped, 0 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from types import FrameType
from typing import TextIO

from ..cancel import CancelToken
from ..errors import QueryError
from ..model.event import headers_compatible
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.contract.results import Snapshot
from ..persistence.logical.records import Piece
from ..persistence.mount.uri import absolute_uri, open_backend
from ..persistence.postgres.backend import PostgresBackend
from ..persistence.postgres.conninfo import SCHEMES, parse_postgres_uri
from ..persistence.postgres.errors import AppendInDoubtError, SessionAppendConflictError
from .sync_group import (
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    Member,
    Pending,
    batches,
    first_difference,
    long_first,
    member,
    packed_batch,
    read_source,
)
from .sync_group import Report as _Report
from .sync_log import SourceLog, count_of
from .sync_output import Skip, parser, write_report
from .sync_progress import SyncProgress
from .sync_state import (
    Entry,
    SyncState,
    TargetListing,
    collection_paused,
    cycle_thawed,
    listed_source,
)

_RETRIES = 3
_CHUNK = 8  # consecutive sessions per job


class UsageError(Exception):
    """Exit code 2."""


def _read_only(uri: str) -> str:
    """The source URI with readOnly=true; readOnly=false on a source is a usage error."""
    base, question, query = uri.partition("?")
    pairs = query.split("&") if question else []
    if "readOnly=false" in pairs:
        raise UsageError(f"sync: source {_shown(uri)} must not set readOnly=false")
    if "readOnly=true" not in pairs:
        pairs.append("readOnly=true")
    return f"{base}?{'&'.join(pairs)}"


def _shown(uri: str) -> str:
    if uri.startswith(SCHEMES):
        try:
            return parse_postgres_uri(uri).redacted
        except QueryError:
            return "postgres URI (invalid)"
    return uri


class _Sync:
    def __init__(
        self,
        target: PostgresBackend,
        dry_run: bool,
        err: TextIO,
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
        self.progress = SyncProgress(err)
        self.created: set[str] = set()
        # id -> (source revision, events synced, their digest), until settle() records them
        self.settled: dict[str, tuple[str, int, str]] = {}
        # Small sessions new to the target wait here to share a transaction (sync_group.py).
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
        report: _Report,
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
        report: _Report,
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
        report: _Report,
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

    def _decide(self, report: _Report, log: SourceLog, absent: bool) -> str:
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

    def _count(self, report: _Report, outcome: str) -> None:
        with self._lock:
            report.counts[outcome] += 1

    def _skip(
        self, report: _Report, session_id: str, reason: str, seq: int | None, detail: str
    ) -> None:
        pair: tuple[str, str] = self._local.pair
        key = (report.source, session_id, pair[0], pair[1])
        with self._lock:
            self.skipped.append(Skip(session_id, report.source, reason, seq, detail))
            if key in self.reported:
                return
            self.reported.add(key)
            self.progress.say(f'sync: skipped "{session_id}" from {report.source}: {detail}')

    def fail(self, report: _Report, session_id: str, message: str) -> None:
        with self._lock:
            report.counts["failed"] += 1
            self.failed.append(Skip(session_id, report.source, "failed", None, message))
            self.progress.say(f'sync: failed "{session_id}" from {report.source}: {message}')

    def run_source(
        self,
        report: _Report,
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


def _sources(args: argparse.Namespace) -> list[str]:
    sources = [*args.from_, *args.sources]
    if not sources:
        raise UsageError("sync: give at least one source URI")
    return sources


def run(argv: Sequence[str], out: TextIO, err: TextIO, *, thaw: bool = True) -> int:
    """``thaw``: unfreeze what the run's listings froze (collection_paused) when it ends;
    ``main`` does not, as the process ends with the run."""
    try:
        args = parser().parse_args(list(argv))
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        if args.jobs < 1:
            raise UsageError("sync: --jobs needs a whole number >= 1")
        if args.watch is not None and args.watch < 1:
            raise UsageError("sync: --watch needs a whole number of seconds >= 1")
        sources = _sources(args)
        if not str(args.to).startswith(SCHEMES):
            raise UsageError("sync: --to must be a postgres:// or postgresql:// URI")
        mount = parse_postgres_uri(args.to)
        if mount.read_only:
            raise UsageError(f"sync: the target {mount.redacted} is mounted readOnly=true")
        args.jobs = min(args.jobs, mount.pool_size)  # a job holds one pooled connection
        source_uris = [_read_only(absolute_uri(uri)) for uri in sources]
        for uri in source_uris:
            if (
                uri.startswith(SCHEMES)
                and parse_postgres_uri(uri).libpq == mount.libpq
                and (parse_postgres_uri(uri).schema == mount.schema)
            ):
                raise UsageError(f"sync: source {_shown(uri)} is the target's store")
    except UsageError as exc:
        print(str(exc), file=err)
        return 2
    except QueryError as exc:
        print(f"sync: {exc.message}", file=err)
        return 2
    target = PostgresBackend(mount)
    pairs = list(zip(sources, source_uris, strict=True))
    try:
        if args.watch is None:
            with cycle_thawed(thaw):
                return _run(args, target, pairs, out, err, set(), threading.Event()) or 0
        return _watch(args, target, pairs, out, err)
    finally:
        target.close()


def _watch(
    args: argparse.Namespace,
    target: PostgresBackend,
    sources: list[tuple[str, str]],
    out: TextIO,
    err: TextIO,
) -> int:
    """Cycles every ``--watch`` seconds; SIGINT or SIGTERM stops after the current
    transaction, with the last complete cycle's code."""
    stop = threading.Event()
    previous: dict[int, object] = {}

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, stopping)
    reported: set[tuple[str, str, str, str]] = set()
    last: int | None = None
    try:
        while True:
            with cycle_thawed():
                code = _run(args, target, sources, out, err, reported, stop)
            if code is None:  # interrupted mid-cycle
                break
            last = code
            if stop.wait(args.watch):
                break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
    return 0 if last is None else last


def _run(
    args: argparse.Namespace,
    target: PostgresBackend,
    sources: list[tuple[str, str]],
    out: TextIO,
    err: TextIO,
    reported: set[tuple[str, str, str, str]],
    stop: threading.Event,
) -> int | None:
    """One cycle's exit code; None when ``stop`` interrupted it."""
    sync = _Sync(target, bool(args.dry_run), err, reported)
    reports: list[_Report] = []
    failure = False
    try:  # reachable and not refused, before any source is read
        stamp = target.listing_stamp()
    except Exception as exc:  # noqa: BLE001 - every target failure is exit code 1
        print(f"sync: target {target.uri} failed: {target_message(exc)}", file=err)
        return 1
    listing = TargetListing(target)
    wanted = set(args.session)
    for shown, uri in sources:
        report = _Report(_shown(shown))
        reports.append(report)
        try:
            source = open_backend(uri)
        except QueryError as exc:
            print(f"sync: source {report.source} cannot be mounted: {exc.message}", file=err)
            failure = True
            continue
        try:
            token = CancelToken()  # this source's pass (see run_source)
            with collection_paused():
                state = SyncState(target.uri, report.source)
                try:
                    snapshots = listed_source(source, state, token)
                except Exception as exc:  # noqa: BLE001 - a source that cannot list fails the run
                    print(f"sync: source {report.source} cannot be listed: {exc}", file=err)
                    failure = True
                    continue
                ordered = [
                    s
                    for s in sorted(snapshots, key=_order)
                    if not wanted or str(s.header.id) in wanted
                ]
                # The target as the state's proof names it: no listing needed (§6).
                revisions = state.proven_revisions(stamp, [str(s.header.id) for s in ordered])
                if revisions is None:
                    try:
                        revisions = listing.revisions(state)
                    except Exception as exc:  # noqa: BLE001 - every target failure is exit code 1
                        print(f"sync: target {target.uri} failed: {target_message(exc)}", file=err)
                        return 1
            sync.progress.start(report.source, len(ordered))
            done = sync.run_source(
                report, source, ordered, state, revisions, args.jobs, stop, token
            )
            if done is None:
                return None
            failure = failure or not done
            sync.progress.stop()
            if not sync.dry_run:
                sync.settle(state)
                state.save()
        finally:
            sync.progress.stop()
            source.close()
    write_report(reports, sync.skipped, sync.failed, out if args.json else None, err)
    if failure:
        return 1
    return 3 if sync.skipped else 0


def _order(snapshot: Snapshot) -> tuple[int, str]:
    created = snapshot.header.created_at
    return (created if isinstance(created, int) else 0), str(snapshot.header.id)


def target_message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, QueryError) else str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """``dsh-query sync``: the CLI wires this as a subcommand."""
    # A sync process allocates a session's events, which live until its batch commits: the
    # collector's default young threshold (700) scanned and promoted them over and over (with
    # the full collections, ~10% of the CPU of a first sync); the listings' objects are frozen
    # (collection_paused), so a young collection every 10,000 allocations is all it needs.
    gc.set_threshold(10_000, 10, 10)
    return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr, thaw=False)
