"""Listing and its memo (postgres.md §3.2): the sessions' headers and revisions at one snapshot,
kept per (epoch, store_id, deletions) and merged by ``change`` while only ``change_count`` grew."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import LiteralString

from ...cancel import CancelToken
from ..contract.results import Snapshot
from . import rows
from .connection import Conn, Pool
from .errors import PostgresUnavailableError
from .schema import StoreIdentity, qualified

_FETCH = 1000
_TOKEN: LiteralString = (
    "SELECT store_id::text, change_count, deletions,"
    " pg_catalog.pg_postmaster_start_time()::text FROM {s}.store"
)
_TOKEN_NAME = b"dsh_query_listing_token"  # prepared on each connection by Pool.probe
_SELECT: LiteralString = (
    "SELECT id, header, created_at, event_count, revision::text FROM {s}.sessions"
)

Key = tuple[str, str, int]  # (epoch, store_id, deletions)
# What names one listing (§3.2): the store's identity (its revisions' prefix), the epoch, store_id,
# deletions and change_count. Equal stamps, equal listings: the memo's proof, which sync's state
# keeps between processes (§6).
Stamp = tuple[str, str, str, int, int]


def revision_of(identity: StoreIdentity, count: int, revision: str) -> str:
    return f"{identity.prefix}:events:{count}:revision:{revision}"


@dataclass(frozen=True, slots=True)
class Listing:
    key: Key
    change_count: int
    snapshots: dict[str, Snapshot]
    ordered: tuple[Snapshot, ...]
    prefix: str = ""  # the store identity's (StoreIdentity.prefix)

    @property
    def stamp(self) -> Stamp:
        return (self.prefix, *self.key, self.change_count)


class Listings:
    """The current listing of one mount, through its memo (exact, §3.2)."""

    def __init__(
        self, pool: Pool, schema: str, open_store: Callable[[Conn], StoreIdentity | None]
    ) -> None:
        self._pool = pool
        self._schema = schema
        self._open = open_store
        self._memo: Listing | None = None
        self._token_text = qualified(self._schema, _TOKEN)

    def _token(self, conn: Conn) -> tuple[Key, int, str] | None:
        """The listing token: ((epoch, store_id, deletions), change_count, store_id)."""
        row = conn.execute(self._token_text).fetchone()
        if row is None:
            return None
        return (str(row[3]), str(row[0]), int(str(row[2]))), int(str(row[1])), str(row[0])

    def probed_token(self, token: CancelToken) -> tuple[Key, int] | None:
        """``_token``'s (key, change_count) read by ``Pool.probe`` (one prepared statement in
        autocommit, libpq's text values parsed as psycopg's loaders parse them); None for no
        row, or a value that is NULL (the transaction's ``_token`` then decides)."""
        row = self._pool.probe(_TOKEN_NAME, self._token_text, token)
        if row is None:
            return None
        store_id, change, deletions, epoch = row
        if store_id is None or change is None or deletions is None or epoch is None:
            return None
        return (epoch.decode(), store_id.decode(), int(deletions)), int(change)

    def current(self, opened: bool, token: CancelToken) -> Listing | None:
        """The listing at one snapshot; None for a store that lists nothing. While the memo is
        kept (and the store was ``opened``), the token is one statement on its own (no BEGIN or
        COMMIT): its snapshot shows the memo's token, so the listing at that snapshot is the
        memo. Any other answer reads in a REPEATABLE READ transaction."""
        old = self._memo
        if old is not None and opened:
            if self.probed_token(token) == (old.key, old.change_count):
                return old
        return self._pool.read(lambda conn: self._read(conn, token), token)

    def stamp(self, token: CancelToken) -> Stamp | None:
        """The current listing's stamp without the listing: the store opened (and refused) as
        for a listing, then the token, in one transaction; None for a store that lists
        nothing."""

        def work(conn: Conn) -> Stamp | None:
            identity = self._open(conn)
            found = None if identity is None else self._token(conn)
            if identity is None or found is None:
                return None
            key, change, store_id = found
            if store_id != identity.store_id:
                raise PostgresUnavailableError(
                    f'postgres schema "{self._schema}" changed under this mount; remount it'
                )
            return (identity.prefix, *key, change)

        return self._pool.read(work, token)

    def _read(self, conn: Conn, token: CancelToken) -> Listing | None:
        identity = self._open(conn)
        if identity is None:
            return None
        found_token = self._token(conn)
        if found_token is None:
            return None
        key, change, store_id = found_token
        if store_id != identity.store_id:
            raise PostgresUnavailableError(
                f'postgres schema "{self._schema}" changed under this mount; remount it'
            )
        old = self._memo
        if old is not None and old.key == key and old.change_count == change:
            return old
        if old is not None and old.key == key and old.change_count < change:
            found = dict(old.snapshots)
            cursor = conn.execute(
                qualified(self._schema, _SELECT + " WHERE change > %s"), (old.change_count,)
            )
        else:
            found = {}
            cursor = conn.execute(qualified(self._schema, _SELECT))
        while batch := cursor.fetchmany(_FETCH):
            token.raise_if_cancelled()
            for item in batch:
                snapshot = _snapshot(identity, item)
                found[snapshot.header.id] = snapshot
        ordered = tuple(found[k] for k in sorted(found))
        listing = Listing(key, change, found, ordered, identity.prefix)
        self._memo = listing
        return listing


def _snapshot(identity: StoreIdentity, row: tuple[object, ...]) -> Snapshot:
    session_id, text, created_at = str(row[0]), str(row[1]), row[2]
    header = rows.listed_header(session_id, text, created_at)
    return Snapshot(header, revision_of(identity, int(str(row[3])), str(row[4])))
