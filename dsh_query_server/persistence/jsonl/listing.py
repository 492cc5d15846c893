"""The listing of a ``jsonl:`` root (persistence.md §4.8): each surveyed transcript's header and
revision, a header proven by its transcript's stat kept across listings, and across processes
through ``export``/``seed`` (sync's state)."""

from __future__ import annotations

import threading

from ...cancel import CancelToken
from ...model.event import Header
from ..contract.results import SkippedArtifact
from .errors import duplicate
from .header import listed_header_or_defect, read_raw_header, read_zstd_header
from .identity import check_path_identity
from .paths import unescape_segment
from .proofs import RootSurveyor
from .survey import Listed, ListedHeader, SessionDir, StatKey, revision_of_key


class HeaderListing:
    """The headers of a root's last listing, by transcript path. ``lock`` is the backend's: it
    guards ``_headers`` against ``export``/``seed`` as it did inside the backend."""

    def __init__(self, root: str, surveyor: RootSurveyor, lock: threading.Lock) -> None:
        self._root = root
        self._surveyor = surveyor
        self._lock = lock
        self._headers: dict[str, ListedHeader] = {}  # by transcript path, from the last listing
        # The last listing every entry of which is proven by its survey's stats, kept while the
        # survey returns that same list.
        self._listed: Listed | None = None
        # The transcripts the last listing skipped for an invalid header line (step 4.5).
        self.skipped: tuple[SkippedArtifact, ...] = ()

    def listed(
        self, sessions: list[SessionDir], encoding: str | None, token: CancelToken
    ) -> Listed:
        """Listed headers with their revisions, from the survey's stat (§4.8 steps 1–4)."""
        if encoding is None:
            return Listed(sessions, [], [], False)
        kept = self._listed
        if kept is not None and kept.sessions is sessions:
            # The same survey list: every transcript's stat is the one its header was proven by
            # (each entry was exact and safe), so every step below would give the same answer.
            self.skipped = ()
            return kept
        safe_before = self._surveyor.safe_before()
        listed: list[Header] = []
        revisions: list[str] = []
        seen: set[str] = set()
        known_headers = self._headers
        headers: dict[str, ListedHeader] = {}
        proven = True
        skipped: list[SkippedArtifact] = []
        # ``listing k of n transcripts`` (protocol.md §8), as the importers' listing counts:
        # the session directories gone through, of those the survey found.
        count, total = token.listing, len(sessions)
        for done, session in enumerate(sessions):
            if count is not None:
                count.at(done, total)
            # The survey verified the encoding: every session's one kind is this one.
            key = session.keys[0]
            known = known_headers.get(session.path)
            if known is not None and known.key == key and known.exact and known.safe:
                entry = known  # the stat it was proven by (a seeded one's too: sync's state)
            else:
                found = self._entry(session, encoding, known, safe_before, token)
                if found is None:
                    continue
                if isinstance(found, str):
                    name = unescape_segment(session.name)
                    skipped.append(SkippedArtifact(session.transcript(encoding), name, found))
                    continue
                entry = found
                proven = proven and entry.exact and entry.safe
            headers[session.path] = entry
            header_id = entry.header.id
            if header_id in seen:
                raise duplicate(header_id)
            seen.add(header_id)
            listed.append(entry.header)
            revisions.append(entry.revision)
        if count is not None:
            count.at(total, total)
        self._headers = headers
        self.skipped = tuple(skipped)
        result = Listed(sessions, listed, revisions, proven and len(listed) == len(sessions))
        if result.proven:
            self._listed = result
        return result

    def _entry(
        self,
        session: SessionDir,
        encoding: str,
        known: ListedHeader | None,
        safe_before: int,
        token: CancelToken,
    ) -> ListedHeader | str | None:
        """A session directory's header as listing reads it (§4.8 steps 4.3–4.6); None when
        listing skips the directory, the defect when it skips it for an invalid header line. A transcript only grows: while its inode, size and times
        are unchanged, so is its first line, and the header parsed last time is reused instead
        of read again, and with it the path identity check when that was an exact match (a pure
        function of the header, the root and the encoding). As for directories (proofs.py), a
        stat proves the header only when the transcript's mtime was safely older than its read."""
        key = session.keys[0]
        path = session.transcript(encoding)
        if known is not None and known.key == key and known.safe:
            header, revision, exact = known.header, known.revision, known.exact
        else:
            read_header = read_zstd_header if encoding == "zstd" else read_raw_header
            try:
                line = read_header(path, token)
            except FileNotFoundError:
                return None
            if line is None:
                return None
            parsed = listed_header_or_defect(line)
            if isinstance(parsed, str):
                return parsed
            header, revision, exact = parsed, revision_of_key(key), False
        if not exact:
            exact = check_path_identity(self._root, header, path, encoding)
        return ListedHeader(key, revision, header, exact, key[3] < safe_before)

    def lookup(self, session: SessionDir, encoding: str, token: CancelToken) -> Header | None:
        """The header a listing would list from this one session directory, read and reused as
        a listing reads it (``_entry``), with its errors; None when a listing skips it. A header
        read here that its stat proves is kept for the next lookup and listing."""
        known = self._headers.get(session.path)
        if known is not None and known.key == session.keys[0] and known.exact and known.safe:
            return known.header
        entry = self._entry(session, encoding, known, self._surveyor.safe_before(), token)
        if entry is None or isinstance(entry, str):
            return None
        if entry.exact and entry.safe:
            with self._lock:
                self._headers[session.path] = entry
        return entry.header

    def export(self) -> list[tuple[str, StatKey, str, bool]]:
        """The last listing's headers that their transcript's stat proves (read safely): (path,
        stat key, header JSON, exact), for ``seed`` in a later process (sync's state)."""
        with self._lock:
            headers = list(self._headers.items())
        return [
            (path, e.key, e.header.raw.decode("utf-8"), e.exact) for path, e in headers if e.safe
        ]

    def seed(self, entries: list[tuple[str, StatKey, str, bool]]) -> None:
        """Headers an earlier listing of this root read (``export``). As within one
        process, a transcript whose stat is still the key is not read again: a transcript only
        grows, and its stat was safely after the write when it was read (§4.8). Entries this
        backend listed itself win."""
        seeded: dict[str, ListedHeader] = {}
        for path, key, header, exact in entries:
            revision = revision_of_key(key)
            seeded[path] = ListedHeader(
                key, revision, Header.from_json(header.encode()), exact, True
            )
        with self._lock:
            self._headers = {**seeded, **self._headers}
