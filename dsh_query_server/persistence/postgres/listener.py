"""The change listener of a ``postgres:`` mount (postgres.md §5).

One autocommit connection outside the pool runs ``LISTEN dsh_query_changes`` and waits for
notifies a second at a time, so that ``stop`` takes effect within a second. Notifications from
other stores (the channel is database-wide) and from this mount's own writer are skipped; the
rest become ``notify(ids, corpus)``. A lost connection reconnects after 1 s, doubling up to 30 s,
then reports the corpus changed once. Where ``LISTEN`` is refused (a standby) ``change_count`` is
polled every 5 s instead. It is a notification only: nothing is cached or invalidated.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import LiteralString, cast

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from . import schema
from .conninfo import PgMount
from .schema import NOTIFY_CHANNEL

log = logging.getLogger(__name__)

Notify = Callable[[list[str], bool], None]
Conn = psycopg.Connection[tuple[object, ...]]

WAIT_SECONDS = 1.0
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 30.0
POLL_SECONDS = 5.0

# The states ``status`` shows (§1.4). "reconnecting" also covers the first connection.
LISTENING, POLLING, RECONNECTING, OFF = "listening", "polling", "reconnecting", "off"


class ChangeListener:
    """One thread and at most one connection; ``stop`` ends both."""

    def __init__(self, mount: PgMount, instance: str, writer: str, notify: Notify) -> None:
        self._mount = mount
        self._instance = instance  # skipped in payloads
        self._writer = writer  # skipped in polled rows
        self._notify = notify
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._store_id: str | None = None
        self.state = RECONNECTING
        self.last_error: str | None = None
        self.poll_seconds = POLL_SECONDS

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="dsh-query-pg-listener", daemon=True
            )
            self._thread.start()

    def stop(self, wait: float | None = None) -> None:
        """Ask the thread to end (within about a second); ``wait`` joins it that long."""
        self._stop.set()
        thread = self._thread
        if wait is not None and thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        delay, lost = FIRST_RETRY_SECONDS, False
        try:
            while not self._stop.is_set():
                try:
                    with psycopg.connect(self._mount.conninfo(), autocommit=True) as conn:
                        # Read first, so that LISTEN stays the connection's last statement.
                        self._store_id = self._read_store_id(conn)
                        try:
                            conn.execute(
                                sql.SQL("LISTEN {}").format(sql.Identifier(NOTIFY_CHANNEL))
                            )
                            self.state = LISTENING
                        except (pg_errors.ReadOnlySqlTransaction, pg_errors.FeatureNotSupported):
                            self.state = POLLING
                        delay = FIRST_RETRY_SECONDS
                        if lost:  # whatever changed while we were away
                            lost = False
                            self._notify([], True)
                        if self.state == LISTENING:
                            self._listen(conn)
                        else:
                            self._poll(conn)
                except psycopg.Error as exc:
                    self.last_error = self._mount.scrub(str(exc).strip())
                    log.debug("postgres listener connection lost: %s", self.last_error)
                if self._stop.is_set():
                    break
                self.state, lost = RECONNECTING, True
                self._stop.wait(delay)
                delay = min(delay * 2, MAX_RETRY_SECONDS)
        finally:
            self.state = OFF

    def _q(self, text: LiteralString) -> bytes:
        return schema.qualified(self._mount.schema, text)

    def _read_store_id(self, conn: Conn) -> str | None:
        row = conn.execute(
            "SELECT pg_catalog.to_regclass(%s) IS NOT NULL",
            (sql.Identifier(self._mount.schema, "store").as_string(conn),),
        ).fetchone()
        if row is None or not row[0]:
            return None
        found = conn.execute(self._q("SELECT store_id::text FROM {s}.store")).fetchone()
        return None if found is None else str(found[0])

    def _listen(self, conn: Conn) -> None:
        while not self._stop.is_set():
            batch = list(conn.notifies(timeout=WAIT_SECONDS, stop_after=1))
            ids: list[str] = []
            corpus = False
            for item in batch:
                payload = _payload(item.payload)
                if payload is None:
                    continue
                store = payload.get("store")
                if store != self._store_id:
                    # An uninitialized store may have been created since: look once more.
                    if self._store_id is not None:
                        continue
                    self._store_id = self._read_store_id(conn)
                    if store != self._store_id:
                        continue
                if payload.get("writer") == self._instance:
                    continue
                session_id = payload.get("id")
                if isinstance(session_id, str):
                    ids.append(session_id)
                else:
                    corpus = True
            if ids or corpus:
                self._notify(sorted(set(ids)), corpus)

    def _poll(self, conn: Conn) -> None:
        """§5 on a standby: the delta's ids every 5 s, or the corpus when deletions moved."""
        last = self._counters(conn)
        while not self._stop.wait(self.poll_seconds):
            now = self._counters(conn)
            if now == last:
                continue
            if last is None or now is None or now[0] != last[0] or now[2] != last[2]:
                self._notify([], True)  # the store appeared, vanished, or lost sessions
            else:
                found = conn.execute(
                    self._q("SELECT id FROM {s}.sessions WHERE change > %s AND writer <> %s"),
                    (last[1], self._writer),
                ).fetchall()
                ids = sorted(str(row[0]) for row in found)
                if ids:
                    self._notify(ids, False)
            last = now

    def _counters(self, conn: Conn) -> tuple[str, int, int] | None:
        """(store_id, change_count, deletions), or None while the store is uninitialized."""
        if self._read_store_id(conn) is None:
            return None
        row = conn.execute(
            self._q("SELECT store_id::text, change_count, deletions FROM {s}.store")
        ).fetchone()
        return None if row is None else (str(row[0]), int(str(row[1])), int(str(row[2])))


class ListenerSlot:
    """A mount's listener: started by the server when it mounts the backend (with
    ``listen=true``), stopped when it unmounts or replaces it, or shuts down (§1.4)."""

    def __init__(self, mount: PgMount, instance: str, writer: str) -> None:
        self._mount, self._instance, self._writer = mount, instance, writer
        self._lock = threading.Lock()
        self.current: ChangeListener | None = None

    @property
    def state(self) -> str:
        current = self.current
        return OFF if current is None else current.state

    def start(self, notify: Notify) -> None:
        """Idempotent; does nothing with ``listen=false``."""
        with self._lock:
            if self._mount.listen and self.current is None:
                self.current = ChangeListener(self._mount, self._instance, self._writer, notify)
                self.current.start()

    def stop(self, wait: float | None = None) -> None:
        with self._lock:
            current, self.current = self.current, None
        if current is not None:
            current.stop(wait)


def _payload(text: str) -> dict[str, object] | None:
    try:
        value: object = json.loads(text)
    except ValueError:
        return None
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


__all__ = ["LISTENING", "OFF", "POLLING", "RECONNECTING", "ChangeListener", "ListenerSlot"]
