"""What the two importers share as backends (importers.md §3): read-only mounts, revisions,
and ``inspect``'s consistent read of an append-only file."""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
import sys
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from ...cancel import NULL_TOKEN, CancelToken, SessionQueryCancelled
from ...model.event import Event, Header
from ..contract.errors import (
    SessionPersistenceCorruptionError,
    SessionPersistenceReadOnlyError,
    naming,
)
from ..contract.results import (
    BulkResult,
    Digest,
    Digested,
    Inspection,
    Payloads,
    SkippedArtifact,
    Snapshot,
    Window,
)
from .emitter import WholeRead
from .pool import POOL
from .shapes import BUDGET as SHAPE_BUDGET
from .shapes import SHAPE_DIGEST, TITLE_READING, Shape, shape_of
from .shared import parallel_reads, shared_reads, workers_allowed
from .survey import Clock, Proofs, Survey, file_key
from .window import MemoBuilder, MemoKey, WindowMemo, WindowMemos
from .worker import Init

ATTEMPTS = 3
BULK_WINDOW = 4096  # a window this long or longer is a bulk read
BULK_KEPT = 1024
_LISTING_WAIT = 0.05  # s between cancellation checks while another caller lists

StatKey = tuple[int, int, int, int]
T = TypeVar("T")


class ImportError_(Exception):
    """A plain persistence failure of an importer (PERSISTENCE_FAILED on the wire)."""


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def key_text(key: StatKey | None) -> str:
    return "-" if key is None else ":".join(map(str, key))


def stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def unreadable(rel: str, reason: str) -> SessionPersistenceCorruptionError:
    return SessionPersistenceCorruptionError(f'foreign transcript "{rel}" is unreadable: {reason}')


