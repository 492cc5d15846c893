"""Several persistence members mounted as one binding (importers.md §4.1), and the member list of
``auto`` (§4.2). The server parses ``persistence`` arrays and ``"auto"`` and mounts the result;
this module only composes backends."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from ... import errors, jsoncodec
from ...cancel import NULL_TOKEN, CancelToken
from ...errors import QueryError
from ...model.event import Event, Header
from ...resolve import auto_uris
from ..contract.backend import PersistenceBackend
from ..contract.capabilities import Capabilities, RawArtifactReader
from ..contract.errors import SessionPersistenceReadOnlyError, SessionRawArtifactsUnsupportedError
from ..contract.results import (
    BulkResult,
    Digest,
    Inspection,
    Payloads,
    SessionLocation,
    SessionRawArtifact,
    SkippedArtifact,
    Snapshot,
    Window,
)
from .uri import open_backend, parse_uri

# importers.md §4.1: room for auto's nine members (§4.2) and a team's own stores.
MAX_MEMBERS = 16


class CompositeError(Exception):
    """A plain failure of the composite (PERSISTENCE_FAILED on the wire)."""


class CompositeBackend:
    """Members in order, one identity. Reads go to the member that listed the id; writes go to
    the first writable member, which refuses an id another member already lists."""

    def __init__(self, members: Sequence[PersistenceBackend], uri: str) -> None:
        if not 1 <= len(members) <= MAX_MEMBERS:
            raise ValueError(f"a composite has 1 to {MAX_MEMBERS} members, got {len(members)}")
        self.members = list(members)
        self._uri = uri
        self._lock = threading.Lock()
        self._owner: dict[str, int] = {}  # id -> member, from the latest successful listing
        self._target = next((i for i, m in enumerate(self.members) if m.writable), None)
        self._caps = [Capabilities.of(m) for m in self.members]  # resolved once, at mount
        self._raw = [caps.raw for caps in self._caps]  # tools.md §2.1

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def writable(self) -> bool:
        return self._target is not None

    def _each(
        self, token: CancelToken, call: Callable[[PersistenceBackend], list[Header]]
    ) -> list[tuple[int, Header]]:
        out: list[tuple[int, Header]] = []
        count = token.listing
        for i, member in enumerate(self.members):
            token.raise_if_cancelled()
            if count is not None:  # each member lists its share of the progress
                count.part(i, len(self.members))
            out.extend((i, h) for h in call(member))
        return out

    def _record(self, listed: list[tuple[int, str]]) -> None:
        owner: dict[str, int] = {}
        for i, sid in listed:
            if sid in owner:
                raise CompositeError(
                    f'persistence members {owner[sid]} and {i} both list session "{sid}"'
                )
            owner[sid] = i
        with self._lock:
            self._owner = owner

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        token = token or NULL_TOKEN  # callers of the older contract pass None
        pairs = self._each(token, lambda m: m.list(token))
        self._record([(i, str(h.id)) for i, h in pairs])
        return [h for _, h in pairs]

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        return self._snapshots(token or NULL_TOKEN, lambda i: self.members[i].list_snapshots)

    def _snapshots(
        self,
        token: CancelToken,
        lister: Callable[[int], Callable[[CancelToken], Sequence[Snapshot]]],
    ) -> list[Snapshot]:
        """Each member's snapshots (``lister(i)`` lists member i's), each revision named by its
        member's index."""
        out: list[tuple[int, Snapshot]] = []
        count = token.listing
        for i in range(len(self.members)):
            token.raise_if_cancelled()
            if count is not None:
                count.part(i, len(self.members))
            out.extend((i, s) for s in lister(i)(token))
        self._record([(i, str(s.header.id)) for i, s in out])
        return [Snapshot(s.header, f"{i}/{s.revision}") for i, s in out]

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """ListedLookup: the header ``list`` lists for the id, from each member's point lookup
        (or its listing searched, for a member without one); two members holding it fail as the
        listing does. The member found is remembered as the id's owner, as a listing would."""
        token = token or NULL_TOKEN
        found: tuple[int, Header] | None = None
        for i, member in enumerate(self.members):
            token.raise_if_cancelled()
            lookup = self._caps[i].listed
            if lookup is not None:
                header = lookup.list_one(session_id, token)
            else:
                header = next((h for h in member.list(token) if h.id == session_id), None)
            if header is None:
                continue
            if found is not None:
                raise CompositeError(
                    f'persistence members {found[0]} and {i} both list session "{session_id}"'
                )
            found = (i, header)
        if found is None:
            return None
        with self._lock:
            self._owner[session_id] = found[0]
        return found[1]

    def _owner_of(self, session_id: str, token: CancelToken) -> int | None:
        return self._owners([session_id], token)[0]

    def _owners(self, session_ids: Sequence[str], token: CancelToken) -> list[int | None]:
        """The member that lists each id, by the last listing; one new listing when it did not
        list them all."""
        with self._lock:
            known = self._owner
        if any(sid not in known for sid in session_ids):
            self.list(token)
            with self._lock:
                known = self._owner
        return [known.get(sid) for sid in session_ids]

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        token = token or NULL_TOKEN
        owner = self._owner_of(session_id, token)
        if owner is None:
            raise CompositeError(f'session "{session_id}" not found')
        return self.members[owner].inspect(session_id, token)

    def inspect_many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken = NULL_TOKEN,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[tuple[str, BulkResult]]:
        """base.BulkInspector: each run of consecutive ids one member owns goes to that member's
        bulk read; an id of a member without one, or that no member lists, is left to the caller
        (None), whose ``inspect`` then answers it exactly as before."""
        owners = self._owners(session_ids, token)
        start = 0
        while start < len(session_ids):
            owner, end = owners[start], start + 1
            while end < len(session_ids) and owners[end] == owner:
                end += 1
            reader = None if owner is None else self._caps[owner].bulk
            if reader is None:
                for sid in session_ids[start:end]:
                    yield sid, None
            else:
                yield from reader.inspect_many(
                    session_ids[start:end], limit, token, payloads, digest
                )
            start = end

    def read_shapes(
        self, session_ids: Sequence[str], token: CancelToken = NULL_TOKEN
    ) -> Iterator[str]:
        """capabilities.ShapeReader: each member's ids to its own; an id of a member without
        one, or that no member lists, is left to the caller."""
        owners = self._owners(session_ids, token)
        for i, caps in enumerate(self._caps):
            mine = [sid for sid, owner in zip(session_ids, owners, strict=True) if owner == i]
            if mine and caps.shapes is not None:
                yield from caps.shapes.read_shapes(mine, token)

    def prepare_bulk(self) -> None:
        """BulkPreparer: every member that prepares, in order (they share one worker)."""
        for caps in self._caps:
            if caps.prepare is not None:
                caps.prepare.prepare_bulk()

    def skipped_artifacts(self) -> list[SkippedArtifact]:
        """SkippedReporter: every member's, in member order."""
        return [a for caps in self._caps if caps.skipped for a in caps.skipped.skipped_artifacts()]

    @property
    def supports_raw_artifacts(self) -> bool:
        return any(reader is not None for reader in self._raw)

    def locate(self, header: Header) -> SessionLocation | None:
        return None  # tools.md §2.1: a composite names no single location

    def read_raw(
        self, session_id: str, token: CancelToken = NULL_TOKEN
    ) -> SessionRawArtifact | None:
        """Delegated to the member that lists the id (tools.md §2.1); a member without raw
        artifacts raises the unsupported error, so export writes its logical log."""
        token.raise_if_cancelled()
        owner = self._owner_of(session_id, token)
        if owner is None:
            return None
        reader = self._raw[owner]
        if reader is None:
            raise SessionRawArtifactsUnsupportedError
        return reader.read_raw(session_id, token)

    @property
    def cheap_windows(self) -> bool:
        return all(caps.cheap_windows for caps in self._caps)

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """The owner's window read, or the slice of its ``inspect`` when it has none."""
        owner = self._owner_of(session_id, token)
        if owner is None:
            raise CompositeError(f'session "{session_id}" not found')
        windows = self._caps[owner].windows
        if windows is not None:
            window = windows.inspect_window(session_id, first, last, token)
            if window.revision is None:
                return window
            return replace(window, revision=f"{owner}/{window.revision}")  # as listed
        ins = self.members[owner].inspect(session_id, token)
        n = len(ins.events)
        lo = min(max(first, 0), n)
        events = ins.events[lo : max(lo, min(last, n - 1) + 1)]
        title = next((e.seq for e in reversed(ins.events) if e.type == "session/title"), None)
        return Window(ins.meta, n, lo, events, title)

    def _writer(self) -> PersistenceBackend:
        if self._target is None:
            raise SessionPersistenceReadOnlyError(f'persistence backend "{self.uri}" is read-only')
        return self.members[self._target]

    def create(self, header: Header) -> None:
        writer = self._writer()
        sid = str(header.id)
        owner = self._owner_of(sid, NULL_TOKEN)
        if owner is not None and owner != self._target:
            raise CompositeError(f'session "{sid}" is already stored by persistence member {owner}')
        writer.create(header)

    def append(self, session_id: str, events: list[Event]) -> None:
        self._writer().append(session_id, events)

    def stored_count(self, session_id: str) -> int | None:
        if self._target is None:
            return None
        return self.members[self._target].stored_count(session_id)

    def close(self) -> None:
        for member in self.members:
            member.close()


