"""The root survey (persistence.md §4.7): every session directory holding a transcript, with one
``stat`` of each transcript, and the revisions (§4.10) those stats make."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import NamedTuple

from ...cancel import CancelToken
from ...model.event import Header
from ..contract.results import Snapshot
from .errors import flat_layout_error
from .paths import SUFFIX, TRANSCRIPT

StatKey = tuple[int, int, int, int, int]


def stat_key(st: os.stat_result) -> StatKey:
    """The fields of a revision (§4.10), in its order; a listing of 10,000 sessions keeps one
    per transcript, and a whole stat_result is several times larger."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def revision_of_key(key: StatKey) -> str:
    dev, ino, size, mtime, ctime = key  # a format string: twice as fast as joining (10,000 a run)
    return f"{dev}:{ino}:{size}:{mtime}:{ctime}"


def revision_of(st: os.stat_result) -> str:
    return revision_of_key(stat_key(st))


def is_flat_artifact(entry: os.DirEntry[str]) -> bool:
    return (
        entry.name.endswith(SUFFIX["none"]) or entry.name.endswith(SUFFIX["zstd"])
    ) and entry.is_file(follow_symlinks=False)


class SessionDir(NamedTuple):  # a tuple: the survey makes one per session on every call
    """A session directory found under the root, with the encodings its transcripts use."""

    path: str
    name: str
    kinds: tuple[str, ...]
    keys: tuple[StatKey, ...]  # one per kind: stat_key of the survey's probe

    def transcript(self, kind: str) -> str:
        return self.path + os.sep + TRANSCRIPT[kind]  # os.path.join: path has no trailing sep


class ListedHeader(NamedTuple):
    """A transcript's header as the last listing read it: valid while ``key`` (its stat) is."""

    key: StatKey
    revision: str
    header: Header
    exact: bool  # the header names exactly this path (§4.8 step 4.6 passed without realpath)
    safe: bool  # the transcript's mtime was safely older than the read (proofs.py): reusable


class Listed:
    """A finished listing (§4.8): its headers and revisions in survey order, made from the
    survey list ``sessions``; ``proven`` when every entry's header is proven by that survey's
    stat of its transcript (read safely, path exact, none skipped), so the listing holds for as
    long as the survey returns the same list. Never mutated once made."""

    __slots__ = ("sessions", "headers", "revisions", "proven", "_by_id", "_snapshots")

    def __init__(
        self, sessions: list[SessionDir], headers: list[Header], revisions: list[str], proven: bool
    ) -> None:
        self.sessions = sessions
        self.headers = headers
        self.revisions = revisions
        self.proven = proven
        self._by_id: dict[str, Header] | None = None
        self._snapshots: list[Snapshot] | None = None

    def snapshots(self) -> list[Snapshot]:
        """The listing as snapshots, made once (they are immutable): callers copy the list."""
        if self._snapshots is None:
            pairs = zip(self.headers, self.revisions, strict=True)
            self._snapshots = [Snapshot(header, revision) for header, revision in pairs]
        return self._snapshots

    def header_of(self, session_id: str) -> Header | None:
        if self._by_id is None:  # built by one thread or, harmlessly, by two
            self._by_id = {header.id: header for header in self.headers}
        return self._by_id.get(session_id)


class Survey:
    """A finished survey kept for the request that made it, with its session directories by
    name, indexed on first use."""

    __slots__ = ("sessions", "encoding", "_by_name")

    def __init__(self, sessions: list[SessionDir], encoding: str | None) -> None:
        self.sessions = sessions
        self.encoding = encoding
        self._by_name: dict[str, list[SessionDir]] | None = None

    def named(self, name: str) -> list[SessionDir]:
        if self._by_name is None:  # built by one thread or, harmlessly, by two
            by_name: dict[str, list[SessionDir]] = {}
            for session in self.sessions:
                by_name.setdefault(session.name, []).append(session)
            self._by_name = by_name
        return self._by_name.get(name, [])


def scandir(path: str, token: CancelToken) -> list[os.DirEntry[str]]:
    token.raise_if_cancelled()
    with os.scandir(path) as entries:
        found = sorted(entries, key=lambda entry: entry.name)
    token.raise_if_cancelled()
    return found


def project_dirs(root: str, token: CancelToken) -> list[str]:
    try:
        entries = scandir(root, token)
    except FileNotFoundError:
        return []
    return [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]


def survey_root(root: str, token: CancelToken) -> list[SessionDir]:
    """Every session directory holding a transcript; flat artifacts fail the survey.

    This runs on every request over every session, so the loop is written for speed: the
    probes are inlined (only "does not exist" is absence), the token is checked once per
    session directory, and paths are joined by hand (entry.path never ends in a separator)."""
    found: list[SessionDir] = []
    transcripts = tuple(TRANSCRIPT.items())
    probe = os.stat
    for project in project_dirs(root, token):
        for entry in scandir(project, token):
            if is_flat_artifact(entry):
                raise flat_layout_error(entry.path)
            if not entry.is_dir():
                continue
            token.raise_if_cancelled()
            base = entry.path + os.sep
            kinds: tuple[str, ...] = ()
            keys: tuple[StatKey, ...] = ()
            for kind, name in transcripts:
                try:
                    st = probe(base + name)
                except FileNotFoundError:
                    continue
                kinds += (kind,)
                keys += (stat_key(st),)
            if kinds:
                found.append(SessionDir(entry.path, entry.name, kinds, keys))
    token.raise_if_cancelled()
    return found


def named_sessions(
    projects: Iterable[str], name: str, token: CancelToken
) -> list[SessionDir] | None:
    """The session directories named ``name`` in the given project directories, with the
    ``stat``s the survey takes of each (§4.8 step 4 for one name, as a lookup probes, §4.9).
    None when a ``stat`` fails otherwise than "does not exist": the survey's own outcome for
    that path is then the listing's to meet."""
    found: list[SessionDir] = []
    for project in projects:
        token.raise_if_cancelled()
        path = project + os.sep + name
        try:
            if not stat.S_ISDIR(os.stat(path).st_mode):
                continue  # a file, as the survey skips it (a flat artifact fails the listing)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        kinds: tuple[str, ...] = ()
        keys: tuple[StatKey, ...] = ()
        for kind, transcript in TRANSCRIPT.items():
            try:
                st = os.stat(path + os.sep + transcript)
            except FileNotFoundError:
                continue
            except OSError:
                return None
            kinds += (kind,)
            keys += (stat_key(st),)
        if kinds:
            found.append(SessionDir(path, name, kinds, keys))
    token.raise_if_cancelled()
    return found
