"""The longer fault tests of postgres.md §7 against a real PostgreSQL 15: two writer processes at
a barrier for 200 rounds, 20 random SIGKILLs of a streaming writer, the database restarted
(``-m fast`` and ``-m immediate``) under a reading thread, and the warnings and messages of a
server that does not authenticate itself (§1.3), is read-only (§4, 25006) or runs without fsync
(§3.7)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.postgres import (
    PostgresUnavailableError,
    SessionAppendConflictError,
    open_postgres,
)
from tests.builders import header
from tests.pg_server import PgDatabase

ROOT = str(Path(__file__).resolve().parents[3])
ENV = {**os.environ, "PYTHONPATH": ROOT}
ROUNDS = 200


def note(seq: int, writer: str, round_: int = 0) -> Event:
    return make_event("x/note", seq, seq, {"writer": writer, "round": round_})


# ---------------------------------------------------------------------------------------------
# two writer processes, one session, 200 rounds at a barrier (§3.6)


def _racer(uri: str, index: int, barrier: Any, results: Any) -> None:
    """One writer process: each round, read the stored count at the barrier, then append a
    batch of 1 + index events from it at the same moment as the other."""
    backend = open_postgres(uri)
    outcomes: list[str] = []
    try:
        for round_ in range(ROUNDS):
            barrier.wait(60)
            start = backend.stored_count("s")
            assert start is not None
            barrier.wait(60)
            batch = [note(start + k, f"w{index}", round_) for k in range(1 + index)]
            try:
                backend.append("s", batch)
                outcomes.append("ok")
            except SessionAppendConflictError as exc:
                expected = (
                    f'session "s" append starts at seq {start}, stored next seq is'
                    f" {start + 2 - index}"
                )
                outcomes.append("conflict" if str(exc) == expected else f"wrong: {exc}")
    finally:
        backend.close()
        results.put((index, outcomes))


def test_two_writer_processes_at_a_barrier(pg_database: PgDatabase) -> None:
    uri = pg_database.socket_uri(listen="false")
    setup = open_postgres(uri)
    setup.create(header("s"))
    setup.append("s", [note(0, "setup")])
    setup.close()
    context = multiprocessing.get_context("spawn")  # no pool or thread crosses a fork
    barrier, results = context.Barrier(2), context.Queue()
    processes = [context.Process(target=_racer, args=(uri, i, barrier, results)) for i in (0, 1)]
    for process in processes:
        process.start()
    outcomes: dict[int, list[str]] = {}
    for _ in processes:
        index, got = results.get(timeout=240)
        outcomes[index] = got
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    assert len(outcomes[0]) == len(outcomes[1]) == ROUNDS
    for round_ in range(ROUNDS):  # each round: one commit, one exact conflict
        assert {outcomes[0][round_], outcomes[1][round_]} == {"ok", "conflict"}, round_
    reader = open_postgres(uri)
    try:
        events = reader.inspect("s").events  # the log replays valid
        assert [e.seq for e in events] == list(range(len(events)))
        # Each round's events are exactly the winner's batch: none lost, none twice.
        expected: list[tuple[str, int]] = [("setup", 0)]
        for round_ in range(ROUNDS):
            winner = 0 if outcomes[0][round_] == "ok" else 1
            expected += [(f"w{winner}", round_)] * (1 + winner)
        assert [(e.data()["writer"], e.data()["round"]) for e in events] == expected
    finally:
        reader.close()


# ---------------------------------------------------------------------------------------------
# kill -9 of a streaming writer, 20 times (§3.7)

_PRODUCER = """
import os, sys
from dsh_query_server.model.event import Header, make_event
from dsh_query_server.persistence.postgres import open_postgres

def produce():
    backend = open_postgres(sys.argv[1])
    count = backend.stored_count("k")
    if count is None:
        backend.create(Header.build(version=0, id="k", createdAt=1))
        count = 0
    while True:
        size = 1 + count % 7
        batch = [make_event("x/note", count + i, 0, {"i": count + i}) for i in range(size)]
        backend.append("k", batch)
        count += len(batch)
        os.write(1, b"%d\\n" % count)  # one write: a SIGKILL never leaves half a line

# Imported once; each line on stdin forks a fresh writer, which the test kills.
for _ in sys.stdin:
    pid = os.fork()
    if pid == 0:
        produce()
    os.write(1, b"pid %d\\n" % pid)
    os.waitpid(pid, 0)
