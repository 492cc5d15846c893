"""What a listing may reuse from the previous one (importers.md §3.1), and the proofs it is
reused by: nothing stale is ever served.

- A directory's entry list is reused while the directory's own ``stat`` (dev, ino, mtime, ctime)
  is the one taken just before the list was read: entries change only together with those.
- A file's derived value (a header scan, a sidecar's JSON) is reused while the file's ``stat``
  (dev, ino, size, mtime, ctime) is the one taken before it was read.
- Either proof counts only when the mtime was at least ``SAFE_AGE_NS`` older than the clock when
  the read began: a change in the same timestamp tick as the read leaves the times as they were
  (git's "racy" entries; see persistence/jsonl/proofs.py). Anything younger is read again.
- A header scan whose anchor line ended with a 0x0A is also reused by content: when the file has
  grown or its times moved, the bytes up to that 0x0A are read and compared by digest, so an
  append costs one short read and a rewrite in place is scanned afresh.

Each listing builds new tables from the entries it used and publishes them when it completes, so
vanished paths are dropped and concurrent listings never see a half-built table.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar, cast

from ...cancel import CancelToken
from .lines import Line, Record, read_lines

SAFE_AGE_NS = 2_000_000_000
HEAD_LIMIT = 1_048_576
HEAD_CHUNK = 65_536  # most anchors sit in the first lines: a scan reads this much at first

FileKey = tuple[int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns
DirKey = tuple[int, int, int, int]  # dev, ino, mtime_ns, ctime_ns
Clock = Callable[[], int]
T = TypeVar("T")

DIR, FILE, LINK = 0, 1, 2


def file_key(st: os.stat_result) -> FileKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Entry(NamedTuple):
    """One directory entry as listed: a symbolic link is resolved at each use."""

    name: str
    path: str
    kind: int  # DIR, FILE (anything else that is no link) or LINK


def is_dir(entry: Entry) -> bool:
    if entry.kind == LINK:
        return os.path.isdir(entry.path)
    return entry.kind == DIR


def _kind(entry: os.DirEntry[str]) -> int:
    try:
        if entry.is_symlink():
            return LINK
        return DIR if entry.is_dir(follow_symlinks=False) else FILE
    except OSError:
        return FILE


def _listed(path: str) -> tuple[Entry, ...]:
    with os.scandir(path) as it:
        return tuple(Entry(e.name, e.path, _kind(e)) for e in it)


@dataclass(frozen=True, slots=True)
class Head(Generic[T]):
    """A header scan's result and what proves it: the file's key, whether that key was old
    enough to prove anything, and the digest of the bytes up to the anchor's 0x0A (``end`` 0:
    no such reuse)."""

    key: FileKey
    proven: bool
    end: int
    digest: bytes
    value: T


@dataclass(frozen=True, slots=True)
class Sidecar(Generic[T]):
    key: FileKey
    proven: bool
    value: T


class Survey:
    """One listing's view of the kept proofs. ``reads`` counts what was read rather than
    proven (directories listed, heads scanned or compared, sidecars read): for tests."""

    def __init__(self, kept: Kept, clock: Clock) -> None:
        self._old = kept
        self.new = Kept()
        self.safe_before = clock() - SAFE_AGE_NS
        self.reads = 0
        # what a later lookup of one session may re-check instead of listing again: every
        # directory walked (None: absent) and every file whose read is proven (None: absent);
        # ``whole`` turns false when some directory proves nothing
        self.dir_checks: list[tuple[str, DirKey | None]] = []
        self.files: dict[str, FileKey | None] = {}
        self.whole = True
        self.young = False  # some file read proves nothing (a whole listing cannot be replayed)

    # -- directories -------------------------------------------------------------------

    def entries(self, path: str, *, strict: bool = True) -> tuple[Entry, ...]:
        """The entries of ``path``; an absent path or a non-directory has none. Other errors
        propagate when ``strict`` (as ``os.scandir`` raises them), else list nothing."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self.dir_checks.append((path, None))
            return ()
        except NotADirectoryError:
            self.whole = False
            return ()
        except OSError:
            self.whole = False
            return self._read_dir(path, strict)
        if not stat_module.S_ISDIR(st.st_mode):
            self.whole = False
            return ()
        key: DirKey = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        known = self._old.dirs.get(path)
        if known is not None and known[0] == key:
            self.new.dirs[path] = known
            self.dir_checks.append((path, key))
            return known[1]
        listed = self._read_dir(path, strict)
        if key[2] < self.safe_before:
            self.new.dirs[path] = (key, listed)
            self.dir_checks.append((path, key))
        else:
            self.whole = False
        return listed

    def _read_dir(self, path: str, strict: bool) -> tuple[Entry, ...]:
        self.reads += 1
        try:
            return _listed(path)
        except (FileNotFoundError, NotADirectoryError):
            return ()
        except OSError:
            if strict:
                raise
            return ()

    # -- header scans ------------------------------------------------------------------

    def head(
        self,
        path: str,
        st: os.stat_result,
        token: CancelToken,
        is_anchor: Callable[[dict[str, object]], bool],
        derive: Callable[[Record], T | None],
    ) -> T | None:
        """``derive`` of the first anchor of the header scan (§3.1), or None without one."""
        key = file_key(st)
        known = cast("Head[T | None] | None", self._old.heads.get(path))
        proven = key[3] < self.safe_before
        if known is not None:
            if known.key == key and known.proven:
                self.new.heads[path] = known
                self.files[path] = key
                return known.value
            if known.end and known.key[:2] == key[:2] and key[2] >= known.end:
                self.reads += 1
                if _digest(path, known.end) == known.digest:
                    self.new.heads[path] = Head(key, proven, known.end, known.digest, known.value)
                    self._proven(path, key, proven)
                    return known.value
        self.reads += 1
        found = _scan(path, st.st_size, token, is_anchor)
        self._proven(path, key, proven)
        if found is None:
            self.new.heads[path] = Head(key, proven, 0, b"", None)
            return None
        rec, end, digest = found
        value = derive(rec)
        self.new.heads[path] = Head(key, proven, end, digest, value)
        return value

    def _proven(self, path: str, key: FileKey, proven: bool) -> None:
        if proven:
            self.files[path] = key
        else:
            self.young = True

    # -- sidecars ----------------------------------------------------------------------

    def sidecar(
        self, path: str, read: Callable[[str], tuple[os.stat_result | None, T]], absent: T
    ) -> tuple[FileKey | None, T]:
        """A small file's key and ``read`` value (``absent`` when it cannot be stat-ed)."""
        try:
            st = os.stat(path)
        except OSError:
            self.files[path] = None
            return None, absent
        key = file_key(st)
        known = cast("Sidecar[T] | None", self._old.sidecars.get(path))
        if known is not None and known.key == key and known.proven:
            self.new.sidecars[path] = known
            self.files[path] = key
            return key, known.value
        self.reads += 1
        st2, value = read(path)
        if st2 is None:
            self.young = True
            return None, absent
        key = file_key(st2)
        self.new.sidecars[path] = Sidecar(key, key[3] < self.safe_before, value)
        self._proven(path, key, key[3] < self.safe_before)
        return key, value

    def still(self, sid_files: Iterable[str]) -> bool:  # noqa: C901 - one tight loop each
        """Whether every directory walked and every file of ``sid_files`` is as this survey
        proved it (a file it proved nothing about fails)."""
        if not self.whole:
            return False
        for path, key in self.dir_checks:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                if key is not None:
                    return False
                continue
            except OSError:
                return False
            if key != (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns):
                return False
        return self.files_still(sid_files)

    def files_still(self, paths: Iterable[str]) -> bool:
        """Whether every file of ``paths`` is as this survey proved it (``still`` without the
        directories: a read of one transcript re-checks only the files it read)."""
        files, probe = self.files, os.stat
        for path in paths:
            key = files.get(path, False)
            if key is False:
                return False
            try:
                st = probe(path)
            except FileNotFoundError:
                if key is not None:
                    return False
                continue
            except OSError:
                return False
            now = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if now != key:
                return False
        return True


