"""The statements reads are made of: one session row, a log's rows in seq order, the rows of a
window, and stored tail discovery (persistence.md §5.6, §5.7 step 2)."""

from __future__ import annotations

import sqlite3
from collections.abc import Generator

from ...cancel import CancelToken
from ...model.event import Event
from ...values import MAX_SAFE_INTEGER
from .codec import MAX_PACKED_MEMBERS, ROW_DEFECTS, to_text
from .rows import Row, decode_row, event_row
from .schema import EVENT_SELECT, FETCH_ROWS, SESSION_SELECT
from .sessions import SessionRow, session_row

# ---------------------------------------------------------------------------------------------
# Queries


def select_session(conn: sqlite3.Connection, session_id: str) -> SessionRow | None:
    row = conn.execute(
        f"{SESSION_SELECT} WHERE id = CAST(? AS TEXT)", (to_text(session_id),)
    ).fetchone()
    return None if row is None else session_row(row)


def select_rows(conn: sqlite3.Connection, session_id: str, token: CancelToken) -> Generator[Row]:
    """Every events row of the session in seq order, each validated (§5.6 steps 1–2).

    Rows stream one at a time, so a long log's rows are never all in memory, and few objects
    are alive at once (batches of row tuples would keep triggering garbage collections that
    promote the decoded events, and then full collections over the whole heap).

    A request reading this one log is told the seq reached of the log's end, every FETCH_ROWS
    rows (``reading 2,048 of 9,000 events``, query/loading.py ``metered``)."""
    meter = token.reading_items
    end = _stored_end(conn, session_id) if meter is not None else 0
    cursor = conn.execute(f"{EVENT_SELECT} ORDER BY seq", (to_text(session_id),))
    for count, values in enumerate(cursor, 1):
        if count % FETCH_ROWS == 0:
            token.raise_if_cancelled()
            if meter is not None:
                meter(min(values[0], end), end, "events")
        yield event_row(values)
    token.raise_if_cancelled()


def _stored_end(conn: sqlite3.Connection, session_id: str) -> int:
    """For progress only: the seq after the last row's events (a packed row holds up to 1,024),
    or after its seq when that row does not decode (the read itself then says what is wrong)."""
    values = conn.execute(
        f"{EVENT_SELECT} ORDER BY seq DESC LIMIT 1", (to_text(session_id),)
    ).fetchone()
    if values is None:
        return 0
    try:
        return decode_row(event_row(values), outline=True)[-1].seq + 1
    except (*ROW_DEFECTS, ValueError, TypeError):
        return values[0] + 1


def select_span(
    conn: sqlite3.Connection,
    session_id: str,
    lo: int,
    hi: int,
    torn_at: int | None,
    token: CancelToken,
) -> list[Row]:
    """The rows that hold stored seqs ``lo..hi`` of a verified prefix: the last row starting at
    or before ``lo`` (a packed row covering ``lo`` starts up to 1,023 seqs earlier) and every row
    after it through ``hi``. Two primary-key range reads, however long the log is. Rows from
    ``torn_at`` on are the torn tail, whose seqs may overlap the prefix: they are left out."""
    text_id = to_text(session_id)
    limit = MAX_SAFE_INTEGER + 1 if torn_at is None else torn_at
    head = conn.execute(
        f"{EVENT_SELECT} AND seq <= ? AND seq < ? ORDER BY seq DESC LIMIT 1", (text_id, lo, limit)
    ).fetchall()
    token.raise_if_cancelled()
    rest = conn.execute(
        f"{EVENT_SELECT} AND seq > ? AND seq <= ? AND seq < ? ORDER BY seq",
        (text_id, lo, hi, limit),
    ).fetchall()
    token.raise_if_cancelled()
    return [event_row(values) for values in head + rest]


def span_events(rows: list[Row], lo: int, hi: int) -> list[Event]:
    """The events with seqs ``lo..hi`` that ``rows`` decode to (coverage is checked later)."""
    events: list[Event] = []
    for row in rows:
        events.extend(e for e in decode_row(row) if lo <= e.seq <= hi)
    return events


def _invalid_tail(session_id: str, seq: int) -> ValueError:
    return ValueError(f"session {session_id} has an invalid physical tail at seq {seq}")


def _decode_tail_row(session_id: str, row: Row) -> list[Event]:
    try:
        return decode_row(row)
    except ROW_DEFECTS as exc:
        raise _invalid_tail(session_id, row.seq) from exc


def discover_tail(conn: sqlite3.Connection, session_id: str) -> int:
    """Stored tail discovery (§5.7 step 2): the seq after the last stored event.

    Reads the last two physical rows, and the packed rows up to 1,023 seqs before them that
    could reach into them; they must decode, not overlap, and the last two must be adjacent."""
    text_id = to_text(session_id)
    last_two = [
        event_row(r) for r in conn.execute(f"{EVENT_SELECT} ORDER BY seq DESC LIMIT 2", (text_id,))
    ][::-1]
    if not last_two:
        return 0
    low = last_two[0].seq
    earlier = [
        event_row(r)
        for r in conn.execute(
            f"{EVENT_SELECT} AND seq >= ? AND seq < ? AND ignorable = 0 ORDER BY seq",
            (text_id, low - (MAX_PACKED_MEMBERS - 1), low),
        )
    ]
    for row in earlier:
        if _decode_tail_row(session_id, row)[-1].seq >= low:
            raise _invalid_tail(session_id, low)
    decoded = [_decode_tail_row(session_id, row) for row in last_two]
    if len(decoded) == 2 and decoded[1][0].seq != decoded[0][-1].seq + 1:
        raise _invalid_tail(session_id, last_two[1].seq)
    return decoded[-1][-1].seq + 1


def not_found(session_id: str) -> LookupError:
    return LookupError(f'session "{session_id}" not found')
