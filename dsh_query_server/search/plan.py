"""The write plan of one reconcile (semantics.md §6.5): what the index holds per session, and the
``BEGIN IMMEDIATE`` transactions that bring it in line with an observation.

A transaction is begun at the plan's first write and filled *while* the observation runs, so
each session's documents go to SQLite as soon as they are built and the index build holds one
session in memory at a time instead of the whole corpus. Nothing in it is visible before the
commit: the index has a single owner (§6.1) and a single connection, used only inside the search
queue. Whatever ends an attempt before the commit (a retry, an observation error, cancellation)
rolls it back. A write that fails is remembered and reported only after the observation
finished, so observation errors and cancellation keep their precedence over ``INDEX_FAILED``.

**Batches [ours] (§6.5).** A first build of a large home runs for tens of seconds; so that a
cancelled or killed build keeps its work, ``settle`` commits the plan every ``BATCH`` indexed
snapshots. A batch holds only *settled* persisted changes: snapshots read whole at their listed
revision (written, or dropped as unreadable), no live write and no delete of an unlisted id, so
what it commits is true of the store whatever the rest of the observation finds; the persisted generation moves with it (no two reconciles share one).
A search still answers only after its whole reconcile: a batch makes the next build resume, it
never makes a partial index visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from msgspec import UNSET

from .. import errors, jsoncodec
from ..errors import QueryError, inner_message
from ..model.event import Header
from ..values import is_integer, is_number
from .schema import Connection, sanitize, sql_text

BATCH = 64  # indexed snapshots per committed batch of a long build

_HEADER_COLUMNS = (
    "id, version, created_at, cwd, parent_session, seed_length, delegation_depth, agent_preset, "
    "source"
)


@dataclass(frozen=True, slots=True)
class Row:
    """What the index holds for one session. ``tag`` is the persisted revision or the live
    fingerprint; ``persisted`` is the live row's flag; ``span`` the documents' rowid range."""

    tag: str
    generation: int
    span: tuple[int, int] | None
    persisted: bool = False


# One document before sanitizing: (seq, type, time, surface, text).
Document = tuple[int, Any, Any, str, str]


class Tables:
    """One side of the index: a sessions table and its documents table."""

    def __init__(self, sessions: str, docs: str, tail: tuple[str, ...]) -> None:
        self.sessions = sessions
        self.docs = docs
        columns = f"{_HEADER_COLUMNS}, {', '.join(tail)}"
        marks = ", ".join("?" * (9 + len(tail)))
        self.upsert = f"INSERT OR REPLACE INTO {sessions} ({columns}) VALUES ({marks})"
        self.delete_row = f"DELETE FROM {sessions} WHERE id = ?"
        # Each session's documents have contiguous rowids, so a rewrite deletes them by range
        # instead of scanning the FTS5 content table for the session id.
        self.delete_docs = f"DELETE FROM {docs} WHERE rowid BETWEEN ? AND ? AND session_id = ?"
        self.insert_doc = (
            f"INSERT INTO {docs} (rowid, text, session_id, seq, type, time, surface, "
            "codepoint_length) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )


PERSISTED = Tables("persisted_sessions", "persisted_docs", ("revision", "generation"))
LIVE = Tables("live_sessions", "live_docs", ("fingerprint", "persisted", "generation"))


# -- column values -------------------------------------------------------------------------------


def _integer(value: Any) -> Any:
    """An integral JSON number as int; anything else unchanged (STRICT columns refuse it)."""
    if value is UNSET:
        return None
    return int(value) if is_integer(value) else value


def source_column(header: Header) -> str | None:
    """The compact JSON of the header's ``source`` (importers.md §4.4), or None without one."""
    value = header.to_value()
    return jsoncodec.dumps(value["source"]).decode() if "source" in value else None


def header_columns(key: str, header: Header, source: Header | None = None) -> tuple[Any, ...]:
    """A sessions row's header columns; ``source`` comes from ``source`` when given (persisted
    rows take it from the inspected header, importers.md §4.4)."""
    return (
        key,
        _integer(header.version),
        _integer(header.created_at),
        None if header.cwd is UNSET else sql_text(header.cwd),
        None if header.parent_session is UNSET else sql_text(header.parent_session),
        _integer(header.seed_length),
        _integer(header.delegation_depth),
        None if header.agent_preset is UNSET else sql_text(header.agent_preset),
        source_column(header if source is None else source),
    )