class Kept:
    """The proofs one listing leaves for the next."""

    __slots__ = ("dirs", "heads", "sidecars")

    def __init__(self) -> None:
        self.dirs: dict[str, tuple[DirKey, tuple[Entry, ...]]] = {}
        self.heads: dict[str, object] = {}  # Head of the backend's own value type
        self.sidecars: dict[str, object] = {}  # Sidecar likewise


class Proofs:
    """The kept tables of one backend. ``start`` a survey, ``publish`` it once it completed."""

    def __init__(self, clock: Clock = time.time_ns) -> None:
        self._clock = clock
        self._kept = Kept()
        self.reads = 0  # of the last published survey

    def start(self) -> Survey:
        return Survey(self._kept, self._clock)

    def publish(self, survey: Survey) -> None:
        self._kept = survey.new
        self.reads = survey.reads


def _scan(
    path: str, size: int, token: CancelToken, is_anchor: Callable[[dict[str, object]], bool]
) -> tuple[Record, int, bytes] | None:
    """The header scan (§3.1): the first record ``is_anchor`` accepts, within 1 MiB, with the
    end of its line and the digest of the bytes before that end (end 0: the anchor's line had
    no 0x0A, or the file is compressed, so only an unchanged key proves it)."""
    digest = hashlib.blake2b(digest_size=16)
    compressed = path.endswith(".zst")
    with open(path, "rb") as stream:
        lines = read_lines(
            stream,
            size,
            token,
            compressed=compressed,
            max_line_end=HEAD_LIMIT,
            first_chunk=HEAD_CHUNK,
        )
        for line in lines:
            _feed(digest, line)
            for item in line.items:
                if isinstance(item, Record) and is_anchor(item.value):
                    end = 0 if line.final or compressed else line.start + line.length + 1
                    return item, end, digest.digest()
    return None


def _feed(digest: hashlib.blake2b, line: Line) -> None:
    digest.update(line.raw)
    digest.update(b"\n")


def _digest(path: str, end: int) -> bytes | None:
    try:
        with open(path, "rb") as stream:
            data = stream.read(end)
    except OSError:
        return None
    return hashlib.blake2b(data, digest_size=16).digest() if len(data) == end else None
