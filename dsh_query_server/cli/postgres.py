"""``dsh-query postgres init`` (postgres.md §2.4): create a store and grant roles their share.

A role that may not create the schema cannot initialize the store on its first append; an
administrator runs this instead. By default it prints the SQL it would run (the §2.2 DDL when the
store does not exist yet, then the grants of the §2.4 table); ``--apply`` runs it in one
transaction, under the same advisory lock a writer's first append takes. Running it again is
harmless: an existing store is kept as it is and grants are idempotent. A schema that is not a
version-1 dsh-query store is refused with the backend's own message and left untouched. Only the
redacted URI is ever printed.

Exit codes: 2 usage error, 1 failure (unreachable, refused, a missing role), 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import LiteralString, TextIO

import psycopg
from psycopg import sql

from .. import jsoncodec
from ..errors import QueryError
from ..persistence.postgres.conninfo import SCHEMES, PgMount, parse_postgres_uri
from ..persistence.postgres.schema import (
    ADVISORY_CLASS,
    DDL,  # the one copy of the §2.2 DDL
    StoreIdentity,
    StoreRefused,
    check_encoding,
    check_store,
    initialize,
)

Conn = psycopg.Connection[tuple[object, ...]]
TABLES = ("store", "sessions", "events")
# The §2.4 table: what each role may do on each table, beyond USAGE on the schema.
READER: tuple[tuple[LiteralString, str], ...] = tuple(("SELECT", table) for table in TABLES)
WRITER: tuple[tuple[LiteralString, str], ...] = (
    *READER,
    ("UPDATE", "store"),
    ("INSERT, UPDATE", "sessions"),
    ("INSERT", "events"),
)


class InitError(Exception):
    """Exit code 1, with a message that holds no secret."""


@dataclass
class Plan:
    """What init found and what it runs, in order."""

    uri: str
    schema: str
    store_id: str | None  # None: the store does not exist yet
    statements: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dsh-query postgres",
        description="Administer a postgres: store (postgres.md §2.4).",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    init = sub.add_parser(
        "init",
        help="create the store and grant roles (prints the SQL; --apply runs it)",
        description="Print the SQL that creates the store of URI's schema (if it does not exist)"
        " and grants each --writer and --reader role its privileges; --apply runs it.",
    )
    init.add_argument("uri", metavar="URI", help="postgres:// or postgresql:// (an administrator)")
    init.add_argument(
        "--writer",
        action="append",
        default=[],
        metavar="ROLE",
        help="a role that checkpoints and syncs into the store (may repeat)",
    )
    init.add_argument(
        "--reader",
        action="append",
        default=[],
        metavar="ROLE",
        help="a role that only reads and searches (may repeat)",
    )
    init.add_argument("--apply", action="store_true", help="run the SQL instead of printing it")
    init.add_argument("--json", action="store_true", help="one JSON object on stdout")
    return parser


def _grants(
    schema: str, role: str, privileges: tuple[tuple[LiteralString, str], ...]
) -> list[sql.Composed]:
    s, r = sql.Identifier(schema), sql.Identifier(role)
    out = [sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r)]
    for privilege, table in privileges:
        out.append(
            sql.SQL("GRANT {} ON {}.{} TO {}").format(
                sql.SQL(privilege), s, sql.Identifier(table), r
            )
        )
    return out


def _missing_roles(conn: Conn, roles: list[str]) -> list[str]:
    rows = conn.execute(
        "SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY(%s)", (roles,)
    ).fetchall()
    found = {str(row[0]) for row in rows}
    return [role for role in roles if role not in found]


def _superuser(conn: Conn) -> bool:
    row = conn.execute(
        "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user"
    ).fetchone()
    return bool(row is not None and row[0])


def _statements(
    conn: Conn, mount: PgMount, identity: StoreIdentity | None, args: argparse.Namespace
) -> tuple[list[sql.Composed], list[str]]:
    """The grants (and pg_control_system's, where we may give it), plus notes for the reader."""
    schema = mount.schema
    notes: list[str] = []
    statements: list[sql.Composed] = []
    roles = [*args.writer, *args.reader]
    missing = _missing_roles(conn, roles)
    if missing:
        raise InitError(
            "postgres init: no such role "
            + ", ".join(f'"{role}"' for role in missing)
            + "; create it first (CREATE ROLE … LOGIN)"
        )
    for role in args.writer:
        statements += _grants(schema, role, WRITER)
    for role in args.reader:
        if role not in args.writer:
            statements += _grants(schema, role, READER)
    if roles and _superuser(conn):
        # Revisions name the cluster through pg_control_system() (§3.2); a role that may not
        # call it qualifies them with 0, so give every role the same view of the cluster.
        for role in dict.fromkeys(roles):
            statements.append(
                sql.SQL("GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO {}").format(
                    sql.Identifier(role)
                )
            )
    elif roles:
        notes.append(
            "a superuser may also GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() to"
            " these roles, so that their revisions name the cluster"
        )
    if identity is None:
        notes.insert(0, f'schema "{schema}" holds no store yet: this creates it')
    else:
        notes.insert(0, f'schema "{schema}" already holds store {identity.store_id}: kept as is')
    return statements, notes


def _text(conn: Conn, statement: sql.Composable) -> str:
    return statement.as_string(conn).strip()


def plan_and_apply(mount: PgMount, args: argparse.Namespace) -> Plan:
    """Inspect the database (read-only unless ``--apply``) and return what was, or would be, run."""
    try:
        with psycopg.connect(mount.conninfo(), autocommit=True) as conn:
            return _run(conn, mount, args)
    except StoreRefused as exc:
        raise InitError(mount.scrub(str(exc))) from None
    except psycopg.Error as exc:
        raise InitError(
            mount.scrub(f"postgres init of {mount.redacted} failed: {' '.join(str(exc).split())}")
        ) from None


def _run(conn: Conn, mount: PgMount, args: argparse.Namespace) -> Plan:
    schema = mount.schema
    lock = sql.SQL("SELECT pg_catalog.pg_advisory_xact_lock({}, pg_catalog.hashtext({}))").format(
        sql.Literal(ADVISORY_CLASS), sql.Literal(schema)
    )
    with conn.transaction():
        if not args.apply:  # a look only: nothing this transaction runs can write
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        check_encoding(conn)
        if args.apply:
            before = check_store(conn, schema)
            identity = initialize(conn, schema)  # the lock, the checks again, the DDL if absent
        else:
            before = identity = check_store(conn, schema)
        grants, notes = _statements(conn, mount, identity, args)
        plan = Plan(mount.redacted, schema, identity.store_id if identity else None, notes=notes)
        if before is None:
            ddl = sql.SQL(DDL).format(
                s=sql.Identifier(schema),
                store_id=sql.Literal(identity.store_id if identity else str(uuid.uuid4())),
            )
            plan.statements += [_text(conn, lock), _text(conn, ddl)]
        plan.statements += [_text(conn, grant) + ";" for grant in grants]
        if args.apply:
            for grant in grants:
                conn.execute(grant)
    return plan


def _render(plan: Plan, applied: bool, out: TextIO) -> None:
    print(f"-- dsh-query postgres init {plan.uri}", file=out)
    for note in plan.notes:
        print(f"-- {note}", file=out)
    if applied:
        print("-- applied in one transaction:", file=out)
    else:
        print(
            "-- nothing was changed; run with --apply, or run this SQL as an administrator",
            file=out,
        )
    print("BEGIN;", file=out)
    for statement in plan.statements:
        print(statement if statement.endswith(";") else statement + ";", file=out)
    print("COMMIT;", file=out)


def run(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not str(args.uri).startswith(SCHEMES):
        print("postgres init: URI must be a postgres:// or postgresql:// URI", file=err)
        return 2
    try:
        mount = parse_postgres_uri(args.uri)
    except QueryError as exc:
        print(f"postgres init: {exc.message}", file=err)
        return 2
    if mount.read_only and args.apply:
        print(f"postgres init: {mount.redacted} is mounted readOnly=true; drop it", file=err)
        return 2
    try:
        plan = plan_and_apply(mount, args)
    except InitError as exc:
        print(str(exc), file=err)
        return 1
    if args.json:
        body = {
            "uri": plan.uri,
            "schema": plan.schema,
            "storeId": plan.store_id,
            "applied": bool(args.apply),
            "notes": plan.notes,
            "statements": plan.statements,
        }
        out.write(jsoncodec.dumps(body).decode() + "\n")
    else:
        _render(plan, bool(args.apply), out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``dsh-query postgres``: the CLI wires this as a subcommand."""
    return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
