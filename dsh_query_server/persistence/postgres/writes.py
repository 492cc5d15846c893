"""Appends of the ``postgres:`` backend (postgres.md §3.6): one batch in one READ COMMITTED
transaction that re-checks the store, locks the session row, checks the count, materializes a
created session atomically with its first batch, copies the rows and notifies before COMMIT.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import LiteralString

from psycopg import errors as pg_errors

from ... import jsoncodec
from ...model.event import Header
from ..contract.errors import SessionPersistenceCorruptionError
from . import rows, schema
from .connection import Conn
from .errors import PostgresUnavailableError, SessionAppendConflictError
from .schema import StoreIdentity

MAX_NOTIFY_BYTES = 7999


@dataclass(frozen=True, slots=True)
class BatchContext:
    """What an append needs from its backend."""

    q: Callable[[LiteralString], bytes]  # qualifies {s} with the schema (schema.qualified)
    schema: str
    identity: StoreIdentity
    instance: str  # the writer's instance uuid
    writer: str  # '<applicationName> <instance uuid>'
    created: dict[str, str]  # id -> header text of sessions created here, not yet stored


@dataclass(frozen=True, slots=True)
class Write:
    """One session's batch in a group (``append_group``): ``header`` is the header text that
    materializes a session absent from the store (None: it must exist)."""

    session_id: str
    first: int
    count: int
    records: list[rows.Record]
    header: str | None


def append_group(conn: Conn, ctx: BatchContext, group: list[Write]) -> None:
    """Several new sessions' first batches in the caller's one transaction (``sync``'s batches
    of at most 1,000 events or 8 MiB, postgres.md §6), set-based: §3.6 (1) and every (3) in one
    round trip, one COPY (4), and (5)-(6) in one statement that gives each session its own
    change. A session another writer stored meanwhile is a ``SessionAppendConflictError`` that
    rolls the whole group back (the caller redoes it one session at a time). A group of one
    write without a header is one batch of §3.6 exactly (``sync`` packs a long log's next batch
    while this one commits)."""
    if len(group) == 1 and group[0].header is None:
        one = group[0]
        append_batch(conn, ctx, one.session_id, one.first, one.count, one.records)
        return
    # The text arrays go as %b (binary): the text format quotes each JSON text with a regex.
    revisions = [str(uuid.uuid4()) for _ in group]
    with conn.pipeline():  # (1) and the (3)s in one round trip
        store = conn.execute(
            ctx.q("SELECT application, schema_version, store_id::text FROM {s}.store")
        )
        inserted = conn.execute(
            ctx.q(
                "INSERT INTO {s}.sessions (id, header, created_at, event_count, revision, change,"
                " written_at, writer) SELECT w.id, w.header, w.created_at, w.count, w.revision,"
                " 0, now(), %s FROM unnest(%b::text[], %b::text[], %s::bigint[], %s::bigint[],"
                " %s::uuid[]) AS w(id, header, created_at, count, revision)"
                " ON CONFLICT (id) DO NOTHING RETURNING id, pk"
            ),
            (
                ctx.writer,
                [w.session_id for w in group],
                [w.header for w in group],
                [_created_at(w) for w in group],
                [w.count for w in group],
                revisions,
            ),
        )
    _check_store(ctx, store.fetchone())
    pks = {str(row[0]): int(str(row[1])) for row in inserted.fetchall()}
    for write in group:
        if write.first != 0 or write.header is None:
            raise _conflict(write.session_id, write.first, 0)
        if write.session_id not in pks:
            raise SessionAppendConflictError(
                f'refusing to materialize "{write.session_id}": a log already exists in the'
                " database (load/resume it instead)",
                write.session_id,
                0,
                0,
            )
    try:
        with conn.cursor().copy(
            ctx.q("COPY {s}.events (session_pk, seq, last_seq, record) FROM STDIN")
        ) as copy:
            for write in group:
                copy.write(copy_text(pks[write.session_id], write.records))
    except pg_errors.UniqueViolation:
        raise SessionPersistenceCorruptionError(
            "a session of the group has stored rows beyond its event count 0"
        ) from None
    head = _notify_head(ctx)
    changed = conn.execute(
        ctx.q(
            "WITH c AS (UPDATE {s}.store SET change_count = change_count + %(k)s"
            " RETURNING change_count), w AS (SELECT * FROM unnest(%(pks)s::bigint[],"
            " %(tails)b::text[]) WITH ORDINALITY AS w(pk, tail, n)),"
            " u AS (UPDATE {s}.sessions AS s SET change = c.change_count - %(k)s + w.n"
            " FROM c, w WHERE s.pk = w.pk RETURNING s.change, w.tail, w.n)"
            " SELECT pg_catalog.pg_notify(%(channel)s::text, %(head)s::text || u.change::text ||"
            " CASE WHEN pg_catalog.octet_length(%(head)s::text)"
            " + pg_catalog.octet_length(u.change::text)"
            " + pg_catalog.octet_length(u.tail) <= %(limit)s"
            " THEN u.tail ELSE '}}' END) FROM (SELECT * FROM u ORDER BY u.n) AS u"
        ),
        {
            "k": len(group),
            "pks": [pks[w.session_id] for w in group],
            "tails": [_notify_tail(w.session_id) for w in group],
            "channel": schema.NOTIFY_CHANNEL,
            "head": head,
            "limit": MAX_NOTIFY_BYTES,
        },
    ).fetchall()
    assert len(changed) == len(group)


def copy_text(pk: int, records: list[rows.Record]) -> bytes:
    """The rows in COPY's text format, built in one piece instead of a ``write_row`` each: a
    record escapes the backslash, the delimiter (tab), newline and carriage return; the rest is
    taken as it is (PostgreSQL's COPY text format)."""
    head = f"{pk}\t"
    return "".join(
        [f"{head}{seq}\t{last_seq}\t{_copy_escaped(record)}\n" for seq, last_seq, record in records]
    ).encode("utf-8")


def _copy_escaped(text: str) -> str:
    if "\\" in text:
        text = text.replace("\\", "\\\\")  # first: the others add backslashes
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return text


def _created_at(write: Write) -> int:
    assert write.header is not None
    return int(Header.from_json(write.header.encode("utf-8")).created_at)


def _check_store(ctx: BatchContext, row: tuple[object, ...] | None) -> None:
    if row is None or (row[0], row[1], row[2]) != (
        schema.APPLICATION,
        schema.SCHEMA_VERSION,
        ctx.identity.store_id,
    ):
        raise PostgresUnavailableError(
            f'postgres schema "{ctx.schema}" changed under this mount; remount it'
        )


def _notify_head(ctx: BatchContext) -> str:
    """The payload up to its change count (§5): {"v":1,"store":…,"writer":…,"change":"""
    return (
        b'{"v":1,"store":'
        + jsoncodec.dumps(ctx.identity.store_id)
        + b',"writer":'
        + jsoncodec.dumps(ctx.instance)
        + b',"change":'
    ).decode("utf-8")


def _notify_tail(session_id: str) -> str:
    return (b',"id":' + jsoncodec.dumps(session_id) + b"}").decode("utf-8")


def append_batch(
    conn: Conn,
    ctx: BatchContext,
    session_id: str,
    first: int,
    count: int,
    records: list[rows.Record],
    header: str | None = None,
) -> None:
    """§3.6 (1)-(6) in the caller's READ COMMITTED transaction; the caller commits (7).
    ``header`` materializes an absent session not created through this backend (sync's groups)."""
    with conn.pipeline():  # (1) and (2) in one round trip
        store = conn.execute(
            ctx.q("SELECT application, schema_version, store_id::text FROM {s}.store")
        )
        locked = conn.execute(
            ctx.q("SELECT pk, event_count FROM {s}.sessions WHERE id = %s FOR UPDATE"),
            (session_id,),
        )
    found = locked.fetchone()
    _check_store(ctx, store.fetchone())
    revision = str(uuid.uuid4())
    if found is None:
        header = header or ctx.created.get(session_id)
        if header is None:
            raise LookupError(f'session "{session_id}" not found')
        if first != 0:
            raise _conflict(session_id, first, 0)
        created_at = Header.from_json(header.encode("utf-8")).created_at
        inserted = conn.execute(
            ctx.q(
                "INSERT INTO {s}.sessions (id, header, created_at, event_count, revision, change,"
                " written_at, writer) VALUES (%s, %s, %s, %s, %s, 0, now(), %s)"
                " ON CONFLICT (id) DO NOTHING RETURNING pk"
            ),
            (session_id, header, int(created_at), count, revision, ctx.writer),
        ).fetchone()
        if inserted is None:  # the winner committed: a new statement sees its row
            winner = conn.execute(
                ctx.q("SELECT event_count FROM {s}.sessions WHERE id = %s"), (session_id,)
            ).fetchone()
            raise SessionAppendConflictError(
                f'refusing to materialize "{session_id}": a log already exists in the'
                " database (load/resume it instead)",
                session_id,
                first,
                0 if winner is None else int(str(winner[0])),
            )
        pk = int(str(inserted[0]))
    else:
        pk, stored = int(str(found[0])), int(str(found[1]))
        if stored != first:
            raise _conflict(session_id, first, stored)
    try:
        with conn.cursor().copy(
            ctx.q("COPY {s}.events (session_pk, seq, last_seq, record) FROM STDIN")
        ) as copy:
            copy.write(copy_text(pk, records))
    except pg_errors.UniqueViolation:
        raise SessionPersistenceCorruptionError(
            f'session "{session_id}" has stored rows beyond its event count {first}'
        ) from None
    # (5) and (6) in one statement: the notification carries the change count (5) gives.
    # Its payload is {"v":1,"store":…,"writer":…,"change":<n>,"id":…}, without the id past
    # MAX_NOTIFY_BYTES (§5).
    head, tail = _notify_head(ctx), _notify_tail(session_id)
    changed = conn.execute(
        ctx.q(
            "WITH c AS (UPDATE {s}.store SET change_count = change_count + 1"
            " RETURNING change_count), u AS (UPDATE {s}.sessions SET event_count = %(count)s,"
            " revision = %(revision)s, change = c.change_count, written_at = now(),"
            " writer = %(writer)s FROM c WHERE pk = %(pk)s RETURNING c.change_count)"
            " SELECT pg_catalog.pg_notify(%(channel)s::text, %(head)s::text"
            " || u.change_count::text ||"
            " CASE WHEN pg_catalog.octet_length(%(head)s::text)"
            " + pg_catalog.octet_length(u.change_count::text)"
            " + pg_catalog.octet_length(%(tail)s::text) <= %(limit)s"
            " THEN %(tail)s::text ELSE '}}' END) FROM u"
        ),
        {
            "count": count,
            "revision": revision,
            "writer": ctx.writer,
            "pk": pk,
            "channel": schema.NOTIFY_CHANNEL,
            "head": head,
            "tail": tail,
            "limit": MAX_NOTIFY_BYTES,
        },
    ).fetchone()
    assert changed is not None


def _conflict(session_id: str, first: int, stored: int) -> SessionAppendConflictError:
    msg = f'session "{session_id}" append starts at seq {first}, stored next seq is {stored}'
    return SessionAppendConflictError(msg, session_id, first, stored)
