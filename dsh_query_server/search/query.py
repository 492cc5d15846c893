"""Metadata predicates and budgets (semantics.md §6.7), candidate selection over the persisted base
and the live overlay (§6.8), and ranking (§6.9).

All ranking happens in SQL over one shared scale (no BM25): highlight spans, then document length,
time, and the tie-breakers. Every filter value is a bound parameter; the SQL text depends only on
the shape of the request.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import UNSET

from .. import errors
from ..errors import QueryError
from ..model.filters import AvailabilityFilter, _Range, kind_of
from .request import phrase
from .schema import Connection, PhraseFinder, sql_text
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
    columns: frozenset[str] = frozenset()  # the candidate columns they read


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


def _compile(clauses: Sequence[Any], columns: set[str]) -> tuple[list[str], list[Any]]:
    sql: list[str] = []
    params: list[Any] = []
    for clause in clauses:
        if isinstance(clause, AvailabilityFilter):
            distinct = set(clause.values)
            if not distinct:
                sql.append("0")
            elif len(distinct) == 1:
                column = "live" if "live" in distinct else "persisted"
                sql.append(f"{column} = 1")
                columns.add(column)
            continue  # both values: no predicate at all
        column = _COLUMNS[kind_of(clause)]
        columns.add(column)
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


def compile_filters(
    session_clauses: Sequence[Any], event_clauses: Sequence[Any], target: str | None = None
) -> Predicates:
    """Predicates for the candidate rows, checked in the order of §6.7. ``target`` restricts to one
    session and takes one predicate slot and one variable."""
    budget = PREDICATE_BUDGET - (target is not None)
    fixed = FIXED_VARIABLES + (target is not None)
    columns: set[str] = set()
    session_sql, session_params = _compile(session_clauses, columns)
    if fixed + len(session_params) > VARIABLE_LIMIT:
        raise _binding_error()
    if len(session_sql) > budget:
        raise _budget_error()
    event_sql, event_params = _compile(event_clauses, columns)
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
    return Predicates(tuple(sql), tuple(params), frozenset(columns))


# -- candidates (§6.8) and ranking (§6.9) ---------------------------------------------------------
#
# Two statements per search, both run inside the search's turn on the index's one connection, so
# nothing can change between them.
#   rank   every candidate that passes the predicates, as a narrow row (side, rowid, session),
#          sorted in SQL. ``match_count`` is the FTS5 auxiliary function ``match_spans``
#          (schema.py): the spans highlight() would mark, counted from the phrase's token
#          positions without re-tokenizing the document. Only the keys are sorted; the hit's
#          other columns are read for the page alone.
#   page   for the page's rows, read by rowid: the text (the snippet's first span is placed by
#          PhraseFinder, else by highlight()), the hit's columns, and the header columns from the
#          session row on the document's side of the index.
#
# searchSessions needs no window function: sorted by match_count DESC, document_length ASC,
# time DESC, session_id ASC, seq DESC, a session's first row is its best event (§6.9 step 2 is
# this order with the session fixed), and sessions first appear in the §6.9 step 3 order. The
# page is read off the sorted rows, keeping each session's first; rows after the page are never
# fetched. (A window function over every candidate cost more than the highlights.)

_RANK_BRANCH = """
    SELECT {live} AS live, {docs}.rowid AS rowid, {docs}.session_id AS session_id,
           CAST({docs}.seq AS INTEGER) AS seq, {docs}.time AS time,
           {docs}.codepoint_length AS document_length,{extra}
           match_spans({docs}) AS match_count
    FROM {docs}{join}
    WHERE {docs} MATCH ?1{shadowing}"""

# Columns only predicates read, selected only when one does (every column costs per candidate).
# The session row is joined only for its columns: for most searches that lookup would be wasted.
_EXTRA = {
    "type": "{docs}.type AS type",
    "surface": "{docs}.surface AS surface",
    "persisted": "{persisted} AS persisted",
    "cwd": "s.cwd AS cwd",
    "parent_session": "s.parent_session AS parent_session",
    "created_at": "s.created_at AS created_at",
}
_SESSION_JOIN = " JOIN {sessions} AS s ON s.id = {docs}.session_id"

# The live overlay shadows the persisted base for its ids.
_SHADOWING = "\n      AND NOT EXISTS (SELECT 1 FROM live_sessions AS l WHERE l.id = persisted_docs.session_id)"

_ORDER = "match_count DESC, document_length ASC, time DESC"
_EVENT_ORDER = f"{_ORDER}, seq DESC"
_SESSION_ORDER = f"{_ORDER}, session_id ASC, seq DESC"

_SIDES = (
    ("live_docs", "live_sessions", "1", "s.persisted"),
    ("persisted_docs", "persisted_sessions", "0", "1"),
)


def _rank_sql(predicates: Predicates, bound: bool, order: str) -> str:
    """The rank statement. Persisted documents take part only while a backend is bound (the
    binding this search's reconcile used); otherwise they are hidden, not deleted. The metadata
    predicates apply before ranking. Parameters: the phrase, then the predicates' values."""
    where = " AND ".join(predicates.sql) or "1"
    extra = [column for name, column in _EXTRA.items() if name in predicates.columns]
    branches = []
    for docs, sessions, live, persisted in _SIDES[: 1 + bound]:
        columns = "".join(
            f"\n           {c.format(docs=docs, persisted=persisted)}," for c in extra
        )
        branches.append(
            _RANK_BRANCH.format(
                docs=docs,
                live=live,
                extra=columns,
                join=_SESSION_JOIN.format(sessions=sessions, docs=docs) if "s." in columns else "",
                shadowing=_SHADOWING if live == "0" else "",
            )
        )
    union = "\n    UNION ALL".join(branches)
    return f"SELECT live, rowid, session_id FROM ({union})\nWHERE {where}\nORDER BY {order}"


_PAGE_BRANCH = """
    SELECT {live}, d.rowid, d.session_id, CAST(d.seq AS INTEGER), d.type, d.time, d.surface,
           highlight({docs}, 0, ?2, ?3), {persisted}, {header}
    FROM {docs} AS d JOIN {sessions} AS s ON s.id = d.session_id
    WHERE {docs} MATCH ?1 AND +d.rowid IN (SELECT value FROM json_each(?{rowids}))"""
_HEADER = "s.version, s.created_at, s.cwd, s.parent_session, s.seed_length, s.delegation_depth, s.agent_preset, s.source"


def _page_sql(sides: tuple[int, ...]) -> str:
    """The page statement over the sides the page has rows on (1 live, 0 persisted): the
    phrase and the two markers, then each side's page rowids as a JSON array. The unary plus
    keeps the rowids a filter on one MATCH scan per side; as a constraint, FTS5 would run the
    whole query again for every rowid."""
    branches = [
        _PAGE_BRANCH.format(
            docs=docs,
            sessions=sessions,
            live=live,
            persisted=persisted,
            header=_HEADER,
            rowids=4 + n,
        )
        for n, (docs, sessions, live, persisted) in enumerate(
            side for side in _SIDES if int(side[2]) in sides
        )
    ]
    return "\n    UNION ALL".join(branches)


# The page reads its rows by rowid, with no MATCH: a second MATCH scan for highlight() cost more
# than the ranking statement for rare phrases. The snippet needs only where the first span starts
# (§6.10 drops every marker), which PhraseFinder computes with the index's own tokenizer; a row it
# cannot place is asked of highlight() as before (_page_sql).
_LOOKUP_BRANCH = """
    SELECT {live}, d.rowid, d.session_id, CAST(d.seq AS INTEGER), d.type, d.time, d.surface,
           d.text, {persisted}, {header}
    FROM {docs} AS d CROSS JOIN {sessions} AS s ON s.id = d.session_id
    WHERE d.rowid IN (SELECT value FROM json_each(?{rowids}))"""


def _lookup_sql(sides: tuple[int, ...]) -> str:
    """The page rows by rowid over the given sides; parameters: each side's rowids as JSON."""
    return "\n    UNION ALL".join(
        _LOOKUP_BRANCH.format(
            docs=docs, sessions=sessions, live=live, persisted=persisted, header=_HEADER, rowids=n
        )
        for n, (docs, sessions, live, persisted) in enumerate(
            (side for side in _SIDES if int(side[2]) in sides), 1
        )
    )


@dataclass(frozen=True, slots=True)
class Match:
    session_id: str
    seq: int
    type: Any
    time: Any
    surface: str
    text: str
    first: int  # the code point where highlight() puts the first START marker
    live: bool
    persisted: bool
    header: tuple[Any, ...]  # version, id, created_at, cwd, parent, seed, depth, preset, source


def _by_side(keys: list[tuple[int, int]]) -> tuple[tuple[int, ...], list[str]]:
    sides = tuple(side for side in (1, 0) if any(live == side for live, _ in keys))
    rowids = [
        msgspec.json.encode([rowid for live, rowid in keys if live == side]).decode()
        for side in sides
    ]
    return sides, rowids


def _page(conn: Connection, query: str, keys: list[tuple[int, int]]) -> list[Match]:
    """The page's matches, in the order of ``keys`` ((live, rowid) pairs)."""
    if not keys:
        return []
    finder = PhraseFinder(conn, query)
    sides, rowids = _by_side(keys)
    found: dict[tuple[int, int], Match] = {}
    unplaced: list[tuple[int, int]] = []
    for row in conn.execute(_lookup_sql(sides), rowids):
        side, rowid, session_id, seq, etype, time, surface, text, flag, *header = row
        first = finder.first(text)
        if first is None:
            unplaced.append((side, rowid))
            first = -1
        version, created_at, *optional = header
        found[side, rowid] = Match(
            session_id,
            seq,
            etype,
            time,
            surface,
            text,
            first,
            bool(side),
            bool(flag),
            (version, session_id, created_at, *optional),
        )
    if unplaced:
        _highlight(conn, query, unplaced, found)
    return [found[key] for key in keys]


def _highlight(
    conn: Connection, query: str, keys: list[tuple[int, int]], found: dict[tuple[int, int], Match]
) -> None:
    """The first START of ``keys``' rows from highlight() itself (one MATCH scan per side)."""
    sides, rowids = _by_side(keys)
    for side, rowid, *_, marked, _flag in _highlighted(conn, phrase(query), sides, rowids):
        text = marked.replace(END, "")
        found[side, rowid] = dataclasses.replace(found[side, rowid], first=text.find(START))


def _highlighted(
    conn: Connection, quoted: str, sides: tuple[int, ...], rowids: list[str]
) -> Iterator[tuple[Any, ...]]:
    for row in conn.execute(_page_sql(sides), [quoted, START, END, *rowids]):
        yield row[:9]


def _params(quoted: str, predicates: Predicates) -> list[Any]:
    return [quoted, *predicates.params]


def select_events(
    conn: Connection, query: str, predicates: Predicates, bound: bool, limit: int, offset: int
) -> list[Match]:
    """Matching documents ordered for searchEvents, ``limit`` rows from ``offset``; ``query``
    is the normalized query (§6.6)."""
    sql = f"{_rank_sql(predicates, bound, _EVENT_ORDER)}\nLIMIT ? OFFSET ?"
    keys = [
        (live, rowid)
        for live, rowid, _ in conn.execute(
            sql, [*_params(phrase(query), predicates), limit, offset]
        )
    ]
    return _page(conn, query, keys)


def select_sessions(
    conn: Connection, query: str, predicates: Predicates, bound: bool, limit: int, offset: int
) -> list[Match]:
    """Each session's best match, sessions ordered for searchSessions, ``limit`` from ``offset``."""
    seen: set[str] = set()
    keys: list[tuple[int, int]] = []
    if limit > 0:
        # Closed explicitly: a statement left unfinished would hold its read lock until the
        # cursor happened to be collected, and the next reconcile writes.
        with contextlib.closing(
            conn.execute(
                _rank_sql(predicates, bound, _SESSION_ORDER), _params(phrase(query), predicates)
            )
        ) as rows:
            for live, rowid, session_id in rows:
                if session_id in seen:
                    continue
                seen.add(session_id)
                if len(seen) > offset:
                    keys.append((live, rowid))
                    if len(keys) == limit:
                        break
    return _page(conn, query, keys)
