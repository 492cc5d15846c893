"""``dsh-query sync`` (postgres.md §6): the command over the sync engine (sync/). It parses the
arguments, refuses what §6 calls usage errors, runs one cycle or cycles every ``--watch``
seconds, and prints the summary (sync_output.py) and the progress bar (sync_progress.py).

Exit codes: 2 usage error, 1 any failure, 3 sessions skipped, 0 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from ..errors import QueryError
from ..persistence.postgres.backend import PostgresBackend
from ..persistence.postgres.conninfo import SCHEMES, parse_postgres_uri
from ..resolve import absolute_uri
from ..sync.cycle import CycleOptions, run_cycle
from ..sync.group import Report, Skip
from ..sync.state import cycle_thawed
from .sync_output import parser, write_report
from .sync_progress import SyncProgress


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

    def summary(reports: list[Report], skipped: list[Skip], failed: list[Skip]) -> None:
        write_report(reports, skipped, failed, out if args.json else None, err)

    options = CycleOptions(bool(args.dry_run), frozenset(args.session), args.jobs)
    shown = [(_shown(source), uri) for source, uri in sources]
    return run_cycle(options, target, shown, SyncProgress(err), err, reported, stop, summary)


def main(argv: Sequence[str] | None = None) -> int:
    """``dsh-query sync``: the CLI wires this as a subcommand."""
    # A sync process allocates a session's events, which live until its batch commits: the
    # collector's default young threshold (700) scanned and promoted them over and over (the
    # full collections too, a visible share of a first sync's CPU); the listings' objects are
    # frozen (collection_paused), so a young collection every 10,000 allocations is all it needs.
    gc.set_threshold(10_000, 10, 10)
    return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr, thaw=False)
