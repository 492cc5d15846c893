"""OpenCode's pre-SQLite storage (importers.md §8.1): one JSON file per session, message and part
under ``storage/`` (sst/opencode packages/opencode/src/storage/storage.ts, which
json-migration.ts copies into the database). Ids come from the file names, as the migration
takes them. A session's revision is the ``stat`` of every file its log is read from."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ...cancel import CancelToken
from ..contract.results import SkippedArtifact
from ..importing.backend import each
from ..importing.emitter import JSONObject
from ..importing.values import nonempty, obj
from .layout import storage_dir
from .rows import Message, Native, Part, Session, decode, ms

ATTEMPTS = 3


class LegacyChanged(Exception):
    """The files changed on every attempt to read them."""


def _json_files(folder: str) -> list[tuple[str, str]]:
    """(stem, path) of the ``*.json`` files directly in ``folder``, by name; none when absent."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [(n[:-5], os.path.join(folder, n)) for n in names]


def _stat_text(path: str) -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "-"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def session_of(sid: str, value: JSONObject, mtime_ns: int) -> Session:
    times = obj(value.get("time")) or {}
    created = ms(times.get("created"))
    return Session(
        id=sid,
        created=created if created is not None and created >= 0 else mtime_ns // 1_000_000,
        record=value,
        updated=ms(times.get("updated")),
        directory=nonempty(value.get("directory")),
        parent=nonempty(value.get("parentID")),
        title=nonempty(value.get("title")),
        version=nonempty(value.get("version")),
        agent=None,
        revert=obj(value.get("revert")),
    )


@dataclass(frozen=True, slots=True)
class Listed:
    session: Session
    path: str
    key: str  # the session file's stat when it was parsed


class LegacyStore:
    def __init__(self, home: str) -> None:
        self.home = home
        self._parsed: dict[str, Listed] = {}  # by path: reused while the file's stat holds
        # [ours] the session files the last ``sessions`` left out, by the id their name gives
        self.skipped: dict[str, SkippedArtifact] = {}

    def _skip(self, sid: str, path: str, reason: str) -> None:
        rel = os.path.relpath(path, self.home)
        message = f'opencode session file "{rel}" is unreadable: {reason}'
        self.skipped.setdefault(sid, SkippedArtifact(path, sid, message))

    def sessions(self, token: CancelToken) -> dict[str, Listed]:
        """Every readable session file, by id (the first project directory in name order wins
        for an id found twice)."""
        root = storage_dir(self.home, "session")
        try:
            with os.scandir(root) as it:
                projects = sorted(e.path for e in it if e.is_dir(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        found: dict[str, Listed] = {}
        parsed: dict[str, Listed] = {}
        self.skipped = {}
        files = [file for project in projects for file in _json_files(project)]
        for sid, path in each(files, token):
            key = _stat_text(path)
            known = self._parsed.get(path)
            if known is None or known.key != key:
                try:
                    raw = _read(path)
                except OSError:  # one bad file never fails the corpus (importers.md §3.1)
                    self._skip(sid, path, "it cannot be read")
                    continue
                value, _ = decode(raw) if raw is not None else (None, None)
                if value is None:  # names no session; an empty one may be being written
                    if raw:
                        self._skip(sid, path, "it holds no JSON object")
                    continue
                mtime = int(key.split(":")[3]) if key != "-" else 0
                known = Listed(session_of(sid, value, mtime), path, key)
            parsed[path] = known
            found.setdefault(sid, known)
        self._parsed = parsed
        return found

    def _files(self, listed: Listed) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """The session's message files, each with its part directory and part files."""
        out: list[tuple[str, str, list[tuple[str, str]]]] = []
        for mid, path in _json_files(storage_dir(self.home, "message", listed.session.id)):
            folder = storage_dir(self.home, "part", mid)
            out.append((path, folder, _json_files(folder)))
        return out

    def revision(self, listed: Listed) -> str:
        h = hashlib.sha256()
        h.update(_stat_text(listed.path).encode())
        folder = storage_dir(self.home, "message", listed.session.id)
        h.update(_stat_text(folder).encode())
        for path, folder, parts in self._files(listed):
            h.update(f"|{path}={_stat_text(path)}|{_stat_text(folder)}".encode())
            for _, part in parts:
                h.update(f"|{part}={_stat_text(part)}".encode())
        return "opencode:legacy:" + h.hexdigest()[:16]

    def load(self, listed: Listed, token: CancelToken) -> Native:
        """The session's records, read again until one read saw no file change (§3.3). A request
        reading this one session is told the records (message and part files) read."""
        for _ in range(ATTEMPTS):
            before = self.revision(listed)
            native = self._load(listed, token)
            if self.revision(listed) == before:
                return native
        raise LegacyChanged("opencode storage changed while being read")

    def _load(self, listed: Listed, token: CancelToken) -> Native:
        raw = _read(listed.path)
        value, _ = decode(raw) if raw is not None else (None, None)
        session = listed.session
        if value is not None:
            key = _stat_text(listed.path)
            session = session_of(session.id, value, int(key.split(":")[3]) if key != "-" else 0)
        messages: list[Message] = []
        files = self._files(listed)
        meter = token.reading_items
        total = sum(1 + len(parts) for _, _, parts in files)
        done = 0
        for path, _, parts in files:
            token.raise_if_cancelled()
            if meter is not None:
                meter(done, total, "records")
                done += 1 + len(parts)
            mid = os.path.basename(path)[:-5]
            data = _read(path) or b""
            info, damage = decode(data)
            if info is not None:
                info = {**info, "id": mid}
            loaded: list[Part] = []
            for pid, part_path in parts:
                body = _read(part_path) or b""
                part, part_damage = decode(body)
                if part is not None:
                    part = {**part, "id": pid}
                loaded.append(Part(pid, part, part_damage, len(body)))
            messages.append(Message(mid, info, loaded, damage, len(data), None))
        return Native(session, messages, listed.path)
