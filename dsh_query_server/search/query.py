"""Metadata predicates and budgets (semantics.md §6.7), candidate selection over the persisted base
and the live overlay (§6.8), and ranking (§6.9).

All ranking happens in SQL over one shared scale (no BM25): highlight spans, then document length,
time, and the tie-breakers. Every filter value is a bound parameter; the SQL text depends only on
the shape of the request.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Sequence

from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..model.filters import AvailabilityFilter, _Range, kind_of
from .schema import sql_text
from .snippet import END, START

PREDICATE_BUDGET = 14
VARIABLE_LIMIT = 32766
# The phrase and highlight markers (10), then `limit + 1` and the offset (2).
FIXED_VARIABLES = 10 + 2
_INT64_MAX = 2**63 - 1

_COLUMNS = {
    "id": "session_id",
    "cwd": "cwd",
    "parent": "parent_session",
    "created-at": "created_at",
    "seq": "seq",
    "time": "time",
    "type": "type",
    "surface": "surface",
}


@dataclass(frozen=True, slots=True)
class Predicates:
    sql: tuple[str, ...]
    params: tuple[Any, ...]


def _budget_error() -> QueryError:
    return QueryError(
        errors.INVALID_FILTER,
        "session-search request exceeds the supported SQLite FTS5 outer-predicate budget of 14; "
        "reduce filters",
    )


def _binding_error() -> QueryError:
    return QueryError(
        errors.INVALID_FILTER,
        "session-search request exceeds SQLite's portable 32766-variable limit; reduce filter values",
    )


def _bound(value: Any) -> Any:
    # A finite bound beyond SQLite's integer range compares the same as a REAL.
    if type(value) is int and abs(value) > _INT64_MAX:
        return float(value)
    return value


def _compile(clauses: Sequence[Any]) -> tuple[list[str], list[Any]]:
    sql: list[str] = []
    params: list[Any] = []
    for clause in clauses:
        if isinstance(clause, AvailabilityFilter):
            distinct = set(clause.values)
            if not distinct:
                sql.append("0")
            elif len(distinct) == 1:
                sql.append("live = 1" if "live" in distinct else "persisted = 1")
            continue  # both values: no predicate at all
        column = _COLUMNS[kind_of(clause)]
        if isinstance(clause, _Range):
            for bound, op in ((clause.lo, ">="), (clause.hi, "<=")):
                if bound is not UNSET:
                    sql.append(f"CAST({column} AS INTEGER) {op} ?")
                    params.append(_bound(bound))
            continue
        strings = [v for v in clause.values if v is not None]
        has_null = len(strings) < len(clause.values)
        if not clause.values:
            sql.append("0")
        elif not strings:
            sql.append(f"{column} IS NULL")
        else:
            member = f"{column} IN ({', '.join('?' * len(strings))})"
            sql.append(f"({member} OR {column} IS NULL)" if has_null else member)
            params.extend(sql_text(v) for v in strings)
    return sql, params


def compile_filters(session_clauses: Sequence[Any], event_clauses: Sequence[Any],
                    target: str | None = None) -> Predicates:
    """Predicates for the candidate rows, checked in the order of §6.7. ``target`` restricts to one
    session and takes one predicate slot and one variable."""
    budget = PREDICATE_BUDGET - (target is not None)
    fixed = FIXED_VARIABLES + (target is not None)
    session_sql, session_params = _compile(session_clauses)
    if fixed + len(session_params) > VARIABLE_LIMIT:
        raise _binding_error()
    if len(session_sql) > budget:
        raise _budget_error()
    event_sql, event_params = _compile(event_clauses)
    if fixed + len(event_params) > VARIABLE_LIMIT:
        raise _binding_error()
    if len(event_sql) > budget:
        raise _budget_error()
    if len(session_sql) + len(event_sql) > budget:
        raise _budget_error()
    if fixed + len(session_params) + len(event_params) > VARIABLE_LIMIT:
        raise _binding_error()
    sql = session_sql + event_sql
    params = session_params + event_params
    if target is not None:
        sql.insert(0, "session_id = ?")
        params.insert(0, sql_text(target))
    return Predicates(tuple(sql), tuple(params))


# -- candidates (§6.8) ---------------------------------------------------------------------------
#
# One statement per search, in three steps:
#   hits    every candidate that passes the predicates, as narrow rows: the ranking keys and
#           where the document lives. ``match_count`` counts the START markers of highlight(),
#           evaluated once per row in a scalar subquery (an expression over a column alias would
#           be expanded, and the highlight recomputed, at every use).
#   page    the ranked page, ``limit + 1`` rows from ``offset``.
#   result  highlight() again, but only for the page's rows, and the header columns from the
#           session row on the document's side of the index.
# The phrase and the markers are bound once however often the statement refers to them, and each
# filter value once, so the variable count stays within the one §6.7 budgets.


class _Binder:
    """The statement's parameters. The phrase and the markers are named once and referred to by
    number everywhere; every other value is a plain ``?`` used once, in text order after them.
    (Plain ``?`` matter: SQLite looks numbered ones up linearly, which is quadratic for a
    32,000-value filter list.)"""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def named(self, value: Any) -> str:
        self.values.append(value)
        return f"?{len(self.values)}"

    def plain(self, *values: Any) -> None:
        self.values.extend(values)


_BRANCH = """
    SELECT {docs}.rowid AS rowid, {live} AS live, {persisted} AS persisted,
           {docs}.session_id AS session_id, CAST({docs}.seq AS INTEGER) AS seq, {docs}.type AS type,
           {docs}.time AS time, {docs}.surface AS surface, {docs}.codepoint_length AS document_length,
           s.cwd AS cwd, s.parent_session AS parent_session, s.created_at AS created_at,
           (SELECT length(marked) - length(replace(marked, {start}, ''))
              FROM (SELECT highlight({docs}, 0, {start}, {end}) AS marked)) AS match_count
    FROM {docs} JOIN {sessions} AS s ON s.id = {docs}.session_id
    WHERE {docs} MATCH {phrase}{shadowing}"""

# The live overlay shadows the persisted base for its ids.
_SHADOWING = "\n      AND NOT EXISTS (SELECT 1 FROM live_sessions AS l WHERE l.id = persisted_docs.session_id)"

_HIT_COLUMNS = "rowid, live, persisted, session_id, seq, type, time, surface, document_length, match_count"
_ORDER = "match_count DESC, document_length ASC, time DESC"
_HEADER = ("version", "created_at", "cwd", "parent_session", "seed_length", "delegation_depth", "agent_preset")


def _hits(binder: _Binder, phrase: str, predicates: Predicates,
          bound: bool) -> tuple[str, dict[str, str]]:
    """The ``hits`` CTE. Persisted documents take part only while a backend is bound (the
    binding this search's reconcile used); otherwise they are hidden, not deleted. The metadata
    predicates apply before ranking."""
    marks = {"phrase": binder.named(phrase), "start": binder.named(START), "end": binder.named(END)}
    branches = [_BRANCH.format(docs="live_docs", sessions="live_sessions", live="1",
                               persisted="s.persisted", shadowing="", **marks)]
    if bound:
        branches.append(_BRANCH.format(docs="persisted_docs", sessions="persisted_sessions", live="0",
                                       persisted="1", shadowing=_SHADOWING, **marks))
    where = " AND ".join(predicates.sql) or "1"
    binder.plain(*predicates.params)
    union = "\n    UNION ALL".join(branches)
    return f"WITH hits AS MATERIALIZED (\n  SELECT {_HIT_COLUMNS} FROM ({union})\n  WHERE {where}),\n", marks


_MARKED = """
    SELECT {live} AS live, {docs}.rowid AS rowid, highlight({docs}, 0, {start}, {end}) AS marked_text
    FROM {docs} WHERE {docs} MATCH {phrase} AND +{docs}.rowid IN (SELECT rowid FROM page WHERE live = {live})"""


def _result(binder: _Binder, marks: dict[str, str], page: str, limit: int, offset: int,
            order: str, bound: bool) -> str:
    """The page's rows with their highlighted text and header columns, in page order. The unary
    plus keeps the page's rowids a filter on one MATCH scan per side; as a constraint, FTS5 would
    run the whole query again for every rowid."""
    marked = [_MARKED.format(docs="live_docs", live=1, **marks)]
    if bound:
        marked.append(_MARKED.format(docs="persisted_docs", live=0, **marks))
    union = "\n    UNION ALL".join(marked)
    header = ", ".join(f"iif(p.live, ls.{c}, ps.{c})" for c in _HEADER)
    binder.plain(limit, offset)
    return (
        f"{page} LIMIT ? OFFSET ?),\n"
        f"marked AS ({union})\n"
        "SELECT p.session_id, p.seq, p.type, p.time, p.surface, m.marked_text, p.live, p.persisted,\n"
        f"       {header}\n"
        "FROM page AS p JOIN marked AS m ON m.live = p.live AND m.rowid = p.rowid\n"
        "LEFT JOIN live_sessions AS ls ON p.live = 1 AND ls.id = p.session_id\n"
        "LEFT JOIN persisted_sessions AS ps ON p.live = 0 AND ps.id = p.session_id\n"
        f"ORDER BY {order}"
    )


@dataclass(frozen=True, slots=True)
class Match:
    session_id: str
    seq: int
    type: Any
    time: Any
    surface: str
    marked_text: str
    live: bool
    persisted: bool
    header: tuple[Any, ...]  # version, id, created_at, cwd, parent, seed, depth, preset


def _match(row: tuple[Any, ...]) -> Match:
    (session_id, seq, etype, time, surface, marked, live, persisted, *header) = row
    version, created_at, cwd, parent, seed, depth, preset = header
    return Match(session_id, seq, etype, time, surface, marked, bool(live), bool(persisted),
                 (version, session_id, created_at, cwd, parent, seed, depth, preset))


def _prefixed(order: str) -> str:
    return ", ".join(f"p.{key}" for key in order.split(", "))


def select_events(conn: sqlite3.Connection, phrase: str, predicates: Predicates, bound: bool,
                  limit: int, offset: int) -> list[Match]:
    """Matching documents ordered for searchEvents, ``limit`` rows from ``offset``."""
    binder = _Binder()
    hits, marks = _hits(binder, phrase, predicates, bound)
    order = f"{_ORDER}, seq DESC"
    page = f"{hits}page AS MATERIALIZED (SELECT * FROM hits ORDER BY {order}"
    sql = _result(binder, marks, page, limit, offset, _prefixed(order), bound)
    return [_match(row) for row in conn.execute(sql, binder.values)]


def select_sessions(conn: sqlite3.Connection, phrase: str, predicates: Predicates, bound: bool,
                    limit: int, offset: int) -> list[Match]:
    """Each session's best match, sessions ordered for searchSessions."""
    binder = _Binder()
    hits, marks = _hits(binder, phrase, predicates, bound)
    order = f"{_ORDER}, session_id ASC, seq DESC"
    page = (
        f"{hits}best AS (SELECT *, row_number() OVER "
        f"(PARTITION BY session_id ORDER BY {_ORDER}, seq DESC) AS session_rank FROM hits),\n"
        f"page AS MATERIALIZED (SELECT * FROM best WHERE session_rank = 1 ORDER BY {order}"
    )
    sql = _result(binder, marks, page, limit, offset, _prefixed(order), bound)
    return [_match(row) for row in conn.execute(sql, binder.values)]
