"""One sync cycle (postgres.md §6): every source in turn, mounted, listed and copied into the
target by the engine; the exit code of the cycle."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ..cancel import CancelToken
from ..errors import QueryError
from ..persistence.contract.results import Snapshot
from ..persistence.mount.uri import open_backend
from ..persistence.postgres.backend import PostgresBackend
from .engine import Progress, Sync, target_message
from .group import Report, Skip
from .state import SyncState, TargetListing, collection_paused, listed_source

# The summary a cycle that ran to its end reports: per source, then the skipped and failed ones.
Summary = Callable[[list[Report], list[Skip], list[Skip]], None]


@dataclass(frozen=True, slots=True)
class CycleOptions:
    dry_run: bool
    sessions: frozenset[str]  # only these ids; every one when empty
    jobs: int


def run_cycle(
    options: CycleOptions,
    target: PostgresBackend,
    sources: list[tuple[str, str]],
    progress: Progress,
    err: TextIO,
    reported: set[tuple[str, str, str, str]],
    stop: threading.Event,
    summary: Summary,
) -> int | None:
    """One cycle's exit code; None when ``stop`` interrupted it. ``sources`` are (the URI as
    shown, the URI mounted); ``summary`` gets the reports of a cycle that ran to its end."""
    sync = Sync(target, options.dry_run, progress, reported)
    reports: list[Report] = []
    failure = False
    try:  # reachable and not refused, before any source is read
        stamp = target.listing_stamp()
    except Exception as exc:  # noqa: BLE001 - every target failure is exit code 1
        print(f"sync: target {target.uri} failed: {target_message(exc)}", file=err)
        return 1
    listing = TargetListing(target)
    wanted = options.sessions
    for shown, uri in sources:
        report = Report(shown)
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
                    for s in sorted(snapshots, key=order)
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
                report, source, ordered, state, revisions, options.jobs, stop, token
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
    summary(reports, sync.skipped, sync.failed)
    if failure:
        return 1
    return 3 if sync.skipped else 0


def order(snapshot: Snapshot) -> tuple[int, str]:
    created = snapshot.header.created_at
    return (created if isinstance(created, int) else 0), str(snapshot.header.id)