@dataclass(frozen=True, slots=True)
class Candidate:
    """One listed transcript: its header, revision and what the mapper needs to read it."""

    session_id: str
    path: str
    header: Header
    revision: str
    mtime_ns: int
    plan: object  # the backend's own reading plan for this transcript
    extra: str = ""  # the revision's part beyond the transcript's stat (sidecars, index title)

    def moved(self, revision: str, st: os.stat_result) -> Candidate:
        """The same transcript at a new stat (it grew, or its times moved)."""
        return replace(self, revision=revision, mtime_ns=st.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class Listing:
    """A completed listing and what a later lookup of one id re-checks instead of listing
    again: the survey's proofs, the files whose names give each id, the files whose id comes
    from their content, and per transcript the other files its candidate read."""

    survey: Survey
    found: dict[str, Candidate]
    named: dict[str, list[str]]
    volatile: list[str]
    deps: dict[str, tuple[str, ...]]
    walked: list[str]  # every transcript the walk found

    def replay(self) -> dict[str, Candidate] | None:
        """The same listing again when every directory and file it read is proven unchanged."""
        survey = self.survey
        files = survey.files
        if survey.young or not all(p in files for p in self.walked) or not survey.still(files):
            return None
        return dict(self.found)

    def read_revision(
        self, cand: Candidate, before: os.stat_result | None, after: os.stat_result | None
    ) -> str | None:
        """``cand.revision`` when a read of its transcript between the stats ``before`` and
        ``after`` read exactly what this listing proved (a title read remembers its answer
        under it, query/titlememo.py): ``cand`` is this listing's, its transcript's stat was the
        one proven before and after the read, and the other files its candidate read (sidecars,
        an index) are still as proven. None otherwise, and for a file too young to prove."""
        if before is None or after is None or self.found.get(cand.session_id) is not cand:
            return None
        proven = self.survey.files.get(cand.path)
        if proven is None or not file_key(before) == proven == file_key(after):
            return None
        return cand.revision if self.survey.files_still(self.deps.get(cand.path, ())) else None

    def lookup(self, session_id: str) -> Candidate | None:
        cand = self.found.get(session_id)
        if cand is None:
            return None
        files = self.named.get(session_id, [])
        files = [*files, *self.volatile, *self.deps.get(cand.path, ())]
        return cand if self.survey.still(files) else None


def log_unreadable(path: str, exc: OSError) -> None:
    print(
        f"dsh-query: skipping unreadable transcript {path}: {exc.strerror or exc}", file=sys.stderr
    )


def each(
    files: Sequence[T], token: CancelToken, told: Callable[[int, int], None] | None = None
) -> Iterator[T]:
    """The transcripts a listing's walk found, in order, for the listing to read: the one loop
    of every importer's listing (``ImportBackend.each``; OpenCode's legacy files). It checks the
    cancellation before each and tells how far it got, as (read, found), to the request's count
    (``listing k of n transcripts``, progress.Count) and to ``told``."""
    count, total = token.listing, len(files)
    for done, f in enumerate(files):
        token.raise_if_cancelled()
        if told is not None:
            told(done, total)
        if count is not None:
            count.at(done, total)
        yield f
    if told is not None:
        told(total, total)
    if count is not None:
        count.at(total, total)


def pick_winner(
    found: dict[str, Candidate], cand: Candidate, rank: Callable[[Candidate], int] = lambda c: 0
) -> None:
    """The same id twice in one home: lower ``rank``, then larger mtime, then smaller path."""
    old = found.get(cand.session_id)
    if old is None:
        found[cand.session_id] = cand
        return

    def order(c: Candidate) -> tuple[int, int, str]:
        return (rank(c), -c.mtime_ns, c.path)

    if order(cand) < order(old):
        found[cand.session_id] = cand


class ImportBackend(ABC):
    """A read-only foreign home. Subclasses enumerate candidates and map one transcript."""

    def __init__(self, home: str, uri: str, clock: Clock = time.time_ns) -> None:
        self.home = home
        self._uri = uri
        self._proofs = Proofs(clock)  # what listings reuse from the previous one
        self._listing: Listing | None = None  # the last completed listing
        self._bulk: dict[str, MemoKey] = {}  # revisions read whole by a bulk window, no memo
        self._windows: WindowMemos[WindowMemo] = WindowMemos()
        # what shape reads found, per revision (shapes.py)
        self._shapes: WindowMemos[Shape] = WindowMemos(SHAPE_BUDGET)
        # the survey the request holding this token made last (one token = one request)
        self._survey: tuple[weakref.ref[CancelToken], dict[str, Candidate]] | None = None
        self._survey_lock = threading.Lock()
        # One listing at a time: a caller that comes while another lists (the freshness poll
        # beside a search, both at the start) waits and replays its proofs, instead of reading
        # every transcript's head a second time beside it [ours].
        self._listing_lock = threading.Lock()
        # how far the listing that holds the lock got: (read, found), None before its walk ends
        self._walking: tuple[int, int] | None = None
        # [ours] the transcripts the last listing left out because they are unreadable
        self._skipped: tuple[SkippedArtifact, ...] = ()

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def survey_reads(self) -> int:
        """Files and directories the last completed listing read rather than proved."""
        return self._proofs.reads

    @property
    def writable(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def create(self, header: Header) -> None:
        raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def append(self, session_id: str, events: list[Event]) -> None:
        raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.home)

    def skipped_artifacts(self) -> tuple[SkippedArtifact, ...]:
        """SkippedReporter (semantics.md §6.5 [ours]): what the last listing left out."""
        return self._skipped

    def skip(
        self, found: list[SkippedArtifact], path: str, session_id: str, st: os.stat_result | None
    ) -> None:
        """Remember a transcript listing leaves out: one it could not read (``st`` None), or
        one with bytes but no anchor (garbage, truncated or replaced; §0.1). An empty file is
        not reported: an agent may just be creating it."""
        if st is not None and st.st_size == 0:
            return
        reason = "it cannot be read" if st is None else "no header record in its first MiB"
        message = f'foreign transcript "{self.rel(path)}" is unreadable: {reason}'
        found.append(SkippedArtifact(path, session_id, message))

    def scanned(
        self,
        skipped: list[SkippedArtifact],
        path: str,
        session_id: str,
        scan: Callable[[os.stat_result], T | None],
    ) -> tuple[os.stat_result, T] | None:
        """A transcript's stat and its header scan (``scan`` of that stat); None for a file
        that vanished, or that the listing leaves out: unreadable (logged) or without an anchor,
        then named in ``skipped`` (``skip``)."""
        try:
            st = os.stat(path)
            anchor = scan(st)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log_unreadable(path, exc)
            self.skip(skipped, path, session_id, None)
            return None
        if anchor is None:
            self.skip(skipped, path, session_id, st)
            return None
        return st, anchor

    def check_home(self) -> bool:
        """False for an absent home; a home that is no readable directory fails (§3.1)."""
        try:
            st = os.stat(self.home)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ImportError_(f'home "{self.home}" is not readable: {exc.strerror}') from None

        if not stat_module.S_ISDIR(st.st_mode) or not os.access(self.home, os.R_OK | os.X_OK):
            raise ImportError_(f'home "{self.home}" is not a readable directory')
        return True

    @abstractmethod
    def candidates(self, token: CancelToken) -> dict[str, Candidate]: ...

    @abstractmethod
    def unlisted(self, session_id: str, token: CancelToken) -> str | None:
        """The path of a transcript whose file name gives ``session_id`` but that listing left
        out (it has no anchor), or None."""

    @abstractmethod
    def read(
        self,
        cand: Candidate,
        size: int,
        token: CancelToken,
        builder: MemoBuilder | None,
        payloads: Payloads = None,
    ) -> Inspection:
        """Map the first ``size`` bytes of the candidate's transcript (through ``feed``); with
        ``payloads``, its Emitter keeps events as outlines carrying their texts."""

    def each(self, files: Sequence[T], token: CancelToken) -> Iterator[T]:
        """``each`` of this backend's listing, which also tells requests waiting for it
        (``_candidates``) how far it got."""
        return each(files, token, self._told)

    def _told(self, done: int, total: int) -> None:
        self._walking = (done, total)

    def _candidates(self, token: CancelToken) -> dict[str, Candidate]:
        """``candidates``, or the last listing again while its proofs all hold. A request that
        waits for another caller's listing (the freshness poll's, right after the mount) shows
        that listing's count as its own."""
        count = token.listing
        while not self._listing_lock.acquire(timeout=_LISTING_WAIT):
            token.raise_if_cancelled()
            walking = self._walking
            if count is not None and walking is not None:
                count.at(*walking)
        self._walking = None
        try:
            listing = self._listing
            found = listing.replay() if listing is not None else None
            if found is not None and self.check_home():
                self._proofs.reads = 0
                if count is not None and listing is not None:  # all of it listed, at once
                    count.at(len(listing.walked), len(listing.walked))
                return found
            return self.candidates(token)
        finally:
            self._listing_lock.release()

    def _surveyed(self, token: CancelToken) -> dict[str, Candidate]:
        """A listing (every candidate stat-ed; see survey.py for what is reused), remembered for
        this request's later calls."""
        found = self._candidates(token)
        if token is not NULL_TOKEN:
            with self._survey_lock:
                self._survey = (weakref.ref(token), found)
        return found

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        return [c.header for c in self._surveyed(token or NULL_TOKEN).values()]

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        return [
            Snapshot(c.header, c.revision) for c in self._surveyed(token or NULL_TOKEN).values()
        ]

    def list_revisions(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        """ListedRevisions: ``list`` is this very listing's headers, so it costs nothing more."""
        return self.list_snapshots(token)

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """ListedLookup: the header ``list`` lists for the id; from the last listing while its
        proofs for this id hold (``Listing.lookup``), else from a listing."""
        listing = self._listing
        cand = listing.lookup(session_id) if listing is not None else None
        if cand is None:
            cand = self._surveyed(token or NULL_TOKEN).get(session_id)
        return None if cand is None else cand.header

    def stored_count(self, session_id: str) -> int | None:
        if session_id not in self._candidates(NULL_TOKEN):
            return None
        return len(self.inspect(session_id).events)

    @property
    def cheap_windows(self) -> bool:
        return True

    def _locate(self, session_id: str, token: CancelToken) -> Candidate:
        """The session's transcript: from the survey this request made last when it found the
        id (the read then stats the file itself), else from the last listing when its proofs
        for this id still hold, else from a fresh survey."""
        with self._survey_lock:
            survey = self._survey
        if survey is not None and token is not NULL_TOKEN and survey[0]() is token:
            hit = survey[1].get(session_id)
            if hit is not None:
                return hit
        listing = self._listing
        cand = listing.lookup(session_id) if listing is not None else None
        if cand is not None:
            return cand
        cand = self._surveyed(token).get(session_id)
        if cand is None:
            path = self.unlisted(session_id, token)
            if path is not None:  # named by its file, but empty, garbage, truncated or replaced
                raise unreadable(self.rel(path), "no header record in its first MiB")
            raise ImportError_(f'session "{session_id}" not found')
        return cand

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        token = token or NULL_TOKEN  # callers of the older contract pass None
        cand = self._locate(session_id, token)
        with naming(cand.path, cand.path):
            return self._inspect(cand, token, memo=False)

    def inspect_payloads(
        self, session_id: str, payloads: Payloads, token: CancelToken = NULL_TOKEN
    ) -> Inspection:
        """``inspect`` whose events, with ``payloads``, are EventOutlines carrying their texts
        (or, when the read needed a payload again, whole: emitter.py ``WholeRead``)."""
        cand = self._locate(session_id, token)
        return self._inspect(cand, token, memo=False, payloads=payloads)

    def inspect_many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken = NULL_TOKEN,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[tuple[str, BulkResult]]:
        """capabilities.BulkInspector for the search index build: each id's ``inspect``, in
        order, whatever its length. A window of a transcript costs the whole transcript's read
        until a memo of its revision exists, so a long log read window by window (``limit``)
        would be read whole two or three times and build a memo the build never uses [ours].
        With a second core, a worker process reads ids ahead of this one (``parallel``)."""
        del limit

        def read_one(session_id: str, token: CancelToken) -> BulkResult:
            return self._bulk_one(session_id, token, payloads)

        spec = self.worker_spec()
        sizes = self._sizes(session_ids) if spec is not None else []
        if spec is None or not parallel_reads(len(session_ids), sum(sizes)):
            for session_id in session_ids:
                yield session_id, read_one(session_id, token)
            return
        yield from shared_reads(read_one, spec, session_ids, sizes, token, payloads, digest)

    def worker_spec(self) -> Init | None:
        """How a worker process builds this backend again, or None: no worker reads for it."""
        return None

    def prepare_bulk(self) -> None:
        """capabilities.BulkPreparer: a worker started ahead, building and listing this backend
        while this process lists (pool.py), when a bulk read may use one."""
        spec = self.worker_spec()
        if spec is not None and workers_allowed():
            POOL.prestart(spec)

    def _sizes(self, session_ids: Sequence[str]) -> list[int]:
        """Each id's transcript size as the last listing knows it (0 when it does not)."""
        found = self._listing.found if self._listing is not None else {}
        sizes: list[int] = []
        for session_id in session_ids:
            cand = found.get(session_id)
            st = stat_or_none(cand.path) if cand is not None else None
            sizes.append(st.st_size if st is not None else 0)
        return sizes

    def _bulk_one(
        self, session_id: str, token: CancelToken, payloads: Payloads = None
    ) -> BulkResult:
        """``inspect`` of one id as a bulk read answers it: the Inspection or its exception."""
        token.raise_if_cancelled()
        try:
            return self.inspect_payloads(session_id, payloads, token)
        except SessionQueryCancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - returned as inspect would raise it
            if token.cancelled:
                raise
            return exc

    def _inspect(
        self, cand: Candidate, token: CancelToken, *, memo: bool, payloads: Payloads = None
    ) -> Inspection:
        """§3.3: stream ``[0, s0.size)``; the read stands when the file only grew meanwhile.
        With ``memo`` (a window read) the window memo of the revision read is built along,
        unless it exists already; a plain inspect does not pay for one."""
        for _ in range(ATTEMPTS):
            s0 = stat_or_none(cand.path)
            if s0 is None:
                raise ImportError_(f'session "{cand.session_id}" not found')
            key: MemoKey = (cand.path, stat_key(s0), cand.extra)
            known = not memo or self._windows.get(cand.session_id, key) is not None
            builder = None if known else MemoBuilder()
            try:
                try:
                    result = self.read(cand, s0.st_size, token, builder, payloads)
                except WholeRead:  # a read keeping texts met a copy or a rewrite (emitter.py)
                    result = self.read(cand, s0.st_size, token, builder, None)
            except FileNotFoundError:
                raise ImportError_(f'session "{cand.session_id}" not found') from None
            s1 = stat_or_none(cand.path)
            if s1 is None:
                raise ImportError_(f'session "{cand.session_id}" not found')
            same = (s1.st_dev, s1.st_ino) == (s0.st_dev, s0.st_ino)
            if same and (stat_key(s1) == stat_key(s0) or s1.st_size > s0.st_size):
                if builder is not None:
                    self._windows.put(cand.session_id, key, builder.finish(result.meta))
                return result
        raise ImportError_("transcript changed while being read")

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """§3.4: the events first..last of ``inspect``'s log. The transcript's stat is taken in
        this read, before and after its lines; only a memo of exactly that revision is used, and
        anything else (no memo, a changed file, a line that disagrees) reads the whole log."""
        token = token or NULL_TOKEN
        cand = self._locate(session_id, token)
        s0 = stat_or_none(cand.path)
        memo: WindowMemo | None = None
        if s0 is not None:
            memo = self._windows.get(session_id, (cand.path, stat_key(s0), cand.extra))
        if memo is not None and s0 is not None:
            lo, hi = min(max(first, 0), memo.length), min(last, memo.length - 1)
            try:
                events = memo.read(cand.path, cand.path.endswith(".zst"), lo, hi, token)
            except OSError:
                events = None
            s1 = stat_or_none(cand.path)
            if events is not None and s1 is not None and stat_key(s1) == stat_key(s0):
                revision = self._read_revision(cand, s0, s1)
                return Window(memo.header, memo.length, lo, events, memo.title, revision)
        key = (cand.path, stat_key(s0), cand.extra) if s0 is not None else None
        shaped = self._shaped(cand, key, first, last, token)
        if shaped is not None:
            return shaped
        # A bulk read (the search index's) builds no memo the first time: most logs fit in one
        # such window and are never read again; a second bulk read of the same revision does.
        build = last - first < BULK_WINDOW or (
            key is not None and self._bulk.get(session_id) == key
        )
        with naming(cand.path, cand.path):
            before = stat_or_none(cand.path)
            ins = self._inspect(cand, token, memo=build)
            revision = self._read_revision(cand, before, stat_or_none(cand.path))
        if not build and key is not None:
            with self._survey_lock:
                self._bulk[session_id] = key
                while len(self._bulk) > BULK_KEPT:
                    del self._bulk[next(iter(self._bulk))]
        n = len(ins.events)
        lo = min(max(first, 0), n)
        events = ins.events[lo : max(lo, min(last, n - 1) + 1)]
        title = next((e.seq for e in reversed(ins.events) if e.type == "session/title"), None)
        return Window(ins.meta, n, lo, events, title, revision)

    def read_shapes(
        self, session_ids: Sequence[str], token: CancelToken = NULL_TOKEN
    ) -> Iterator[str]:
        """capabilities.ShapeReader: the listed ids' shapes in one bulk read (shapes.py), each
        kept when its transcript is still as the listing proved it (the read saw that revision;
        else, or for bytes that are no shape, the title reads the log itself)."""
        listing = self._listing
        found = {} if listing is None else listing.found
        listed = [sid for sid in session_ids if sid in found]
        for sid, result in self.inspect_many(listed, 0, token, TITLE_READING, SHAPE_DIGEST):
            cand, read = found[sid], result if isinstance(result, Inspection | Digested) else None
            after = None if read is None else stat_or_none(cand.path)
            if read is not None and after and listing and listing.read_revision(cand, after, after):
                with contextlib.suppress(ValueError):
                    shape = shape_of(read)
                    self._shapes.put(sid, (cand.path, stat_key(after), cand.extra), shape)
            yield sid

    def _shaped(
        self, cand: Candidate, key: MemoKey | None, first: int, last: int, token: CancelToken
    ) -> Window | None:
        """The window from the shape of the revision ``key`` (shapes.py): remembered, or read
        now when only the shape is asked (an empty window); None when it does not hold it."""
        if key is None:
            return None
        shape = self._shapes.get(cand.session_id, key)
        if shape is not None:
            window = shape.window(first, last, None)
            after = stat_or_none(cand.path)
            if window is None or after is None or stat_key(after) != key[1]:
                return None
            return replace(window, revision=self._read_revision(cand, after, after))
        if last >= first:
            return None
        with naming(cand.path, cand.path):
            before = stat_or_none(cand.path)
            ins = self._inspect(cand, token, memo=False, payloads=TITLE_READING)
            after = stat_or_none(cand.path)
        shape = Shape.of(ins)
        if before is not None and after is not None and stat_key(before) == stat_key(after):
            self._shapes.put(cand.session_id, (cand.path, stat_key(before), cand.extra), shape)
        return shape.window(first, last, self._read_revision(cand, before, after))

    def _read_revision(
        self, cand: Candidate, before: os.stat_result | None, after: os.stat_result | None
    ) -> str | None:
        listing = self._listing
        return None if listing is None else listing.read_revision(cand, before, after)
