"""The store's schema (postgres.md §2.2) and what opening it checks (§2.4).

Every statement names its objects with the quoted schema; none relies on ``search_path``. The
refusal checks read only the catalogs and the ``store`` row, so a foreign or newer schema is left
exactly as it was found.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import LiteralString

import psycopg
from psycopg import sql

APPLICATION = "dsh-query-server"
SCHEMA_VERSION = 1
NOTIFY_CHANNEL = "dsh_query_changes"
ADVISORY_CLASS = 1146308688


@lru_cache(maxsize=256)
def qualified(schema: str, text: LiteralString) -> bytes:
    """``text`` with ``{s}`` as the quoted schema name, rendered once: psycopg renders a
    ``sql.Composed`` again on every execute (connections are UTF8, conninfo.py)."""
    return sql.SQL(text).format(s=sql.Identifier(schema)).as_bytes(None)


DDL = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE {s}.store (
  singleton boolean NOT NULL, application text NOT NULL, schema_version integer NOT NULL,
  store_id uuid NOT NULL, change_count bigint NOT NULL, deletions bigint NOT NULL,
  created_at timestamptz NOT NULL,
  CONSTRAINT store_pkey PRIMARY KEY (singleton),
  CONSTRAINT store_singleton CHECK (singleton));
CREATE TABLE {s}.sessions (
  pk bigint GENERATED ALWAYS AS IDENTITY, id text NOT NULL,
  header text NOT NULL, created_at bigint NOT NULL, event_count bigint NOT NULL,
  revision uuid NOT NULL, change bigint NOT NULL, written_at timestamptz NOT NULL,
  writer text NOT NULL,
  CONSTRAINT sessions_pkey PRIMARY KEY (pk),
  CONSTRAINT sessions_id_key UNIQUE (id),
  CONSTRAINT sessions_id_length CHECK (octet_length(id) BETWEEN 1 AND 1024),
  CONSTRAINT sessions_created_at_range CHECK (created_at BETWEEN 0 AND 9007199254740991),
  CONSTRAINT sessions_event_count_range CHECK (event_count BETWEEN 1 AND 9007199254740992));
CREATE INDEX sessions_change ON {s}.sessions (change);
CREATE TABLE {s}.events (
  session_pk bigint NOT NULL, seq bigint NOT NULL, last_seq bigint NOT NULL,
  record text NOT NULL,
  CONSTRAINT events_pkey PRIMARY KEY (session_pk, seq),
  CONSTRAINT events_session_pk_fkey FOREIGN KEY (session_pk)
    REFERENCES {s}.sessions (pk) ON DELETE CASCADE,
  CONSTRAINT events_seq_range CHECK (seq >= 0 AND last_seq <= 9007199254740991),
  CONSTRAINT events_span CHECK (last_seq = seq OR last_seq - seq BETWEEN 2 AND 1023));
CREATE FUNCTION {s}.refuse_change() RETURNS trigger
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  RAISE EXCEPTION 'dsh-query events are append-only; delete the session row instead'
    USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {s}.events
  FOR EACH STATEMENT WHEN (pg_trigger_depth() = 0)
  EXECUTE FUNCTION {s}.refuse_change();
CREATE FUNCTION {s}.count_deletion() RETURNS trigger
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE st record;
BEGIN
  UPDATE {s}.store SET change_count = change_count + 1, deletions = deletions + 1
    RETURNING store_id, change_count INTO st;
  PERFORM pg_notify('dsh_query_changes',
    json_build_object('v', 1, 'store', st.store_id, 'change', st.change_count)::text);
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_deleted AFTER DELETE ON {s}.sessions
  FOR EACH STATEMENT EXECUTE FUNCTION {s}.count_deletion();
INSERT INTO {s}.store VALUES (true, 'dsh-query-server', 1, {store_id}, 0, 0, now());
"""

