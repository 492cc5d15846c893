"""The ``jsonl:`` backend (persistence.md §4): dsh's JSONL session roots, raw or Zstandard.

One transcript per session at ``<root>/<project dir>/<escaped id>/session.jsonl[.zstd]``: a header
line, then one storage record (§3.2) per line. Reads never change anything on disk; the first
append publishes a transcript atomically, later appends are fsynced and rolled back on failure.
"""

from __future__ import annotations

import os
import secrets
import stat
import threading
import weakref
from typing import TYPE_CHECKING

from msgspec import UNSET

from ...cancel import NULL_TOKEN, CancelToken
from ...files import fsync_dir, make_private_dirs
from ...model.event import Event, Header, is_valid_seq_at
from ...values import is_nonneg_safe_integer
from ..contract.backend import PersistenceBackend
from ..contract.capabilities import ListedLookup, RawArtifactReader, WindowReader
from ..contract.errors import SessionPersistenceReadOnlyError, naming
from ..contract.results import (
    Inspection,
    SessionLocation,
    SessionRawArtifact,
    SkippedArtifact,
    Snapshot,
    StoredLog,
    Window,
)
from ..logical import log as logical
from ..logical.legacy import render_json
from ..logical.memo import VerificationMemo
from ..logical.records import Piece, pack
from ..logical.windows import Verified, read_window
from .decode import Decoded, StoredPieces, decode_raw, decode_zstd
from .durable import (
    append_durably,
    check_serializable,
    record_line,
    remove_quietly,
    write_new_file,
)
from .errors import (
    JsonlBackendError,
    duplicate,
    exists_on_disk,
    mismatch_error,
    not_found,
)
from .frames import zstd_frame
from .header import header_line
from .identity import check_identity
from .listing import HeaderListing
from .paths import COMPRESSIONS, OPPOSITE, TRANSCRIPT, escape_segment, project_dir, transcript_path
from .proofs import KeptProofs, RootSurveyor
from .raw import FILENAME, raw_content
from .survey import (
    Listed,
    SessionDir,
    StatKey,
    Survey,
    named_sessions,
    revision_of,
)
from .window import Located, TranscriptHints, TranscriptWindows


def _check_contiguous(session_id: str, events: list[Event], stored: int) -> None:
    for index, event in enumerate(events):
        if not is_valid_seq_at(event.seq, stored + index):
            got = "missing" if event.seq is UNSET else render_json(event.seq)
            raise JsonlBackendError(
                f'append seq mismatch for "{session_id}": expected '
                f"{stored + index} at index {index}, got {got}"
            )


def _find(session_id: str, matches: list[SessionDir], encoding: str | None) -> Located | None:
    """The transcript among the session directories named for the id."""
    if encoding is None or not session_id:
        return None
    if len(matches) > 1:
        raise duplicate(session_id)
    return Located(matches[0].transcript(encoding), encoding) if matches else None


