"""The root survey by proofs (persistence.md §4.7, §4.8; issue 12 §4): the same session
directories, transcript stats and errors as ``survey.survey_root``, without reading a directory
whose own ``stat`` proves its entry list unchanged since it was last read.

A directory's entries change only together with its mtime and ctime, so a directory whose
(dev, ino, mtime, ctime) equal those taken just before its entries were last read still holds
those entries, with one exception that git's index calls "racy": a change made in the same
timestamp tick as that read leaves the times as they were. So a read is kept as a proof only
when the directory's mtime was at least ``SAFE_AGE_NS`` older than the clock when the read began;
any later change then moves its mtime. A directory changed more recently is read again.

Per request this takes one ``stat`` of the root and of each project directory, one of each
session directory (it proves which transcripts exist, so a transcript of the opposite suffix
that appears is met exactly as the full survey meets it), and one of each transcript (its
revision, §4.10). No directory is listed and no absent path is probed unless something changed.
Wherever a proof does not hold or a stat fails, that directory is read exactly as the full survey
reads it, so errors and their order are the full survey's.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ...cancel import CancelToken
from .errors import flat_layout_error
from .paths import TRANSCRIPT
from .survey import SessionDir, StatKey, is_flat_artifact, project_dirs, scandir, stat_key

# How much older than the clock a directory's mtime must be for its read to prove anything:
# above the coarsest timestamps in use (2 s on FAT, 1 s on HFS+ and ext3, a clock tick elsewhere).
SAFE_AGE_NS = 2_000_000_000

DirKey = tuple[int, int, int, int]
_TRANSCRIPTS = tuple(TRANSCRIPT.items())


def _dir_key(st: os.stat_result) -> DirKey:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


class _Candidate(NamedTuple):
    """An entry of a project directory that may be a session directory."""

    path: str
    name: str
    link: bool  # a symbolic link: whether it names a directory is decided at each survey


class _Projects(NamedTuple):
    key: DirKey
    paths: tuple[str, ...]


class _Candidates(NamedTuple):
    key: DirKey
    candidates: tuple[_Candidate, ...]


class _Kinds(NamedTuple):
    key: DirKey
    session: SessionDir | None  # the last survey's result: its kinds, and keys to reuse it by


class RootSurveyor:
    """``survey_root`` with proofs kept between calls. Safe to call from several threads: every
    kept proof is an immutable record, and each survey publishes the proofs it used or made."""

    def __init__(self, root: str, clock: Callable[[], int] = time.time_ns) -> None:
        self.root = root
        self._clock = clock
        self._root: _Projects | None = None
        self._projects: dict[str, _Candidates] = {}
        self._sessions: dict[str, _Kinds] = {}
        self.reads = 0  # directories read (listed or probed) instead of proven: for tests

    def safe_before(self) -> int:
        """Reads that begin now prove only what was last changed before this time."""
        return self._clock() - SAFE_AGE_NS

    def survey(self, token: CancelToken) -> list[SessionDir]:
        """Every session directory holding a transcript; flat artifacts fail the survey."""
        safe_before = self.safe_before()
        projects: dict[str, _Candidates] = {}
        sessions: dict[str, _Kinds] = {}
        found: list[SessionDir] = []
        known_sessions = self._sessions
        probe = os.stat
        for project in self._project_paths(token, safe_before):
            for candidate in self._candidates(project, token, safe_before, projects):
                token.raise_if_cancelled()
                # The common case inline (a proven directory, one transcript, unchanged): this
                # loop runs over every session on every request. Anything else: _session.
                known = known_sessions.get(candidate.path)
                last = None if known is None else known.session
                if known is not None and last is not None and len(last.kinds) == 1:
                    try:
                        st = probe(candidate.path)
                        same = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns) == known.key
                        if same:  # the same inode: still a directory
                            st = probe(candidate.path + os.sep + TRANSCRIPT[last.kinds[0]])
                            same = stat_key(st) == last.keys[0]
                    except OSError:
                        same = False
                    if same:
                        sessions[candidate.path] = known
                        found.append(last)
                        continue
                session = self._session(candidate, safe_before, sessions)
                if session is not None:
                    found.append(session)
        token.raise_if_cancelled()
        self._projects, self._sessions = projects, sessions
        return found

    def _project_paths(self, token: CancelToken, safe_before: int) -> tuple[str, ...]:
        try:
            key = _dir_key(os.stat(self.root))
        except OSError:
            return tuple(project_dirs(self.root, token))  # absent, or the full survey's error
        known = self._root
        if known is not None and known.key == key:
            return known.paths
        self.reads += 1
        paths = tuple(project_dirs(self.root, token))
        self._root = _Projects(key, paths) if key[2] < safe_before else None
        return paths

    def _candidates(
        self, project: str, token: CancelToken, safe_before: int, kept: dict[str, _Candidates]
    ) -> Iterator[_Candidate]:
        try:
            key: DirKey | None = _dir_key(os.stat(project))
        except OSError:
            key = None  # the listing below meets the error as the full survey does
        known = self._projects.get(project)
        if key is not None and known is not None and known.key == key:
            kept[project] = known
            yield from known.candidates
            return
        self.reads += 1
        listed: list[_Candidate] = []
        for entry in scandir(project, token):  # in order: a flat artifact stops the survey here
            if is_flat_artifact(entry):
                raise flat_layout_error(entry.path)
            if entry.is_symlink():
                candidate = _Candidate(entry.path, entry.name, True)
            elif entry.is_dir(follow_symlinks=False):
                candidate = _Candidate(entry.path, entry.name, False)
            else:
                continue
            listed.append(candidate)
            yield candidate
        if key is not None and key[2] < safe_before:
            kept[project] = _Candidates(key, tuple(listed))

    def _session(
        self, candidate: _Candidate, safe_before: int, kept: dict[str, _Kinds]
    ) -> SessionDir | None:
        path = candidate.path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None  # vanished, or a dangling link: no session directory either way
        except OSError:
            if candidate.link:
                raise  # the full survey's is_dir() meets this very error
            return self._probe(candidate, None, safe_before, kept)
        if not stat.S_ISDIR(st.st_mode):
            return None
        key = _dir_key(st)
        known = self._sessions.get(path)
        if known is None or known.key != key:
            return self._probe(candidate, key, safe_before, kept)
        kept[path] = known
        session = known.session
        if session is None:
            return None
        base = path + os.sep
        keys: tuple[StatKey, ...] = ()
        for kind in session.kinds:
            try:
                keys += (stat_key(os.stat(base + TRANSCRIPT[kind])),)
            except FileNotFoundError:  # the proof did not hold after all: read it afresh
                return self._probe(candidate, key, safe_before, kept)
        if keys == session.keys:
            return session
        session = SessionDir(path, candidate.name, session.kinds, keys)
        kept[path] = _Kinds(key, session)  # the next survey compares with these stats
        return session

    def _probe(
        self, candidate: _Candidate, key: DirKey | None, safe_before: int, kept: dict[str, _Kinds]
    ) -> SessionDir | None:
        """Probe both transcripts, as the full survey does."""
        self.reads += 1
        base = candidate.path + os.sep
        kinds: tuple[str, ...] = ()
        keys: tuple[StatKey, ...] = ()
        provable = key is not None and key[2] < safe_before
        for kind, name in _TRANSCRIPTS:
            try:
                st = os.stat(base + name)
            except FileNotFoundError:
                # A dangling link's target can appear without the directory changing.
                provable = provable and not os.path.lexists(base + name)
                continue
            kinds += (kind,)
            keys += (stat_key(st),)
        session = SessionDir(candidate.path, candidate.name, kinds, keys) if kinds else None
        if provable and key is not None:
            kept[candidate.path] = _Kinds(key, session)
        else:
            kept.pop(candidate.path, None)
        return session