# (column, format_type, not null) in table order (§2.2).
COLUMNS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "store": (
        ("singleton", "boolean", True),
        ("application", "text", True),
        ("schema_version", "integer", True),
        ("store_id", "uuid", True),
        ("change_count", "bigint", True),
        ("deletions", "bigint", True),
        ("created_at", "timestamp with time zone", True),
    ),
    "sessions": (
        ("pk", "bigint", True),
        ("id", "text", True),
        ("header", "text", True),
        ("created_at", "bigint", True),
        ("event_count", "bigint", True),
        ("revision", "uuid", True),
        ("change", "bigint", True),
        ("written_at", "timestamp with time zone", True),
        ("writer", "text", True),
    ),
    "events": (
        ("session_pk", "bigint", True),
        ("seq", "bigint", True),
        ("last_seq", "bigint", True),
        ("record", "text", True),
    ),
}
CONSTRAINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "store": (("store_pkey", "p"), ("store_singleton", "c")),
    "sessions": (
        ("sessions_pkey", "p"),
        ("sessions_id_key", "u"),
        ("sessions_id_length", "c"),
        ("sessions_created_at_range", "c"),
        ("sessions_event_count_range", "c"),
    ),
    "events": (
        ("events_pkey", "p"),
        ("events_session_pk_fkey", "f"),
        ("events_seq_range", "c"),
        ("events_span", "c"),
    ),
}
TRIGGERS = (("events", "events_append_only"), ("sessions", "sessions_deleted"))


class StoreRefused(Exception):
    """The schema is not a version-1 dsh-query store this build may use (§2.4)."""


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """What qualifies revisions (§3.2): the cluster, the schema's oid, the store's uuid."""

    system_identifier: int
    schema_oid: int
    store_id: str

    @property
    def prefix(self) -> str:
        return f"postgres:{self.system_identifier}:{self.schema_oid}:store:{self.store_id}"


Conn = psycopg.Connection[tuple[object, ...]]


def _one(
    conn: Conn,
    query: sql.Composable | LiteralString,
    params: tuple[object, ...] | dict[str, object] = (),
) -> tuple[object, ...] | None:
    return conn.execute(query, params).fetchone()  # type: ignore[arg-type]


def _difference(conn: Conn, schema: str, oid: int) -> str | None:
    """The first way the schema's objects differ from §2.2 (step 6), or None."""
    for table, expected in COLUMNS.items():
        rel = _one(
            conn,
            "SELECT oid FROM pg_catalog.pg_class WHERE relnamespace = %s"
            " AND relname = %s AND relkind = 'r'",
            (oid, table),
        )
        if rel is None:
            return f"table {schema}.{table} is missing"
        found = conn.execute(
            "SELECT attname, pg_catalog.format_type(atttypid, atttypmod), attnotnull"
            " FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attnum > 0"
            " AND NOT attisdropped ORDER BY attnum",
            (rel[0],),
        ).fetchall()
        for index, want in enumerate(expected):
            got = tuple(found[index]) if index < len(found) else None
            if got != want:
                return f"column {index + 1} of {schema}.{table} is not {want[0]} {want[1]} NOT NULL"
        if len(found) > len(expected):
            return f"{schema}.{table} has an extra column {found[len(expected)][0]}"
        for name, kind in CONSTRAINTS[table]:
            if (
                _one(
                    conn,
                    "SELECT 1 FROM pg_catalog.pg_constraint WHERE conrelid = %s"
                    " AND conname = %s AND contype = %s",
                    (rel[0], name, kind),
                )
                is None
            ):
                return f"constraint {name} of {schema}.{table} is missing"
    for table, trigger in TRIGGERS:
        row = _one(
            conn,
            "SELECT t.tgenabled FROM pg_catalog.pg_trigger t"
            " JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = %s"
            " AND c.relname = %s AND t.tgname = %s",
            (oid, table, trigger),
        )
        if row is None:
            return f"trigger {trigger} on {schema}.{table} is missing"
        if row[0] == "D":
            return f"trigger {trigger} on {schema}.{table} is disabled"
    return None


