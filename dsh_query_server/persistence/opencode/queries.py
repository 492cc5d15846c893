"""The statements run against ``opencode.db`` (schema: sst/opencode
packages/opencode/src/session/session.sql.ts) and the rows they give as native records. Columns
are taken from the table as found, so older and newer schemas read alike."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from ... import jsoncodec
from ..importing.emitter import JSONObject
from ..importing.values import nonempty, obj
from .database import Schema
from .rows import Message, Part, Session, decode, ms

# Session columns too bulky for a listing (file diffs with whole contents, rule sets).
_BULKY = frozenset({"summary_diffs", "permission", "goal"})
_JSON = frozenset({"revert", "model"})
_NAMES = {"parent_id": "parentID", "project_id": "projectID", "workspace_id": "workspaceID"}
METER_STEP = 256  # a metered read reports every this many records

# Told (records read, the session's records, "records") while a request reads this one session.
Meter = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class Aggregate:
    """What proves a table's rows of one session unchanged: their count, newest update and
    largest id (ids are ascending in time)."""

    count: int = 0
    updated: object = None
    last: object = None


def session_columns(schema: Schema) -> list[str]:
    return [c for c in schema.session if c not in _BULKY]


def session_of(columns: list[str], row: tuple[object, ...]) -> Session | None:
    """A session row as a native record; None when its id or creation time is unusable."""
    values = dict(zip(columns, row, strict=True))
    sid, created = values.get("id"), ms(values.get("time_created"))
    if not isinstance(sid, str) or not sid or created is None:
        return None
    record: JSONObject = {}
    for column, value in values.items():
        if column in _JSON and isinstance(value, str):
            decoded, _ = decode(value)
            value = decoded if decoded is not None else value
        record[column] = value
    revert = obj(record.get("revert"))
    return Session(
        id=sid,
        created=created,
        record=record,
        updated=ms(values.get("time_updated")),
        directory=nonempty(values.get("directory")),
        parent=nonempty(values.get("parent_id")),
        title=nonempty(values.get("title")),
        version=nonempty(values.get("version")),
        agent=nonempty(values.get("agent")),
        revert=revert,
    )


def sessions(conn: sqlite3.Connection, schema: Schema) -> list[tuple[Session, tuple[object, ...]]]:
    """Every session row (and the raw row, which enters its revision)."""
    columns = session_columns(schema)
    sql = f"SELECT {', '.join(columns)} FROM session"
    out: list[tuple[Session, tuple[object, ...]]] = []
    for row in conn.execute(sql).fetchall():
        s = session_of(columns, row)
        if s is not None:
            out.append((s, tuple(row)))
    return out


def _aggregate_sql(table: str, schema: Schema, where: str) -> str:
    updated = "max(time_updated)" if schema.has(table, "time_updated") else "total(length(data))"
    return f"SELECT session_id, count(*), {updated}, max(id) FROM {table} {where}"


def aggregates(conn: sqlite3.Connection, schema: Schema) -> dict[str, tuple[Aggregate, Aggregate]]:
    """Per session: the aggregates of its messages and of its parts (one scan of each table)."""
    out: dict[str, tuple[Aggregate, Aggregate]] = {}
    tables = ("message", "part")
    for k, table in enumerate(tables):
        for sid, count, updated, last in conn.execute(
            _aggregate_sql(table, schema, "GROUP BY session_id")
        ).fetchall():
            pair = out.get(sid, (Aggregate(), Aggregate()))
            agg = Aggregate(count, updated, last)
            out[sid] = (agg, pair[1]) if k == 0 else (pair[0], agg)
    return out


def _updated(schema: Schema, table: str) -> str:
    return "time_updated" if schema.has(table, "time_updated") else "NULL"


def _aggregate(rows: list[tuple[object, object]]) -> Aggregate:
    """The aggregate of (id, time_updated) rows, computed here so that a read proves the very
    rows it mapped."""
    times = [t for _, t in rows if isinstance(t, int)]
    ids = [i for i, _ in rows if isinstance(i, str)]
    return Aggregate(len(rows), max(times, default=None), max(ids, default=None))


def aggregate_of(conn: sqlite3.Connection, schema: Schema, sid: str) -> tuple[Aggregate, Aggregate]:
    """One session's aggregates, as ``messages`` computes them, without reading the data."""
    out: list[Aggregate] = []
    for table in ("message", "part"):
        sql = f"SELECT id, {_updated(schema, table)} FROM {table} WHERE session_id = ?"
        out.append(_aggregate(conn.execute(sql, (sid,)).fetchall()))
    return out[0], out[1]


def session_row(
    conn: sqlite3.Connection, schema: Schema, sid: str
) -> tuple[Session, tuple[object, ...]] | None:
    columns = session_columns(schema)
    row = conn.execute(f"SELECT {', '.join(columns)} FROM session WHERE id = ?", (sid,)).fetchone()
    if row is None:
        return None
    s = session_of(columns, row)
    return (s, tuple(row)) if s is not None else None


def parent_of(conn: sqlite3.Connection, schema: Schema, sid: str) -> tuple[str | None] | None:
    """The session's parent id (in a 1-tuple), or None when there is no such session."""
    column = "parent_id" if schema.has("session", "parent_id") else "NULL"
    row = conn.execute(f"SELECT {column} FROM session WHERE id = ?", (sid,)).fetchone()
    return (nonempty(row[0]),) if row is not None else None


def messages(
    conn: sqlite3.Connection, schema: Schema, sid: str, meter: Meter | None = None
) -> tuple[list[Message], tuple[Aggregate, Aggregate]]:
    """The session's messages in OpenCode's order (time_created, id), each with its parts in id
    order (message-v2.ts ``stream``, ``hydrate``), and the aggregates of the rows read.
    ``meter`` is told the records (message and part rows) decoded as they are."""
    created = "time_created" if schema.has("message", "time_created") else "NULL"
    rows = conn.execute(
        f"SELECT id, {created}, {_updated(schema, 'message')}, data FROM message"
        f" WHERE session_id = ? ORDER BY {created}, id",
        (sid,),
    ).fetchall()
    part_rows = conn.execute(
        f"SELECT id, message_id, {_updated(schema, 'part')}, data FROM part"
        " WHERE session_id = ? ORDER BY message_id, id",
        (sid,),
    ).fetchall()
    parts: dict[str, list[Part]] = {}
    total = len(part_rows) + len(rows)
    for k, (pid, mid, _, data) in enumerate(part_rows):
        if meter is not None and k % METER_STEP == 0:
            meter(k, total, "records")
        value, damage = decode(data)
        if value is not None:
            value["id"] = pid
        parts.setdefault(mid, []).append(Part(pid, value, damage, _size(data)))
    out: list[Message] = []
    for k, (mid, time_created, _, data) in enumerate(rows, len(part_rows)):
        if meter is not None and k % METER_STEP == 0:
            meter(k, total, "records")
        info, damage = decode(data)
        if info is not None:
            info["id"] = mid
        out.append(Message(mid, info, parts.get(mid, []), damage, _size(data), ms(time_created)))
    aggs = (
        _aggregate([(r[0], r[2]) for r in rows]),
        _aggregate([(r[0], r[2]) for r in part_rows]),
    )
    return out, aggs


def _size(data: object) -> int:
    """The stored record's length (code points stand in for bytes: it only decides whether an
    opaque record is kept whole, importers.md §0.2)."""
    if isinstance(data, (str, bytes)):
        return len(data)
    return len(jsoncodec.dumps(data))
