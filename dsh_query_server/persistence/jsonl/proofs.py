"""The root survey by proofs (persistence.md §4.7, §4.8; issue 12 §4): the same session
directories, transcript stats and errors as ``survey.survey_root``, without reading a directory
whose own ``stat`` proves its entry list unchanged since it was last read.

A directory's entries change only together with its mtime and ctime, so a directory whose
(dev, ino, mtime, ctime) equal those taken just before its entries were last read still holds
those entries, with one exception that git's index calls "racy": a change made in the same
timestamp tick as that read leaves the times as they were. So a read is kept as a proof only
when the directory's mtime was at least ``SAFE_AGE_NS`` older than the clock when the read began;
any later change then moves its mtime. A directory changed more recently is read again.

Per request this takes one ``stat`` of the root, an open and ``fstat`` of each project directory
(the session directories and transcripts under it are then stat'ed relative to it, which resolves
one or two path components instead of the root's whole path), one ``stat`` of each session
directory (it proves which transcripts exist, so a transcript of the opposite suffix
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
# The kinds a survey can find: one transcript, or both in TRANSCRIPT's order (a kept proof's are
# checked against them).
_KINDS = frozenset({*((kind,) for kind in TRANSCRIPT), tuple(TRANSCRIPT)})


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


# One candidate of a proven project as the survey's inner loop checks it, flat (field by field
# comparisons cost less than building a key per stat): the candidate; the name to stat (relative
# to the open project directory, or its whole path) and the directory's dev, ino, mtime, ctime
# (ino -1 when no proof is kept: never equal, so it is surveyed by path); its one transcript's
# name (None: proven to have none) and dev, ino, size, mtime, ctime; the record they prove.
_Check = tuple[
    _Candidate, str, int, int, int, int, str | None, int, int, int, int, int, SessionDir | None
]
_NO_KEY = (-1, -1, -1, -1, -1)


class _State(NamedTuple):
    """What the last finished survey proved, published as one record (for threads)."""

    projects: dict[str, _Candidates]
    sessions: dict[str, _Kinds]
    checks: dict[str, tuple[_Check, ...]]  # per kept project, from the two above
    # Its result: returned again, the same list, while every proof holds (None: proofs seeded
    # from another process, no survey's result yet).
    found: list[SessionDir] | None


class KeptProofs(NamedTuple):
    """The proofs a survey kept, for another process (``RootSurveyor.export``; sync's state
    file, postgres.md §6): the root's, and the project and session directories' by path. They
    are the surveyor's own immutable records, so a JSON decoder builds them as they are."""

    root: _Projects | None
    projects: dict[str, _Candidates]
    sessions: dict[str, _Kinds]


_EMPTY = _State({}, {}, {}, [])
# Stats relative to an open project directory resolve one or two path components instead of the
# root's whole path (about half the cost of a stat on a deep root); paths where unsupported.
_RELATIVE = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
_OPEN_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _fits(path: str, session: SessionDir | None) -> bool:
    """Whether a session proof kept for ``path`` is one a survey of it makes (a kept state file
    may be damaged: a proof that does not fit is not used, so the directory is read)."""
    return session is None or (
        session.path == path
        and session.kinds in _KINDS
        and len(session.keys) == len(session.kinds)
        and path.rpartition(os.sep)[2] == session.name
    )


def _check(candidate: _Candidate, proof: _Kinds | None, prefix: str) -> _Check:
    name = prefix + candidate.name
    last = None if proof is None else proof.session
    if proof is None or (
        last is not None
        and (len(last.kinds) != 1 or last.path != candidate.path or not _fits(last.path, last))
    ):
        return (candidate, name, -1, -1, -1, -1, None, *_NO_KEY, None)
    if last is None:
        return (candidate, name, *proof.key, None, *_NO_KEY, None)
    transcript = name + os.sep + TRANSCRIPT[last.kinds[0]]
    return (candidate, name, *proof.key, transcript, *last.keys[0], last)


def _checks(
    projects: dict[str, _Candidates], sessions: dict[str, _Kinds]
) -> dict[str, tuple[_Check, ...]]:
    sep = os.sep
    return {
        project: tuple(
            _check(c, sessions.get(c.path), "" if _RELATIVE else project + sep)
            for c in kept.candidates
        )
        for project, kept in projects.items()
    }


