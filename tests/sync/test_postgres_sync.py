"""``dsh-query sync`` into a real PostgreSQL 15 (postgres.md §6): every report, exit codes 0, 1, 2
and 3, idempotence, never overwriting, ``--dry-run`` and ``--json``, from sqlite: and jsonl:."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from dsh_query_server.cli.sync import run
from dsh_query_server.model.event import Event, make_event
from dsh_query_server.persistence.jsonl import JsonlBackend
from dsh_query_server.persistence.postgres import open_postgres
from dsh_query_server.persistence.sqlite import SqliteBackend
from tests.builders import header
from tests.pg_server import PgDatabase


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """sync's state files go to a fresh XDG_STATE_HOME, never the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def ev(seq: int, text: str = "x") -> Event:
    return make_event("x/note", seq, seq, {"text": text, "n": 1.0})


def turn_start(seq: int) -> Event:
    return make_event("turn/start", seq, seq, {"turn": 1})


def sqlite_source(path: Path, logs: dict[str, list[Event]]) -> str:
    backend = SqliteBackend(str(path))
    for index, (session_id, events) in enumerate(logs.items()):
        backend.create(header(session_id, index))
        backend.append(session_id, events)
    backend.close()
    return f"sqlite:{path}"


def sync(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def change_count(db: PgDatabase) -> int:
    with db.connect() as conn:
        row = conn.execute("SELECT change_count FROM dsh_query.store").fetchone()
    assert row is not None
    return int(str(row[0]))


def test_sync_copies_then_appends_only_what_is_new(tmp_path: Path, pg_database: PgDatabase) -> None:
    path = tmp_path / "s.db"
    source = sqlite_source(path, {"a": [turn_start(0), ev(1)], "b": [ev(0), ev(1), ev(2)]})
    target = pg_database.socket_uri()
    code, out, err = sync("--to", target, source, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["sources"][0]["created"] == 2 and report["skipped"] == []
    reader = open_postgres(target)
    try:
        stored = reader.read_stored("a").events
        assert [e.raw for e in stored] == [turn_start(0).raw, ev(1).raw]  # no closers copied
        before = change_count(pg_database)
        code, out, _ = sync("--to", target, "--from", source, "--json")
        assert code == 0 and json.loads(out)["sources"][0]["unchanged"] == 2
        assert change_count(pg_database) == before  # a repeated run writes nothing
        writer = SqliteBackend(str(path))
        writer.append("b", [ev(3), ev(4)])
        writer.close()
        code, out, _ = sync("--to", target, source, "--json")
        assert code == 0 and json.loads(out)["sources"][0]["grown"] == 1
        assert [e.seq for e in reader.read_stored("b").events] == [0, 1, 2, 3, 4]
    finally:
        reader.close()


def test_a_source_that_no_longer_extends_the_stored_log_is_skipped(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    target = pg_database.socket_uri()
    first = sqlite_source(tmp_path / "one.db", {"s": [ev(0), ev(1, "original")]})
    assert sync("--to", target, first)[0] == 0
    other = sqlite_source(tmp_path / "two.db", {"s": [ev(0), ev(1, "rewritten"), ev(2)]})
    code, out, err = sync("--to", target, other, "--json")
    assert code == 3
    assert (
        f'sync: skipped "s" from {other}: the source log no longer extends the stored log'
        " (first difference at seq 1); the stored log is never overwritten"
    ) in err
    assert json.loads(out)["skipped"] == [
        {"id": "s", "source": other, "reason": "diverged", "seq": 1}
    ]
    reader = open_postgres(target)
    try:
        assert reader.read_stored("s").events[1].data() == {"text": "original", "n": 1.0}
    finally:
        reader.close()
    behind = sqlite_source(tmp_path / "three.db", {"s": [ev(0)]})
    code, out, _ = sync("--to", target, behind, "--json")
    assert code == 0 and json.loads(out)["sources"][0]["behind"] == 1


def test_a_conflicting_header_is_skipped(tmp_path: Path, pg_database: PgDatabase) -> None:
    target = pg_database.socket_uri()
    assert sync("--to", target, sqlite_source(tmp_path / "a.db", {"s": [ev(0)]}))[0] == 0
    backend = SqliteBackend(str(tmp_path / "b.db"))
    backend.create(header("s", 0, cwd="/elsewhere"))
    backend.append("s", [ev(0)])
    backend.close()
    code, _, err = sync("--to", target, f"sqlite:{tmp_path / 'b.db'}")
    assert code == 3 and "its header conflicts with the stored header" in err


def test_dry_run_and_jsonl_sources(tmp_path: Path, pg_database: PgDatabase) -> None:
    root = tmp_path / "root"
    jsonl = JsonlBackend(str(root))
    jsonl.create(header("j", cwd="/p"))
    jsonl.append("j", [ev(0), ev(1)])
    target = pg_database.socket_uri()
    code, out, _ = sync("--to", target, f"jsonl:{root}", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["sources"][0]["created"] == 1
    reader = open_postgres(target)
    try:
        assert reader.list() == []
        assert sync("--to", target, f"jsonl:{root}", "--session", "j")[0] == 0
        assert [h.id for h in reader.list()] == ["j"]
    finally:
        reader.close()


def test_exit_codes_for_usage_errors_and_failures(tmp_path: Path, pg_database: PgDatabase) -> None:
    source = sqlite_source(tmp_path / "s.db", {"s": [ev(0)]})
    target = pg_database.socket_uri()
    assert sync(source)[0] == 2  # no --to
    assert sync("--to", "sqlite:/tmp/x.db", source)[0] == 2
    assert sync("--to", target)[0] == 2  # no source
    assert sync("--to", target + "&readOnly=true", source)[0] == 2
    assert sync("--to", target, source + "?readOnly=false")[0] == 2
    assert sync("--to", target, target)[0] == 2  # the target's own store
    assert sync("--to", target, source, "--jobs", "0")[0] == 2
    code, _, err = sync("--to", "postgres://u:hunter2@127.0.0.1:1/db?poolTimeoutMs=500", source)
    assert code == 1 and "hunter2" not in err and "u:***@" in err
    code, _, err = sync("--to", target, f"jsonl:{tmp_path / 'missing-file.txt'}", source)
    assert code == 0  # an absent jsonl root is an empty source
    (tmp_path / "a-file").write_text("")
    code, _, err = sync("--to", target, f"jsonl:{tmp_path / 'a-file'}", source)
    assert code == 1 and "cannot be mounted" in err


def sync_process(*argv: str, **popen: Any) -> subprocess.Popen[str]:
    root = str(Path(__file__).resolve().parents[2])
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from dsh_query_server.cli.sync import main; sys.exit(main())",
            *argv,
        ],
        text=True,
        env={**os.environ, "PYTHONPATH": root, **popen.pop("env", {})},
        **popen,
    )


def test_watch_repeats_reports_a_skip_once_and_stops_on_sigterm(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    target = pg_database.socket_uri()
    first = sqlite_source(tmp_path / "a.db", {"s": [ev(0), ev(1, "a")]})
    assert sync("--to", target, first)[0] == 0
    path = tmp_path / "b.db"
    source = sqlite_source(path, {"s": [ev(0), ev(1, "b")], "t": [ev(0)]})
    process = sync_process("--to", target, source, "--watch", "1", stderr=subprocess.PIPE)
    lines: list[str] = []
    assert process.stderr is not None
    reading = threading.Thread(target=lambda: lines.extend(process.stderr or ()), daemon=True)
    reading.start()

    def skips() -> int:
        return sum(line.startswith('sync: skipped "s"') for line in list(lines))

    try:
        reader = open_postgres(target)
        try:
            deadline = time.monotonic() + 30
            while reader.stored_count("t") is None and time.monotonic() < deadline:
                time.sleep(0.2)
            writer = SqliteBackend(str(path))
            writer.append("t", [ev(1)])
            writer.close()
            while reader.stored_count("t") != 2 and time.monotonic() < deadline:
                time.sleep(0.2)  # a later cycle appends what is new
            assert reader.stored_count("t") == 2
            assert skips() == 1  # once, however many cycles saw the same revision pair
            writer = SqliteBackend(str(path))
            writer.append("s", [ev(2)])  # a new source revision that still diverges
            writer.close()
            while skips() < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2.5)  # two more cycles over the same new pair
        finally:
            reader.close()
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        reading.join(10)
    finally:
        process.kill()
    assert process.returncode == 3  # the last complete cycle skipped "s"
    assert skips() == 2, lines  # once per revision pair


def test_the_state_file_spares_reads_of_unchanged_sessions(
    tmp_path: Path, pg_database: PgDatabase, private_state: Path
) -> None:
    path = tmp_path / "s.db"
    source = sqlite_source(path, {"s": [ev(0), ev(1)]})
    target = pg_database.socket_uri()
    assert sync("--to", target, source)[0] == 0
    (state,) = (private_state / "dsh-query").iterdir()
    assert state.name.startswith("sync-") and state.stat().st_mode & 0o777 == 0o600
    assert (private_state / "dsh-query").stat().st_mode & 0o777 == 0o700
    # A row beyond the session's count makes any read of the target fail; the listing and the
    # revision are unchanged, so a run that trusts its state file never reads the session.
    with pg_database.connect() as conn:
        conn.execute("INSERT INTO dsh_query.events SELECT pk, 5, 5, '{}' FROM dsh_query.sessions")
    code, out, err = sync("--to", target, source, "--json")
    assert code == 0 and json.loads(out)["sources"][0]["unchanged"] == 1, err
    # Only the source moved: its digest stands in for reading the (damaged) target.
    writer = SqliteBackend(str(path))
    writer.append("s", [ev(2)])
    writer.close()
    code, out, err = sync("--to", target, source, "--json")
    assert code == 0 and json.loads(out)["sources"][0]["grown"] == 1, err
    state.unlink()
    code, _, err = sync("--to", target, source)
    assert code == 1 and 'sync: failed "s"' in err  # without the state the target is read


def test_a_terminal_shows_a_progress_bar_and_a_pipe_does_not(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    source = sqlite_source(tmp_path / "s.db", {f"s{i}": [ev(0), ev(1)] for i in range(3)})
    diverged = sqlite_source(tmp_path / "d.db", {"s0": [ev(0), ev(1, "other")]})
    target = pg_database.socket_uri()
    master, slave = pty.openpty()
    process = sync_process(
        "--to",
        target,
        source,
        diverged,
        stdout=subprocess.PIPE,
        stderr=slave,
        env={"TERM": "xterm-256color", "COLUMNS": "160"},
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(30) == 3
    drawn = b"".join(chunks).decode()
    assert "\x1b[" in drawn  # drawn with terminal controls
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)
    assert f"sync {source}" in shown and "3/3 sessions, 6 events appended" in shown, shown
    assert f"sync {diverged}" in shown and "1/1 sessions, 0 events appended" in shown
    assert 'sync: skipped "s0"' in shown and f"sync: {source}: created 3" in shown
    code, _, err = sync("--to", target, source)  # not a terminal: lines only
    assert code == 0 and "\x1b[" not in err and "sessions," not in err
    assert (
        err == f"sync: {source}: created 0, grown 0, unchanged 3, behind 0, conflict 0,"
        " diverged 0, failed 0\n"
    )


def test_a_killed_sync_leaves_a_valid_prefix_and_the_next_run_completes_it(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    logs = {f"k{i}": [ev(seq, f"{i}-{seq}") for seq in range(2000)] for i in range(8)}
    source = sqlite_source(tmp_path / "big.db", logs)
    target = pg_database.socket_uri()
    sql_target = pg_database.connect()
    process = sync_process("--to", target, source, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _change_count(sql_target) < 2:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)  # mid-run: some batches committed, most not
        process.wait(10)
    finally:
        process.kill()
        sql_target.close()
    reader = open_postgres(target)
    try:
        stored = {h.id: reader.read_stored(str(h.id)).events for h in reader.list()}
        total = sum(len(events) for events in stored.values())
        assert 0 < total < 8 * 2000  # the kill landed mid-sync
        for session_id, events in stored.items():  # each a valid prefix, in whole batches
            assert [e.raw for e in events] == [e.raw for e in logs[str(session_id)][: len(events)]]
            assert len(events) % 1000 == 0
        code, out, err = sync("--to", target, source, "--json")
        assert code == 0, err
        counts = json.loads(out)["sources"][0]
        assert counts["grown"] + counts["created"] + counts["unchanged"] == 8
        for session_id, events in logs.items():
            assert [e.raw for e in reader.read_stored(session_id).events] == [e.raw for e in events]
    finally:
        reader.close()


def _change_count(conn: Any) -> int:
    """The target's change count, 0 before its store exists."""
    if not conn.execute("SELECT to_regclass('dsh_query.store') IS NOT NULL").fetchone()[0]:
        return 0
    return int(conn.execute("SELECT change_count FROM dsh_query.store").fetchone()[0])


def test_a_session_created_since_the_cycles_listing_is_read_not_overwritten(
    tmp_path: Path, pg_database: PgDatabase
) -> None:
    # Both sources hold "x": the first creates it after the cycle listed the target, so the
    # second finds it absent from that listing, tries to create it, and must read it instead.
    first = sqlite_source(tmp_path / "a.db", {"x": [ev(0), ev(1)]})
    same = sqlite_source(tmp_path / "b.db", {"x": [ev(0), ev(1), ev(2)]})
    other = sqlite_source(tmp_path / "c.db", {"x": [ev(0), ev(1, "other")]})
    target = pg_database.socket_uri()
    code, out, err = sync("--to", target, first, same, other, "--json", "--jobs", "1")
    assert code == 3, err
    sources = json.loads(out)["sources"]
    assert [s["created"] for s in sources] == [1, 0, 0]
    assert sources[1]["grown"] == 1 and sources[2]["diverged"] == 1
    reader = open_postgres(target)
    try:
        assert [e.raw for e in reader.read_stored("x").events] == [ev(i).raw for i in range(3)]
    finally:
        reader.close()
