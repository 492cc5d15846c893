"""The ``postgres:`` persistence backend (postgres.md): persistence.md §2 on a shared database.

Reads see one snapshot each (REPEATABLE READ READ ONLY); appends lock the session row, so every
writer of an id on every machine is serialized and ``events[i].seq = stored count + i`` holds for
every committed batch (§3.6). Memos (the listing, verified log shapes) are exact: they are used
only when the rows read in the same transaction say nothing changed (§3.2, §3.4).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import LiteralString

from psycopg import errors as pg_errors

from ... import jsoncodec
from ...cancel import NULL_TOKEN, CancelToken
from ...model.event import Event, Header
from ...values import is_nonneg_safe_integer
from ..contract.errors import SessionPersistenceCorruptionError, SessionPersistenceReadOnlyError
from ..contract.results import (
    BulkResult,
    Digest,
    Inspection,
    Payloads,
    Snapshot,
    StoredLog,
    Window,
)
from ..logical import legacy
from ..logical import log as logical
from ..logical.memo import VerificationMemo
from . import bulk, rows, schema, writes
from .connection import Conn, Pool
from .conninfo import PgMount, parse_postgres_uri
from .errors import PostgresUnavailableError
from .listener import ListenerSlot
from .listing import Listings, Stamp, revision_of
from .schema import StoreIdentity, StoreRefused

log = logging.getLogger(__name__)

_FETCH = 1000
_STREAM_MEMO = 256


def _kept(found: Iterator[rows.Record], into: list[rows.Record]) -> Iterator[rows.Record]:
    """The rows of ``found``, each also kept in ``into`` as it is taken."""
    for row in found:
        into.append(row)
        yield row


@dataclass(frozen=True, slots=True)
class _Session:
    pk: int
    header: Header
    count: int
    revision: str  # the qualified revision string
    epoch: str


def _not_found(session_id: str) -> LookupError:
    return LookupError(f'session "{session_id}" not found')


class PostgresBackend:
    """postgres.md. Synchronous and thread-safe; blocking work runs in the caller's thread."""

    cheap_windows = True

    def __init__(self, mount: PgMount) -> None:
        self._mount = mount
        self._pool = Pool(mount)
        self._instance = str(uuid.uuid4())
        self._writer = f"{mount.application_name} {self._instance}"
        self._identity: StoreIdentity | None = None
        self._created: dict[str, str] = {}  # id -> header text, for the first append
        self._lock = threading.Lock()
        self._id_locks: dict[str, threading.Lock] = {}
        self._listings = Listings(self._pool, mount.schema, self._open)  # §3.2
        self.listener = ListenerSlot(mount, self._instance, self._writer)  # §5, server-driven
        # What full reads proved (memo.py): the shape per (pk, epoch, revision), and the streamed
        # scan state per (pk, epoch, count), which later rows, being immutable, only extend.
        self._shapes: VerificationMemo[logical.LogShape] = VerificationMemo()
        self._streams: OrderedDict[str, tuple[str, int, logical.StreamedLog]] = OrderedDict()
        if mount.unauthenticated_tls_hosts():
            log.warning(
                "postgres mount %s does not authenticate the server (sslmode=%s);"
                " set sslmode=verify-full",
                mount.redacted,
                mount.libpq.get("sslmode", "prefer"),
            )

    @property
    def uri(self) -> str:
        return self._mount.redacted

    @property
    def writable(self) -> bool:
        return not self._mount.read_only

    def status(self) -> dict[str, object]:
        """The ``postgres`` entry of this member's status (§1.4)."""
        entry: dict[str, object] = {"reachable": self._pool.reachable}
        entry["notifications"] = self.listener.state  # §5
        if self._pool.last_error is not None:
            entry["lastError"] = self._pool.last_error
        return entry

    def close(self) -> None:
        self.listener.stop(wait=5)
        self._pool.close()

    # -- the store ---------------------------------------------------------------------

    def _q(self, text: LiteralString) -> bytes:
        return schema.qualified(self._mount.schema, text)

    def _refused(self, exc: StoreRefused) -> PostgresUnavailableError:
        message = self._pool.scrub(str(exc))
        self._pool.last_error = message
        return PostgresUnavailableError(message)

    def _open(self, conn: Conn) -> StoreIdentity | None:
        """§2.4 steps 1–7 once per instance; an uninitialized store is probed on every read."""
        if self._identity is not None:
            return self._identity
        try:
            schema.check_encoding(conn)
            identity = schema.check_store(conn, self._mount.schema)
        except StoreRefused as exc:
            raise self._refused(exc) from None
        self._identity = identity
        return identity

    def _epoch(self, conn: Conn) -> str:
        row = conn.execute("SELECT pg_catalog.pg_postmaster_start_time()::text").fetchone()
        assert row is not None
        return f"{self._identity.system_identifier if self._identity else 0}:{row[0]}"

    # -- reading -----------------------------------------------------------------------

    def _session(self, conn: Conn, identity: StoreIdentity, session_id: str) -> _Session | None:
        row = conn.execute(
            self._q(
                "SELECT pk, header, created_at, event_count, revision::text,"
                " pg_catalog.pg_postmaster_start_time()::text FROM {s}.sessions WHERE id = %s"
            ),
            (session_id,),
        ).fetchone()
        return None if row is None else self._session_of(identity, session_id, row)

    def _session_of(
        self, identity: StoreIdentity, session_id: str, row: Sequence[object]
    ) -> _Session:
        """A session row (pk, header, created_at, event_count, revision, epoch start)."""
        pk, text, created_at, count, revision, started = row[:6]
        header = rows.decode_header(session_id, str(text), created_at)
        count = int(str(count))
        revision = revision_of(identity, count, str(revision))
        return _Session(
            int(str(pk)), header, count, revision, f"{identity.system_identifier}:{started}"
        )

    def _stream(
        self, conn: Conn, session: _Session, token: CancelToken, start: int = 0
    ) -> Generator[rows.Record]:
        """The session's rows from ``start`` on, fetched as the caller takes them: the first
        ``_FETCH`` in one plain query (most logs fit, and a cursor would cost three more round
        trips), the rest through a server-side cursor; the token is checked between fetches.
        After each fetch's rows were taken (decoded: the decode is the longer part on a near
        server), a request reading this one log is told the seq reached of the session's count
        (``reading 2,048 of 9,000 events``, query/loading.py ``metered``). The caller closes it
        (``closing``) inside its transaction, which the cursor belongs to."""
        meter, count = token.reading_items, session.count
        found = conn.execute(
            self._q(
                "SELECT seq, last_seq, record FROM {s}.events WHERE session_pk = %s AND seq >= %s"
                " ORDER BY seq LIMIT %s"
            ),
            (session.pk, start, _FETCH),
        ).fetchall()
        batch = [(int(str(a)), int(str(b)), str(c)) for a, b, c in found]
        yield from batch
        if meter is not None and batch:
            meter(min(batch[-1][1] + 1, count), count, "events")
        if len(batch) < _FETCH:
            return
        with conn.cursor(name="dsh_query_rows") as cursor:
            cursor.execute(
                self._q(
                    "SELECT seq, last_seq, record FROM {s}.events WHERE session_pk = %s AND seq > %s"
                    " ORDER BY seq"
                ),
                (session.pk, batch[-1][0]),
            )
            while True:
                token.raise_if_cancelled()
                batch = [(int(str(a)), int(str(b)), str(c)) for a, b, c in cursor.fetchmany(_FETCH)]
                yield from batch
                if meter is not None and batch:
                    meter(min(batch[-1][1] + 1, count), count, "events")
                if len(batch) < _FETCH:
                    return

    def _read(self, session_id: str, token: CancelToken) -> tuple[_Session, list[Event]]:
        def work(conn: Conn) -> tuple[_Session, list[Event]]:
            identity = self._open(conn)
            session = None if identity is None else self._session(conn, identity, session_id)
            if session is None:
                raise _not_found(session_id)
            with closing(self._stream(conn, session, token)) as found:
                return session, list(rows.decode_rows(found, session.count))

        return self._pool.read(work, token)

    def read_stored(self, session_id: str, token: CancelToken = NULL_TOKEN) -> StoredLog:
        """Steps 1–4 of §3.3: the stored log exactly, never torn."""
        session, events = self._read(session_id, token)
        return StoredLog(session.header, events, False, session.revision)

    def inspect(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Inspection:
        session, events = self._read(session_id, token)
        logical_events, shape = logical.verified_log(session_id, events)
        self._shapes.put(session_id, self._memo_key(session), shape)
        return Inspection(session.header, logical_events)

    def inspect_many(
        self,
        session_ids: Sequence[str],
        limit: int,
        token: CancelToken = NULL_TOKEN,
        payloads: Payloads = None,
        digest: Digest | None = None,
    ) -> Iterator[tuple[str, BulkResult]]:
        """``inspect`` of many ids in one transaction per chunk (bulk.py); every event whole
        (``payloads`` allows outlines, never asks for them), none digested (no worker)."""
        del payloads, digest
        source = bulk.Source(self._pool, self._mount.schema, self._open)
        return bulk.inspect_many(source, session_ids, limit, token)

    def inspect_window(
        self, session_id: str, first: int, last: int, token: CancelToken = NULL_TOKEN
    ) -> Window:
        """§3.4: ``inspect`` sliced, reading only the window's rows once the log was verified
        at its current revision; otherwise verified whole, streamed, keeping the window.
        First as one statement (``_fast_window``), then in a transaction (``_window_read``)."""
        fast = self._fast_window(session_id, first, last, token)
        return fast if fast is not None else self._window_read(session_id, first, last, token)

    def _window_read(self, session_id: str, first: int, last: int, token: CancelToken) -> Window:
        """§3.4 in one REPEATABLE READ transaction."""

        def work(conn: Conn) -> tuple[Header, list[Event], logical.LogShape]:
            identity = self._open(conn)
            session = None if identity is None else self._session(conn, identity, session_id)
            if session is None:
                raise _not_found(session_id)
            known = self._shapes.get(session_id, self._memo_key(session))
            if known is not None:
                events = self._known_window(conn, session, known, first, last)
                if events is not None:
                    return session.header, events, known
            shape = self._extend(conn, session, token)
            if shape is not None:
                events = self._known_window(conn, session, shape, first, last)
                if events is not None:
                    return session.header, events, shape
            events, shape = self._verify_window(conn, session, first, last, token)
            self._shapes.put(session_id, self._memo_key(session), shape)
            return session.header, events, shape

        header, events, shape = self._pool.read(work, token)
        return Window(header, shape.length, first, events, shape.title)

    def _fast_window(
        self, session_id: str, first: int, last: int, token: CancelToken
    ) -> Window | None:
        """§3.4 in one statement on its own (one snapshot, no BEGIN or COMMIT): the session row
        joined with the rows ``_known_window`` reads for it. It answers only when the row's memo
        key has a verified shape and the rows cover the window, which is then exactly what the
        transaction would give at that snapshot; otherwise None (the transaction runs)."""
        identity = self._identity
        if identity is None or self._shapes.get_any(session_id) is None:
            return None
        found = self._pool.statement(
            lambda conn: conn.execute(
                self._q(
                    "SELECT s.pk, s.header, s.created_at, s.event_count, s.revision::text,"
                    " pg_catalog.pg_postmaster_start_time()::text, e.seq, e.last_seq, e.record"
                    " FROM {s}.sessions s LEFT JOIN LATERAL (SELECT seq, last_seq, record"
                    " FROM {s}.events WHERE session_pk = s.pk"
                    " AND seq <= LEAST(%(last)s, s.event_count - 1)"
                    " AND seq >= (SELECT coalesce(max(seq), 0) FROM {s}.events"
                    " WHERE session_pk = s.pk AND seq <= %(first)s)) e ON true"
                    " WHERE s.id = %(id)s ORDER BY e.seq"
                ),
                {"id": session_id, "first": first, "last": last},
            ).fetchall(),
            token,
        )
        if not found:
            return None
        try:
            session = self._session_of(identity, session_id, found[0])
        except Exception:  # noqa: BLE001 - the transaction reports it
            return None
        shape = self._shapes.get(session_id, self._memo_key(session))
        if shape is None:
            return None
        lo, hi = logical.stored_span(shape, first, last)
        stored: list[Event] = []
        try:
            if lo <= hi:
                stored = rows.span_events([r[6:] for r in found if r[6] is not None], lo, hi)
            events = logical.logical_window(session_id, shape, stored, first, last)
        except (SessionPersistenceCorruptionError, legacy.StaleShape):
            return None
        return Window(session.header, shape.length, first, events, shape.title)

    def _known_window(
        self, conn: Conn, session: _Session, shape: logical.LogShape, first: int, last: int
    ) -> list[Event] | None:
        lo, hi = logical.stored_span(shape, first, last)
        stored: list[Event] = []
        if lo <= hi:
            found = conn.execute(
                self._q(
                    "SELECT seq, last_seq, record FROM {s}.events WHERE session_pk = %(pk)s"
                    " AND seq <= %(hi)s AND seq >= (SELECT coalesce(max(seq), 0) FROM {s}.events"
                    " WHERE session_pk = %(pk)s AND seq <= %(lo)s) ORDER BY seq"
                ),
                {"pk": session.pk, "lo": lo, "hi": hi},
            ).fetchall()
            try:
                stored = rows.span_events(found, lo, hi)
            except SessionPersistenceCorruptionError:
                return None
        try:
            return logical.logical_window(session.header.id, shape, stored, first, last)
        except legacy.StaleShape:
            return None

    @staticmethod
    def _memo_key(session: _Session) -> str:
        return f"{session.pk}:{session.epoch}:{session.revision}"

    def _extend(self, conn: Conn, session: _Session, token: CancelToken) -> logical.LogShape | None:
        """The shape at the current count from the scan state of a log verified at a lower
        count: only the rows from there on are read and validated (§3.4). None when there is
        no such state (then the log is verified whole)."""
        session_id = session.header.id
        with self._lock:
            entry = self._streams.pop(session_id, None)  # owned by this read while it extends
        if entry is None or entry[0] != f"{session.pk}:{session.epoch}" or entry[1] > session.count:
            return None
        state = entry[2]
        try:
            with closing(self._stream(conn, session, token, entry[1])) as found:
                for event in rows.decode_rows(found, session.count, entry[1]):
                    state.append(event)
        except legacy.NeedsHistory:
            return None
        _, shape = state.finish()
        self._keep_stream(session, state)
        self._shapes.put(session_id, self._memo_key(session), shape)
        return shape

    def _keep_stream(self, session: _Session, state: logical.StreamedLog) -> None:
        with self._lock:
            self._streams[session.header.id] = (
                f"{session.pk}:{session.epoch}",
                session.count,
                state,
            )
            self._streams.move_to_end(session.header.id)
            while len(self._streams) > _STREAM_MEMO:
                self._streams.popitem(last=False)

    def _verify_window(
        self, conn: Conn, session: _Session, first: int, last: int, token: CancelToken
    ) -> tuple[list[Event], logical.LogShape]:
        """The whole log verified as ``inspect`` does, streamed: the scan keeps no window (its
        state is kept to be extended later), the window's stored events are kept aside."""
        session_id = session.header.id
        streamed = logical.StreamedLog(session_id, -1, -1)
        stored: list[Event] = []
        records: list[rows.Record] = []  # every row taken, for a log that needs its history
        with closing(self._stream(conn, session, token)) as found:
            try:
                for event in rows.decode_rows(_kept(found, records), session.count):
                    streamed.append(event)
                    if first <= event.seq <= last:
                        stored.append(event)
            except legacy.NeedsHistory:
                records.extend(found)  # the rows not taken yet
                events = list(rows.decode_rows(records, session.count))
                whole, shape = logical.verified_log(session_id, events)
                return whole[first : last + 1], shape
        _, shape = streamed.finish()
        hi = logical.stored_span(shape, first, last)[1]
        window = logical.logical_window(
            session_id, shape, [e for e in stored if e.seq <= hi], first, last
        )
        self._keep_stream(session, streamed)
        return window, shape

    def revision(self, session_id: str) -> str | None:
        """The session's current revision in one statement, or None when it is not stored."""

        def work(conn: Conn) -> str | None:
            identity = self._open(conn)
            if identity is None:
                return None
            row = conn.execute(
                self._q("SELECT event_count, revision::text FROM {s}.sessions WHERE id = %s"),
                (session_id,),
            ).fetchone()
            return None if row is None else revision_of(identity, int(str(row[0])), str(row[1]))

        return self._pool.read(work)

    def stored_count(self, session_id: str) -> int | None:
        """``event_count``, in one statement once the store was opened (§3.1)."""

        def count(conn: Conn) -> int | None:
            row = conn.execute(
                self._q("SELECT event_count FROM {s}.sessions WHERE id = %s"), (session_id,)
            ).fetchone()
            return None if row is None else int(str(row[0]))

        if self._identity is not None:
            return self._pool.statement(count)

        def work(conn: Conn) -> int | None:
            return None if self._open(conn) is None else count(conn)

        return self._pool.read(work)

    # -- listing (listing.py) -----------------------------------------------------------

    def list_snapshots(self, token: CancelToken = NULL_TOKEN) -> tuple[Snapshot, ...]:
        listing = self._listings.current(self._identity is not None, token)
        return () if listing is None else listing.ordered

    def list(self, token: CancelToken = NULL_TOKEN) -> list[Header]:
        return [snapshot.header for snapshot in self.list_snapshots(token)]

    def list_one(self, session_id: str, token: CancelToken = NULL_TOKEN) -> Header | None:
        """base.ListedLookup: the header ``list`` lists for the id, from the same listing read
        (so with its failures), without copying the listing."""
        listing = self._listings.current(self._identity is not None, token)
        found = None if listing is None else listing.snapshots.get(session_id)
        return None if found is None else found.header

    def listing_stamp(self, token: CancelToken = NULL_TOKEN) -> Stamp | None:
        """What names the current listing (listing.py ``Stamp``), read without it: sync keeps
        one as the proof that the target is as it last listed it (§6)."""
        return self._listings.stamp(token)

    def stamped_listing(
        self, token: CancelToken = NULL_TOKEN
    ) -> tuple[tuple[Snapshot, ...], Stamp | None]:
        """``list_snapshots`` with the stamp of that very listing."""
        listing = self._listings.current(self._identity is not None, token)
        return ((), None) if listing is None else (listing.ordered, listing.stamp)

    # -- writing -----------------------------------------------------------------------

    def _require_writable(self) -> None:
        if self._mount.read_only:
            raise SessionPersistenceReadOnlyError(
                f"persistence backend {self.uri} is mounted read-only"
            )

    def create(self, header: Header) -> None:
        """§3.5: remember the header; nothing is written until the first append."""
        self._require_writable()
        session_id = header.id
        if not isinstance(session_id, str):
            raise ValueError("cannot store the session header: id must be a string")
        if not is_nonneg_safe_integer(header.created_at):
            raise ValueError(
                "cannot store the session header: createdAt must be a non-negative safe integer"
            )
        problem = rows.id_problem(session_id)
        if problem is not None:
            raise ValueError(
                f"session id {jsoncodec.dumps(session_id).decode()} cannot be stored"
                f" in postgres: {problem}"
            )
        text = rows.header_text(header)
        with self._lock:
            if session_id in self._created:
                raise ValueError(f'session "{session_id}" already exists in this backend')
        if self.stored_count(session_id) is not None:
            raise ValueError(
                f'session "{session_id}" already has a persisted log on disk;'
                " load/resume it instead of creating"
            )
        with self._lock:
            if session_id in self._created:
                raise ValueError(f'session "{session_id}" already exists in this backend')
            self._created[session_id] = text

    def _id_lock(self, session_id: str) -> threading.Lock:
        with self._lock:
            return self._id_locks.setdefault(session_id, threading.Lock())

    def _initialize(self) -> StoreIdentity:
        """§2.4 initialization, for a writable mount's first materializing append."""

        def work(conn: Conn) -> StoreIdentity:
            try:
                schema.check_encoding(conn)
                return schema.initialize(conn, self._mount.schema)
            except StoreRefused as exc:
                raise self._refused(exc) from None
            except pg_errors.InsufficientPrivilege as exc:
                raise PostgresUnavailableError(
                    self._pool.scrub(
                        f'postgres role "{self._pool.user}" may not create schema'
                        f' "{self._mount.schema}": {str(exc).strip()}; ask an administrator to run'
                        ' "dsh-query postgres init"'
                    )
                ) from None

        identity = self._pool.write(work)
        self._identity = identity
        return identity

    def _batch_context(self, identity: StoreIdentity) -> writes.BatchContext:
        return writes.BatchContext(
            self._q, self._mount.schema, identity, self._instance, self._writer, self._created
        )

    def append(self, session_id: str, events: list[Event]) -> None:
        """§3.6: one batch, atomically after the stored log, or a conflict."""
        self._require_writable()
        if not events:
            return
        first = rows.batch_start(session_id, events)
        records = rows.encode_batch(events)
        count = first + len(events)
        with self._id_lock(session_id):
            identity = self._identity or self._pool.read(self._open)
            if identity is None:
                if session_id not in self._created:
                    raise _not_found(session_id)
                identity = self._initialize()
            self._pool.write(
                lambda conn: writes.append_batch(
                    conn, self._batch_context(identity), session_id, first, count, records
                ),
                in_doubt=f'postgres commit of session "{session_id}" append at seq {first} is in'
                " doubt",
            )

    def append_group(self, group: list[writes.Write]) -> None:
        """Several sessions' batches in one transaction, or one packed batch of any session
        (``sync``, postgres.md §6)."""
        self._require_writable()
        if not group:
            return
        identity = self._identity or self._pool.read(self._open)
        if identity is None:
            for write in group:
                if write.header is None and write.session_id not in self._created:
                    raise _not_found(write.session_id)
            identity = self._initialize()
        first = group[0]
        in_doubt = (
            f'postgres commit of session "{first.session_id}" append at seq {first.first} is in'
            " doubt"
            if len(group) == 1
            else f"postgres commit of {len(group)} sessions' appends is in doubt"
        )
        self._pool.write(
            lambda conn: writes.append_group(conn, self._batch_context(identity), group),
            in_doubt=in_doubt,
        )


def open_postgres(uri: str) -> PostgresBackend:
    """Mount without a round trip (§1.4): a database that is down fails operations, not this."""
    return PostgresBackend(parse_postgres_uri(uri))