def _pristine(conn: Conn, oid: int) -> bool:
    row = _one(
        conn,
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = %(o)s)"
        " OR EXISTS (SELECT 1 FROM pg_catalog.pg_proc WHERE pronamespace = %(o)s)"
        " OR EXISTS (SELECT 1 FROM pg_catalog.pg_type WHERE typnamespace = %(o)s)",
        {"o": oid},
    )
    return row is not None and not row[0]


def check_encoding(conn: Conn) -> None:
    row = _one(conn, "SELECT current_database(), pg_catalog.current_setting('server_encoding')")
    assert row is not None
    if row[1] != "UTF8":
        raise StoreRefused(
            f'postgres database "{row[0]}" has server_encoding {row[1]}; dsh-query needs UTF8'
        )


def check_store(conn: Conn, schema: str) -> StoreIdentity | None:
    """Steps 2–7 of §2.4 inside the caller's transaction; None when uninitialized."""
    row = _one(conn, "SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = %s", (schema,))
    if row is None:
        return None
    oid = int(str(row[0]))
    if _pristine(conn, oid):
        return None
    store = _one(
        conn,
        "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relnamespace = %s"
        " AND c.relname = 'store' AND c.relkind = 'r'",
        (oid,),
    )
    if store is None:
        raise StoreRefused(
            f'postgres schema "{schema}" is not a dsh-query store: it holds other objects'
        )
    names = {
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attnum > 0"
            " AND NOT attisdropped",
            (store[0],),
        )
    }
    if not {"application", "schema_version", "store_id"} <= names:
        raise StoreRefused(f'postgres schema "{schema}" is not a dsh-query store (application "")')
    rows = conn.execute(
        sql.SQL(
            "SELECT application::text, schema_version::text, store_id::text FROM {}.store"
        ).format(sql.Identifier(schema))
    ).fetchall()
    ours = [r for r in rows if r[0] == APPLICATION]
    if not ours:
        application = rows[0][0] if rows else ""
        raise StoreRefused(
            f'postgres schema "{schema}" is not a dsh-query store (application "{application}")'
        )
    version = int(str(ours[0][1]))
    if version > SCHEMA_VERSION:
        raise StoreRefused(
            f'postgres schema "{schema}" holds a dsh-query store of schema version {version},'
            f" written by a newer dsh-query-server; this build reads version {SCHEMA_VERSION}"
            " — upgrade to open it"
        )
    if version < SCHEMA_VERSION:
        raise StoreRefused(
            f'postgres schema "{schema}" holds a dsh-query store of schema version {version},'
            f" older than version {SCHEMA_VERSION}, and this build ships no upgrade path"
        )
    difference = _difference(conn, schema, oid)
    if difference is not None:
        raise StoreRefused(
            f'postgres schema "{schema}" does not contain the required schema objects: {difference}'
        )
    return StoreIdentity(system_identifier(conn), oid, str(ours[0][2]))


def system_identifier(conn: Conn) -> int:
    """The cluster's ``system_identifier``, or 0 where ``pg_control_system()`` is not ours."""
    row = _one(
        conn,
        "SELECT CASE WHEN pg_catalog.has_function_privilege("
        "'pg_catalog.pg_control_system()', 'EXECUTE')"
        " THEN (SELECT system_identifier FROM pg_catalog.pg_control_system()) ELSE 0 END",
    )
    return int(str(row[0])) if row is not None else 0


def initialize(conn: Conn, schema: str) -> StoreIdentity:
    """§2.4 initialization inside the caller's transaction: lock, re-check, create."""
    conn.execute(
        "SELECT pg_catalog.pg_advisory_xact_lock(%s, pg_catalog.hashtext(%s))",
        (ADVISORY_CLASS, schema),
    )
    identity = check_store(conn, schema)
    if identity is not None:
        return identity
    ddl = sql.SQL(DDL).format(s=sql.Identifier(schema), store_id=sql.Literal(str(uuid.uuid4())))
    conn.execute(ddl)
    identity = check_store(conn, schema)
    assert identity is not None
    return identity
