"""Bulk inspection (postgres.md §3.3): ``inspect`` of many ids in a few round trips each.

A per-id ``inspect`` costs several round trips (pool check, BEGIN, session row, rows, COMMIT),
which bound the search index build by latency. Here one ``REPEATABLE READ READ ONLY``
transaction reads the session rows of up to ``IDS_PER_READ`` ids and, in one statement ordered
by session and seq, the rows of as many of them as fit in ``ROWS_PER_READ`` events; the token
is checked between transactions (and cancels a running statement). Every id's log is then
decoded and verified by the very steps ``inspect`` runs (rows.py, logical/log.py) on rows of one
snapshot, so each result is what ``inspect(id)`` would have given at that snapshot, errors
included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import groupby
from operator import itemgetter
from typing import LiteralString, cast

from ...cancel import NULL_TOKEN, CancelToken
from ..contract.results import BulkResult, Inspection
from ..logical import log as logical
from . import rows, schema
from .connection import Conn, Pool
from .schema import StoreIdentity

IDS_PER_READ = 512  # session rows read per transaction
ROWS_PER_READ = 20_000  # stored events read per transaction (at least one whole log): ~10 MB
_PK = itemgetter(0)
_RECORD = itemgetter(slice(1, None))  # (seq, last_seq, record) of a (pk, ...) row


@dataclass(frozen=True, slots=True)
class Source:
    """What the bulk read needs of a mounted backend: its pool, schema and store check."""

    pool: Pool
    schema: str
    open: Callable[[Conn], StoreIdentity | None]

    def q(self, text: LiteralString) -> bytes:
        return schema.qualified(self.schema, text)


@dataclass(frozen=True, slots=True)
class _Row:
    """One session row as ``inspect`` reads it, and its stored rows when they were read."""

    text: str
    created_at: object
    count: int
    records: list[rows.Record] | None


# One transaction's outcome: the rows by id (None: no session row) for the first ``taken`` ids.
_Chunk = tuple[dict[str, _Row | None], int]


def _not_found(session_id: str) -> LookupError:
    return LookupError(f'session "{session_id}" not found')


def inspect_many(
    source: Source, session_ids: Sequence[str], limit: int, token: CancelToken = NULL_TOKEN
) -> Iterator[tuple[str, BulkResult]]:
    """``BulkInspector.inspect_many`` (contract/capabilities.py) for the ``postgres:`` backend."""
    ids = list(session_ids)
    start = 0
    while start < len(ids):
        token.raise_if_cancelled()
        chunk = ids[start : start + IDS_PER_READ]
        found, taken = source.pool.read(
            partial(_read, source, chunk=chunk, limit=limit, token=token), token
        )
        for session_id in chunk[:taken]:
            yield session_id, _result(session_id, found.get(session_id, None), limit)
        start += taken


def _read(source: Source, conn: Conn, chunk: list[str], limit: int, token: CancelToken) -> _Chunk:
    if source.open(conn) is None:
        return {}, len(chunk)  # an uninitialized store holds no session
    # Ids that could not be bound as text are left to ``inspect`` (its own error, exactly).
    bindable = [sid for sid in chunk if rows.id_problem(sid) is None]
    found: dict[str, tuple[int, _Row]] = {}
    for pk, session_id, text, created_at, count in conn.execute(
        source.q(
            "SELECT pk, id, header, created_at, event_count FROM {s}.sessions WHERE id = ANY(%s)"
        ),
        (bindable,),
    ).fetchall():
        found[str(session_id)] = (
            int(str(pk)),
            _Row(str(text), created_at, int(str(count)), None),
        )
    # The first ids whose logs fit the budget (always at least one id).
    wanted: dict[int, list[rows.Record]] = {}
    events, taken = 0, 0
    for session_id in chunk:
        entry = found.get(session_id)
        if entry is not None and entry[1].count <= limit:
            if wanted and events + entry[1].count > ROWS_PER_READ:
                break
            events += entry[1].count
            wanted.setdefault(entry[0], [])
        taken += 1
    if wanted:
        # One plain statement: the budget bounds what it returns, and a fired token cancels it
        # within 100 ms (connection.cancelling); a cursor cost three round trips more.
        found_rows = conn.execute(
            source.q(
                "SELECT session_pk, seq, last_seq, record FROM {s}.events"
                " WHERE session_pk = ANY(%s) AND seq >= 0 ORDER BY session_pk, seq"
            ),
            (list(wanted),),
        ).fetchall()
        token.raise_if_cancelled()
        # bigint and text columns: (int, int, int, str) rows, grouped by session in C.
        for pk, group in groupby(cast("list[tuple[int, int, int, str]]", found_rows), _PK):
            wanted[pk].extend(map(_RECORD, group))
        del found_rows
    out: dict[str, _Row | None] = {}
    for session_id in chunk[:taken]:
        entry = found.get(session_id)
        if entry is None:
            out[session_id] = None
        else:
            pk, row = entry
            out[session_id] = _Row(row.text, row.created_at, row.count, wanted.get(pk))
    return out, taken


def _result(session_id: str, row: _Row | None, limit: int) -> BulkResult:
    if rows.id_problem(session_id) is not None:
        return None
    if row is None:
        return _not_found(session_id)
    if row.records is None:
        return None  # longer than ``limit``: the caller reads it its own way
    try:
        header = rows.decode_header(session_id, row.text, row.created_at)
        events = list(rows.decode_rows(row.records, row.count))
        logical_events, _ = logical.verified_log(session_id, events)
    except Exception as exc:  # noqa: BLE001 - handed back as inspect would raise it
        return exc
    return Inspection(header, logical_events)
