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
from psycopg import sql

from ... import jsoncodec
from ...model.event import Header
from ..base import SessionPersistenceCorruptionError
from . import rows, schema
from .connection import Conn
from .errors import PostgresUnavailableError, SessionAppendConflictError
from .schema import StoreIdentity

MAX_NOTIFY_BYTES = 7999


@dataclass(frozen=True, slots=True)
class BatchContext:
    """What an append needs from its backend."""

    q: Callable[[LiteralString], sql.Composed]  # qualifies {s} with the schema
    schema: str
    identity: StoreIdentity
    instance: str  # the writer's instance uuid
    writer: str  # '<applicationName> <instance uuid>'
    created: dict[str, str]  # id -> header text of sessions created here, not yet stored


def append_batch(
    conn: Conn,
    ctx: BatchContext,
    session_id: str,
    first: int,
    count: int,
    records: list[rows.Record],
) -> None:
    """§3.6 (1)-(6) in the caller's READ COMMITTED transaction; the caller commits (7)."""
    with conn.pipeline():  # (1) and (2) in one round trip
        store = conn.execute(
            ctx.q("SELECT application, schema_version, store_id::text FROM {s}.store")
        )
        locked = conn.execute(
            ctx.q("SELECT pk, event_count FROM {s}.sessions WHERE id = %s FOR UPDATE"),
            (session_id,),
        )
    row, found = store.fetchone(), locked.fetchone()
    if row is None or (row[0], row[1], row[2]) != (
        schema.APPLICATION,
        schema.SCHEMA_VERSION,
        ctx.identity.store_id,
    ):
        raise PostgresUnavailableError(
            f'postgres schema "{ctx.schema}" changed under this mount; remount it'
        )
    revision = str(uuid.uuid4())
    if found is None:
        header = ctx.created.get(session_id)
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
            for seq, last_seq, record in records:
                copy.write_row((pk, seq, last_seq, record))
    except pg_errors.UniqueViolation:
        raise SessionPersistenceCorruptionError(
            f'session "{session_id}" has stored rows beyond its event count {first}'
        ) from None
    # (5) and (6) in one statement: the notification carries the change count (5) gives.
    # Its payload is {"v":1,"store":…,"writer":…,"change":<n>,"id":…}, without the id past
    # MAX_NOTIFY_BYTES (§5).
    head = (
        b'{"v":1,"store":'
        + jsoncodec.dumps(ctx.identity.store_id)
        + b',"writer":'
        + jsoncodec.dumps(ctx.instance)
        + b',"change":'
    )
    tail = b',"id":' + jsoncodec.dumps(session_id) + b"}"
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
            "head": head.decode("utf-8"),
            "tail": tail.decode("utf-8"),
            "limit": MAX_NOTIFY_BYTES,
        },
    ).fetchone()
    assert changed is not None


def _conflict(session_id: str, first: int, stored: int) -> SessionAppendConflictError:
    msg = f'session "{session_id}" append starts at seq {first}, stored next seq is {stored}'
    return SessionAppendConflictError(msg, session_id, first, stored)
