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

_BRANCH = """
SELECT {docs}.session_id AS session_id, CAST({docs}.seq AS INTEGER) AS seq, {docs}.type AS type,
       {docs}.time AS time, {docs}.surface AS surface, {docs}.codepoint_length AS document_length,
       highlight({docs}, 0, ?, ?) AS marked_text, {live} AS live, {persisted} AS persisted,
       s.version AS version, s.created_at AS created_at, s.cwd AS cwd,
       s.parent_session AS parent_session, s.seed_length AS seed_length,
       s.delegation_depth AS delegation_depth, s.agent_preset AS agent_preset
FROM {docs} JOIN {sessions} AS s ON s.id = {docs}.session_id
WHERE {docs} MATCH ?{shadowing}"""

_PERSISTED_BRANCH = _BRANCH.format(
    docs="persisted_docs", sessions="persisted_sessions", live="0", persisted="1",
    # The live overlay shadows the persisted base for its ids.
    shadowing="\n  AND NOT EXISTS (SELECT 1 FROM live_sessions AS l WHERE l.id = persisted_docs.session_id)",
)
_LIVE_BRANCH = _BRANCH.format(
    docs="live_docs", sessions="live_sessions", live="1", persisted="s.persisted", shadowing=""
)

_ORDER = "match_count DESC, document_length ASC, time DESC"
HEADER_COLUMNS = (
    "version, created_at, cwd, parent_session, seed_length, delegation_depth, agent_preset"
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


def _matches(phrase: str, predicates: Predicates, bound: bool) -> tuple[str, list[Any]]:
    """The filtered candidate set as a CTE named ``matches``, with its parameters.

    Persisted documents take part only while a backend is bound (the binding this search's
    reconcile used); otherwise they are hidden, not deleted."""
    branches = [_LIVE_BRANCH]
    params: list[Any] = [START, END, phrase]
    if bound:
        branches.append(_PERSISTED_BRANCH)
        params += [START, END, phrase]
    where = " AND ".join(predicates.sql) or "1"
    params.append(START)
    params.extend(predicates.params)
    sql = (
        f"WITH candidates AS ({' UNION ALL '.join(branches)}),\n"
        "matches AS (SELECT *, length(marked_text) - length(replace(marked_text, ?, '')) AS match_count\n"
        f"  FROM candidates WHERE {where})\n"
    )
    return sql, params


def _match(row: tuple[Any, ...]) -> Match:
    (session_id, seq, etype, time, surface, marked, live, persisted, *header) = row
    version, created_at, cwd, parent, seed, depth, preset = header
    return Match(session_id, seq, etype, time, surface, marked, bool(live), bool(persisted),
                 (version, session_id, created_at, cwd, parent, seed, depth, preset))


_SELECT = f"session_id, seq, type, time, surface, marked_text, live, persisted, {HEADER_COLUMNS}"


def select_events(conn: sqlite3.Connection, phrase: str, predicates: Predicates, bound: bool,
                  limit: int, offset: int) -> list[Match]:
    """Matching documents ordered for searchEvents, ``limit`` rows from ``offset``."""
    cte, params = _matches(phrase, predicates, bound)
    sql = f"{cte}SELECT {_SELECT} FROM matches ORDER BY {_ORDER}, seq DESC LIMIT ? OFFSET ?"
    return [_match(row) for row in conn.execute(sql, (*params, limit, offset))]


def select_sessions(conn: sqlite3.Connection, phrase: str, predicates: Predicates, bound: bool,
                    limit: int, offset: int) -> list[Match]:
    """Each session's best match, sessions ordered for searchSessions."""
    cte, params = _matches(phrase, predicates, bound)
    sql = (
        f"{cte}, best AS (SELECT *, row_number() OVER "
        f"(PARTITION BY session_id ORDER BY {_ORDER}, seq DESC) AS session_rank FROM matches)\n"
        f"SELECT {_SELECT} FROM best WHERE session_rank = 1\n"
        f"ORDER BY {_ORDER}, session_id ASC, seq DESC LIMIT ? OFFSET ?"
    )
    return [_match(row) for row in conn.execute(sql, (*params, limit, offset))]