"""


def test_twenty_sigkills_of_a_streaming_writer_lose_no_acknowledged_event(
    pg_database: PgDatabase,
) -> None:
    uri = pg_database.socket_uri(listen="false")
    acknowledged = 0
    parent = subprocess.Popen(
        [sys.executable, "-c", _PRODUCER, uri],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert parent.stdin is not None and parent.stdout is not None
    try:
        for _ in range(20):
            parent.stdin.write("go\n")
            parent.stdin.flush()
            pid, acks, wanted = 0, 0, random.randint(1, 8)
            while pid == 0 or acks < wanted:
                line = parent.stdout.readline().split()
                if line[0] == "pid":  # earlier lines are the last writer's final acks
                    pid, acks = int(line[1]), 0
                else:
                    acknowledged, acks = int(line[0]), acks + 1
            time.sleep(random.random() * 0.02)  # land anywhere in a following append
            os.kill(pid, signal.SIGKILL)
        parent.stdin.close()
        for line in parent.stdout:  # the last writer's final acks, then the parent exits
            acknowledged = int(line.split()[0])
    finally:
        parent.kill()
        parent.wait(10)
    # A fresh server (the CLI over stdio) reads every acknowledged event, in order.
    shown = subprocess.run(
        [sys.executable, "-m", "dsh_query_server.cli", "events", "k", "--json"]
        + ["--persistence", uri],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    listed = json.loads(shown.stdout)
    rows = listed["events"] if isinstance(listed, dict) else listed
    assert len(rows) >= acknowledged
    assert [row["seq"] for row in rows] == list(range(len(rows)))
    reader = open_postgres(uri)
    try:
        events = reader.inspect("k").events  # valid on replay, one event per seq
        assert [e.data() for e in events] == [{"i": i} for i in range(len(events))]
        assert len(events) == len(rows)
    finally:
        reader.close()


# ---------------------------------------------------------------------------------------------
# the database restarted under a reading thread (§4)


def test_restarts_during_reads_give_exact_answers_or_persistence_failures(
    pg_database: PgDatabase,
) -> None:
    uri = pg_database.socket_uri(listen="false", poolTimeoutMs="3000")
    writer = open_postgres(uri)
    for index in range(5):
        writer.create(header(f"r{index}"))
        writer.append(f"r{index}", [note(seq, "w") for seq in range(50)])
    writer.close()
    reader = open_postgres(uri)
    expected = {f"r{i}": [e.raw for e in reader.read_stored(f"r{i}").events] for i in range(5)}
    revisions = sorted(s.revision for s in reader.list_snapshots())
    stop = threading.Event()
    tally = {"exact": 0, "failed": 0}
    wrong: list[str] = []

    def read() -> None:
        while not stop.is_set():
            session_id = f"r{random.randrange(5)}"
            try:
                got = [e.raw for e in reader.inspect(session_id).events]
                listed = sorted(s.revision for s in reader.list_snapshots())
            except PostgresUnavailableError as exc:  # PERSISTENCE_FAILED, never anything else
                if not str(exc).startswith("postgres store "):
                    wrong.append(str(exc))
                tally["failed"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - any other failure is the bug under test
                wrong.append(repr(exc))
                continue
            if got != expected[session_id] or listed != revisions:
                wrong.append(f"inexact answer for {session_id}")
            tally["exact"] += 1

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for mode in ("fast", "immediate"):
            time.sleep(0.3)
            pg_database.server.restart(mode)
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(60)
    try:
        assert wrong == []
        assert tally["exact"] > 0
        # No remount: the same backend answers exactly once the server is back.
        assert sorted(s.revision for s in reader.list_snapshots()) == revisions
        assert [e.raw for e in reader.inspect("r0").events] == expected["r0"]
    finally:
        reader.close()


# ---------------------------------------------------------------------------------------------
# TLS (§1.3), a read-only server (§4), fsync off (§3.7)

_LOGGER = "dsh_query_server.persistence.postgres"


def test_an_unauthenticated_remote_server_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=_LOGGER)
    remote = "postgres://team:s3cret@db.example.invalid/corpus?listen=false&poolTimeoutMs=100"
    for uri, warned in (
        (remote, "sslmode=prefer"),
        (remote + "&sslmode=require", "sslmode=require"),
        (remote + "&sslmode=verify-full", None),
        ("postgres://team@127.0.0.1/corpus?listen=false&poolTimeoutMs=100", None),
        ("postgres://team@/corpus?host=/tmp&listen=false&poolTimeoutMs=100", None),
    ):
        caplog.clear()
        backend = open_postgres(uri)
        try:
            for _ in range(2):  # operations do not warn again
                with pytest.raises(PostgresUnavailableError):
                    backend.list()
        finally:
            backend.close()
        warnings = [
            r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING and "authenticate" in r.getMessage()
        ]
        if warned is None:
            assert warnings == [], uri
        else:
            assert warnings == [
                f"postgres mount {backend.uri} does not authenticate the server ({warned});"
                " set sslmode=verify-full"
            ]
            assert "s3cret" not in warnings[0] and "team:***@" in warnings[0]


def test_a_read_only_server_refuses_appends_with_the_standby_message(
    pg_database: PgDatabase,
) -> None:
    uri = pg_database.socket_uri(listen="false")
    backend = open_postgres(uri)
    backend.create(header("s"))
    backend.append("s", [note(0, "w")])
    backend.close()
    # What a hot standby answers (SQLSTATE 25006), without running one.
    with pg_database.server.admin() as conn:
        conn.execute(
            f'ALTER DATABASE "{pg_database.name}" SET default_transaction_read_only = on'  # type: ignore[arg-type]
        )
    backend = open_postgres(uri)
    try:
        assert [e.seq for e in backend.inspect("s").events] == [0]  # reads go on
        with pytest.raises(PostgresUnavailableError) as info:
            backend.append("s", [note(1, "w")])
        assert str(info.value) == (
            "postgres server is read-only (a standby?); appends need the primary"
        )
        assert backend.stored_count("s") == 1
    finally:
        backend.close()


def test_fsync_off_is_logged_as_a_warning(
    pg_database: PgDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=_LOGGER)
    with pg_database.server.admin() as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("SELECT pg_reload_conf()")
    try:
        backend = open_postgres(pg_database.socket_uri(listen="false"))
        try:
            backend.list()
            backend.list()
        finally:
            backend.close()
    finally:
        with pg_database.server.admin() as conn:
            conn.execute("ALTER SYSTEM RESET fsync")
            conn.execute("SELECT pg_reload_conf()")
    warnings = [r.getMessage() for r in caplog.records if "fsync" in r.getMessage()]
    assert len(warnings) == 1 and "fsync = off" in warnings[0]