class JsonlBackend:
    """persistence.md §4. Synchronous; safe to call from several threads."""

    def __init__(
        self,
        root: str,
        *,
        compression: str = "auto",
        pack_chunks: bool = True,
        read_only: bool = False,
        uri: str | None = None,
    ) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(f"unknown jsonl compression {compression!r}")
        self.root = os.path.abspath(root)
        self._uri = uri if uri is not None else f"jsonl:{self.root}"
        self._writable = not read_only
        self._pack_chunks = pack_chunks
        self._encoding: str | None = None if compression == "auto" else compression
        self._lock = threading.Lock()  # guards the fields below and the lock table
        self._session_locks: dict[str, threading.Lock] = {}
        self._created: dict[str, Header] = {}  # created here, not yet materialized
        self._tracked: set[str] = set()  # created or written through this instance
        self._counts: dict[str, int] = {}  # stored event count after our last good append
        self._locations: dict[str, Located] = {}
        # The last survey whose encoding was verified, kept while the survey returns that same
        # list (the listing keeps its headers the same way: listing.py).
        self._verified: Survey | None = None
        # Each request's (token's) last survey, for _locate's reuse; an entry goes with its token,
        # so a finished request's survey is not kept until the next one.
        self._surveys: weakref.WeakKeyDictionary[CancelToken, Survey] = weakref.WeakKeyDictionary()
        # Transcripts verified whole per revision, so window reads at that revision seek to
        # their lines or frames (memo.py explains why this is not a cache).
        self._memo: VerificationMemo[Verified[TranscriptHints]] = VerificationMemo()
        # Directory reads kept as proofs between surveys (proofs.py).
        self._surveyor = RootSurveyor(self.root)
        self._header_listing = HeaderListing(self.root, self._surveyor, self._lock)
        self._check_root()

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def cheap_windows(self) -> bool:
        """inspect_window reads only a window's lines or frames once a log is verified at its
        revision, so a long log can be read window by window (search/documents.py)."""
        return True

    # -- mount ---------------------------------------------------------------------------------

    def _check_root(self) -> None:
        """An existing root must be a readable directory; an absent one is created later."""
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f'jsonl root "{self.root}" is not a directory')
        if not os.access(self.root, os.R_OK | os.X_OK):
            raise PermissionError(f'jsonl root "{self.root}" is not readable')

    def close(self) -> None:
        """Nothing to release: every operation opens and closes its own files."""

    # -- root survey and encoding (§4.7) -------------------------------------------------------

    def _exists(self, path: str, token: CancelToken) -> bool:
        """Probe a path: only "does not exist" is absence; other failures surface."""
        return self._probe(path, token) is not None

    def _probe(self, path: str, token: CancelToken) -> os.stat_result | None:
        """``stat`` a path; None only when it does not exist (other failures surface)."""
        token.raise_if_cancelled()
        try:
            found: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            found = None
        token.raise_if_cancelled()
        return found

    def _survey(self, token: CancelToken) -> list[SessionDir]:
        """Every session directory holding a transcript; flat artifacts fail the survey. The
        same result and errors as survey.survey_root, proven unchanged where it can be."""
        return self._surveyor.survey(token)

    def _root_encoding(self, token: CancelToken) -> tuple[list[SessionDir], str | None]:
        """Survey the root and determine or verify its encoding (None: still undetermined)."""
        token.raise_if_cancelled()
        sessions = self._survey(token)
        with self._lock:
            verified = self._verified
            if (
                verified is None
                or verified.sessions is not sessions
                or verified.encoding != self._encoding
            ):
                # A survey whose proofs all held returns the very list verified last time, with
                # the same kinds: its check passed then, for the same encoding (one that a first
                # materialization fixed since is checked afresh).
                encoding = self._encoding or next((s.kinds[0] for s in sessions), None)
                for session in sessions:
                    for kind in session.kinds:
                        if kind != encoding:
                            assert encoding is not None
                            raise mismatch_error(session.transcript(kind), kind, encoding)
                self._encoding = encoding
                verified = self._verified = Survey(sessions, encoding)
            if token is not NULL_TOKEN:  # the null token is no request to share a survey with
                self._surveys[token] = verified
        return sessions, verified.encoding

    def _encoding_for_write(self) -> str:
        """The root encoding, fixing an undetermined one to zstd (first materialization)."""
        _, encoding = self._root_encoding(NULL_TOKEN)
        with self._lock:
            self._encoding = self._encoding or encoding or "zstd"
            return self._encoding

    # -- listing (§4.8) ------------------------------------------------------------------------

    def _listing(self, token: CancelToken) -> Listed:
        """Listed headers with their revisions, from the survey's stat (§4.8 steps 1–4)."""
        sessions, encoding = self._root_encoding(token)
        return self._header_listing.listed(sessions, encoding, token)

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        return list(self._listing(token).headers)

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        # The survey already took one stat of each transcript (§4.8 step 5 asks for exactly one).
        return list(self._listing(token).snapshots())

    def skipped_artifacts(self) -> tuple[SkippedArtifact, ...]:
        """SkippedReporter: the transcripts the last listing skipped for an invalid header."""
        return self._header_listing.skipped

    def list_revisions(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        """ListedRevisions: ``list`` is the headers of the same survey's listing."""
        return self.list_snapshots(token)

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """ListedLookup (semantics.md §3.0.5 step 4): exactly the header ``list`` would list for
        the id whenever it succeeds, from the target's own directory rather than the whole
        root: in each project directory the ``stat``s of ``<escaped id>/`` and its transcripts,
        then the header as listing reads it (reused while its transcript's stat proves it).
        Anything but one session directory of the root's encoding holding this id's header (no
        transcript, a half-written or foreign one, two, the opposite suffix, an undetermined
        encoding, a ``stat`` failure) is answered by the listing itself, errors included."""
        token.raise_if_cancelled()
        encoding = self._encoding  # fixed once determined
        if encoding is not None and session_id:
            name = escape_segment(session_id)
            found = named_sessions(self._surveyor.projects(token), name, token)
            if found is not None and len(found) == 1 and found[0].kinds == (encoding,):
                header = self._header_listing.lookup(found[0], encoding, token)
                if header is not None and header.id == session_id:
                    if token is not NULL_TOKEN:  # for this request's inspect (_locate)
                        with self._lock:
                            self._surveys[token] = Survey(found, encoding)
                    return header
        return self._listing(token).header_of(session_id)

    def export_listing(self) -> list[tuple[str, StatKey, str, bool]]:
        """The last listing's headers that their transcript's stat proves (read safely): (path,
        stat key, header JSON, exact), for ``seed_listing`` in a later process (sync's state)."""
        return self._header_listing.export()

    def seed_listing(self, entries: list[tuple[str, StatKey, str, bool]]) -> None:
        """Headers an earlier listing of this root read (``export_listing``); see
        ``HeaderListing.seed``."""
        self._header_listing.seed(entries)

    def export_proofs(self) -> KeptProofs:
        """The directory proofs of the last survey (proofs.py), for ``seed_proofs`` in a later
        process (sync's state), as ``export_listing`` keeps the headers."""
        return self._surveyor.export()

    def seed_proofs(self, kept: KeptProofs) -> None:
        """Directory proofs an earlier process kept (``export_proofs``): the first survey reads
        only the directories whose stat moved since, and stats the rest (proofs.py)."""
        self._surveyor.seed(kept)

    # -- lookup and reading (§4.9) -------------------------------------------------------------

    def _check_identity(self, session_id: str, header: Header, located: Located) -> None:
        check_identity(self.root, session_id, header, located)

    def _session_lock(self, session_id: str) -> threading.Lock:
        with self._lock:
            return self._session_locks.setdefault(session_id, threading.Lock())

    def _locate(self, session_id: str, token: CancelToken) -> Located | None:
        """§4.9 steps 1–2. A lookup reuses the survey its own request (token) made last when
        that survey found the session and the transcript is still there (the survey of one
        session directory that ``list_one`` made counts: a single-target load's). The survey costs two
        stats per session directory, and a request lists before it inspects (§3.0.5), a search's
        reconcile inspects every changed session between two listings, and a batch inspects
        many: surveying afresh for each inspect was quadratic in the root's size. The reused
        survey is one this request finished moments
        earlier, listings always survey afresh (so a search's second listing still sees an
        artifact that appeared during its inspects), and the transcript is read afresh."""
        name = escape_segment(session_id) if session_id else ""  # "" names no directory
        with self._lock:
            recent = self._surveys.get(token)
        if recent is not None:
            located = _find(session_id, recent.named(name), recent.encoding)
            if located is not None and self._probe(located.path, token) is not None:
                return located
        sessions, encoding = self._root_encoding(token)
        return _find(session_id, [s for s in sessions if s.name == name], encoding)

    def _stable_read(self, path: str, token: CancelToken) -> tuple[bytes, str]:
        """A copy of the file that no writer changed while it was read, and its revision."""
        while True:
            before = revision_of(self._probe_stat(path, token))
            with open(path, "rb") as file:
                content = file.read()
            after = self._probe_stat(path, token)
            if revision_of(after) == before and len(content) == after.st_size:
                return content, before

    @staticmethod
    def _probe_stat(path: str, token: CancelToken) -> os.stat_result:
        token.raise_if_cancelled()
        st = os.stat(path)
        token.raise_if_cancelled()
        return st

    def _load(self, session_id: str, token: CancelToken) -> tuple[StoredLog, Located] | None:
        """§4.9 steps 1–5: the stored log and where it lives, or None when there is none."""
        located = self._locate(session_id, token)
        if located is None:
            return None
        return self._load_located(session_id, located, token, None)[0], located

    def _load_located(
        self, session_id: str, located: Located, token: CancelToken, pieces: list[Piece] | None
    ) -> tuple[StoredLog, Decoded]:
        """§4.9 steps 3–5 for a found transcript (``pieces``: see ``read_stored_pieces``)."""
        content, revision = self._stable_read(located.path, token)
        decode = decode_zstd if located.encoding == "zstd" else decode_raw
        with naming(located.path, located.path):
            decoded = decode(content, located.path, None, pieces, token.reading)
            self._check_identity(session_id, decoded.header, located)
        return StoredLog(decoded.header, decoded.events, decoded.torn, revision), decoded

    def read_stored(self, session_id: str, token: CancelToken = NULL_TOKEN) -> StoredLog:
        """The stored header and valid prefix, before legacy normalization and closers."""
        with self._session_lock(session_id):
            loaded = self._load(session_id, token)
        if loaded is None:
            raise not_found(session_id)
        return loaded[0]

    def read_stored_pieces(self, session_id: str, token: CancelToken = NULL_TOKEN) -> StoredPieces:
        """``read_stored``'s header and events, where each canonical packed line of the prefix
        stands for its members as its records.KeptLine, which sync may store as it is
        (postgres.md §6) without building the members."""
        pieces: list[Piece] = []
        with self._session_lock(session_id):
            located = self._locate(session_id, token)
            if located is None:
                raise not_found(session_id)
            return self._load_located(session_id, located, token, pieces)[0].header, pieces

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        with self._session_lock(session_id):
            loaded = self._load(session_id, token)
        if loaded is None:
            raise not_found(session_id)
        stored, located = loaded
        with naming(located.path, located.path):
            return Inspection(stored.header, logical.verified_log(session_id, stored.events)[0])

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """The logical events ``first..last`` (clipped) with exactly the result and errors of
        ``inspect``. A transcript this instance already verified whole at its current revision
        is read only around the window (a seek hint, then lines, or frames for Zstandard);
        otherwise it is read and verified whole, as ``inspect`` does (windows.py)."""
        with self._session_lock(session_id):
            located = self._locate(session_id, token)
            if located is None:
                raise not_found(session_id)
            source = TranscriptWindows(
                session_id, located, token, self._stable_read, self._check_identity
            )
            with naming(located.path, located.path):
                return read_window(self._memo, source, first, last, token)

    # -- raw artifacts (tools.md §2.1) ---------------------------------------------------------

    @property
    def supports_raw_artifacts(self) -> bool:
        return True

    def locate(self, header: Header) -> SessionLocation | None:
        """The transcript path a header names, with no I/O: the suffix of the root's encoding,
        or ``.jsonl.zstd`` while it is undetermined; None when no path can be derived."""
        cwd = None if header.cwd is UNSET else header.cwd
        if (
            not isinstance(header.id, str)
            or header.id == ""
            or cwd == ""
            or not (cwd is None or isinstance(cwd, str))
        ):
            return None
        return SessionLocation(
            "jsonl", transcript_path(self.root, cwd, header.id, self._encoding or "zstd")
        )

    def read_raw(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> SessionRawArtifact | None:
        """The stored bytes for export: a stable copy (§4.9 step 3) of the transcript that
        lookup finds (§4.9 steps 1–2), or None when there is none. Reads only."""
        token.raise_if_cancelled()
        with self._session_lock(session_id):
            located = self._locate(session_id, token)
            if located is None:
                return None
            content, _ = self._stable_read(located.path, token)
        header, data = raw_content(session_id, content, located.encoding, located.path)
        return SessionRawArtifact(header, FILENAME, data)

    def stored_count(self, session_id: str) -> int | None:
        with self._session_lock(session_id):
            if session_id in self._counts:
                return self._counts[session_id]
            loaded = self._load(session_id, NULL_TOKEN)
        return None if loaded is None else len(loaded[0].events)

    # -- writing (§4.11) -----------------------------------------------------------------------

    def _refuse_read_only(self) -> None:
        if not self.writable:
            raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')

    def create(self, header: Header) -> None:
        self._refuse_read_only()
        if not is_nonneg_safe_integer(header.created_at):
            raise ValueError("session header createdAt must be a non-negative safe integer")
        session_id = header.id
        # Both names must be derivable now, or the session could never be materialized.
        name = escape_segment(session_id)
        project_dir(None if header.cwd is UNSET else header.cwd)
        with self._session_lock(session_id):
            if session_id in self._tracked:
                raise JsonlBackendError(f'session "{session_id}" already exists in this backend')
            sessions, _ = self._root_encoding(NULL_TOKEN)
            if any(session.name == name for session in sessions):
                raise JsonlBackendError(
                    f'session "{session_id}" already has a persisted log on disk; load/resume it '
                    "instead of creating"
                )
            self._created[session_id] = header
            self._tracked.add(session_id)

    def append(self, session_id: str, events: list[Event]) -> None:
        self._refuse_read_only()
        if not events:
            return
        check_serializable(events)
        with self._session_lock(session_id):
            located: Located | None
            if session_id in self._counts:
                count, located = self._counts[session_id], self._locations[session_id]
            elif session_id in self._created:
                count, located = 0, None
            else:
                count, located = self._stored_tail(session_id)
            _check_contiguous(session_id, events, count)
            # Forget the count while writing: after a failed write the log is read back.
            self._counts.pop(session_id, None)
            if located is None:
                located = self._materialize(self._created[session_id], events)
            else:
                append_durably(located.path, self._encode_batch(located.encoding, events))
            self._counts[session_id] = count + len(events)
            self._locations[session_id] = located
            self._tracked.add(session_id)

    def _stored_tail(self, session_id: str) -> tuple[int, Located]:
        """The stored event count of a log this instance has not written yet (full read)."""
        loaded = self._load(session_id, NULL_TOKEN)
        if loaded is None:
            raise not_found(session_id)
        stored, located = loaded
        if stored.torn:
            raise JsonlBackendError(
                f'session "{session_id}" has a torn stored tail; repair it before appending'
            )
        return len(stored.events), located

    def _encode_batch(self, encoding: str, events: list[Event]) -> bytes:
        records = pack(events) if self._pack_chunks else events
        body = b"\n".join(record_line(record) for record in records) + b"\n"
        return zstd_frame(body) if encoding == "zstd" else body

    def _materialize(self, header: Header, events: list[Event]) -> Located:
        """First append: publish header and batch together, never over an existing log."""
        session_id = header.id
        encoding = self._encoding_for_write()
        cwd = None if header.cwd is UNSET else header.cwd
        session_dir = os.path.join(self.root, project_dir(cwd), escape_segment(session_id))
        path = os.path.join(session_dir, TRANSCRIPT[encoding])
        opposite = os.path.join(session_dir, TRANSCRIPT[OPPOSITE[encoding]])
        if self._exists(opposite, NULL_TOKEN):
            raise mismatch_error(opposite, OPPOSITE[encoding], encoding)
        if self._exists(path, NULL_TOKEN):
            raise exists_on_disk(session_id)
        head = header_line(header)
        content = (zstd_frame(head) if encoding == "zstd" else head) + self._encode_batch(
            encoding, events
        )
        make_private_dirs(session_dir, durable=True)
        temp = f"{path}.{secrets.token_hex(6)}.tmp"
        write_new_file(temp, content)
        try:
            os.link(temp, path)
        except FileExistsError:
            remove_quietly(temp)
            raise exists_on_disk(session_id) from None
        except BaseException:
            remove_quietly(temp)
            raise
        del self._created[session_id]  # published: from now on the log is read back from disk
        fsync_dir(session_dir)
        remove_quietly(temp)
        return Located(path, encoding)


if TYPE_CHECKING:  # the contract (persistence/contract/), checked by pyright
    _backend: type[PersistenceBackend] = JsonlBackend
    _windows: type[WindowReader] = JsonlBackend
    _raw: type[RawArtifactReader] = JsonlBackend
    _listed: type[ListedLookup] = JsonlBackend