class ListingComposite(CompositeBackend):
    """A composite whose every member lists revisions with its headers (ListedRevisions): so
    does the composite, as ``list_snapshots`` names them, and its title reads are remembered
    (query/titlememo.py). A member without it would make the call cost more than ``list``."""

    def __init__(self, members: Sequence[PersistenceBackend], uri: str) -> None:
        super().__init__(members, uri)
        listers = [caps.revisions for caps in self._caps]
        self._listers = [r for r in listers if r is not None]
        if len(self._listers) != len(listers):
            raise ValueError("every member of a ListingComposite lists revisions")

    def list_revisions(self, token: CancelToken = NULL_TOKEN) -> list[Snapshot]:
        return self._snapshots(token or NULL_TOKEN, lambda i: self._listers[i].list_revisions)


def composite(members: Sequence[PersistenceBackend], uri: str) -> CompositeBackend:
    """The members as one backend, listing revisions when every member does."""
    if all(Capabilities.of(m).revisions is not None for m in members):
        return ListingComposite(members, uri)
    return CompositeBackend(members, uri)


def open_composite(
    uris: Sequence[str], uri: str, open_member: Callable[[str], PersistenceBackend]
) -> CompositeBackend:
    """Open every member or none (§4.1: mounting is atomic)."""
    opened: list[PersistenceBackend] = []
    try:
        for member in uris:
            opened.append(open_member(member))
        return composite(opened, uri)
    except BaseException:
        for backend in opened:
            backend.close()
        raise