class RootSurveyor:
    """``survey_root`` with proofs kept between calls. Safe to call from several threads: every
    kept proof is an immutable record, and each survey publishes the proofs it used or made.

    A survey in which every proof held returns the previous survey's very list, so callers can
    keep what they derived from it (the listing, the encoding check) by its identity."""

    def __init__(self, root: str, clock: Callable[[], int] = time.time_ns) -> None:
        self.root = root
        self._clock = clock
        self._root: _Projects | None = None
        self._state = _EMPTY
        self.reads = 0  # directories read (listed or probed) instead of proven: for tests

    def safe_before(self) -> int:
        """Reads that begin now prove only what was last changed before this time."""
        return self._clock() - SAFE_AGE_NS

    def projects(self, token: CancelToken) -> tuple[str, ...]:
        """The project directories a survey starting now would walk: the root's kept entries
        while its stat proves them (one ``stat``), else the root read afresh."""
        return self._project_paths(token, self.safe_before())[0]

    def survey(self, token: CancelToken) -> list[SessionDir]:
        """Every session directory holding a transcript; flat artifacts fail the survey."""
        safe_before = self.safe_before()
        state = self._state
        known_sessions = state.sessions
        projects: dict[str, _Candidates] = {}
        listed: dict[str, tuple[_Candidate, ...]] = {}  # candidates of every project surveyed
        updates: dict[str, _Kinds | None] = {}  # session proofs made anew (None: none holds)
        found: list[SessionDir] = []
        paths, changed = self._project_paths(token, safe_before)
        probe = os.stat
        for project in paths:
            token.raise_if_cancelled()
            proven = self._proven(project, state.projects)
            if proven is None:  # read, exactly as the full survey reads it
                changed = True
                candidates = self._candidates(project, token, safe_before, projects, listed)
                for candidate in candidates:
                    session = self._session(candidate, safe_before, known_sessions, updates)
                    if session is not None:
                        found.append(session)
                continue
            kept, fd = proven
            projects[project], listed[project] = kept, kept.candidates
            try:
                # The common case inline (a proven directory, no transcript or one, unchanged):
                # this loop runs over every session on every request.
                for (
                    candidate,
                    name,
                    dev,
                    ino,
                    mtime,
                    ctime,
                    transcript,
                    tdev,
                    tino,
                    tsize,
                    tmtime,
                    tctime,
                    last,
                ) in state.checks[project]:
                    try:
                        st = probe(name, dir_fd=fd)
                        if (
                            st.st_mtime_ns == mtime
                            and st.st_ctime_ns == ctime
                            and st.st_ino == ino
                            and st.st_dev == dev
                        ):
                            if transcript is None:
                                continue  # the same directory: still no transcript
                            st = probe(transcript, dir_fd=fd)
                            if (  # stat_key(st) == last.keys[0], field by field
                                st.st_mtime_ns == tmtime
                                and st.st_ctime_ns == tctime
                                and st.st_size == tsize
                                and st.st_ino == tino
                                and st.st_dev == tdev
                                and last is not None
                            ):
                                found.append(last)
                                continue
                    except OSError:
                        pass  # by path below: the full survey's own outcome and error
                    changed = True
                    session = self._session(candidate, safe_before, known_sessions, updates)
                    if session is not None:
                        found.append(session)
            finally:
                if fd is not None:
                    os.close(fd)
        token.raise_if_cancelled()
        if not changed and state.projects.keys() == projects.keys():
            if state.found is not None:
                return state.found  # every proof held: the same sessions, the same records
            # Seeded proofs that all held: the same proofs, now with their survey's result.
            self._state = state._replace(found=found)
            return found
        sessions: dict[str, _Kinds] = {}
        for candidates in listed.values():
            for candidate in candidates:
                path = candidate.path
                proof = updates[path] if path in updates else known_sessions.get(path)
                if proof is not None:
                    sessions[path] = proof
        self._state = _State(projects, sessions, _checks(projects, sessions), found)
        return found

    def export(self) -> KeptProofs:
        """The proofs the last survey kept (each made by a read safely after the directory's
        last change, so as good in another process as in this one)."""
        state = self._state
        return KeptProofs(self._root, state.projects, state.sessions)

    def seed(self, kept: KeptProofs) -> None:
        """Proofs an earlier process kept (``export``), for a surveyor that has not surveyed
        yet: its first survey then reads only what changed since. They are checked exactly as
        this process's own: a directory whose key moved is read again. Records that do not fit
        where they are kept (a damaged state file) are not used: what they name is read again."""
        if self._root is not None or self._state is not _EMPTY:
            return  # this process's own proofs are at least as recent
        sep = os.sep
        projects = {
            project: proof
            for project, proof in kept.projects.items()
            if [c.path for c in proof.candidates]
            == [project + sep + c.name for c in proof.candidates]
        }
        sessions = kept.sessions  # each checked where it is used (_check, _session: _fits)
        self._root = kept.root
        self._state = _State(projects, sessions, _checks(projects, sessions), None)

    def _project_paths(self, token: CancelToken, safe_before: int) -> tuple[tuple[str, ...], bool]:
        """The project directories, and whether the root was read (not proven)."""
        try:
            key = _dir_key(os.stat(self.root))
        except OSError:
            return tuple(project_dirs(self.root, token)), True  # absent, or the full survey's error
        known = self._root
        if known is not None and known.key == key:
            return known.paths, False
        self.reads += 1
        paths = tuple(project_dirs(self.root, token))
        self._root = _Projects(key, paths) if key[2] < safe_before else None
        return paths, True

    @staticmethod
    def _proven(
        project: str, kept: dict[str, _Candidates]
    ) -> tuple[_Candidates, int | None] | None:
        """The project's kept entries when its stat proves them, with the directory open for
        relative stats (None: use paths); None when it must be read."""
        known = kept.get(project)
        if known is None:
            return None
        if not _RELATIVE:
            try:
                return (known, None) if _dir_key(os.stat(project)) == known.key else None
            except OSError:
                return None
        try:
            fd = os.open(project, _OPEN_DIR)
        except OSError:
            return None  # read by path: the full survey's outcome and error
        try:
            if _dir_key(os.fstat(fd)) == known.key:
                return known, fd
        except OSError:
            pass
        os.close(fd)
        return None

    def _candidates(
        self,
        project: str,
        token: CancelToken,
        safe_before: int,
        kept: dict[str, _Candidates],
        listed: dict[str, tuple[_Candidate, ...]],
    ) -> Iterator[_Candidate]:
        try:
            key: DirKey | None = _dir_key(os.stat(project))
        except OSError:
            key = None  # the listing below meets the error as the full survey does
        self.reads += 1
        found: list[_Candidate] = []
        for entry in scandir(project, token):  # in order: a flat artifact stops the survey here
            if is_flat_artifact(entry):
                raise flat_layout_error(entry.path)
            if entry.is_symlink():
                candidate = _Candidate(entry.path, entry.name, True)
            elif entry.is_dir(follow_symlinks=False):
                candidate = _Candidate(entry.path, entry.name, False)
            else:
                continue
            found.append(candidate)
            yield candidate
        listed[project] = tuple(found)
        if key is not None and key[2] < safe_before:
            kept[project] = _Candidates(key, listed[project])

    def _session(
        self,
        candidate: _Candidate,
        safe_before: int,
        known_sessions: dict[str, _Kinds],
        kept: dict[str, _Kinds | None],
    ) -> SessionDir | None:
        path = candidate.path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            kept[path] = None
            return None  # vanished, or a dangling link: no session directory either way
        except OSError:
            if candidate.link:
                raise  # the full survey's is_dir() meets this very error
            return self._probe(candidate, None, safe_before, kept)
        if not stat.S_ISDIR(st.st_mode):
            kept[path] = None
            return None
        key = _dir_key(st)
        known = known_sessions.get(path)
        if known is None or known.key != key or not _fits(path, known.session):
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
        self,
        candidate: _Candidate,
        key: DirKey | None,
        safe_before: int,
        kept: dict[str, _Kinds | None],
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
        kept[candidate.path] = _Kinds(key, session) if provable and key is not None else None
        return session
