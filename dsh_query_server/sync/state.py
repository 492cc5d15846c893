"""The state file of ``dsh-query sync`` (postgres.md §6): per session, the source and target
revisions last seen, how many events were synced and a SHA-256 of that prefix. Both revisions
unchanged means nothing to read; only the source changed means its prefix digest stands in for
reading the target. The file is only a shortcut: a missing or unreadable one means reading.

It also keeps what proves, in the next process, that nothing changed without listing: the target
listing's stamp (postgres/listing.py) with the ids whose kept target revision was not the one
that listing gave, and for a ``jsonl:`` source its listed headers and directory proofs."""

from __future__ import annotations

import gc
import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import msgspec

from .. import jsoncodec
from ..cancel import CancelToken
from ..files import make_private_dirs
from ..model.event import Event, Header
from ..persistence.contract.backend import PersistenceBackend
from ..persistence.contract.results import Snapshot
from ..persistence.jsonl import JsonlBackend
from ..persistence.jsonl.proofs import KeptProofs
from ..persistence.logical.records import Piece
from ..persistence.postgres.backend import PostgresBackend
from ..persistence.postgres.listing import Stamp


def state_dir() -> str:
    return os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )


def prefix_digest(header: Header, pieces: Sequence[Piece]) -> str:
    """A SHA-256 of the header's compact JSON and a newline, then each event's bytes and a
    newline, where a kept line (records.KeptLine) stands for its members as ``#``, a newline,
    its bytes and a newline (no event's bytes are ``#``): equal digests mean equal events. The
    header is in it because a matching digest stands in for reading the target (§6): the
    source's header as last synced was compatible with the stored one, which never changes while
    the target revision holds; a different header must be compared again."""
    digest = hashlib.sha256(jsoncodec.dumps(header.to_value()) + b"\n")
    if pieces:
        parts: list[bytes] = []
        for piece in pieces:
            if isinstance(piece, Event):
                parts.append(piece.raw)
            else:
                parts += (b"#", piece.line)
        digest.update(b"\n".join(parts))
        digest.update(b"\n")
    return digest.hexdigest()


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a source and the target are listed, and what is alive
    then frozen (``gc.freeze``): the listings and the state are a few long-lived, acyclic
    objects per session (headers, stat keys, entries), and every collection rescans all of them
    made so far (a third of a no-change run's time at 10,000 sessions). Frozen objects are
    still freed when their last reference goes; cycle_thawed unfreezes them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextmanager
def cycle_thawed(thaw: bool = True) -> Iterator[None]:
    """A sync cycle, then (``thaw``) what its listings left frozen (collection_paused) back to
    the collector: a ``--watch`` cycle or a run in a longer process keeps nothing past its end.
    A run that ends its process keeps them frozen, so its final collection skips them (0.1 s)."""
    try:
        yield
    finally:
        if thaw:
            gc.unfreeze()


def listed_source(
    source: PersistenceBackend, state: SyncState, token: CancelToken
) -> Sequence[Snapshot]:
    """The source's listing, for a ``jsonl:`` source from the headers and directory proofs the
    state kept (read afresh wherever a stat moved), which it then keeps for the next run."""
    if isinstance(source, JsonlBackend):
        try:
            source.seed_listing(state.listing)
        except ValueError:
            pass  # a damaged kept listing: the listing reads every header
        if state.proofs is not None:
            source.seed_proofs(state.proofs)
    snapshots = source.list_snapshots(token)
    if isinstance(source, JsonlBackend):
        state.keep_listing(source.export_listing())
        state.keep_proofs(source.export_proofs())
    return snapshots


class Entry(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=False):
    """One session's entry, decoded as it is in the file (``n`` is the count). Untracked by the
    garbage collector: its fields are strings and an int, and a state holds one per session."""

    source: str
    target: str
    count: int = msgspec.field(name="n")
    sha256: str


class TargetProof(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A target listing's stamp and the ids whose entry's ``target`` was not that listing's
    revision: at an equal stamp every other entry's ``target`` is the current revision."""

    stamp: Stamp
    stale: list[str]


class SyncState:
    """One (target, source) pair's state file, kept in memory and written back whole."""

    def __init__(self, target: str, source: str) -> None:
        name = hashlib.sha256(f"{target}\n{source}".encode()).hexdigest()[:16]
        self.path = os.path.join(state_dir(), "dsh-query", f"sync-{name}.json")
        self.entries: dict[str, Entry] = {}
        # A jsonl: source's listed headers by transcript stat (JsonlBackend.export_listing):
        # the next run's listing reads no header whose transcript kept its stat.
        self.listing: Listing = []
        # And the directory proofs of its survey (JsonlBackend.export_proofs): the next survey
        # reads no directory whose stat is unchanged.
        self.proofs: KeptProofs | None = None
        self.target: TargetProof | None = None
        self.changed = False
        try:
            with open(self.path, "rb") as file:
                kept: _Kept = jsoncodec.decode(file.read(), _Kept)  # typed: checked in C
        except (OSError, ValueError, msgspec.ValidationError):
            return  # no usable state: everything is read
        self.entries = kept.sessions
        self.listing = kept.listing
        self.proofs = kept.proofs
        self.target = kept.target

    def get(self, session_id: str) -> Entry | None:
        return self.entries.get(session_id)

    def keep_listing(self, listing: Listing) -> None:
        if listing != self.listing:
            self.listing = listing
            self.changed = True

    def keep_proofs(self, proofs: KeptProofs) -> None:
        if proofs != self.proofs:
            self.proofs = proofs
            self.changed = True

    def put(self, session_id: str, entry: Entry) -> None:
        self.entries[session_id] = entry
        self.target = None  # proven against a listing taken before this entry
        self.changed = True

    def prove_target(self, stamp: Stamp | None, revisions: dict[str, str]) -> None:
        """Keeps ``stamp`` as the proof of every entry whose ``target`` is its revision in
        ``revisions``, the listing so stamped."""
        if stamp is None:
            proof = None
        else:
            stale = [k for k, e in self.entries.items() if revisions.get(k) != e.target]
            proof = TargetProof(stamp, stale)
        if proof != self.target:
            self.target = proof
            self.changed = True

    def proven_revisions(self, stamp: Stamp | None, ids: list[str]) -> dict[str, str] | None:
        """The target revisions of ``ids`` from the entries, when the kept proof's stamp is
        ``stamp`` (the target's now) and covers every one of them; else None (list it)."""
        proof = self.target
        if stamp is None or proof is None or proof.stamp != stamp:
            return None
        entries, stale = self.entries, set(proof.stale)
        revisions: dict[str, str] = {}
        for session_id in ids:
            entry = entries.get(session_id)
            if entry is None or session_id in stale:
                return None
            revisions[session_id] = entry.target
        return revisions

    def save(self) -> None:
        if not self.changed:
            return
        directory = os.path.dirname(self.path)
        make_private_dirs(directory)
        body = _Kept(1, self.entries, self.listing, self.proofs, self.target)
        fd, temporary = tempfile.mkstemp(prefix=".sync-", dir=directory)  # 0600
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(jsoncodec.dumps(body))
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
        self.changed = False


class TargetListing:
    """The cycle's target listing, read when a source first needs it (a source whose sessions
    the state proves unchanged needs none), then the same for every later source."""

    def __init__(self, target: PostgresBackend) -> None:
        self._target = target
        self._read: tuple[dict[str, str], Stamp | None] | None = None

    def revisions(self, state: SyncState) -> dict[str, str]:
        """The listing's revisions by id; they prove ``state``'s entries that they match (so
        the next run needs no listing where nothing changed since)."""
        if self._read is None:
            snapshots, stamp = self._target.stamped_listing()
            self._read = ({str(s.header.id): s.revision for s in snapshots}, stamp)
        revisions, stamp = self._read
        state.prove_target(stamp, revisions)
        return revisions


Listing = list[tuple[str, tuple[int, int, int, int, int], str, bool]]


class _Kept(msgspec.Struct, forbid_unknown_fields=False):
    """The state file: ``v`` 1, the sessions' entries, a jsonl: source's kept listing and
    directory proofs, the target proof."""

    v: int
    sessions: dict[str, Entry]
    listing: Listing = []
    proofs: KeptProofs | None = None
    target: TargetProof | None = None