def _invalid(detail: str) -> QueryError:
    return QueryError(errors.INVALID_CONFIG, f"session-query: {detail}")


def persistence_members(value: object, embedded: str, env: Mapping[str, str]) -> list[str]:
    """§4.3: the member URIs of a ``persistence`` value (``"auto"``, one URI or an array of 1-16
    distinct URIs without ``"auto"``); a bad shape or member is INVALID_CONFIG."""
    if value == "auto":
        return auto_uris(embedded, env)
    if isinstance(value, str):
        parse_uri(value)
        return [value]
    members = cast(list[object], value) if isinstance(value, list) else None
    if members is None or not 1 <= len(members) <= MAX_MEMBERS:
        raise _invalid(f'persistence must be "auto", a URI or an array of 1 to {MAX_MEMBERS} URIs')
    uris: list[str] = []
    for member in members:
        if not isinstance(member, str) or member == "auto":
            raise _invalid('persistence array members must be URIs (not "auto")')
        if member in uris:
            raise _invalid(f'persistence array repeats "{member}"')
        parse_uri(member)
        uris.append(member)
    return uris


def open_persistence(
    value: object, embedded: str, env: Mapping[str, str]
) -> PersistenceBackend | CompositeBackend:
    """Mount a ``persistence`` value: one URI as itself, ``"auto"`` or an array as a composite
    whose ``uri`` is ``"auto"`` or the array's compact JSON (what the default index hashes)."""
    uris = persistence_members(value, embedded, env)
    if isinstance(value, str) and value != "auto":
        return open_backend(value)
    text = "auto" if value == "auto" else jsoncodec.dumps(uris).decode("utf-8")
    return open_composite(uris, text, open_backend)


if TYPE_CHECKING:  # the contract (persistence/contract/), checked by pyright
    _raw: type[RawArtifactReader] = CompositeBackend