def stored(doc: Document) -> Document:
    """A document as the index stores its values: the text sanitized, the type SQLite text, the
    time an integer or another number or NULL. What the insert does to any document; a bulk
    read's worker does it to its digest's (search/documents.py), off the inserting process."""
    seq, type_, time, surface, text = doc
    time = time if type(time) is int else _time(time)
    return seq, sql_text(type_), time, surface, sanitize(text)


def _time(value: Any) -> Any:
    if not is_number(value):
        return None
    return int(value) if is_integer(value) else value


# -- the plan ------------------------------------------------------------------------------------


class WritePlan:
    """The writes of one reconcile attempt against the committed ``persisted``/``live`` mirrors.

    Persisted writes and deletes come first; the first live write fixes ``G_next``, the persisted
    generation after this reconcile, from which live generations are numbered (§6.5)."""

    def __init__(
        self,
        conn: Connection,
        persisted: dict[str, Row],
        live: dict[str, Row],
        persisted_generation: int,
        local_generation: int,
        next_rowid: dict[str, int],
    ) -> None:
        self.conn = conn
        self._committed = {PERSISTED: persisted, LIVE: live}
        self.changes: dict[Tables, dict[str, Row | None]] = {PERSISTED: {}, LIVE: {}}
        self.base_generation = persisted_generation
        self.local_generation = local_generation
        self.next_rowid = dict(next_rowid)
        self._failure: str | None = None
        self.settled = False  # a batch was committed (the mirror has it already)
        self.settled_rowid = next_rowid[PERSISTED.docs]  # the next free rowid after it
        self._pending = 0  # persisted writes since the last batch

    @property
    def persisted_generation(self) -> int:
        """``G_next``: one more than before as soon as a persisted row is written or deleted."""
        if self.changes[PERSISTED] or self.settled:
            return self.base_generation + 1
        return self.base_generation

    @property
    def wrote(self) -> bool:
        return bool(self.changes[PERSISTED] or self.changes[LIVE] or self.settled)

    # -- writes --------------------------------------------------------------------------------

    def write_persisted(
        self,
        key: str,
        header: Header,
        revision: str,
        docs: Iterable[Document],
        inspected: Header,
        *,
        ready: bool = False,
    ) -> None:
        """``ready``: the documents are ``stored`` already (a worker's digest made them so)."""
        generation = self.base_generation + 1
        columns = header_columns(key, header, inspected)
        span = self._replace(PERSISTED, key, docs, (*columns, revision, generation), ready)
        self.changes[PERSISTED][key] = Row(revision, generation, span)

    def delete_persisted(self, key: str) -> None:
        self._remove(PERSISTED, key)

    def settle(self) -> None:
        """Called once a snapshot's write (or its drop, an unreadable log) is settled: read
        whole at its listed revision and checked. Every ``BATCH`` of them, commit the persisted
        changes so far and move them into the committed mirror. Never with a failed write or a
        live write in the transaction (module docstring)."""
        self._pending += 1
        if self._pending < BATCH or self._failure is not None or self.changes[LIVE]:
            return
        persisted = self.changes[PERSISTED]
        if not persisted:
            return
        try:
            self.conn.execute(
                "UPDATE search_state SET global_generation = ?", (self.base_generation + 1,)
            )
            self.conn.execute("COMMIT")
        except Exception as exc:  # noqa: BLE001 - reported once the observation is over
            self._failure = inner_message(exc)
            return
        self._pending = 0
        self.settled = True
        _apply(self._committed[PERSISTED], persisted)
        self.changes[PERSISTED] = {}
        self.settled_rowid = self.next_rowid[PERSISTED.docs]

    def drop_persisted(self, key: str) -> None:
        """Whatever the index holds for ``key``, or this plan wrote for it, goes: its log turned
        out unreadable (search/unreadable.py). Nothing held and nothing written: no change."""
        pending = self.changes[PERSISTED]
        if key in pending or key in self._committed[PERSISTED]:
            self._remove(PERSISTED, key)

    def write_live(
        self, key: str, header: Header, fingerprint: str, persisted: bool, docs: Iterable[Document]
    ) -> None:
        # Live rows are written in creation order, each above every generation assigned so far.
        generation = self.local_generation = (
            max(self.local_generation, self.persisted_generation) + 1
        )
        span = self._replace(
            LIVE, key, docs, (*header_columns(key, header), fingerprint, int(persisted), generation)
        )
        self.changes[LIVE][key] = Row(fingerprint, generation, span, persisted)

    def delete_live(self, key: str) -> None:
        self._remove(LIVE, key)

    def _replace(
        self,
        tables: Tables,
        key: str,
        docs: Iterable[Document],
        columns: tuple[Any, ...],
        ready: bool = False,
    ) -> tuple[int, int] | None:
        # ``docs`` is consumed while SQLite inserts it, so a session's documents (and the log
        # they come from) are never all held twice: the build's peak memory is one log.
        first = self.next_rowid[tables.docs]
        if self._failure is not None:
            return None  # the plan is lost anyway; the observation just runs to its end
        count = 0
        types: dict[str, Any] = {}  # a log holds few distinct types: each one checked once

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal count
            if ready:
                for rowid, (seq, type_, time, surface, text) in enumerate(docs, first):
                    count += 1
                    yield (rowid, text, key, seq, type_, time, surface, len(text))
                return
            for rowid, (seq, type_, time, surface, text) in enumerate(docs, first):
                text = sanitize(text)
                count += 1
                if type(type_) is str:
                    column = types.get(type_)
                    if column is None:
                        column = types[type_] = sql_text(type_)
                else:
                    column = sql_text(type_)
                time = time if type(time) is int else _time(time)
                yield (rowid, text, key, seq, column, time, surface, len(text))

        try:
            self._begin()
            pending = self.changes[tables]  # this plan's own rows of the key go first, if any
            old = pending[key] if key in pending else self._committed[tables].get(key)
            if old is not None and old.span is not None:
                self.conn.execute(tables.delete_docs, (*old.span, key))
            self.conn.executemany(tables.insert_doc, rows())
            self.conn.execute(tables.upsert, columns)
        except Exception as exc:  # noqa: BLE001 - reported once the observation is over
            self._failure = inner_message(exc)
            return None
        self.next_rowid[tables.docs] = first + count
        return (first, first + count - 1) if count else None

    def _remove(self, tables: Tables, key: str) -> None:
        """Delete the session's row and documents: those this plan wrote, else the committed
        ones. A row only this plan wrote leaves no change behind."""
        pending, committed = self.changes[tables], self._committed[tables]
        old = pending[key] if key in pending else committed[key]
        if key in committed:
            pending[key] = None
        else:
            del pending[key]
        if self._failure is not None or old is None:
            return
        try:
            self._begin()
            if old.span is not None:
                self.conn.execute(tables.delete_docs, (*old.span, key))
            self.conn.execute(tables.delete_row, (key,))
        except Exception as exc:  # noqa: BLE001 - reported once the observation is over
            self._failure = inner_message(exc)

    def _begin(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")

    # -- ending --------------------------------------------------------------------------------

    def commit(self) -> None:
        """Finish the transaction, or roll it back and raise INDEX_FAILED (`reconciliation
        failed`). Nothing to write means no transaction at all."""
        if self._failure is None and not self.conn.in_transaction:
            return  # nothing written since the last batch (or at all)
        try:
            if self._failure is not None:
                raise _Failed(self._failure)
            if self.changes[PERSISTED]:
                self.conn.execute(
                    "UPDATE search_state SET global_generation = ?", (self.persisted_generation,)
                )
            self.conn.execute("COMMIT")
        except Exception as exc:  # noqa: BLE001 - any failure rolls the whole plan back
            self.abandon()
            detail = inner_message(exc)
            raise QueryError(
                errors.INDEX_FAILED, f"session-search reconciliation failed: {detail}", cause=detail
            ) from None

    def abandon(self) -> None:
        """Roll back whatever was written; the committed mirrors never saw any of it."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def _apply(mirror: dict[str, Row], changes: dict[str, Row | None]) -> None:
    for key, row in changes.items():
        if row is None:
            mirror.pop(key, None)
        else:
            mirror[key] = row


class _Failed(Exception):
    """A write that failed during the observation, raised at commit time."""
